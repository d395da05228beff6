"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL: elementwise comparisons to a bool tensor.

Quantized int8/int16 inputs (TFLite's ComparisonQuantized / ComparisonsPrepare) are compared after rescaling
each to real units: ((x - zp) << 8) times the input's own scale as a quantized multiplier (scales below 1;
LiteRT aborts at 1 and treats larger ones as undefined). float32, int32 and bool compare as they are.
"""

from __future__ import annotations

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands
from . import register
from .broadcast import require_broadcast

LEFT_SHIFT = 8
COMPARISONS = ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL")


@dataclass(frozen=True)
class ComparisonData:
    input1_offset: int
    input2_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    input_scales: tuple  # the real multipliers (the float32 scales): below 1 for TFLite


@register
class Comparison(OpDef):
    types = COMPARISONS
    operands = Operands(inputs=("input1", "input2"))

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str):
        a, b = op.inputs[0], op.inputs[1]
        if a.dtype not in ("int8", "int16") or a.quant is None or b.quant is None:
            return None
        (m1, s1), (m2, s2) = (quant.quantize_multiplier(float(t.quant.scale[0])) for t in (a, b))
        return ComparisonData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), LEFT_SHIFT, m1, s1, m2, s2,
                              (float(a.quant.scale[0]), float(b.quant.scale[0])))
