"""FILL and SHAPE on the host. FILL with a run-time value: edgesdk_fill (a constant value is folded at build time).
SHAPE: folded in every build (edgesdk/ops/folding.py); without folding, a copy of the constant shape."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import require
from .shape_common import constant_parameters, data_tensor_types, element_bytes


@c_op("FILL", constraints=[data_tensor_types, constant_parameters],
      headers=("edgesdk_fill.h",), sources=("edgesdk_fill.c",))
def emit_fill(e: Emit):
    value, y = e.op.inputs[1], e.op.outputs[0]
    params = e.params("edgesdk_fill_params", {"element_bytes": element_bytes(y), "count": y.num_elements})
    e.call("edgesdk_fill", params, e.tensor(value), e.arena(y))
    e.layer.note = f"{y.num_elements} elements"
    return e.layer


@footprint("edgesdk_fill")
def fill_footprint(call, op) -> list:
    p, value, y = call.args
    eb, count = p["element_bytes"], p["count"]
    return require(eb in (1, 2, 4, 8) and count >= 1, f"element size {eb}, count {count}") or [
        (value, eb, "value"), (y, eb * count, "output")]


def shape_output_type(op):
    """The output is int32 or int64"""
    return op.outputs[0].dtype in ("int32", "int64"), f"output {op.outputs[0].dtype}"


@c_op("SHAPE", constraints=[shape_output_type], headers=("edgesdk_reshape.h",), sources=("edgesdk_reshape.c",))
def emit_shape(e: Emit):
    y = e.op.outputs[0]
    shape = e.const("shape", e.data, "int32_t" if y.dtype == "int32" else "int64_t")
    e.call("edgesdk_reshape", e.int(y.nbytes), shape, e.arena(y))
    e.layer.note = f"constant {list(e.data)} (not folded)"
    return e.layer
