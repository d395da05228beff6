"""SOFTMAX over the last axis.

Build-time data:
* int8 (SoftmaxPrepare / PreprocessSoftmaxScaling / CalculateInputRadius): the input difference multiplier and
  left shift into Q5.26 and diff_min, below which exp() is taken as 0;
* int16 (SoftmaxPrepare / CalculateSoftmaxParams): the multiplier scaling an input difference so that
  [-65535, 0] covers [-10, 0], and the two 513-entry tables of exp(x) on [-10, 0] and 1/(1 + x) on [0, 1]
  (LUTPopulate<int16_t>). LiteRT builds them in double, TFLite Micro in float32 with expf, and LiteRT forms
  input_scale * beta in float32 where TFLite Micro uses double: the tables and the multiplier follow the mode;
* float32: beta.
"""

from __future__ import annotations

import math

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, op_error, require_same_elements, rounding_of
from .tables import expf
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


@dataclass(frozen=True)
class Softmax16Data:
    rows: int
    depth: int
    input_multiplier: int
    input_shift: int  # MultiplyByQuantizedMultiplier's shift (left when positive)
    exp_table: np.ndarray  # int16[513]: exp(x) for x in [-10, 0], Q0.15
    reciprocal_table: np.ndarray  # int16[513]: 1 / (1 + x) for x in [0, 1], Q0.15
    rounding: str


@dataclass(frozen=True)
class SoftmaxFloatData:
    rows: int
    depth: int
    beta: float


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


def _round_half_away(v) -> float:
    """std::round / roundf: halves away from zero (exact for float32 and double inputs)."""
    v = float(v)
    return math.copysign(math.floor(abs(v) + 0.5), v) if abs(v) < 2.0 ** 52 else v


def lut_populate_int16(input_scale, input_zero_point: int, output_scale, output_zero_point: int, transform,
                       ftype) -> np.ndarray:
    """TFLite's LUTPopulateInt16<FloatT> with FloatT = `ftype` (np.float64 or np.float32), every operation
    rounded to that type as C++ does: 512 samples of `transform` over the input range, each biased by half
    the error of linear interpolation at the midpoint, and the end point."""
    f = ftype
    input_min = f(f(input_scale) * f(-32768 - input_zero_point))
    input_max = f(f(input_scale) * f(32767 - input_zero_point))
    output_min = f(f(output_scale) * f(-32768 - output_zero_point))
    output_max = f(f(output_scale) * f(32767 - output_zero_point))
    nb_steps = 512
    step = f((input_max - input_min) / f(nb_steps))
    half_step = f(step / f(2))
    scaling_inv = f(f(65536) / f(output_max - output_min))
    table = np.zeros(nb_steps + 1, dtype=np.int16)

    def clamp(v: float) -> int:
        return int(min(max(v, -32768.0), 32767.0))

    for i in range(nb_steps):
        x = f(input_min + f(f(i) * step))
        val = f(transform(x))
        val_midpoint = f(transform(f(x + half_step)))
        val_next = f(transform(f(input_min + f(f(i + 1) * step))))
        sample_val = f(_round_half_away(f(val * scaling_inv)))
        midpoint_interp_val = f(_round_half_away(f(f(f(val_next * scaling_inv) + sample_val) / f(2))))
        midpoint_val = f(_round_half_away(f(val_midpoint * scaling_inv)))
        midpoint_err = f(midpoint_interp_val - midpoint_val)
        bias = f(_round_half_away(f(midpoint_err / f(2))))
        table[i] = clamp(float(f(sample_val - bias)))
    table[nb_steps] = clamp(_round_half_away(f(f(transform(input_max)) * scaling_inv)))
    return table


def softmax16_tables(mode: str) -> tuple:
    """(exp table, 1/(1+x) table) of the int16 softmax as the reference of `mode` builds them."""
    key = "tflm" if str(mode) == "tflm" else "ref"
    if key not in _TABLES:
        range_ = 65535
        if key == "ref":  # LiteRT: double, std::exp(double)
            f64 = np.float64
            exp_table = lut_populate_int16(10.0 / range_, 32767, 2.0 / range_, 0, lambda v: math.exp(float(v)), f64)
            reciprocal = lut_populate_int16(1.0 / range_, -32768, 2.0 / range_, 0,
                                            lambda v: 1.0 / (1.0 + float(v)), f64)
        else:  # TFLite Micro: float32, expf
            f32 = np.float32
            exp_table = lut_populate_int16(f32(10.0) / f32(range_), 32767, f32(2.0) / f32(range_), 0, expf, f32)
            reciprocal = lut_populate_int16(f32(1.0) / f32(range_), -32768, f32(2.0) / f32(range_), 0,
                                            lambda v: f32(1.0) / f32(f32(1.0) + f32(v)), f32)
        _TABLES[key] = (exp_table, reciprocal)
    return _TABLES[key]


_TABLES: dict = {}


def softmax16_input_rescale(input_scale: float, beta: float, mode: str) -> tuple:
    """(multiplier, shift) scaling an int16 input difference so that [-65535, 0] covers [-10, 0]: LiteRT forms
    input_scale * beta in float32, TFLite Micro in double."""
    if str(mode) == "tflm":
        product = float(np.float32(input_scale)) * float(np.float32(beta))
    else:
        product = float(np.float32(np.float32(input_scale) * np.float32(beta)))
    return quant.quantize_multiplier(product / (10.0 / 65535.0))


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

    def prepare(self, op, mode: str):
        x = op.inputs[0]
        depth = int(x.shape[-1])
        rows = x.num_elements // max(depth, 1)
        if x.dtype == "float32":
            return SoftmaxFloatData(rows, depth, op.attrs["beta"])
        if x.quant is None or op.attrs["beta"] <= 0:
            return None
        if x.dtype == "int16":
            m, shift = softmax16_input_rescale(float(x.quant.scale[0]), op.attrs["beta"], mode)
            exp_table, reciprocal = softmax16_tables(mode)
            return Softmax16Data(rows, depth, m, shift, exp_table, reciprocal, rounding_of(op, mode))
        rounding = rounding_of(op, mode)
        m, shift = softmax_input_rescale(float(x.quant.scale[0]), op.attrs["beta"], rounding)
        if shift < 0:
            return None  # constraint: the input scale is too small (edgesdk/targets/*/supported)
        depth = int(x.shape[-1])
        m, shift, diff_min = softmax_constants(float(x.quant.scale[0]), op.attrs["beta"], rounding)
        return SoftmaxData(x.num_elements // depth, depth, m, shift, diff_min, rounding)
