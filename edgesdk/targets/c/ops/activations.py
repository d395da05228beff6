"""LOGISTIC, TANH, HARD_SWISH and the RELU family on the host."""

from __future__ import annotations

from ....errors import UnsupportedOpError
from ....ops.sigmoid import checked_log2
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .elementwise import sized
from .unary import MATHF_FILES, mathf_call

SIGMOID_KERNELS = {"LOGISTIC": "edgesdk_logistic_s8", "TANH": "edgesdk_tanh_s8"}
SIGMOID16_KERNELS = {"LOGISTIC": "edgesdk_logistic_s16", "TANH": "edgesdk_tanh_s16"}
INT16_SIGMOID_MAX_MULTIPLIER = 32767


def _is_int16(op) -> bool:
    return op.inputs[0].dtype == "int16"


def _per_tensor_int16(op) -> bool:
    return all(t.dtype == "int16" and t.quant is not None and t.quant.scale.size == 1
               for t in (op.inputs[0], op.outputs[0]))


def _int8_rule(rule):
    """An int8 rule that holds trivially for the int16 and float32 versions of the op (checked by their own rules)."""
    def check(op):
        return (True, "") if op.inputs[0].dtype in ("int16", "float32") else rule(op)
    check.__name__, check.__doc__ = rule.__name__, f"int8: {rule.__doc__.strip()}"
    return check


def int8_or_int16_sigmoid(op):
    """Input and output are float32, or int8, or int16 (zero points 0), quantized per tensor"""
    if op.inputs[0].dtype == "float32" and op.outputs[0].dtype == "float32":
        return True, ""
    if _is_int16(op):
        ok = _per_tensor_int16(op) and op.inputs[0].quant.zp0 == 0 and op.outputs[0].quant.zp0 == 0
        return ok, "int16 tensors must be per-tensor quantized with zero point 0"
    return rules.int8_quantized_activations(op)


def int16_sigmoid_quantization(op):
    """int16: the output scale is 2^-15 and the input scale at most 32767 / (3 * 4096) (TFLite's int16 LOGISTIC/TANH)"""
    if not _is_int16(op):
        return True, ""
    from ....ops import prepared

    y = op.outputs[0]
    log2, power_of_two = checked_log2(y.quant.scale0)
    if not (power_of_two and log2 == -15):
        return False, f"output scale {y.quant.scale0:g}"
    multiplier = prepared(op, "ref").int16_multiplier
    return multiplier <= INT16_SIGMOID_MAX_MULTIPLIER, f"input scale {op.inputs[0].quant.scale0:g} is too large"


SIGMOID_FILES = ("edgesdk_logistic.h", "edgesdk_lut.h", *MATHF_FILES["headers"])
SIGMOID_SOURCES = ("edgesdk_lut.c", "edgesdk_sigmoid16.c", *MATHF_FILES["sources"])


@c_op("LOGISTIC", constraints=[int8_or_int16_sigmoid, _int8_rule(rules.logistic_output_quantization),
                               _int8_rule(rules.sigmoid_input_scale_in_range), int16_sigmoid_quantization],
      headers=SIGMOID_FILES, sources=("edgesdk_logistic.c", *SIGMOID_SOURCES))
@c_op("TANH", constraints=[int8_or_int16_sigmoid, _int8_rule(rules.tanh_output_quantization),
                           _int8_rule(rules.sigmoid_input_scale_in_range), int16_sigmoid_quantization],
      headers=SIGMOID_FILES, sources=("edgesdk_tanh.c", *SIGMOID_SOURCES))
