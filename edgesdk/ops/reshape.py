"""RESHAPE: the same elements under another shape (the optional second input or the options give the shape;
the output tensor's shape is what counts). A copy at most; the memory planner aliases it when it can."""

from __future__ import annotations

from .base import OpDef, Operands, op_error
from . import register


@register
class Reshape(OpDef):
    types = ("RESHAPE",)
    operands = Operands(inputs=("input", "shape"), optional=("shape",))
    options = "ReshapeOptions"

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        if x.num_elements != y.num_elements:
            raise op_error(op, f"reshapes {list(x.shape)} into {list(y.shape)}: element counts differ")

    def fold(self, op):
        x = op.inputs[0]
        return [x.data.reshape(op.outputs[0].shape)] if x.is_const else None
