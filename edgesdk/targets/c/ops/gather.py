"""GATHER, EMBEDDING_LOOKUP and GATHER_ND on the host: slice copies picked by run-time (or constant) indices
(edgesdk_gather.c)."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import require
from .shape_common import data_tensor_types, element_bytes

FILES = dict(headers=("edgesdk_gather.h",), sources=("edgesdk_gather.c",))


def index_types(op):
    """Indices are int16, int32 or int64 (EMBEDDING_LOOKUP: int32)"""
    idx = op.inputs[0] if op.type == "EMBEDDING_LOOKUP" else op.inputs[1]
    allowed = ("int32",) if op.type == "EMBEDDING_LOOKUP" else ("int16", "int32", "int64")
    return idx.dtype in allowed, f"indices are {idx.dtype}"


@c_op("GATHER", "EMBEDDING_LOOKUP", constraints=[data_tensor_types, index_types], **FILES)
def emit_gather(e: Emit):
    d, y = e.data, e.op.outputs[0]
    x, idx = (e.op.inputs[1], e.op.inputs[0]) if e.op.type == "EMBEDDING_LOOKUP" else e.op.inputs[:2]
    fields = {"batches": d.batches, "outer": d.outer, "coords": d.coords, "axis_size": d.axis_size,
              "inner_bytes": d.inner * element_bytes(y), "index_bytes": element_bytes(idx)}
    params = e.params("edgesdk_gather_params", fields)
    e.call("edgesdk_gather", params, e.tensor(x), e.tensor(idx), e.arena(y))
    e.layer.note = f"{d.batches * d.coords} indices into {d.axis_size} slices"
    return e.layer


@footprint("edgesdk_gather")
def gather_footprint(call, op) -> list:
    p, x, idx, y = call.args
    keys = ("batches", "outer", "coords", "axis_size", "inner_bytes")
    checks = require(all(p[k] >= 1 for k in keys) and p["index_bytes"] in (2, 4, 8), f"gather fields {p.fields}")
    rows = p["batches"] * p["outer"]
    return checks or [(x, rows * p["axis_size"] * p["inner_bytes"], "input"),
                      (idx, p["batches"] * p["coords"] * p["index_bytes"], "indices"),
                      (y, rows * p["coords"] * p["inner_bytes"], "output")]


@c_op("GATHER_ND", constraints=[data_tensor_types, index_types], **FILES)
def emit_gather_nd(e: Emit):
    d, (x, idx), y = e.data, e.op.inputs[:2], e.op.outputs[0]
    fields = {"slices": d.slices, "depth": d.depth, "input_slices": d.input_slices,
              "strides": list(d.strides) + [0] * (6 - d.depth),
              "slice_bytes": d.slice_elements * element_bytes(y), "index_bytes": element_bytes(idx)}
    params = e.params("edgesdk_gather_nd_params", fields)
    e.call("edgesdk_gather_nd", params, e.tensor(x), e.tensor(idx), e.arena(y))
    e.layer.note = f"{d.slices} index tuples of {d.depth}"
    return e.layer


@footprint("edgesdk_gather_nd")
def gather_nd_footprint(call, op) -> list:
    p, x, idx, y = call.args
    checks = require(p["slices"] >= 1 and 1 <= p["depth"] <= 6 and p["input_slices"] >= 1 and p["slice_bytes"] >= 1
                     and p["index_bytes"] in (2, 4, 8), f"gather_nd fields {p.fields}")
    return checks or [(x, p["input_slices"] * p["slice_bytes"], "input"),
                      (idx, p["slices"] * p["depth"] * p["index_bytes"], "indices"),
                      (y, p["slices"] * p["slice_bytes"], "output")]
