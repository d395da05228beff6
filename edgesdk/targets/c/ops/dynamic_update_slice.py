"""DYNAMIC_UPDATE_SLICE on the host: edgesdk_dynamic_update_slice (operand copied, update written at the clamped
run-time start)."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import prod, require
from .shape_common import data_tensor_types, element_bytes


def start_index_type(op):
    """Start indices are int32 or int64"""
    return op.inputs[2].dtype in ("int32", "int64"), f"start indices are {op.inputs[2].dtype}"


@c_op("DYNAMIC_UPDATE_SLICE", constraints=[data_tensor_types, start_index_type],
      headers=("edgesdk_dynamic_update_slice.h",), sources=("edgesdk_dynamic_update_slice.c",))
def emit_dynamic_update_slice(e: Emit):
    operand, update, start = e.op.inputs
    y = e.op.outputs[0]
    rank = len(operand.shape)
    lead = [1] * (6 - rank)
    fields = {"rank": rank, "element_bytes": element_bytes(y), "index_bytes": element_bytes(start),
              "operand_bytes": operand.nbytes, "operand_shape": lead + [int(d) for d in operand.shape],
              "update_shape": lead + [int(d) for d in update.shape]}
    params = e.params("edgesdk_dynamic_update_slice_params", fields)
    e.call("edgesdk_dynamic_update_slice", params, e.tensor(operand), e.tensor(update), e.tensor(start), e.arena(y))
    e.layer.note = f"update {list(update.shape)} into {list(operand.shape)}"
    return e.layer


@footprint("edgesdk_dynamic_update_slice")
def dynamic_update_slice_footprint(call, op) -> list:
    p, operand, update, start, y = call.args
    ops_, ups = [int(v) for v in p["operand_shape"]], [int(v) for v in p["update_shape"]]
    eb = p["element_bytes"]
    ok = (1 <= p["rank"] <= 6 and eb in (1, 2, 4, 8) and p["index_bytes"] in (4, 8)
          and all(1 <= u <= o for u, o in zip(ups, ops_)) and all(o == 1 for o in ops_[:6 - p["rank"]])
          and p["operand_bytes"] == prod(ops_) * eb)
    return require(ok, f"dynamic_update_slice fields {p.fields}") or [
        (operand, p["operand_bytes"], "operand"), (update, prod(ups) * eb, "update"),
        (start, p["rank"] * p["index_bytes"], "start indices"), (y, p["operand_bytes"], "output")]
