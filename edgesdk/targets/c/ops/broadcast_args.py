"""BROADCAST_ARGS on the host (run-time shapes; constant ones are folded): edgesdk_broadcast_args."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import require
from .shape_common import element_bytes


def shape_vector_types(op):
    """Both shapes and the output are 1-D int32, or all int64"""
    types = {t.dtype for t in (*op.inputs, *op.outputs)}
    return len(types) == 1 and types <= {"int32", "int64"}, f"types {sorted(types)}"


@c_op("BROADCAST_ARGS", constraints=[shape_vector_types],
      headers=("edgesdk_broadcast_args.h",), sources=("edgesdk_broadcast_args.c",))
def emit_broadcast_args(e: Emit):
    a, b = e.op.inputs
    y = e.op.outputs[0]
    fields = {"size1": int(a.shape[0]), "size2": int(b.shape[0]), "out_size": int(y.shape[0]),
              "index_bytes": element_bytes(y)}
    params = e.params("edgesdk_broadcast_args_params", fields)
    e.call("edgesdk_broadcast_args", params, e.tensor(a), e.tensor(b), e.arena(y))
    return e.layer


@footprint("edgesdk_broadcast_args")
def broadcast_args_footprint(call, op) -> list:
    p, a, b, y = call.args
    f = p.fields
    ok = f["index_bytes"] in (4, 8) and f["out_size"] == max(f["size1"], f["size2"]) and min(f["size1"], f["size2"]) >= 0
    return require(ok, f"broadcast_args fields {f}") or [
        (a, f["size1"] * f["index_bytes"], "shape 1"), (b, f["size2"] * f["index_bytes"], "shape 2"),
        (y, f["out_size"] * f["index_bytes"], "output")]
