"""LOGICAL_AND, LOGICAL_OR and LOGICAL_NOT on the host (edgesdk_logical.c), on bool tensors."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import positive
from .binary import binary_footprint, shape_params


def bool_tensors(op):
    """Inputs and output are bool"""
    bad = [f"{t.name} ({t.dtype})" for t in [*op.inputs, *op.outputs] if t is not None and t.dtype != "bool"]
    return not bad, f"not bool: {', '.join(bad)}" if bad else ""


@c_op("LOGICAL_AND", "LOGICAL_OR", constraints=[bool_tensors, rules.broadcastable_inputs],
      headers=("edgesdk_logical.h",), sources=("edgesdk_logical.c",))
def emit_logical_binary(e: Emit):
    a, b, y = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0]
    kernel = f"edgesdk_{e.op.type.lower()}_b"
    return e.call(kernel, shape_params(e, a, b, y), e.tensor(a), e.tensor(b), e.arena(y))


@c_op("LOGICAL_NOT", constraints=[bool_tensors], headers=("edgesdk_logical.h",), sources=("edgesdk_logical.c",))
def emit_logical_not(e: Emit):
    x, y = e.op.inputs[0], e.op.outputs[0]
    params = e.params("edgesdk_logical_not_params", {"size": y.num_elements})
    return e.call("edgesdk_logical_not_b", params, e.tensor(x), e.arena(y))


footprint("edgesdk_logical_and_b", "edgesdk_logical_or_b")(binary_footprint)


@footprint("edgesdk_logical_not_b")
def logical_not_footprint(call, op) -> list:
    p, x, y = call.args
    return positive(p, "size") or [(x, p["size"], "input"), (y, p["size"], "output")]
