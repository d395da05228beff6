"""LOGISTIC, TANH, HARD_SWISH and the RELU family on the host."""

from __future__ import annotations

from ....errors import UnsupportedOpError
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .elementwise import sized

SIGMOID_KERNELS = {"LOGISTIC": "edgesdk_logistic_s8", "TANH": "edgesdk_tanh_s8"}


@c_op("LOGISTIC", constraints=[rules.int8_quantized_activations, rules.logistic_output_quantization,
                               rules.sigmoid_input_scale_in_range],
      headers=("edgesdk_logistic.h", "edgesdk_lut.h"), sources=("edgesdk_logistic.c", "edgesdk_lut.c"))
@c_op("TANH", constraints=[rules.int8_quantized_activations, rules.tanh_output_quantization,
                           rules.sigmoid_input_scale_in_range],
      headers=("edgesdk_logistic.h", "edgesdk_lut.h"), sources=("edgesdk_tanh.c", "edgesdk_lut.c"))
def emit_sigmoid_like(e: Emit):
    """A table (LiteRT) or gemmlowp fixed point (TFLite Micro)."""
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
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


@c_op("HARD_SWISH", constraints=[rules.int8_quantized_activations, rules.hard_swish_output_range],
      headers=("edgesdk_hard_swish.h",), sources=("edgesdk_hard_swish.c",))
def emit_hard_swish(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
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


@c_op("RELU", "RELU6", "RELU_N1_TO_1", constraints=[rules.int8_quantized_activations], headers=("edgesdk_relu.h",),
      sources=("edgesdk_relu.c",))
def emit_relu(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
              "multiplier": d.multiplier, "shift": d.shift, "act_min": d.act_min, "act_max": d.act_max,
              "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_relu_params", fields)
    e.call("edgesdk_relu_s8", params, e.tensor(x), e.arena(y))
    if d.clamp_only:
        e.layer.note = "clamp only (TFLite Micro)"
    return e.layer


for _kernel in ("edgesdk_lut_s8", "edgesdk_logistic_s8", "edgesdk_tanh_s8", "edgesdk_hard_swish_s8", "edgesdk_relu_s8"):
    footprint(_kernel)(sized(1, 1))
