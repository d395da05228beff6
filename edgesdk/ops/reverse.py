"""REVERSE_V2: the input with the order of the given (constant) axes reversed.

LiteRT accepts only contiguous axes (TFLite Micro any); edgesdk reverses any set of distinct axes."""

from __future__ import annotations

from . import register
from .axis_map import constant_ints, require_shape, strided
from .base import OpDef, Operands, normalized_axis, op_error


def reverse_map(op):
    axes = constant_ints(op, 1)
    if axes is None:
        return None
    x, y = op.inputs[0], op.outputs[0]
    rank = len(x.shape)
    normalized = [normalized_axis(op, a, rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise op_error(op, f"reverses axes {axes}, one of them twice")
    flip = set(normalized)
    require_shape(op, y, x.shape)
    shape = [int(d) for d in x.shape]
    starts = [n - 1 if d in flip else 0 for d, n in enumerate(shape)]
    steps = [-1 if d in flip else 1 for d in range(rank)]
    return strided(shape, starts, shape, steps)


@register
class ReverseV2(OpDef):
    types = ("REVERSE_V2",)
    operands = Operands(inputs=("input", "axis"))

    def check(self, op) -> None:
        reverse_map(op)

    def prepare(self, op, mode: str):
        return reverse_map(op)

    def fold(self, op):
        m = reverse_map(op)
        return [m.apply(op.inputs[0].data)] if m is not None and op.inputs[0].is_const else None
