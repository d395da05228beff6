"""CONCATENATION along one axis (inputs share the output's rank and every other dimension).

Constant scalars concatenate into a vector (LiteRT's Prepare special case, common in shape arithmetic; it
folds at build time). TFLite copies bytes: int8 inputs must share the output's quantization, int16 ones only a
zero point of 0 (their scales are not compared, and not rescaled); uint8 inputs with another quantization are
rescaled by LiteRT (ConcatenationWithScaling), which edgesdk does not do (a constraint of the C target)."""

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
        if _scalars(op):
            rank = 0
        return {"axis": normalized_axis(op, int(options.get("axis", 0)), rank),
                "activation": fused_activation(op, options)}

    def check(self, op) -> None:
        y, axis = op.outputs[0], op.attrs["axis"]
        if _scalars(op):
            if list(y.shape) != [len(op.inputs)]:
                raise op_error(op, f"concatenates {len(op.inputs)} scalars into {list(y.shape)}")
            return
        rank = len(y.shape)
        shapes = [list(t.shape) for t in op.inputs]
        others = list(y.shape[:axis] + y.shape[axis + 1:])
        if (any(len(s) != rank or s[:axis] + s[axis + 1:] != others for s in shapes)
                or sum(s[axis] for s in shapes) != y.shape[axis]):
            raise op_error(op, f"inputs {shapes} do not concatenate along axis {axis} into {list(y.shape)}")

    def prepare(self, op, mode: str):
        if str(mode) == "ort" and op.outputs[0].quant is not None:  # QLinearConcat: requantization tables
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.concat_data(op)
        return None

    def fold(self, op):
        if all(t.is_const for t in op.inputs) and op.attrs.get("activation", "NONE") == "NONE":
            if _scalars(op):
                return [np.stack([np.asarray(t.data).reshape(()) for t in op.inputs])]
            return [np.concatenate([t.data for t in op.inputs], axis=op.attrs["axis"])]
        return None


def _scalars(op) -> bool:
    """Every input is a scalar (rank 0) and the output a vector: LiteRT concatenates constant scalars."""
    return all(t is not None and len(t.shape) == 0 for t in op.inputs) and len(op.outputs[0].shape) == 1
