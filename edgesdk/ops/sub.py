"""SUB: elementwise difference with broadcasting and a fused activation.

Build-time data: ADD's (edgesdk/ops/add.py), the kernel subtracts the rescaled input 2. Both references derive
the rescaling multipliers in double (measured: TFLite Micro's current sources divide the float32 scales in
float32, but the tflite-micro package edgesdk checks against matches double, docs/rounding.md). LiteRT's
power-of-two int16 path (pot_scale_int16) exists for SUB too, with broadcasting.
"""

from __future__ import annotations

from .add import prepare_add_sub
from .base import OpDef, Operands, fused_activation
from . import register
from .broadcast import require_broadcast


@register
class Sub(OpDef):
    types = ("SUB",)
    operands = Operands(inputs=("input1", "input2"))
    options = "SubOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"activation": fused_activation(op, options), "pot_scale_int16": bool(options.get("pot_scale_int16", False))}

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str):
        return prepare_add_sub(op, mode)
