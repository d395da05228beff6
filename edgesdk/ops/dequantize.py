"""DEQUANTIZE: quantized -> float32, (q - zero_point) * scale in float32 as TFLite computes it."""

from __future__ import annotations

from .base import OpDef, Operands, require_same_elements
from . import register


@register
class Dequantize(OpDef):
    types = ("DEQUANTIZE",)
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)
