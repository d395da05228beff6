"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on the host: edgesdk_average_pool2d_s8 / _s16 / _f32,
edgesdk_max_pool2d_s8 / _s16 / _f32 and edgesdk_l2_pool2d_f32 (edgesdk_pool2d.h)."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import non_negative, positive

KERNELS = {("AVERAGE_POOL_2D", "int8"): "edgesdk_average_pool2d_s8", ("MAX_POOL_2D", "int8"): "edgesdk_max_pool2d_s8",
           ("AVERAGE_POOL_2D", "int16"): "edgesdk_average_pool2d_s16", ("MAX_POOL_2D", "int16"): "edgesdk_max_pool2d_s16",
           ("AVERAGE_POOL_2D", "float32"): "edgesdk_average_pool2d_f32",
           ("MAX_POOL_2D", "float32"): "edgesdk_max_pool2d_f32", ("L2_POOL_2D", "float32"): "edgesdk_l2_pool2d_f32"}


def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def pool_dtypes(op):
    """Input and output are per-tensor int8 or int16 with the same scale and zero point, or float32 (L2_POOL_2D: float32 only)"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype != y.dtype or (op.type, x.dtype) not in KERNELS:
        return False, f"{x.dtype} -> {y.dtype}"
    if x.dtype == "float32":
        return True, ""
    if not (_per_tensor(x) and _per_tensor(y)):
        return False, "not quantized per tensor"
    return rules.input_output_same_quantization(op)


POOL_CONSTRAINTS = [rules.pool_shapes, pool_dtypes, rules.supported_fused_activation]


@c_op("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", constraints=POOL_CONSTRAINTS,
      headers=("edgesdk_pool2d.h",),
      sources=("edgesdk_average_pool2d.c", "edgesdk_max_pool2d.c", "edgesdk_pool2d_s16.c", "edgesdk_pool2d_f32.c"))
def emit_pool2d(e: Emit):
    op, d = e.op, e.data
    x, y, a = op.inputs[0], op.outputs[0], op.attrs
    fields = {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "channels": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2],
        "filter_h": a["filter_h"], "filter_w": a["filter_w"],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
        "act_min": d.act_min, "act_max": d.act_max,
    }
    if x.dtype == "float32":
        fields.update(act_min=float(d.act_min), act_max=float(d.act_max))
        params = e.params("edgesdk_pool2d_f32_params", fields)
    else:
        fields["uint8_rounding"] = int(d.uint8_rounding)
        params = e.params("edgesdk_pool2d_params", fields)
    e.call(KERNELS[(op.type, x.dtype)], params, e.tensor(x), e.arena(y))
    kind = {"AVERAGE_POOL_2D": "average", "MAX_POOL_2D": "max", "L2_POOL_2D": "l2"}[op.type]
    e.layer.note = f"{a['filter_h']}x{a['filter_w']} {kind} {x.dtype}"
    return e.layer


@footprint(*KERNELS.values())
def pool_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "batches", "in_h", "in_w", "channels", "out_h", "out_w", "filter_h", "filter_w",
                      "stride_h", "stride_w")
    checks += non_negative(p, "pad_top", "pad_left")
    size = {"int8_t": 1, "int16_t": 2, "float": 4}[y.ctype]
    return checks or [(x, size * p["batches"] * p["in_h"] * p["in_w"] * p["channels"], "input"),
                      (y, size * p["batches"] * p["out_h"] * p["out_w"] * p["channels"], "output")]
