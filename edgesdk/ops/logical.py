"""LOGICAL_AND, LOGICAL_OR (with broadcasting) and LOGICAL_NOT on bool tensors. No build-time data."""

from __future__ import annotations

from .base import OpDef, Operands, require_same_elements
from . import register
from .broadcast import require_broadcast


@register
class LogicalBinary(OpDef):
    types = ("LOGICAL_AND", "LOGICAL_OR")
    operands = Operands(inputs=("input1", "input2"))

    def check(self, op) -> None:
        require_broadcast(op)


@register
class LogicalNot(OpDef):
    types = ("LOGICAL_NOT",)
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)
