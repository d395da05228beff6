"""MEAN over constant axes (keep_dims or not).

Build-time data (int8, TFLite's QuantizedMeanOrSum): the input-to-output multiplier with 1/count folded in."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UnsupportedOpError
from ..ir import quant
from .base import OpDef, Operands, input_of, op_error, rounding_of
from . import register


@dataclass(frozen=True)
class MeanData:
    axes: tuple
    count: int
    multiplier: int
    shift: int
    input_zero_point: int
    output_zero_point: int
    rounding: str


def mean_multiplier(x, y, count: int) -> tuple:
    """TFLite's QuantizedMeanOrSum: the input/output multiplier with 1/count folded in (integer steps)."""
    m, shift = quant.quantize_multiplier(quant.effective_scale(float(x.quant.scale[0]),
                                                               denominator=float(y.quant.scale[0])))
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return int((m << extra) // count), shift - extra


def reduction_axes(op) -> tuple:
    """The constant axes input, normalized and deduplicated."""
    axes_tensor = input_of(op, 1)
    if axes_tensor is None or not axes_tensor.is_const:
        raise UnsupportedOpError(f"{op.type} at {op.location} has non-constant axes; only constant axes are supported.")
    rank = len(op.inputs[0].shape)
    axes = sorted({int(a) + rank if a < 0 else int(a) for a in axes_tensor.data.reshape(-1)})
    if any(not 0 <= a < rank for a in axes):
        raise op_error(op, f"reduces over axes {axes} of a rank-{rank} tensor")
    return tuple(axes)


@register
class Mean(OpDef):
    types = ("MEAN",)
    operands = Operands(inputs=("input", "axes"))
    options = "ReducerOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"axes": reduction_axes(op), "keep_dims": bool(options.get("keep_dims", False))}

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        kept = math.prod(d for k, d in enumerate(x.shape) if k not in op.attrs["axes"])
        if y.num_elements != kept:
            raise op_error(op, f"reducing {list(x.shape)} over axes {list(op.attrs['axes'])} leaves {kept} elements, "
                               f"not the {y.num_elements} of output {list(y.shape)}")

    def prepare(self, op, mode: str) -> MeanData | None:
        x, y = op.inputs[0], op.outputs[0]
        if x.quant is None or y.quant is None:
            return None
        axes = op.attrs["axes"]
        count = math.prod(int(x.shape[d]) for d in axes)
        m, s = mean_multiplier(x, y, count)
        return MeanData(axes, count, m, s, int(x.quant.zero_point[0]), int(y.quant.zero_point[0]),
                        rounding_of(op, mode))
