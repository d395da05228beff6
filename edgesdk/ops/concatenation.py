"""CONCATENATION along one axis (inputs share the output's rank and every other dimension)."""

from __future__ import annotations

import numpy as np

from .base import OpDef, Operands, fused_activation, normalized_axis, op_error
from . import register


@register
class Concatenation(OpDef):
    types = ("CONCATENATION",)
    operands = Operands(inputs=(), repeated="values")
    options = "ConcatenationOptions"

    def attributes(self, op, options: dict) -> dict:
        rank = len(op.outputs[0].shape)
        return {"axis": normalized_axis(op, int(options.get("axis", 0)), rank),
                "activation": fused_activation(op, options)}

    def check(self, op) -> None:
        y, axis = op.outputs[0], op.attrs["axis"]
        rank = len(y.shape)
        shapes = [list(t.shape) for t in op.inputs]
        others = list(y.shape[:axis] + y.shape[axis + 1:])
        if (any(len(s) != rank or s[:axis] + s[axis + 1:] != others for s in shapes)
                or sum(s[axis] for s in shapes) != y.shape[axis]):
            raise op_error(op, f"inputs {shapes} do not concatenate along axis {axis} into {list(y.shape)}")

    def fold(self, op):
        if all(t.is_const for t in op.inputs) and op.attrs.get("activation", "NONE") == "NONE":
            return [np.concatenate([t.data for t in op.inputs], axis=op.attrs["axis"])]
        return None
