"""READ_VARIABLE and ASSIGN_VARIABLE on the host: byte copies between a state buffer and a tensor."""

from __future__ import annotations

from ..emit import Emit, c_op


def same_type_and_size(op):
    """The copy keeps the type and the number of elements"""
    x, y = op.inputs[0], op.outputs[0]
    ok = x.dtype == y.dtype and x.num_elements == y.num_elements
    return ok, f"{x.dtype}{list(x.shape)} -> {y.dtype}{list(y.shape)}"


@c_op("READ_VARIABLE", "ASSIGN_VARIABLE", constraints=[same_type_and_size], headers=("edgesdk_reshape.h",),
      sources=("edgesdk_reshape.c",))
def emit_variable_copy(e: Emit):
    x, y = e.op.inputs[0], e.op.outputs[0]
    e.call("edgesdk_reshape", e.int(y.nbytes), e.tensor(x), e.arena(y))
    e.layer.note = "state -> tensor" if e.op.type == "READ_VARIABLE" else "tensor -> state"
    return e.layer
