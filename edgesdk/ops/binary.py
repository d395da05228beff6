"""Helpers shared by the elementwise family's op definitions (ADD, SUB, MUL, DIV, comparisons, ...).

Not an op itself: the build-time data of the unquantized (float32, int32, bool) paths, whose only constant is
the fused activation's clamp, and the small pieces of TFLite's Prepare() several ops share.
"""

from __future__ import annotations

import math

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant

FLOAT32_MAX = float(np.finfo(np.float32).max)
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class PlainData:
    """An unquantized path (float32, int32, bool): TFLite's CalculateActivationRange<T> clamp."""

    dtype: str
    act_min: float | int
    act_max: float | int


@dataclass(frozen=True)
class ScaledData:
    """The quantized data of an op that requantizes one result of both inputs (MUL, DIV): the offsets, the
    output multiplier and shift, the activation's clamp, the rounding."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str


@dataclass(frozen=True)
class RescaledData:
    """The quantized data of an op that first rescales both inputs to twice the larger input scale with
    `left_shift` bits of headroom (ADD, SUB, SQUARED_DIFFERENCE): per input and for the output a multiplier and
    shift, the activation's clamp, the rounding, and the real output rescale, which TFLite's
    QuantizeMultiplierSmallerThanOneExp refuses from 1 on."""

    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str
    real_output_multiplier: float = 0.0


def plain_activation_range(activation: str, dtype: str) -> tuple:
    """TFLite CalculateActivationRange<T>: RELU [0, max], RELU6 [0, 6], RELU_N1_TO_1 [-1, 1], anything else
    (NONE, and TANH/SIGN_BIT, which the float kernels ignore) [lowest, max]. For float32 the clamp to
    [-FLT_MAX, FLT_MAX] is real: it turns infinities into +-FLT_MAX (NaN passes)."""
    lo, hi = (-FLOAT32_MAX, FLOAT32_MAX) if dtype == "float32" else (INT32_MIN, INT32_MAX)
    if activation == "RELU":
        return 0, hi
    if activation == "RELU6":
        return 0, 6
    if activation == "RELU_N1_TO_1":
        return -1, 1
    return lo, hi


def plain_data(op, activation: str | None = None) -> PlainData:
    dtype = op.outputs[0].dtype
    act = activation if activation is not None else op.attrs.get("activation", "NONE")
    lo, hi = plain_activation_range(act, dtype)
    if dtype == "float32":
        return PlainData(dtype, float(lo), float(hi))
    return PlainData(dtype, int(lo), int(hi))


def quantized(op) -> bool:
    """Every input and output of the op carries quantization parameters."""
    return all(t.quant is not None for t in op.inputs + op.outputs if t is not None)


def f32(x) -> float:
    """x rounded to float32, as a Python float."""
    return float(np.float32(x))


def checked_log2(scale: float) -> tuple:
    """TFLite's CheckedLog2 in float32: (is a power of two within 1e-3 in log2, the rounded log2)."""
    x_log2 = np.float32(np.float32(math.log(f32(scale))) * np.float32(np.float32(1.0) / np.float32(math.log(2.0))))
    rounded = np.float32(quant._round_half_away(float(x_log2)))
    frac = np.float32(x_log2 - rounded)
    return bool(abs(frac) < np.float32(1e-3)), int(rounded)
