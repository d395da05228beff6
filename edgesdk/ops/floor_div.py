"""FLOOR_DIV, FLOOR_MOD: floored quotient and remainder, elementwise with broadcasting.

No build-time data. FLOOR_DIV is floor(double(a) / double(b)) converted back to the type; FLOOR_MOD is C's
truncated remainder (fmodf for float32) moved into the divisor's sign. Both references refuse a zero divisor
at run time (an error); edgesdk's kernels cannot fail, docs/rounding.md says what they return instead.
"""

from __future__ import annotations

from .base import OpDef, Operands
from . import register
from .broadcast import require_broadcast


@register
class FloorDivMod(OpDef):
    types = ("FLOOR_DIV", "FLOOR_MOD")
    operands = Operands(inputs=("input1", "input2"))

    def check(self, op) -> None:
        require_broadcast(op)
