"""TRANSPOSE: output dimension d is input dimension perm[d] (a constant permutation).

Build-time data: the AxisMap of the permutation (edgesdk/ops/axis_map.py); the fold applies it."""

from __future__ import annotations

from . import register
from .axis_map import AxisMap, constant_ints, require_shape, transpose
from .base import OpDef, Operands, op_error


def transpose_map(op) -> AxisMap | None:
    """The movement of a TRANSPOSE whose permutation is constant (None: computed at run time)."""
    perm = constant_ints(op, 1)
    if perm is None and len(op.inputs) == 1 and "perm" in op.attrs:  # a layout transpose the TVM importer made
        perm = [int(p) for p in op.attrs["perm"]]
    if perm is None:
        return None
    x, y = op.inputs[0], op.outputs[0]
    rank = len(x.shape)
    perm = [p + rank if -rank <= p < 0 else p for p in perm]  # LiteRT accepts perm[i] in [-rank, rank)
    if sorted(perm) != list(range(rank)):
        raise op_error(op, f"has permutation {perm}, which is not a permutation of the {rank} input dimensions")
    require_shape(op, y, [x.shape[p] for p in perm])
    return transpose(x.shape, perm)


@register
class Transpose(OpDef):
    types = ("TRANSPOSE",)
    operands = Operands(inputs=("input", "perm"))

    def check(self, op) -> None:
        transpose_map(op)

    def prepare(self, op, mode: str):
        return transpose_map(op)

    def fold(self, op):
        m = transpose_map(op)
        return [m.apply(op.inputs[0].data)] if m is not None and op.inputs[0].is_const else None
