"""FILL: a tensor of shape `dims` (constant) holding the scalar `value` everywhere.

With a constant value the whole op folds at build time (edgesdk/ops/folding.py); a run-time value is copied
by the kernel. dims computed at run time would make the output shape dynamic: not supported."""

from __future__ import annotations

import numpy as np

from . import register
from .axis_map import constant_ints, require_shape
from .base import OpDef, Operands, op_error


def fill_shape(op) -> list | None:
    dims = constant_ints(op, 0)
    if dims is None:
        return None
    if any(d < 0 for d in dims):
        raise op_error(op, f"fills a negative shape {dims}")
    return dims


@register
class Fill(OpDef):
    types = ("FILL",)
    operands = Operands(inputs=("dims", "value"))

    def check(self, op) -> None:
        value, y = op.inputs[1], op.outputs[0]
        if value.num_elements != 1 or len(op.inputs[0].shape) != 1:
            raise op_error(op, f"needs 1-D dims and a scalar value, not {list(op.inputs[0].shape)} and "
                               f"{list(value.shape)}")
        if value.dtype != y.dtype:
            raise op_error(op, f"fills a {y.dtype} output with a {value.dtype} value")
        shape = fill_shape(op)
        if shape is not None:
            require_shape(op, y, shape)

    def prepare(self, op, mode: str):
        return fill_shape(op)

    def fold(self, op):
        shape, value = fill_shape(op), op.inputs[1]
        if shape is None or not value.is_const:
            return None
        return [np.full(shape, np.asarray(value.data).reshape(-1)[0], dtype=value.data.dtype)]
