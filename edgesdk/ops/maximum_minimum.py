"""MAXIMUM, MINIMUM: elementwise max/min with broadcasting.

TFLite compares the stored values as they are, in every dtype (no requantization: the converter gives inputs
and output one quantization), so there is no build-time data. float32: `a > b ? a : b` (MAXIMUM) and
`a < b ? a : b` (MINIMUM), so a NaN in input 1 yields input 2 and a NaN in input 2 yields the NaN.
"""

from __future__ import annotations

from .base import OpDef, Operands
from . import register
from .broadcast import require_broadcast


@register
class MaximumMinimum(OpDef):
    types = ("MAXIMUM", "MINIMUM")
    operands = Operands(inputs=("input1", "input2"))

    def check(self, op) -> None:
        require_broadcast(op)
