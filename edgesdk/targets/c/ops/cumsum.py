"""CUMSUM on the host: float32, any axis, exclusive and reverse."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import positive


def cumsum_types(op):
    """Input and output are float32"""
    x, y = op.inputs[0], op.outputs[0]
    return x.dtype == y.dtype == "float32", f"{x.dtype} -> {y.dtype}"


def cumsum_not_empty(op):
    """The input has no zero-size dimension"""
    x = op.inputs[0]
    return all(d >= 1 for d in x.shape), f"input shape {list(x.shape)}"


@c_op("CUMSUM", constraints=[cumsum_types, cumsum_not_empty], headers=("edgesdk_cumsum.h",),
      sources=("edgesdk_cumsum.c",))
def emit_cumsum(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    fields = {"outer": d.outer, "depth": d.depth, "inner": d.inner, "exclusive": int(d.exclusive),
              "reverse": int(d.reverse)}
    e.call("edgesdk_cumsum_f32", e.params("edgesdk_cumsum_params", fields), e.tensor(x), e.arena(y))
    e.layer.note = f"along axis {d.axis}" + (", exclusive" if d.exclusive else "") + (", reverse" if d.reverse else "")
    return e.layer


@footprint("edgesdk_cumsum_f32")
def cumsum_footprint(call, op) -> list:
    p, x, y = call.args
    size = 4 * p["outer"] * p["depth"] * p["inner"]
    return positive(p, "outer", "depth", "inner") or [(x, size, "input"), (y, size, "output")]
