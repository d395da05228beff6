"""SVDF on the host: edgesdk_svdf_s8_s16, edgesdk_svdf_s8_s8 and edgesdk_svdf_f32 (edgesdk_svdf.c). The
activation state is a persistent arena buffer (the op's variable-tensor input) the kernel updates in place;
edgesdk_default_reset() sets it to TFLite's reset value."""

from __future__ import annotations

from ....ops.svdf import BIAS, INPUT, STATE, WEIGHTS_FEATURE, WEIGHTS_TIME
from ..emit import Emit, c_op, footprint
from ..proof import optional, positive, require

FLOAT_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "SIGN_BIT": 5}


def _bias(op):
    return op.inputs[BIAS] if len(op.inputs) > BIAS else None


def svdf_types(op):
    """int8 input, output and weights_feature, int16 or int8 weights_time and state (one type), int32 bias; or float32

    The int8 weights_time and state variant is TFLite Micro's (LiteRT reads them as int16)."""
    x, wf, wt, state, y, b = (op.inputs[INPUT], op.inputs[WEIGHTS_FEATURE], op.inputs[WEIGHTS_TIME],
                              op.inputs[STATE], op.outputs[0], _bias(op))
    if x.dtype == "float32":
        bad = [t.name for t in (wf, wt, state, y, b) if t is not None and t.dtype != "float32"]
        return not bad, f"float32 input but {', '.join(bad)} not float32" if bad else ""
    expected = [(x, ("int8",)), (y, ("int8",)), (wf, ("int8",)), (wt, ("int16", "int8")), (state, (wt.dtype,))]
    expected += [(b, ("int32",))] if b is not None else []
    bad = [f"{t.name} ({t.dtype}, not {'/'.join(want)})" for t, want in expected if t.dtype not in want]
    return not bad, "; ".join(bad)


def svdf_quantization(op):
    """Integer SVDF: input, weights, state and output are quantized per tensor"""
    if op.inputs[INPUT].dtype == "float32":
        return True, ""
    tensors = [op.inputs[k] for k in (INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, STATE)] + [op.outputs[0]]
    bad = [t.name for t in tensors if t.quant is None or t.quant.scale.size != 1]
    return not bad, f"not quantized per tensor: {', '.join(bad)}" if bad else ""


def svdf_float_activation(op):
    """Float32 SVDF: the fused activation is NONE, RELU, RELU_N1_TO_1, RELU6 or SIGN_BIT

    The integer SVDF ignores its activation, as both references do."""
    act = op.attrs.get("activation", "NONE")
    return op.inputs[INPUT].dtype != "float32" or act in FLOAT_ACTIVATIONS, f"activation {act}"


@c_op("SVDF", constraints=[svdf_types, svdf_quantization, svdf_float_activation], headers=("edgesdk_svdf.h",),
      sources=("edgesdk_svdf.c",))
def emit_svdf(e: Emit):
    op, d = e.op, e.data
    x, wf, wt, state, y, b = (op.inputs[INPUT], op.inputs[WEIGHTS_FEATURE], op.inputs[WEIGHTS_TIME],
                              op.inputs[STATE], op.outputs[0], _bias(op))
    fields = {"batches": d.batches, "input_size": d.input_size, "num_filters": d.num_filters,
              "num_units": d.num_units, "rank": d.rank, "memory_size": d.memory_size}
    ctype = {"int32": "int32_t", "float32": "float"}[b.dtype if b is not None else
                                                      ("float32" if x.dtype == "float32" else "int32")]
    bias = e.tensor(b) if b is not None else e.null(ctype)
    if d.kind == "float32":
        fields.update(activation=FLOAT_ACTIVATIONS[d.activation], tflm=int(d.arithmetic == "tflm"))
        params = e.params("edgesdk_svdf_f32_params", fields)
        kernel = "edgesdk_svdf_f32"
    else:
        fields.update(feature_multiplier=d.feature_multiplier, feature_shift=d.feature_shift,
                      time_multiplier=d.time_multiplier, time_shift=d.time_shift, input_zero_point=d.input_zero_point,
                      output_zero_point=d.output_zero_point, state_zero_point=d.state_zero_point)
        params = e.params("edgesdk_svdf_s8_params", fields)
        kernel = "edgesdk_svdf_s8_s16" if state.dtype == "int16" else "edgesdk_svdf_s8_s8"
    e.call(kernel, params, e.tensor(x), e.tensor(wf), e.tensor(wt), bias, e.arena(state), e.arena(y))
    e.layer.note = (f"rank {d.rank}, {d.num_filters} filters x memory {d.memory_size}, "
                    f"{'TFLite Micro' if d.arithmetic == 'tflm' else 'LiteRT'} order")
    return e.layer


STATE_BYTES = {"edgesdk_svdf_s8_s16": 2, "edgesdk_svdf_s8_s8": 1, "edgesdk_svdf_f32": 4}


@footprint(*STATE_BYTES)
def svdf_footprint(call, op) -> list:
    p, x, wf, wt, b, state, y = call.args
    checks = positive(p, "batches", "input_size", "num_filters", "num_units", "rank", "memory_size")
    if checks:
        return checks
    checks += require(p["num_filters"] == p["num_units"] * p["rank"], "num_filters = num_units x rank")
    for key in ("feature_shift", "time_shift"):
        if key in p.fields:
            checks += require(-31 <= p[key] <= 30, f"requantization {key} {p[key]} outside [-31, 30]")
    s = STATE_BYTES[call.kernel]
    x_bytes = 4 if call.kernel == "edgesdk_svdf_f32" else 1
    batches, filters, memory = p["batches"], p["num_filters"], p["memory_size"]
    return checks + [(x, batches * p["input_size"] * x_bytes, "input"),
                     (wf, filters * p["input_size"] * x_bytes, "weights_feature"),
                     (wt, filters * memory * s, "weights_time"),
                     (b, optional(b, 4 * p["num_units"]), "bias"),
                     (state, batches * filters * memory * s, "activation state (read and written)"),
                     (y, batches * p["num_units"] * x_bytes, "output")]
