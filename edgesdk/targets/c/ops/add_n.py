"""ADD_N on the host (edgesdk_elementwise.c): float32 and int32, summed in the reference's order."""

from __future__ import annotations

from ..calls import PointerList
from ..emit import Emit, c_op, footprint
from ..proof import require
from .binary import ELEMENTWISE_C, ELEMENTWISE_H, SUFFIX, dtype_problem


def add_n_types(op):
    """Tensors are all float32 or all int32"""
    problem = dtype_problem([*op.inputs, *op.outputs], ("float32", "int32"))
    return not problem, problem


@c_op("ADD_N", constraints=[add_n_types], headers=(ELEMENTWISE_H,), sources=(ELEMENTWISE_C,))
def emit_add_n(e: Emit):
    y = e.op.outputs[0]
    inputs = list(e.op.inputs)
    fields = {"count": len(inputs), "size": y.num_elements, "from_zero": int(e.mode == "tflm")}
    params = e.params("edgesdk_add_n_params", fields)
    return e.call(f"edgesdk_add_n_{SUFFIX[y.dtype]}", params, e.pointer_list(inputs), e.arena(y))


@footprint("edgesdk_add_n_f32", "edgesdk_add_n_i32")
def add_n_footprint(call, op) -> list:
    p, inputs, y = call.args
    if not isinstance(inputs, PointerList):
        return ["the input list is not a local pointer array"]
    checks = require(p["count"] == len(inputs.items) >= 1 and p["size"] >= 1,
                     f"{p['count']} inputs and {len(inputs.items)} pointers disagree")
    return checks or [(x, 4 * p["size"], f"input {i}") for i, x in enumerate(inputs.items)] + [
        (y, 4 * p["size"], "output")]
