"""LOG_SOFTMAX on the host: int8 (output scale 16/256, zero point 127) and float32, over the last axis."""

from __future__ import annotations

from ....ops.log_softmax import log_softmax_constants
from ..emit import Emit, c_op, footprint
from ..proof import positive

SUFFIX = {"int8": "s8", "float32": "f32"}


def log_softmax_types(op):
    """Input and output are float32, or int8 per tensor with the output quantized as scale 16/256, zero point 127"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == y.dtype == "float32":
        return True, ""
    if not (x.dtype == y.dtype == "int8" and x.quant is not None and y.quant is not None
            and x.quant.scale.size == 1 and y.quant.scale.size == 1):
        return False, f"{x.dtype} -> {y.dtype}"
    return float(y.quant.scale[0]) == 16.0 / 256 and y.quant.zp0 == 127, \
        f"output scale {y.quant.scale0}, zero point {y.quant.zp0}"


def log_softmax_input_scale_in_range(op):
    """An int8 input scale is at least 2^-26 (TFLite's fixed-point rescaling into Q5.26 needs a left shift of at least 1)"""
    x = op.inputs[0]
    if x.dtype != "int8" or x.quant is None:
        return True, ""
    return log_softmax_constants(float(x.quant.scale[0])) is not None, f"input scale {x.quant.scale0:.3g}"


def log_softmax_not_empty(op):
    """The input has no zero-size dimension"""
    x = op.inputs[0]
    return all(d >= 1 for d in x.shape), f"input shape {list(x.shape)}"


@c_op("LOG_SOFTMAX", constraints=[log_softmax_types, log_softmax_input_scale_in_range, log_softmax_not_empty],
      headers=("edgesdk_log_softmax.h",), sources=("edgesdk_log_softmax.c",))
def emit_log_softmax(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    fields = {"rows": d.rows, "depth": d.depth, "input_multiplier": d.input_multiplier,
              "input_left_shift": d.input_left_shift, "reverse_multiplier": d.reverse_multiplier,
              "reverse_shift": d.reverse_shift, "diff_min": d.diff_min, "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_log_softmax_params", fields)
    return e.call(f"edgesdk_log_softmax_{SUFFIX[x.dtype]}", params, e.tensor(x), e.arena(y))


def log_softmax_footprint(element_bytes: int):
    def rule(call, op) -> list:
        p, x, y = call.args
        size = element_bytes * p["rows"] * p["depth"]
        return positive(p, "rows", "depth") or [(x, size, "input"), (y, size, "output")]
    return rule


footprint("edgesdk_log_softmax_s8")(log_softmax_footprint(1))
footprint("edgesdk_log_softmax_f32")(log_softmax_footprint(4))
