"""ADD: elementwise sum with broadcasting and a fused activation.

Build-time data (int8, TFLite's PrepareGeneralSubOp / AddPrepare): both inputs are rescaled to twice the larger
input scale with `left_shift` bits of headroom, summed, and requantized to the output."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import quant
from .activation import activation_range
from .base import OpDef, Operands, fused_activation, rounding_of
from . import register
from .broadcast import require_broadcast

INT8_LEFT_SHIFT = 20


@dataclass(frozen=True)
class AddData:
    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str


def add_sub_data(op, mode: str, left_shift: int = INT8_LEFT_SHIFT) -> AddData:
    """The constants of ADD and SUB (the same rescaling; SUB negates input 2 in the kernel)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    sa, sb, sy = (float(np.float32(t.quant.scale[0])) for t in (a, b, y))
    twice_max = 2.0 * max(sa, sb)
    real_out = twice_max / (float(1 << left_shift) * sy)
    (m1, s1), (m2, s2), (mo, so) = (quant.quantize_multiplier(r) for r in (sa / twice_max, sb / twice_max, real_out))
    act_min, act_max = activation_range(op)
    return AddData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), int(y.quant.zero_point[0]), left_shift,
                   m1, s1, m2, s2, mo, so, act_min, act_max, rounding_of(op, mode))


@register
class Add(OpDef):
    types = ("ADD",)
    operands = Operands(inputs=("input1", "input2"))
    options = "AddOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"activation": fused_activation(op, options), "pot_scale_int16": bool(options.get("pot_scale_int16", True))}

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str) -> AddData | None:
        if any(t.quant is None for t in (*op.inputs, op.outputs[0])):
            return None
        return add_sub_data(op, mode)
