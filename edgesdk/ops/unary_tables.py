"""Build-time tables of the single-input ops whose quantized reference kernels are table lookups.

TFLite builds these tables at prepare time in float32 (`LUTPopulate`, tflite/kernels/internal/common.h):

* int8: 256 entries, entry (uint8)x = clamp(round(f(s_in * (x - zp_in)) / s_out) + zp_out) in TFLite's order
  (EXP, LOG, ELU; LOGISTIC/TANH in edgesdk/ops/tables.py);
* int16: 513 entries sampling f over the whole input range, each corrected by half the interpolation error
  at the midpoint of its interval (`LUTPopulateInt16<float>`), read with linear interpolation (EXP, LOG,
  RSQRT).

Every step is repeated here in float32 (numpy float32 scalars round each operation like the C++ code), and f
calls the host C library's expf/logf/expm1f -- what LiteRT and TFLite Micro call on the same machine.
Integer-only int8 kernels that depend on the input byte alone (RSQRT, SQRT) are tabulated the same way from
the reference's own arithmetic.
"""

from __future__ import annotations

import ctypes
import math
from functools import lru_cache

import numpy as np

from ..ir import quant
from .tables import expf

_f32 = np.float32


@lru_cache(maxsize=None)
def _libm_functions():
    """logf/expm1f of the host C library, looked up on first use (find_library runs ldconfig)."""
    import ctypes.util

    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        functions = {}
        for fn in ("logf", "expm1f"):
            f = getattr(lib, fn)
            f.restype = ctypes.c_float
            f.argtypes = [ctypes.c_float]
            functions[fn] = f
        return functions
    except (OSError, AttributeError):
        return {}



def logf(x) -> np.float32:
    if "logf" in _libm_functions():
        return _f32(_libm_functions()["logf"](float(x)))
    return _f32(math.log(float(x)))


def expm1f(x) -> np.float32:
    if "expm1f" in _libm_functions():
        return _f32(_libm_functions()["expm1f"](float(x)))
    return _f32(math.expm1(float(x)))


def _roundf(v) -> float:
    """roundf: halves away from zero; infinities and NaN pass through (TfLiteRound on any float)."""
    v = float(v)
    if not math.isfinite(v):
        return v
    return math.copysign(math.floor(abs(v) + 0.5), v)


def sqrtf(x) -> np.float32:
    return np.sqrt(_f32(x))  # IEEE square root: correctly rounded everywhere


