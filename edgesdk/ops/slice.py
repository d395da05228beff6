"""SLICE: `size[d]` elements of input dimension d from `begin[d]` (size -1: to the end).

Build-time data: with a constant begin, the AxisMap of the slice; with a begin computed at run time (the
sizes must be constant, so the output shape is static), a `DynamicSlice` whose kernel reads begin and clamps
it so the slice stays inside the input (where TFLite's references would read outside it)."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from . import register
from .axis_map import AxisMap, constant_ints, element_strides, require_shape, strided
from .base import OpDef, Operands, op_error


@dataclass(frozen=True)
class DynamicSlice:
    """SLICE with a run-time begin: the walk for begin 0 and what the kernel needs to move its origin."""

    axes: AxisMap
    in_shape: tuple
    sizes: tuple
    in_strides: tuple  # elements


def _sizes(op, begin):
    x = op.inputs[0]
    size = constant_ints(op, 2)
    rank = len(x.shape)
    if size is None:
        return None
    if len(size) != rank or (begin is not None and len(begin) != rank):
        raise op_error(op, f"has {len(size)} sizes{'' if begin is None else f' and {len(begin)} begins'} for a "
                           f"rank-{rank} input")
    result = []
    for d, n in enumerate(size):
        if n == -1:
            if begin is None:
                return None  # the output shape would depend on the run-time begin
            n = x.shape[d] - begin[d]
        result.append(n)
    return result


def slice_data(op):
    """AxisMap (constant begin), DynamicSlice (run-time begin, constant sizes) or None (sizes not known)."""
    x, y = op.inputs[0], op.outputs[0]
    begin = constant_ints(op, 1)
    sizes = _sizes(op, begin)
    if sizes is None:
        return None
    if begin is not None:
        bad = [d for d in range(len(sizes)) if begin[d] < 0 or sizes[d] < 0 or begin[d] + sizes[d] > x.shape[d]]
        if bad:
            raise op_error(op, f"slices {sizes} from {begin} out of the input {list(x.shape)}")
        require_shape(op, y, sizes)
        return strided(x.shape, begin, sizes, [1] * len(sizes))
    if any(s < 0 or s > n for s, n in zip(sizes, x.shape)):
        raise op_error(op, f"slices {sizes} out of the input {list(x.shape)}")
    require_shape(op, y, sizes)
    axes = strided(x.shape, [0] * len(sizes), sizes, [1] * len(sizes))
    return DynamicSlice(axes, tuple(int(d) for d in x.shape), tuple(sizes), tuple(element_strides(x.shape)))


@register
class Slice(OpDef):
    types = ("SLICE",)
    operands = Operands(inputs=("input", "begin", "size"))

    def check(self, op) -> None:
        slice_data(op)

    def prepare(self, op, mode: str):
        return slice_data(op)

    def fold(self, op):
        data = slice_data(op)
        x = op.inputs[0]
        return [data.apply(x.data)] if isinstance(data, AxisMap) and x.is_const else None
