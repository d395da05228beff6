"""CUMSUM along one constant axis (exclusive, reverse).

Build-time data: the input split around the axis (outer x depth x inner)."""

from __future__ import annotations

import math

from ..dataclass_cache import dataclass
from ..errors import UnsupportedOpError
from .base import OpDef, Operands, input_of, normalized_axis, op_error, require_same_shape
from . import register


@dataclass(frozen=True)
class CumsumData:
    axis: int
    outer: int  # product of the dims before the axis
    depth: int
    inner: int  # product of the dims after it
    exclusive: bool
    reverse: bool


@register
class Cumsum(OpDef):
    types = ("CUMSUM",)
    operands = Operands(inputs=("input", "axis"))
    options = "CumsumOptions"

    def attributes(self, op, options: dict) -> dict:
        x, a = op.inputs[0], input_of(op, 1)
        if not a.is_const:
            raise UnsupportedOpError(f"CUMSUM at {op.location} has a non-constant axis; only a constant axis is "
                                     "supported.")
        if a.dtype != "int32" or a.data.size != 1:
            raise op_error(op, f"has an axis tensor of type {a.dtype} with {a.data.size} values (TFLite takes one "
                               "int32)")
        if not x.shape:
            raise op_error(op, "sums a scalar (it needs at least one dimension)")
        return {"axis": normalized_axis(op, int(a.data.reshape(-1)[0]), len(x.shape)),
                "exclusive": bool(options.get("exclusive", False)), "reverse": bool(options.get("reverse", False))}

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        require_same_shape(op, x, y)
        if x.dtype != y.dtype:
            raise op_error(op, f"sums a {x.dtype} input into a {y.dtype} output (the types must match)")

    def prepare(self, op, mode: str) -> CumsumData:
        shape, axis = op.inputs[0].shape, op.attrs["axis"]
        return CumsumData(axis, math.prod(shape[:axis]), int(shape[axis]), math.prod(shape[axis + 1:]),
                          op.attrs["exclusive"], op.attrs["reverse"])
