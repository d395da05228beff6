"""SELECT_V2 (and SELECT): output = condition ? x : y, elementwise.

SELECT_V2 broadcasts the condition, x and y to the output (numpy rules, up to 6 dimensions here). SELECT (v1)
takes x and y of one shape and a condition of that shape, a scalar, or a vector along the first dimension.
Values are copied as stored (no requantization: the converter gives x, y and the output one quantization).
No build-time data.
"""

from __future__ import annotations

from .base import OpDef, Operands, op_error
from . import register
from .broadcast import require_broadcast


@register
class SelectV2(OpDef):
    types = ("SELECT_V2",)
    operands = Operands(inputs=("condition", "x", "y"))

    def check(self, op) -> None:
        require_broadcast(op)


@register
class Select(OpDef):
    types = ("SELECT",)
    operands = Operands(inputs=("condition", "x", "y"))

    def check(self, op) -> None:
        c, x, y, out = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
        if tuple(x.shape) != tuple(y.shape) or tuple(out.shape) != tuple(x.shape):
            raise op_error(op, f"x {list(x.shape)}, y {list(y.shape)} and the output {list(out.shape)} must have "
                               "one shape")
        shape = tuple(c.shape)
        if not (shape == tuple(x.shape) or len(shape) == 0
                or (len(shape) == 1 and len(x.shape) >= 1 and shape[0] == x.shape[0])):
            raise op_error(op, f"condition {list(shape)} is neither x's shape {list(x.shape)}, a scalar, nor a "
                               "vector along its first dimension")
