"""MUL on the host: edgesdk_mul_s8 (edgesdk_mul.c) with the op layer's output multiplier."""

from __future__ import annotations

from ....ops.broadcast import broadcast_geometry
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .add import broadcast_footprint


@c_op("MUL", constraints=[rules.int8_quantized_activations, rules.supported_fused_activation],
      headers=("edgesdk_mul.h",), sources=("edgesdk_mul.c",))
def emit_mul(e: Emit):
    op, d = e.op, e.data
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    fields = {
        "shape": broadcast_geometry(a, b, y),
        "input1_offset": d.input1_offset, "input2_offset": d.input2_offset, "output_offset": d.output_offset,
        "output_multiplier": d.output_multiplier, "output_shift": d.output_shift,
        "act_min": d.act_min, "act_max": d.act_max,
        "rounding": e.rounding(d.rounding),
    }
    params = e.params("edgesdk_mul_params", fields)
    return e.call("edgesdk_mul_s8", params, e.tensor(a), e.tensor(b), e.arena(y))


footprint("edgesdk_mul_s8")(broadcast_footprint)
