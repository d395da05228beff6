"""L2_NORMALIZATION on the host: int8 (output scale 1/128, zero point 0) and float32, over the last axis."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import positive

SUFFIX = {"int8": "s8", "float32": "f32"}


def l2_norm_types(op):
    """Input and output are float32, or int8 per tensor with the output quantized as scale 1/128, zero point 0"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == y.dtype == "float32":
        return True, ""
    if not (x.dtype == y.dtype == "int8" and x.quant is not None and y.quant is not None
            and x.quant.scale.size == 1 and y.quant.scale.size == 1):
        return False, f"{x.dtype} -> {y.dtype}"
    return float(y.quant.scale[0]) == 1.0 / 128 and y.quant.zp0 == 0, \
        f"output scale {y.quant.scale0}, zero point {y.quant.zp0}"


def l2_norm_no_activation(op):
    """There is no fused activation (TFLite's kernels support none)"""
    act = op.attrs.get("activation", "NONE")
    return act == "NONE", f"fused activation {act}"


def l2_norm_not_empty(op):
    """The input has no zero-size dimension"""
    x = op.inputs[0]
    return all(d >= 1 for d in x.shape), f"input shape {list(x.shape)}"


@c_op("L2_NORMALIZATION", constraints=[l2_norm_types, l2_norm_no_activation, l2_norm_not_empty],
      headers=("edgesdk_l2_normalization.h",), sources=("edgesdk_l2_normalization.c",))
def emit_l2_normalization(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    fields = {"rows": d.rows, "depth": d.depth, "input_zero_point": d.input_zero_point,
              "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_l2_normalization_params", fields)
    return e.call(f"edgesdk_l2_normalization_{SUFFIX[x.dtype]}", params, e.tensor(x), e.arena(y))


def l2_norm_footprint(element_bytes: int):
    def rule(call, op) -> list:
        p, x, y = call.args
        size = element_bytes * p["rows"] * p["depth"]
        return positive(p, "rows", "depth") or [(x, size, "input"), (y, size, "output")]
    return rule


footprint("edgesdk_l2_normalization_s8")(l2_norm_footprint(1))
footprint("edgesdk_l2_normalization_f32")(l2_norm_footprint(4))
