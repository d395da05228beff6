"""PACK: N tensors of one shape stacked along a new axis.

TFLite's references copy bytes: LiteRT refuses inputs quantized differently from the output (Prepare), TFLite
Micro copies them unchanged. edgesdk copies bytes in both modes (docs/rounding.md)."""

from __future__ import annotations

import numpy as np

from . import register
from .base import OpDef, Operands, normalized_axis, op_error


@register
class Pack(OpDef):
    types = ("PACK",)
    operands = Operands(inputs=(), repeated="values")
    options = "PackOptions"

    def attributes(self, op, options: dict) -> dict:
        rank = len(op.inputs[0].shape) + 1
        return {"axis": normalized_axis(op, int(options.get("axis", 0)), rank),
                "values_count": int(options.get("values_count", len(op.inputs)))}

    def check(self, op) -> None:
        x0, y, axis = op.inputs[0], op.outputs[0], op.attrs["axis"]
        shapes = [list(t.shape) for t in op.inputs]
        if any(s != shapes[0] for s in shapes) or any(t.dtype != x0.dtype for t in op.inputs):
            raise op_error(op, f"packs inputs of different shapes or types {shapes}")
        if op.attrs["values_count"] != len(op.inputs):
            raise op_error(op, f"says values_count {op.attrs['values_count']} but has {len(op.inputs)} inputs")
        expected = shapes[0][:axis] + [len(op.inputs)] + shapes[0][axis:]
        if list(y.shape) != expected:
            raise op_error(op, f"packs {len(op.inputs)} x {shapes[0]} along axis {axis} into {list(y.shape)}, "
                               f"not {expected}")

    def fold(self, op):
        if all(t.is_const for t in op.inputs):
            return [np.stack([t.data for t in op.inputs], axis=op.attrs["axis"])]
        return None