def emit_sigmoid_like(e: Emit):
    """A table (LiteRT) or gemmlowp fixed point (TFLite Micro); int16: the interpolated sigmoid table (both);
    float32: glibc's expf/tanhf algorithms (edgesdk_mathf.c)."""
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    if x.dtype == "float32":
        return mathf_call(e)
    if x.dtype == "int16":
        fields = {"size": x.num_elements, "input_multiplier": d.int16_multiplier,
                  "input_left_shift": d.int16_left_shift}
        params = e.params("edgesdk_sigmoid16_params", fields)
        e.call(SIGMOID16_KERNELS[e.op.type], params, e.tensor(x), e.arena(y))
        e.layer.note = "int16 interpolated table"
        return e.layer
    if d.table is not None:
        table = e.const("table", d.table, "int8_t")
        params = e.params("edgesdk_lut_params", {"size": x.num_elements, "table": table})
        e.call("edgesdk_lut_s8", params, e.tensor(x), e.arena(y))
        e.layer.note = "table lookup"
        return e.layer
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point,
              "input_range_radius": d.input_range_radius, "input_multiplier": d.input_multiplier,
              "input_left_shift": d.input_left_shift, "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_sigmoid_params", fields)
    e.call(SIGMOID_KERNELS[e.op.type], params, e.tensor(x), e.arena(y))
    e.layer.note = "fixed point"
    return e.layer


def hard_swish_types(op):
    """float32, or int8 quantized per tensor"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == "float32" and y.dtype == "float32":
        return True, ""
    return rules.int8_quantized_activations(op)


@c_op("HARD_SWISH", constraints=[hard_swish_types, _int8_rule(rules.hard_swish_output_range)],
      headers=("edgesdk_hard_swish.h", "edgesdk_unary.h"), sources=("edgesdk_hard_swish.c", "edgesdk_unary.c"))
def emit_hard_swish(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    if x.dtype == "float32":
        params = e.params("edgesdk_unary_params", {"size": x.num_elements})
        return e.call("edgesdk_hard_swish_f32", params, e.tensor(x), e.arena(y))
    if d.output_multiplier_exponent > 0:
        raise UnsupportedOpError(
            f"HARD_SWISH at {e.op.location} has an output scale below input_scale/128; TFLite rejects it too. "
            "Re-quantize the model with a larger output range.")
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
              "output_multiplier_fixedpoint_int16": d.output_multiplier_fixedpoint_int16,
              "output_multiplier_exponent": d.output_multiplier_exponent,
              "reluish_multiplier_fixedpoint_int16": d.reluish_multiplier_fixedpoint_int16,
              "reluish_multiplier_exponent": d.reluish_multiplier_exponent}
    params = e.params("edgesdk_hard_swish_params", fields)
    return e.call("edgesdk_hard_swish_s8", params, e.tensor(x), e.arena(y))


def relu_types(op):
    """float32, int8, or int16 with zero points 0 (not RELU_N1_TO_1), quantized per tensor, the same type in and out"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == "float32" and y.dtype == "float32":
        return True, ""
    if _is_int16(op) and op.type != "RELU_N1_TO_1":
        ok = _per_tensor_int16(op) and x.quant.zp0 == 0 and y.quant.zp0 == 0
        return ok, "int16 tensors must be per-tensor quantized with zero point 0"
    return rules.int8_quantized_activations(op)


RELU_F32_RANGES = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


@c_op("RELU", "RELU6", "RELU_N1_TO_1", constraints=[relu_types], headers=("edgesdk_relu.h",),
      sources=("edgesdk_relu.c",))
def emit_relu(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    if x.dtype == "float32":
        lo, hi = RELU_F32_RANGES[e.op.type]
        fields = {"size": x.num_elements, "lo": lo, "hi": 0.0 if hi is None else hi, "has_hi": int(hi is not None)}
        return e.call("edgesdk_relu_f32", e.params("edgesdk_relu_f32_params", fields), e.tensor(x), e.arena(y))
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
              "multiplier": d.multiplier, "shift": d.shift, "act_min": d.act_min, "act_max": d.act_max,
              "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_relu_params", fields)
    e.call("edgesdk_relu_s8" if x.dtype == "int8" else "edgesdk_relu_s16", params, e.tensor(x), e.arena(y))
    if d.clamp_only:
        e.layer.note = "clamp only (TFLite Micro)"
    return e.layer


for _kernel in ("edgesdk_lut_s8", "edgesdk_logistic_s8", "edgesdk_tanh_s8", "edgesdk_hard_swish_s8", "edgesdk_relu_s8"):
    footprint(_kernel)(sized(1, 1))
for _kernel in ("edgesdk_logistic_s16", "edgesdk_tanh_s16", "edgesdk_relu_s16"):
    footprint(_kernel)(sized(2, 2))
footprint("edgesdk_relu_f32")(sized(4, 4))
