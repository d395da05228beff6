"""SUB on the host: int8 through ADD's tabulated kernel (edgesdk_add_s8) with input 2's rescale table negated,
edgesdk_sub_s16 (edgesdk_sub.c), edgesdk_sub_pot_s16 (LiteRT's power-of-two int16 path) and the float32 / int32
kernels of edgesdk_elementwise.c."""

from __future__ import annotations

from ....ops.add import AddPotData
from ....ops.binary import PlainData
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .add import add_s8_call, general_quantized_fields, pot_call
from .binary import (ELEMENTWISE_C, ELEMENTWISE_H, SUFFIX, arithmetic_types, binary_footprint, int16_zero_points_zero,
                     output_rescale_below_one, plain_params)


@c_op("SUB", constraints=[arithmetic_types, int16_zero_points_zero, rules.supported_fused_activation,
                          output_rescale_below_one, rules.broadcastable_inputs],
      headers=("edgesdk_sub.h", "edgesdk_add.h", ELEMENTWISE_H), sources=("edgesdk_sub.c", "edgesdk_add.c", ELEMENTWISE_C))
def emit_sub(e: Emit):
    op, d = e.op, e.data
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if isinstance(d, PlainData):
        return e.call(f"edgesdk_sub_{SUFFIX[y.dtype]}", plain_params(e, d, a, b, y), e.tensor(a), e.tensor(b),
                      e.arena(y))
    if isinstance(d, AddPotData):
        return pot_call(e, d, "edgesdk_sub_pot_s16")
    if y.dtype == "int8":
        return add_s8_call(e, d, subtract=True)
    params = e.params("edgesdk_sub_params", general_quantized_fields(e, d))
    return e.call("edgesdk_sub_s16", params, e.tensor(a), e.tensor(b), e.arena(y))


footprint("edgesdk_sub_s16", "edgesdk_sub_pot_s16")(binary_footprint)
