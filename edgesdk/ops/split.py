"""SPLIT, SPLIT_V and UNPACK: consecutive pieces of the input along one axis, one per output.

Build-time data: one AxisMap per output (a slice of the input; UNPACK drops the axis). The axis (SPLIT,
SPLIT_V) and the sizes (SPLIT_V, one of them may be -1: the rest) must be constant."""

from __future__ import annotations

from . import register
from .axis_map import constant_ints, require_shape, strided
from .base import OpDef, Operands, normalized_axis, op_error


def _pieces(op, x, axis: int, sizes: list) -> list:
    """One AxisMap per output: sizes[k] elements of `axis` after the earlier pieces."""
    maps, start = [], 0
    rank = len(x.shape)
    for y, size in zip(op.outputs, sizes):
        begin = [0] * rank
        counts = [int(d) for d in x.shape]
        begin[axis], counts[axis] = start, size
        require_shape(op, y, counts)
        maps.append(strided(x.shape, begin, counts, [1] * rank))
        start += size
    return maps


def split_maps(op) -> list | None:
    if op.type == "UNPACK":
        x = op.inputs[0]
        rank = len(x.shape)
        axis = normalized_axis(op, int(op.attrs["axis"]), rank)
        if x.shape[axis] != len(op.outputs) or op.attrs.get("num", len(op.outputs)) not in (0, len(op.outputs)):
            raise op_error(op, f"unpacks dimension {axis} of {list(x.shape)} into {len(op.outputs)} outputs")
        maps = []
        for k, y in enumerate(op.outputs):
            begin = [0] * rank
            counts = [int(d) for d in x.shape]
            begin[axis], counts[axis] = k, 1
            keep = [d != axis for d in range(rank)]
            require_shape(op, y, [c for c, kept in zip(counts, keep) if kept])
            maps.append(strided(x.shape, begin, counts, [1] * rank, keep))
        return maps
    if op.type == "SPLIT":
        axis_values, x = constant_ints(op, 0), op.inputs[1]
    else:
        axis_values, x = constant_ints(op, 2), op.inputs[0]
    if axis_values is None:
        return None
    if len(axis_values) != 1:
        raise op_error(op, f"has {len(axis_values)} axis values (needs one)")
    axis = normalized_axis(op, axis_values[0], len(x.shape))
    n, total = len(op.outputs), int(x.shape[axis])
    if op.type == "SPLIT":
        if op.attrs.get("num_splits", n) not in (0, n) or total % n:
            raise op_error(op, f"splits dimension {axis} of size {total} into {n} equal outputs")
        return _pieces(op, x, axis, [total // n] * n)
    sizes = constant_ints(op, 1)
    if sizes is None:
        return None
    if len(sizes) != n or sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise op_error(op, f"has size_splits {sizes} for {n} outputs")
    if -1 in sizes:
        rest = total - sum(s for s in sizes if s != -1)
        sizes = [rest if s == -1 else s for s in sizes]
    if sum(sizes) != total or any(s < 0 for s in sizes):
        raise op_error(op, f"has size_splits {sizes} that do not split dimension {axis} of size {total}")
    return _pieces(op, x, axis, sizes)


@register
class Split(OpDef):
    types = ("SPLIT",)
    operands = Operands(inputs=("axis", "input"), repeated_output=True)
    options = "SplitOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"num_splits": int(options.get("num_splits", 0))}

    def check(self, op) -> None:
        split_maps(op)

    def prepare(self, op, mode: str):
        return split_maps(op)

    def fold(self, op):
        maps, x = split_maps(op), op.inputs[1]
        return [m.apply(x.data) for m in maps] if maps is not None and x.is_const else None


@register
class SplitV(Split):
    types = ("SPLIT_V",)
    operands = Operands(inputs=("input", "size_splits", "axis"), repeated_output=True)
    options = "SplitVOptions"

    def fold(self, op):
        maps, x = split_maps(op), op.inputs[0]
        return [m.apply(x.data) for m in maps] if maps is not None and x.is_const else None


@register
class Unpack(SplitV):
    types = ("UNPACK",)
    operands = Operands(inputs=("input",), repeated_output=True)
    options = "UnpackOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"axis": int(options.get("axis", 0)), "num": int(options.get("num", 0))}
