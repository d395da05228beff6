"""EXPAND_DIMS and SQUEEZE: the same elements under a shape with a size-1 dimension added or removed.

Like RESHAPE, a copy at most: the memory planner aliases output and input (edgesdk/aot/memory_plan.py)."""

from __future__ import annotations

from . import register
from .axis_map import constant_ints, require_shape
from .base import OpDef, Operands, op_error


def expanded_shape(op) -> list | None:
    x = op.inputs[0]
    axis = constant_ints(op, 1)
    if axis is None:
        return None
    rank = len(x.shape)
    if len(axis) != 1 or not -rank - 1 <= axis[0] <= rank:
        raise op_error(op, f"has axis {axis} for a rank-{rank} input (needs one value in [{-rank - 1}, {rank}])")
    k = axis[0] + rank + 1 if axis[0] < 0 else axis[0]
    return [*x.shape[:k], 1, *x.shape[k:]]


def squeezed_shape(op) -> list:
    x = op.inputs[0]
    rank = len(x.shape)
    dims = op.attrs["squeeze_dims"]
    if not dims:
        return [d for d in x.shape if d != 1]
    axes = set()
    for d in dims:
        if not -rank <= d < rank or x.shape[d] != 1:
            raise op_error(op, f"squeezes dimension {d} of {list(x.shape)}, which is not of size 1")
        axes.add(d + rank if d < 0 else d)
    return [n for k, n in enumerate(x.shape) if k not in axes]


class _SameElements(OpDef):
    def fold(self, op):
        x = op.inputs[0]
        return [x.data.reshape(op.outputs[0].shape)] if x.is_const else None


@register
class ExpandDims(_SameElements):
    types = ("EXPAND_DIMS",)
    operands = Operands(inputs=("input", "axis"))

    def check(self, op) -> None:
        shape = expanded_shape(op)
        if shape is not None:
            require_shape(op, op.outputs[0], shape)
        elif op.inputs[0].num_elements != op.outputs[0].num_elements:
            raise op_error(op, f"expands {list(op.inputs[0].shape)} into {list(op.outputs[0].shape)}")


@register
class Squeeze(_SameElements):
    types = ("SQUEEZE",)
    operands = Operands(inputs=("input",))
    options = "SqueezeOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"squeeze_dims": [int(d) for d in options.get("squeeze_dims", [])]}

    def check(self, op) -> None:
        require_shape(op, op.outputs[0], squeezed_shape(op))