def _clamp(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


def lut_int8(transform, input_scale: float, input_zero_point: int, output_scale: float,
             output_zero_point: int) -> np.ndarray:
    """LUTPopulate<int8_t>: entry (uint8)x holds the quantized f(dequantized x)."""
    inverse_scale = _f32(_f32(1.0) / _f32(output_scale))
    table = np.zeros(256, dtype=np.int8)
    with np.errstate(all="ignore"):
        for val in range(-128, 128):
            dequantized = _f32(_f32(input_scale) * _f32(val - input_zero_point))
            rescaled = _roundf(_f32(_f32(transform(dequantized)) * inverse_scale))
            quantized = _float_to_int32(_f32(_f32(rescaled) + _f32(output_zero_point)))
            table[val & 0xFF] = _clamp(quantized, -128, 127)
    return table


def _float_to_int32(v: np.float32) -> int:
    """static_cast<int32_t>(float) on x86: truncation; NaN and out-of-range values give INT32_MIN."""
    v = float(v)
    if not -2147483648.0 <= v < 2147483648.0:
        return -(1 << 31)
    return int(v)


def lut_int16(transform, input_scale: float, input_zero_point: int, output_scale: float,
              output_zero_point: int) -> np.ndarray:
    """LUTPopulateInt16<float>: 513 entries over the input range, each biased by half the interpolation error
    at the midpoint of its interval."""
    f = _f32
    s_in, s_out = f(input_scale), f(output_scale)
    table = np.zeros(513, dtype=np.int16)
    with np.errstate(all="ignore"):
        input_min = f(s_in * f(-32768 - input_zero_point))
        input_max = f(s_in * f(32767 - input_zero_point))
        output_min = f(s_out * f(-32768 - output_zero_point))
        output_max = f(s_out * f(32767 - output_zero_point))
        step = f(f(input_max - input_min) / f(512))
        half_step = f(step / f(2))
        scaling_inv = f(f(65536) / f(output_max - output_min))

        def clamped(v) -> int:
            """static_cast<int16_t>(min(max(v, -32768), 32767)) on x86: a NaN survives the clamps and converts
            through int32's INT32_MIN, whose low 16 bits are 0."""
            v = _clamp(f(v), f(-32768), f(32767))
            return 0 if math.isnan(v) else int(v)

        for i in range(512):
            x = f(input_min + f(f(i) * step))
            val = f(transform(x))
            val_midpoint = f(transform(f(x + half_step)))
            val_next = f(transform(f(input_min + f(f(i + 1) * step))))
            sample_val = f(_roundf(f(val * scaling_inv)))
            midpoint_interp_val = f(_roundf(f(f(f(val_next * scaling_inv) + f(_roundf(f(val * scaling_inv)))) / f(2))))
            midpoint_val = f(_roundf(f(val_midpoint * scaling_inv)))
            midpoint_err = f(midpoint_interp_val - midpoint_val)
            bias = f(_roundf(f(midpoint_err / f(2))))
            table[i] = clamped(f(sample_val - bias))
        table[512] = clamped(f(_roundf(f(f(transform(input_max)) * scaling_inv))))
    return table


# -- the transforms of the ops (what TFLite's prepare passes to LUTPopulate) ----------------------------------

def exp_transform(value):
    return expf(value)


def log_transform(dtype: str, output_scale: float, output_zero_point: int):
    """LogLUTPrepare: log(x), and the output's lowest real value for x <= 0."""
    lowest = -128 if dtype == "int8" else -32768
    output_min = _f32(_f32(lowest - output_zero_point) * _f32(output_scale))

    def transform(value):
        return output_min if value <= _f32(0.0) else logf(value)
    return transform


def rsqrt_int16_transform(output_scale: float):
    """RSQRT's int16 table: 1 / sqrt(x), and 32767 output steps for x <= 0."""
    largest = _f32(_f32(32767) * _f32(output_scale))

    def transform(value):
        return largest if value <= _f32(0.0) else _f32(_f32(1.0) / sqrtf(value))
    return transform


def elu_transform(mode: str):
    """ELU's int8 table: TFLite Micro computes exp(x) - 1 in float32 for x < 0, LiteRT's ELU kernel expm1(x)."""
    def transform(value):
        if not value < _f32(0.0):
            return value
        return _f32(expf(value) - _f32(1.0)) if mode == "tflm" else expm1f(value)
    return transform


# -- int8 kernels of integer or float arithmetic that depend on the input byte alone ---------------------------

def sqrt_int8_table(input_scale: float, input_zero_point: int, output_scale: float, output_zero_point: int):
    """LiteRT's SqrtEvalQuantized for every int8 input: trunc(sqrt(s_in * (x - zp_in)) / s_out) + zp_out in
    float32, clamped. LiteRT fails the invocation on a negative input; edgesdk gives the output zero point."""
    table = np.zeros(256, dtype=np.int8)
    with np.errstate(all="ignore"):
        for val in range(-128, 128):
            dequantized = _f32(_f32(input_scale) * _f32(val - input_zero_point))
            if dequantized < 0:
                dequantized = _f32(0.0)
            q = _float_to_int32(_f32(sqrtf(dequantized) / _f32(output_scale)))
            table[val & 0xFF] = _clamp(_wrap32(q + output_zero_point), -128, 127)
    return table


def _wrap32(v: int) -> int:
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _fp_mul(a: int, b: int) -> int:
    return quant.saturating_rounding_doubling_high_mul(a, b)


def _rescale_pot(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT for int32 raw values."""
    if exponent >= 0:
        limit_hi = (1 << (31 - exponent)) - 1 if exponent > 0 else (1 << 31) - 1
        if exponent == 0:
            return x
        if x > limit_hi:
            return (1 << 31) - 1
        if x < -limit_hi:
            return -(1 << 31)
        return x << exponent
    return quant.rounding_divide_by_pot(x, -exponent)


def inv_sqrt_multiplier_exp(value: int) -> tuple:
    """TFLite GetInvSqrtQuantizedMultiplierExp(value, kReverseShift): 1/sqrt(value) as (multiplier, shift),
    by Newton-Raphson in gemmlowp fixed point (Q3 iterate, five steps)."""
    if value <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while value >= (1 << 29):
        value //= 4
        shift += 1
    leading_zeros = 32 - value.bit_length()
    left_shift_bit_pairs = (leading_zeros - 1) // 2 - 1
    shift -= left_shift_bit_pairs
    value <<= 2 * left_shift_bit_pairs
    # Q3 arithmetic: raw r represents r / 2^28
    q3_input = value >> 1
    half_input = _rescale_pot(q3_input, -1)
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28  # F3::One()
    for _ in range(5):
        # x * x * x: Q3*Q3 -> Q6, *Q3 -> Q9; Rescale<3>: Q9 -> Q3 (a left shift by 6, saturating)
        x3 = _rescale_pot(_fp_mul(_fp_mul(x, x), x), 6)
        # half_three * x: Q3*Q3 -> Q6; half_input * x3 -> Q6; difference Q6; Rescale<3>: Q6 -> Q3 (shift 3)
        x = _rescale_pot(_wrap32(_fp_mul(half_three, x) - _fp_mul(half_input, x3)), 3)
    half_sqrt_2 = 1518500250  # Q0
    x = _fp_mul(x, half_sqrt_2)  # Q3 * Q0 -> Q3
    if shift < 0:
        x = _wrap32(x << -shift)
        shift = 0
    return x, -shift


def rsqrt_int8_table(input_zero_point: int, output_zero_point: int, multiplier: int, shift: int) -> np.ndarray:
    """LiteRT's and TFLite Micro's int8 RSQRT for every input: 1/sqrt(x - zp_in) in fixed point, rescaled by
    1 / (sqrt(s_in) * s_out). Inputs below the zero point (where TFLite fails the invocation) give the
    largest output, like x = zp_in."""
    k_shift = 20
    table = np.zeros(256, dtype=np.int8)
    for val in range(-128, 128):
        value = val - input_zero_point
        if value <= 0:
            out = 127
        else:
            inv_multiplier, inv_shift = inv_sqrt_multiplier_exp(value)
            data = quant.multiply_by_quantized_multiplier(1, inv_multiplier, inv_shift + k_shift, "double")
            out = quant.multiply_by_quantized_multiplier(data, multiplier, shift - k_shift, "double") + output_zero_point
        table[val & 0xFF] = _clamp(out, -128, 127)
    return table
