"""SELECT_V2 and SELECT on the host (edgesdk_select.c): condition ? x : y, copying the stored elements."""

from __future__ import annotations

from ....ops.broadcast import MAX_DIMS
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import prod, require

from .binary import SUFFIX

DTYPE_BYTES = {"int8": 1, "bool": 1, "int16": 2, "int32": 4, "float32": 4}
KERNELS = {f"edgesdk_select_{SUFFIX[t]}": size for t, size in DTYPE_BYTES.items()}


def select_types(op):
    """The condition is bool; x, y and the output share one type: int8, int16, int32, float32 or bool"""
    c, x, y, out = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
    if c.dtype != "bool":
        return False, f"condition {c.dtype}"
    dtypes = {x.dtype, y.dtype, out.dtype}
    ok = len(dtypes) == 1 and out.dtype in DTYPE_BYTES
    return ok, f"x {x.dtype}, y {y.dtype}, output {out.dtype}"


def select_rank(op):
    """The output has at most 6 dimensions"""
    return len(op.outputs[0].shape) <= MAX_DIMS, f"rank {len(op.outputs[0].shape)}"


def select_geometry(op) -> dict:
    """The three-input walk: shapes right-aligned and padded to MAX_DIMS, strides 0 along broadcast dimensions.
    SELECT's rank-1 condition runs along the first dimension (TFLite's RankOneSelect): it is aligned left."""
    c, x, y, out = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
    out_shape = tuple(int(d) for d in out.shape)
    c_shape = tuple(int(d) for d in c.shape)
    if op.type == "SELECT" and len(c_shape) == 1 and len(out_shape) > 1:
        c_shape = c_shape + (1,) * (len(out_shape) - 1)

    def pad(shape):
        return (1,) * (MAX_DIMS - len(shape)) + tuple(shape)

    so = pad(out_shape)

    def strides(shape):
        shape = pad(shape)
        result, stride = [0] * MAX_DIMS, 1
        for d in range(MAX_DIMS - 1, -1, -1):
            result[d] = 0 if shape[d] == 1 and so[d] != 1 else stride
            stride *= shape[d]
        return result

    shapes = (c_shape, tuple(x.shape), tuple(y.shape))
    broadcast = int(any(tuple(int(d) for d in s) != out_shape for s in shapes))
    return {"broadcast": broadcast, "size": out.num_elements, "out_shape": list(so),
            "condition_strides": strides(c_shape), "x_strides": strides(x.shape), "y_strides": strides(y.shape)}


@c_op("SELECT_V2", "SELECT", constraints=[select_types, select_rank, rules.rank_at_most_6],
      headers=("edgesdk_select.h",), sources=("edgesdk_select.c",))
def emit_select(e: Emit):
    c, x, y, out = e.op.inputs[0], e.op.inputs[1], e.op.inputs[2], e.op.outputs[0]
    params = e.params("edgesdk_select_params", select_geometry(e.op))
    return e.call(f"edgesdk_select_{SUFFIX[out.dtype]}", params, e.tensor(c), e.tensor(x), e.tensor(y), e.arena(out))


@footprint(*KERNELS)
def select_footprint(call, op) -> list:
    p, c, x, y, out = call.args
    shape = [int(v) for v in p["out_shape"]]
    checks = require(all(d >= 1 for d in shape) and p["size"] == prod(shape) and p["size"] >= 1,
                     f"output shape {shape} does not hold {p['size']} elements")
    if checks:
        return checks
    size = KERNELS[call.kernel]

    def extent(strides):
        if not p["broadcast"]:
            return p["size"]
        if any(int(v) < 0 for v in strides):
            return -1
        return sum((d - 1) * int(st) for d, st in zip(shape, strides)) + 1

    return [(c, extent(p["condition_strides"]), "condition"), (x, size * extent(p["x_strides"]), "x"),
            (y, size * extent(p["y_strides"]), "y"), (out, size * p["size"], "output")]
