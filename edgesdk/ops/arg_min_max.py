"""ARG_MAX and ARG_MIN along one constant axis, int32 or int64 indices.

Build-time data: the input split around the axis (outer x axis x inner). Ties give the first index (both
references compare strictly). NaN (float32): LiteRT 2.3 compares NaN-aware (a NaN never replaces a number, a number
always replaces a NaN; all NaN gives 0); TFLite Micro compares plainly, so a leading NaN keeps index 0."""

from __future__ import annotations

import math

import numpy as np

from ..dataclass_cache import dataclass
from ..errors import UnsupportedOpError
from .base import OpDef, Operands, input_of, normalized_axis, op_error
from . import register

@dataclass(frozen=True)
class ArgMinMaxData:
    axis: int
    outer: int  # product of the dims before the axis
    axis_size: int
    inner: int  # product of the dims after it
    nan_aware: bool


class ArgMinMax(OpDef):
    operands = Operands(inputs=("input", "axis"))

    def attributes(self, op, options: dict) -> dict:
        x, a = op.inputs[0], input_of(op, 1)
        if not a.is_const:
            raise UnsupportedOpError(f"{op.type} at {op.location} has a non-constant axis; only a constant axis is "
                                     "supported.")
        if a.dtype not in ("int32", "int64") or a.data.size != 1:
            raise op_error(op, f"has an axis tensor of type {a.dtype} with {a.data.size} values (TFLite takes one "
                               "int32 or int64 value)")
        return {"axis": normalized_axis(op, int(a.data.reshape(-1)[0]), len(x.shape))}

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        if not x.shape:
            raise op_error(op, "takes the index of a scalar (it needs at least one dimension)")
        expected = tuple(d for k, d in enumerate(x.shape) if k != op.attrs["axis"])
        if tuple(y.shape) != expected:
            raise op_error(op, f"reduces {list(x.shape)} along axis {op.attrs['axis']} into {list(y.shape)}, "
                               f"not {list(expected)}")
        if y.dtype not in ("int32", "int64"):
            raise op_error(op, f"writes {y.dtype} indices (TFLite writes int32 or int64)")

    def fold(self, op) -> list | None:
        """ARG_MAX/ARG_MIN of constant integer data (the first index of the extreme value, as TFLite)."""
        x, y = op.inputs[0], op.outputs[0]
        if not x.is_const or x.dtype not in ("int8", "int16", "int32", "int64", "bool") or x.data.size == 0:
            return None
        fn = np.argmax if op.type == "ARG_MAX" else np.argmin
        return [fn(x.data, axis=op.attrs["axis"]).astype(y.dtype).reshape(y.shape)]

    def prepare(self, op, mode: str) -> ArgMinMaxData:
        shape, axis = op.inputs[0].shape, op.attrs["axis"]
        return ArgMinMaxData(axis, math.prod(shape[:axis]), int(shape[axis]), math.prod(shape[axis + 1:]),
                             nan_aware=str(mode) != "tflm")


@register
class ArgMax(ArgMinMax):
    types = ("ARG_MAX",)
    options = "ArgMaxOptions"


@register
class ArgMin(ArgMinMax):
    types = ("ARG_MIN",)
    options = "ArgMinOptions"
