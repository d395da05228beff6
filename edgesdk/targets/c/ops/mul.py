"""MUL on the host: edgesdk_mul_s8 / edgesdk_mul_s16 (edgesdk_mul.c) with the op layer's output multiplier, and the
float32 / int32 kernels of edgesdk_elementwise.c."""

from __future__ import annotations

from ....ops.binary import PlainData
from ....ops.broadcast import broadcast_geometry
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .add import broadcast_footprint
from .binary import ELEMENTWISE_C, ELEMENTWISE_H, SUFFIX, arithmetic_types, int16_zero_points_zero, plain_params


@c_op("MUL", constraints=[arithmetic_types, int16_zero_points_zero, rules.supported_fused_activation],
      headers=("edgesdk_mul.h", ELEMENTWISE_H), sources=("edgesdk_mul.c", ELEMENTWISE_C))
def emit_mul(e: Emit):
    op, d = e.op, e.data
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if isinstance(d, PlainData):
        return e.call(f"edgesdk_mul_{SUFFIX[y.dtype]}", plain_params(e, d, a, b, y), e.tensor(a), e.tensor(b),
                      e.arena(y))
    fields = {
        "shape": broadcast_geometry(a, b, y),
        "input1_offset": d.input1_offset, "input2_offset": d.input2_offset, "output_offset": d.output_offset,
        "output_multiplier": d.output_multiplier, "output_shift": d.output_shift,
        "act_min": d.act_min, "act_max": d.act_max,
        "rounding": e.rounding(d.rounding),
    }
    params = e.params("edgesdk_mul_params", fields)
    return e.call(f"edgesdk_mul_{SUFFIX[y.dtype]}", params, e.tensor(a), e.tensor(b), e.arena(y))


footprint("edgesdk_mul_s8", "edgesdk_mul_s16")(broadcast_footprint)
