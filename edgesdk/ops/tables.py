"""The 256-entry tables of LiteRT's reference int8 LOGISTIC and TANH (TFLite LUTPopulate<int8_t>).

TFLite builds them in float32 at prepare time: dequantize, apply expf/tanhf, multiply by 1/output_scale,
round half away from zero, add the zero point, clamp. We repeat every step in float32 and call the host
C library's expf/tanhf (what LiteRT itself calls), so the table matches byte for byte on the same libm.
"""

from __future__ import annotations

import ctypes
import math
from functools import lru_cache

import numpy as np

_f32 = np.float32


@lru_cache(maxsize=None)
def _libm():
    """The host C library's expf/tanhf, looked up on first use: find_library runs ldconfig (a child process,
    ~80 ms of CPU), which a build that computes no table must not pay for."""
    import ctypes.util

    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        for fn in (lib.expf, lib.tanhf):
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float]
        return lib
    except (OSError, AttributeError):
        return None



def expf(x) -> np.float32:
    if _libm() is not None:
        return _f32(_libm().expf(float(x)))
    return _f32(math.exp(float(x)))  # correctly rounded in double, then to float: same as glibc's expf


def tanhf(x) -> np.float32:
    if _libm() is not None:
        return _f32(_libm().tanhf(float(x)))
    return _f32(math.tanh(float(x)))


def _logistic(x: np.float32) -> np.float32:
    return _f32(_f32(1.0) / _f32(_f32(1.0) + expf(-x)))


def _roundf(v: np.float32) -> float:
    """roundf: halves away from zero (exact in double for float32 inputs)."""
    v = float(v)
    return math.copysign(math.floor(abs(v) + 0.5), v)


def tflite_lut(op_type: str, input_scale: float, input_zero_point: int, output_scale: float,
               output_zero_point: int) -> np.ndarray:
    """int8 table in TFLite's order: entry (uint8)x holds op(x)."""
    transform = _logistic if op_type == "LOGISTIC" else tanhf
    inverse_scale = _f32(_f32(1.0) / _f32(output_scale))
    table = np.zeros(256, dtype=np.int8)
    for val in range(-128, 128):
        dequantized = _f32(_f32(input_scale) * _f32(val - input_zero_point))
        rescaled = _roundf(_f32(transform(dequantized) * inverse_scale))
        quantized = int(_f32(_f32(rescaled) + _f32(output_zero_point)))
        table[val & 0xFF] = max(-128, min(127, quantized))
    return table
