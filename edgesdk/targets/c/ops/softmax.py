"""SOFTMAX on the host: int8 (gemmlowp fixed point), int16 (TFLite's tables), float32."""

from __future__ import annotations

from ....ops.softmax import softmax16_input_rescale, softmax_input_rescale
from ..emit import Emit, c_op, footprint
from ..proof import positive, require

_REQUANTIZE_INPUT = "re-quantize the input from its real value range (a calibration dataset)"


def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def softmax_types(op):
    """Input and output are both float32, int8 or int16, quantized per tensor"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == y.dtype == "float32":
        return True, ""
    ok = x.dtype == y.dtype and x.dtype in ("int8", "int16") and _per_tensor(x) and _per_tensor(y)
    return ok, f"{x.dtype} -> {y.dtype}"


def softmax_output_quantization(op):
    """int8: the output is quantized with scale 1/256 and zero point -128; int16: scale 1/32768 and zero points 0"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == "float32":
        return True, ""
    scale, zp = float(y.quant.scale[0]), y.quant.zp0
    if x.dtype == "int8":  # TFLite: the scale within 0.1% of 1/256
        return abs(scale - 1.0 / 256) <= 0.001 / 256 and zp == -128, f"output scale {scale}, zero point {zp}"
    ok = abs(scale - 1.0 / 32768) <= 0.001 / 32768 and zp == 0 and x.quant.zp0 == 0
    return ok, f"output scale {scale}, zero points {x.quant.zp0} (input) and {zp} (output)"


def softmax_positive_beta(op):
    """beta is positive"""
    beta = float(op.attrs.get("beta", 1.0))
    return beta > 0, f"beta {beta}"


def softmax_input_scale_in_range(op):
    """int8: beta * input scale >= 2^-27 (the input rescaling shifts by log2(beta * scale * 2^26)); int16: beta * scale * 6553.5 in [2^-32, 2^30)"""
    # int8: PreprocessSoftmaxScaling scales input differences into Q5.26 by beta * input_scale * 2^26, and
    # CalculateInputRadius shifts left by the exponent of that product: negative (undefined in TFLite) below
    # 2^-27. Such a softmax sees every int8 difference as ~0; re-quantize its input with a realistic range.
    # int16: the multiplier's shift must lie in [-31, 30] (the kernels' defined requantization shifts).
    x = op.inputs[0]
    beta = float(op.attrs.get("beta", 1.0))
    if x.dtype not in ("int8", "int16") or not _per_tensor(x) or not beta > 0:
        return True, ""  # float32, or refused by softmax_types / softmax_positive_beta
    if x.dtype == "int16":
        ok = all(m > 0 and -31 <= s <= 30 for m, s in (softmax16_input_rescale(x.quant.scale0, beta, mode)
                                                       for mode in ("ref", "tflm")))
        return ok, f"beta {beta:g} * input scale {x.quant.scale0:.3g} is out of range: {_REQUANTIZE_INPUT}"
    multiplier, shift = softmax_input_rescale(x.quant.scale0, beta)
    return (multiplier > 0 and shift >= 0,
            f"beta {beta:g} * input scale {x.quant.scale0:.3g} < 2^-27: {_REQUANTIZE_INPUT}")


def softmax_not_empty(op):
    """The input has no zero-size dimension"""
    x = op.inputs[0]
    return all(d >= 1 for d in x.shape), f"input shape {list(x.shape)}"


@c_op("SOFTMAX", constraints=[softmax_types, softmax_output_quantization, softmax_positive_beta,
                              softmax_input_scale_in_range, softmax_not_empty],
      headers=("edgesdk_softmax.h",), sources=("edgesdk_softmax.c",))
def emit_softmax(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    if x.dtype == "float32":
        params = e.params("edgesdk_softmax_f32_params", {"rows": d.rows, "depth": d.depth, "beta": d.beta})
        return e.call("edgesdk_softmax_f32", params, e.tensor(x), e.arena(y))
    if x.dtype == "int16":
        fields = {"rows": d.rows, "depth": d.depth, "input_multiplier": d.input_multiplier,
                  "input_shift": d.input_shift, "exp_table": e.const("exp_table", d.exp_table, "int16_t"),
                  "reciprocal_table": e.const("reciprocal_table", d.reciprocal_table, "int16_t"),
                  "rounding": e.rounding(d.rounding)}
        params = e.params("edgesdk_softmax16_params", fields)
        e.call("edgesdk_softmax_s16", params, e.tensor(x), e.arena(y))
        e.layer.note = "exp and reciprocal tables"
        return e.layer
    fields = {"rows": d.rows, "depth": d.depth, "input_multiplier": d.input_multiplier,
              "input_left_shift": d.input_left_shift, "diff_min": d.diff_min, "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_softmax_params", fields)
    return e.call("edgesdk_softmax_s8", params, e.tensor(x), e.arena(y))


def softmax_footprint(element_bytes: int):
    def rule(call, op) -> list:
        p, x, y = call.args
        size = element_bytes * p["rows"] * p["depth"]
        checks = positive(p, "rows", "depth")
        if "exp_table" in p.fields:
            checks += require(-31 <= p["input_shift"] <= 30, f"input_shift {p['input_shift']} outside [-31, 30]")
            tables = [(p["exp_table"], 2 * 513, "exp_table[513]"),
                      (p["reciprocal_table"], 2 * 513, "reciprocal_table[513]")]
        else:
            tables = []
        return checks or tables + [(x, size, "input"), (y, size, "output")]
    return rule


footprint("edgesdk_softmax_s8")(softmax_footprint(1))
footprint("edgesdk_softmax_s16")(softmax_footprint(2))
footprint("edgesdk_softmax_f32")(softmax_footprint(4))
