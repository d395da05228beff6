"""Integer quantization arithmetic, exactly as TFLite computes it.

Two things live here:
* how a real-valued scale becomes an integer (multiplier, shift) pair: `quantize_multiplier`, the same
  frexp/round steps as TFLite's QuantizeMultiplier, so the generated constants equal TFLite's;
* the two requantization roundings TFLite uses, in Python integers, for tests and constant folding.
  The firmware and the NPU model implement the same functions in C (edgesdk/kernels/edgesdk_arith.h).
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

ROUNDING_DOUBLE = "double"  # SaturatingRoundingDoublingHighMul + RoundingDivideByPOT (gemmlowp)
ROUNDING_SINGLE = "single"  # one rounding: (x * M + 2^(30-shift)) >> (31-shift)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real = M * 2^(shift - 31), M in [2^30, 2^31) (or 0).

    `real_multiplier` must already be the double TFLite computes, e.g.
    double(input_scale) * double(filter_scale) / double(output_scale) with float32 scales.
    """
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    q = _round_half_away(fraction * (1 << 31))
    if q == (1 << 31):
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return int(q), int(shift)


def quantize_multipliers(real_multipliers) -> tuple[list, list]:
    """quantize_multiplier of each value (e.g. one per output channel), vectorised: ([M], [shift]) as ints.

    np.frexp is math.frexp elementwise and the fraction * 2^31 product is exact, so every step is the scalar
    one: round half away from zero, 2^31 carried into the shift, (0, 0) for zero or a shift below -31."""
    real = np.asarray(real_multipliers, np.float64).reshape(-1)
    fraction, shift = np.frexp(real)
    scaled = fraction * float(1 << 31)
    positive = real.size > 0 and real.min() > 0  # every scale a requantization has (NaN fails the test)
    q = np.floor(scaled + 0.5) if positive else np.where(scaled >= 0, np.floor(scaled + 0.5), -np.floor(-scaled + 0.5))
    carry = q == float(1 << 31)
    if carry.any():  # (the steps below only where they change something: a few values, each step costs a pass)
        q, shift = np.where(carry, q / 2, q), shift + carry
    zero = (shift < -31) if positive else (real == 0.0) | (shift < -31)
    if zero.any():
        q, shift = np.where(zero, 0, q), np.where(zero, 0, shift)
    return q.astype(np.int64).tolist(), shift.astype(np.int64).tolist()


def clamp_shift_single_rounding(multiplier: int, shift: int) -> tuple[int, int]:
    """With TFLITE_SINGLE_ROUNDING, TFLite caps left shifts at 30 (multiplier saturates)."""
    if shift > 30:
        return INT32_MAX, 30
    return multiplier, shift


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def saturating_rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else (1 - (1 << 30))
    # C++ integer division truncates toward zero.
    return _trunc_div(ab + nudge, 1 << 31)


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def multiply_by_quantized_multiplier(x: int, multiplier: int, shift: int, rounding: str) -> int:
    """TFLite MultiplyByQuantizedMultiplier for a 32-bit accumulator, in either rounding."""
    if rounding == ROUNDING_SINGLE:
        multiplier, shift = clamp_shift_single_rounding(multiplier, shift)
        total_shift = 31 - shift
        result = (x * multiplier + (1 << (total_shift - 1))) >> total_shift
        return int(np.clip(result, INT32_MIN, INT32_MAX))
    left_shift = shift if shift > 0 else 0
    right_shift = 0 if shift > 0 else -shift
    shifted = _wrap_int32(x * (1 << left_shift))
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right_shift)


def _wrap_int32(x: int) -> int:
    return ((x + (1 << 31)) % (1 << 32)) - (1 << 31)


def effective_scale(*numerator_scales, denominator: float) -> float:
    """Product of float32 scales over a float32 scale, in double, the way TFLite kernels compute it."""
    value = 1.0
    for s in numerator_scales:
        value *= float(np.float32(s))
    return value / float(np.float32(denominator))


def activation_range(activation: str, scale: float, zero_point: int, qmin: int = -128, qmax: int = 127) -> tuple[int, int]:
    """TFLite CalculateActivationRangeQuantized for a fused activation on an int8 output."""

    def quantize(v: float) -> int:
        # TFLite divides in float32: zero_point + round(f / scale).
        return zero_point + _round_half_away(float(np.float32(v) / np.float32(scale)))

    if activation in (None, "NONE"):
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, quantize(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    raise ValueError(f"fused activation {activation}")
