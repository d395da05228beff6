"""DYNAMIC_UPDATE_SLICE: the operand with `update` written at run-time start indices, each clamped to
[0, operand dim - update dim] (LiteRT and TFLite Micro clamp alike)."""

from __future__ import annotations

import numpy as np

from . import register
from .base import OpDef, Operands, op_error


@register
class DynamicUpdateSlice(OpDef):
    types = ("DYNAMIC_UPDATE_SLICE",)
    operands = Operands(inputs=("operand", "update", "start_indices"))

    def check(self, op) -> None:
        operand, update, start, y = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
        if (len(update.shape) != len(operand.shape) or any(u > o for u, o in zip(update.shape, operand.shape))
                or list(start.shape) != [len(operand.shape)] or update.dtype != operand.dtype
                or start.dtype not in ("int32", "int64")):
            raise op_error(op, f"updates {operand.dtype}{list(operand.shape)} with {update.dtype}"
                               f"{list(update.shape)} at {start.dtype}{list(start.shape)} start indices")
        if list(y.shape) != list(operand.shape) or y.dtype != operand.dtype:
            raise op_error(op, f"writes {y.dtype}{list(y.shape)}, not the operand's {list(operand.shape)}")

    def fold(self, op):
        operand, update, start = op.inputs
        if not (operand.is_const and update.is_const and start.is_const):
            return None
        out = np.array(operand.data, copy=True)
        begin = [min(max(int(b), 0), o - u) for b, o, u in zip(np.asarray(start.data).reshape(-1), operand.shape,
                                                               update.shape)]
        out[tuple(slice(b, b + u) for b, u in zip(begin, update.shape))] = update.data
        return [out]
