"""BROADCAST_TO (the input repeated along its size-1 and missing leading dimensions) and BROADCAST_ARGS (the
broadcast shape of two shape vectors, shape arithmetic usually folded at build time).

BROADCAST_TO's target shape must be constant (or folded): the output's static shape is what is filled."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from . import register
from .axis_map import AxisMap, broadcast, constant_ints, require_shape
from .base import OpDef, Operands, op_error


def broadcast_to_map(op) -> AxisMap | None:
    shape = constant_ints(op, 1)
    if shape is None:
        return None
    x, y = op.inputs[0], op.outputs[0]
    lead = len(shape) - len(x.shape)
    if lead < 0 or any(d != n and d != 1 for d, n in zip(x.shape, shape[lead:])):
        raise op_error(op, f"cannot broadcast {list(x.shape)} to {shape}")
    require_shape(op, y, shape)
    return broadcast(x.shape, shape)


@register
class BroadcastTo(OpDef):
    types = ("BROADCAST_TO",)
    operands = Operands(inputs=("input", "shape"))

    def check(self, op) -> None:
        broadcast_to_map(op)

    def prepare(self, op, mode: str):
        return broadcast_to_map(op)

    def fold(self, op):
        m = broadcast_to_map(op)
        return [m.apply(op.inputs[0].data)] if m is not None and op.inputs[0].is_const else None


@dataclass(frozen=True)
class BroadcastArgsData:
    size1: int
    size2: int


def broadcast_args_values(op, a, b) -> np.ndarray:
    """LiteRT's reference_ops::BroadcastArgs: right-aligned, a missing dimension is 1; each value is held in a
    C int (int64 shapes are truncated to 32 bits)."""
    a = [int(np.int64(v).astype(np.int32)) for v in np.asarray(a).reshape(-1)]
    b = [int(np.int64(v).astype(np.int32)) for v in np.asarray(b).reshape(-1)]
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for d1, d2 in zip(a, b):
        if d1 != 1 and d2 != 1 and d1 != d2:
            raise op_error(op, f"broadcasts incompatible shapes {a} and {b} (TFLite aborts)")
        out.append(d2 if d1 == 1 else d1)
    return np.asarray(out, dtype=np.int64)


@register
class BroadcastArgs(OpDef):
    types = ("BROADCAST_ARGS",)
    operands = Operands(inputs=("shape1", "shape2"))

    def check(self, op) -> None:
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if len(a.shape) != 1 or len(b.shape) != 1 or not a.dtype == b.dtype == y.dtype or \
                a.dtype not in ("int32", "int64"):
            raise op_error(op, f"takes two 1-D int32/int64 shapes of the output's type, not {a.dtype}"
                               f"{list(a.shape)} and {b.dtype}{list(b.shape)} -> {y.dtype}")
        require_shape(op, y, [max(a.shape[0], b.shape[0])])

    def prepare(self, op, mode: str) -> BroadcastArgsData:
        return BroadcastArgsData(int(op.inputs[0].shape[0]), int(op.inputs[1].shape[0]))

    def fold(self, op):
        a, b = op.inputs
        if not (a.is_const and b.is_const):
            return None
        return [broadcast_args_values(op, a.data, b.data).astype(a.data.dtype)]
