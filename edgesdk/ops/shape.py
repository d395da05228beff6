"""SHAPE: the input's shape as an int32 (or int64, `out_type`) vector.

edgesdk's tensors have static shapes, so SHAPE is always known at build time: the folding pass
(edgesdk/ops/folding.py) replaces it by a constant, as TFLite Micro's Prepare computes it once."""

from __future__ import annotations

import numpy as np

from . import register
from .axis_map import require_shape
from .base import OpDef, Operands, op_error

OUT_TYPES = {2: "int32", 4: "int64"}  # TensorType values


@register
class Shape(OpDef):
    types = ("SHAPE",)
    operands = Operands(inputs=("input",))
    options = "ShapeOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"out_type": OUT_TYPES.get(int(options.get("out_type", 2)), "int32")}

    def check(self, op) -> None:
        y = op.outputs[0]
        if y.dtype not in ("int32", "int64"):
            raise op_error(op, f"writes the shape into a {y.dtype} tensor (needs int32 or int64)")
        require_shape(op, y, [len(op.inputs[0].shape)])

    def prepare(self, op, mode: str):
        return self.fold(op)[0]

    def fold(self, op):
        return [np.asarray(op.inputs[0].shape, dtype=np.int64).astype(op.outputs[0].dtype)]
