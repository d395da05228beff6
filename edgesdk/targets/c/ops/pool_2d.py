"""AVERAGE_POOL_2D and MAX_POOL_2D on the host: edgesdk_average_pool2d_s8 / edgesdk_max_pool2d_s8."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import non_negative, positive

POOL_CONSTRAINTS = [rules.int8_quantized_activations, rules.pool_shapes, rules.input_output_same_quantization,
                    rules.supported_fused_activation]
KERNELS = {"AVERAGE_POOL_2D": "edgesdk_average_pool2d_s8", "MAX_POOL_2D": "edgesdk_max_pool2d_s8"}


@c_op("AVERAGE_POOL_2D", "MAX_POOL_2D", constraints=POOL_CONSTRAINTS,
      headers=("edgesdk_pool2d.h",), sources=("edgesdk_average_pool2d.c", "edgesdk_max_pool2d.c",))
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
        "uint8_rounding": int(d.uint8_rounding),
    }
    params = e.params("edgesdk_pool2d_params", fields)
    e.call(KERNELS[op.type], params, e.tensor(x), e.arena(y))
    e.layer.note = f"{a['filter_h']}x{a['filter_w']} {'average' if op.type == 'AVERAGE_POOL_2D' else 'max'}"
    return e.layer


@footprint(*KERNELS.values())
def pool_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "batches", "in_h", "in_w", "channels", "out_h", "out_w", "filter_h", "filter_w",
                      "stride_h", "stride_w")
    checks += non_negative(p, "pad_top", "pad_left")
    return checks or [(x, p["batches"] * p["in_h"] * p["in_w"] * p["channels"], "input"),
                      (y, p["batches"] * p["out_h"] * p["out_w"] * p["channels"], "output")]
