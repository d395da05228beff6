"""GATHER (axis, batch_dims), GATHER_ND and EMBEDDING_LOOKUP: slices of the input picked by an index tensor.

Build-time data: the slice geometry of TFLite's reference loops (GatherData, GatherNdData); the indices are
read at run time (or folded when constant). Both references fail an inference whose index lies outside the
input; the kernels write zeros for such a slice instead of reading outside it, and the fold refuses such a
model (docs/rounding.md)."""

from __future__ import annotations

import math

import numpy as np

from ..dataclass_cache import dataclass
from . import register
from .axis_map import require_shape
from .base import OpDef, Operands, normalized_axis, op_error


@dataclass(frozen=True)
class GatherData:
    batches: int  # product of the first batch_dims input dimensions
    outer: int  # product of the input dimensions from batch_dims to axis
    coords: int  # indices per batch
    axis_size: int
    inner: int  # elements after the axis


@dataclass(frozen=True)
class GatherNdData:
    slices: int  # index tuples
    depth: int  # tuple length
    input_slices: int  # slices in the input
    strides: tuple  # per tuple element, in slices
    slice_elements: int


def gather_data(op) -> GatherData:
    if op.type == "EMBEDDING_LOOKUP":
        ids, value, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if len(ids.shape) != 1 or len(value.shape) < 2:
            raise op_error(op, f"looks up ids {list(ids.shape)} in {list(value.shape)} (needs 1-D ids, a value of "
                               "rank >= 2)")
        require_shape(op, y, [ids.shape[0], *value.shape[1:]])
        return GatherData(1, 1, int(ids.shape[0]), int(value.shape[0]), math.prod(value.shape[1:]))
    x, idx, y = op.inputs[0], op.inputs[1], op.outputs[0]
    rank, idx_rank = len(x.shape), len(idx.shape)
    axis = normalized_axis(op, int(op.attrs["axis"]), rank)
    batch_dims = int(op.attrs["batch_dims"])
    if batch_dims < 0:
        batch_dims += idx_rank
    if not (0 <= batch_dims <= axis and batch_dims < rank and batch_dims <= idx_rank) or \
            list(x.shape[:batch_dims]) != list(idx.shape[:batch_dims]):
        raise op_error(op, f"has batch_dims {op.attrs['batch_dims']} for input {list(x.shape)}, indices "
                           f"{list(idx.shape)} and axis {axis}")
    require_shape(op, y, [*x.shape[:axis], *idx.shape[batch_dims:], *x.shape[axis + 1:]])
    return GatherData(math.prod(x.shape[:batch_dims]), math.prod(x.shape[batch_dims:axis]),
                      math.prod(idx.shape[batch_dims:]), int(x.shape[axis]), math.prod(x.shape[axis + 1:]))


def gather_nd_data(op) -> GatherNdData:
    x, idx, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if len(idx.shape) < 1 or not 1 <= idx.shape[-1] <= len(x.shape):
        raise op_error(op, f"has indices {list(idx.shape)} for an input of rank {len(x.shape)}")
    depth = int(idx.shape[-1])
    require_shape(op, y, [*idx.shape[:-1], *x.shape[depth:]])
    slice_elements = math.prod(x.shape[depth:])
    strides = tuple(math.prod(x.shape[k + 1:depth]) for k in range(depth))
    return GatherNdData(math.prod(idx.shape[:-1]), depth, math.prod(x.shape[:depth]), strides, slice_elements)


def _gather_fold(op, d: GatherData, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    positions = np.asarray(idx, dtype=np.int64).reshape(d.batches, d.coords)
    if positions.size and (positions.min() < 0 or positions.max() >= d.axis_size):
        raise op_error(op, f"has a constant index outside [0, {d.axis_size}) (TFLite fails such an inference)")
    data = np.asarray(x).reshape(d.batches, d.outer, d.axis_size, d.inner)
    out = data[np.arange(d.batches)[:, None, None], np.arange(d.outer)[None, :, None], positions[:, None, :]]
    return out.reshape(op.outputs[0].shape)


@register
class Gather(OpDef):
    types = ("GATHER",)
    operands = Operands(inputs=("params", "indices"))
    options = "GatherOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"axis": int(options.get("axis", 0)), "batch_dims": int(options.get("batch_dims", 0))}

    def check(self, op) -> None:
        d = gather_data(op)
        idx = op.inputs[0] if op.type == "EMBEDDING_LOOKUP" else op.inputs[1]
        if idx.is_const and idx.data.size and (idx.data.min() < 0 or idx.data.max() >= d.axis_size):
            raise op_error(op, f"has a constant index outside [0, {d.axis_size}) (TFLite fails such an inference)")

    def prepare(self, op, mode: str) -> GatherData:
        return gather_data(op)

    def fold(self, op):
        x, idx = op.inputs[0], op.inputs[1]
        if not (x.is_const and idx.is_const):
            return None
        return [_gather_fold(op, gather_data(op), x.data, idx.data)]


@register
class EmbeddingLookup(Gather):
    types = ("EMBEDDING_LOOKUP",)
    operands = Operands(inputs=("lookup", "value"))
    options = None

    def attributes(self, op, options: dict) -> dict:
        return {}

    def fold(self, op):
        ids, value = op.inputs[0], op.inputs[1]
        if not (ids.is_const and value.is_const) or value.dtype != op.outputs[0].dtype:
            return None
        return [_gather_fold(op, gather_data(op), value.data, ids.data)]


@register
class GatherNd(OpDef):
    types = ("GATHER_ND",)
    operands = Operands(inputs=("params", "indices"))

    def check(self, op) -> None:
        d = gather_nd_data(op)
        idx = op.inputs[1]
        if idx.is_const:
            positions = np.asarray(idx.data, dtype=np.int64).reshape(d.slices, d.depth) @ np.asarray(d.strides)
            if positions.size and (positions.min() < 0 or positions.max() >= d.input_slices):
                raise op_error(op, "has a constant index tuple outside the input (TFLite fails such an inference)")

    def prepare(self, op, mode: str) -> GatherNdData:
        return gather_nd_data(op)

    def fold(self, op):
        x, idx = op.inputs[0], op.inputs[1]
        if not (x.is_const and idx.is_const):
            return None
        d = gather_nd_data(op)
        tuples = np.asarray(idx.data, dtype=np.int64).reshape(d.slices, d.depth)
        positions = tuples @ np.asarray(d.strides, dtype=np.int64) if d.depth else np.zeros(d.slices, np.int64)
        if positions.size and (positions.min() < 0 or positions.max() >= d.input_slices):
            raise op_error(op, "has a constant index tuple outside the input (TFLite fails such an inference)")
        data = np.asarray(x.data).reshape(d.input_slices, d.slice_elements)
        return [data[positions].reshape(op.outputs[0].shape)]
