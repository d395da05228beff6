"""SOFTMAX over the last axis.

Build-time data (int8, SoftmaxPrepare / PreprocessSoftmaxScaling / CalculateInputRadius): the input difference
multiplier and left shift into Q5.26 and diff_min, below which exp() is taken as 0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import quant
from .base import OpDef, Operands, op_error, require_same_elements, rounding_of
from . import register

SCALED_DIFF_INTEGER_BITS = 5


@dataclass(frozen=True)
class SoftmaxData:
    rows: int
    depth: int
    input_multiplier: int
    input_left_shift: int
    diff_min: int
    rounding: str


def input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite CalculateInputRadius. Undefined (a negative shift in TFLite) for left_shift < 0: targets' constraints
    keep such ops away (the input scale is too small to mean anything)."""
    if left_shift < 0:
        raise ValueError(f"input_radius: left shift {left_shift} < 0 (the op's constraints should have refused it)")
    value = 1.0 * ((1 << integer_bits) - 1) * float(1 << (total_signed_bits - integer_bits)) / float(1 << left_shift)
    return int(np.floor(value))


def softmax_input_rescale(input_scale: float, beta: float, rounding: str = "double") -> tuple:
    """(multiplier, left shift) scaling an input difference into Q5.26 (PreprocessSoftmaxScaling)."""
    max_real = float((1 << 30) - 1) if rounding == "single" else float((1 << 31) - 1)
    scaled_diff_one = float(1 << (31 - SCALED_DIFF_INTEGER_BITS))
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * scaled_diff_one, max_real)
    return quant.quantize_multiplier(real)


def softmax_constants(input_scale: float, beta: float, rounding: str) -> tuple:
    """(input_multiplier, input_left_shift, diff_min)."""
    m, left_shift = softmax_input_rescale(input_scale, beta, rounding)
    return m, left_shift, -input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)


@register
class Softmax(OpDef):
    types = ("SOFTMAX",)
    operands = Operands(inputs=("input",))
    options = "SoftmaxOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"beta": float(np.float32(options.get("beta", 1.0)))}

    def check(self, op) -> None:
        require_same_elements(op)
        if not op.inputs[0].shape:
            raise op_error(op, "is a softmax over a scalar (it needs at least one axis)")

    def prepare(self, op, mode: str) -> SoftmaxData | None:
        x = op.inputs[0]
        if x.quant is None or op.attrs["beta"] <= 0:
            return None
        rounding = rounding_of(op, mode)
        m, shift = softmax_input_rescale(float(x.quant.scale[0]), op.attrs["beta"], rounding)
        if shift < 0:
            return None  # constraint: the input scale is too small (edgesdk/targets/*/supported)
        depth = int(x.shape[-1])
        m, shift, diff_min = softmax_constants(float(x.quant.scale[0]), op.attrs["beta"], rounding)
        return SoftmaxData(x.num_elements // depth, depth, m, shift, diff_min, rounding)
