"""Single-input elementwise ops: ABS, NEG, SQUARE, SQRT, RSQRT, EXP, LOG, SIN, COS, FLOOR, CEIL, ROUND, ELU,
LEAKY_RELU, ZEROS_LIKE, CAST.

Build-time data, per the reference kernels' Prepare (LiteRT tflite/kernels/elementwise.cc, exp.cc,
activations.cc; TFLite Micro's counterparts):

* ABS (int8/int16): the rescaling s_in / s_out (a float32 division) when the scales differ;
* RSQRT: int8 a 256-entry table of the reference's fixed-point 1/sqrt (multiplier 1 / (sqrt(s_in) * s_out)),
  int16 LiteRT's 513-entry interpolated table;
* SQRT: int8 a 256-entry table of LiteRT's float32 arithmetic (int16 computes it per element);
* EXP, LOG: LiteRT's 256-entry (int8) and 513-entry (int16) tables, built in float32 with the host's libm;
* ELU (int8): TFLite Micro's table (exp(x) - 1) or LiteRT's ELU kernel's (expm1(x));
* LEAKY_RELU (int8/int16): the two rescalings alpha * s_in / s_out and s_in / s_out (float32 arithmetic);
* CAST: nothing (the element types); float -> integer saturates, NaN becomes the maximum in LiteRT and 0 in
  TFLite Micro.

Float32 versions compute per element (edgesdk/kernels/edgesdk_unary.c, edgesdk_mathf.c).
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from . import register
from .base import OpDef, Operands, op_error, require_same_elements, rounding_of
from . import unary_tables as tables

QUANTIZED = ("int8", "int16")


def _quantized(t) -> bool:
    return t.dtype in QUANTIZED and t.quant is not None and t.quant.scale.size >= 1


def _scale_zp(t) -> tuple:
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


class _Elementwise(OpDef):
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)


@dataclass(frozen=True)
class TableData:
    """A lookup table: int8[256] in TFLite's order (entry (uint8)x) or int16[513] (interpolated)."""

    table: np.ndarray


def scale_ratio(mode: str, *factors, denominator: float) -> float:
    """The real multiplier product(factors) / denominator as each reference's Prepare derives it: LiteRT in
    float32 (ABS, LEAKY_RELU), TFLite Micro in double (measured: its int16 ABS and LEAKY_RELU match only
    the double multiplier; for int8 the two never differed)."""
    if str(mode) == "tflm":
        return quant.effective_scale(*factors, denominator=denominator)
    value = np.float32(1.0)
    for factor in factors:
        value = np.float32(value * np.float32(factor))
    return float(np.float32(value / np.float32(denominator)))


@dataclass(frozen=True)
class AbsData:
    input_zero_point: int
    output_zero_point: int
    needs_rescale: bool
    multiplier: int
    shift: int
    rounding: str


@register
class Abs(_Elementwise):
    types = ("ABS",)

    def prepare(self, op, mode: str) -> AbsData | None:
        x, y = op.inputs[0], op.outputs[0]
        if not (_quantized(x) and _quantized(y)):
            return None
        (s_in, zp_in), (s_out, zp_out) = _scale_zp(x), _scale_zp(y)
        needs_rescale = np.float32(s_in) != np.float32(s_out)
        m, s = quant.quantize_multiplier(scale_ratio(mode, s_in, denominator=s_out)) if needs_rescale else (0, 0)
        return AbsData(zp_in, zp_out, bool(needs_rescale), m, s, rounding_of(op, mode))


@register
class FloatOnly(_Elementwise):
    """Ops TFLite runs in float32 only (NEG also on int32/int64): no build-time data."""

    types = ("NEG", "SQUARE", "FLOOR", "CEIL", "ROUND", "SIN", "COS")


@register
class Sqrt(_Elementwise):
    types = ("SQRT",)

    def prepare(self, op, mode: str) -> TableData | None:
        x, y = op.inputs[0], op.outputs[0]
        if x.dtype != "int8" or not (_quantized(x) and _quantized(y)):
            return None
        return TableData(tables.sqrt_int8_table(*_scale_zp(x), *_scale_zp(y)))


def rsqrt_multiplier(input_scale: float, output_scale: float, mode: str = "ref") -> tuple:
    """SetRsqrtOutputMultiplier: QuantizeMultiplier(1. / (sqrtf(s_in) * s_out)), the product in float32 (LiteRT)
    or in double (TFLite Micro, measured on int16)."""
    f32 = np.float32
    if str(mode) == "tflm":
        return quant.quantize_multiplier(1.0 / (float(np.sqrt(float(f32(input_scale)))) * float(f32(output_scale))))
    product = f32(tables.sqrtf(f32(input_scale)) * f32(output_scale))
    return quant.quantize_multiplier(1.0 / float(product))


@dataclass(frozen=True)
class RsqrtFixedPointData:
    """TFLite Micro's int16 RSQRT: the int8 fixed-point algorithm per element (too many inputs for a table)."""

    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    rounding: str


@register
class Rsqrt(_Elementwise):
    types = ("RSQRT",)

    def prepare(self, op, mode: str) -> TableData | RsqrtFixedPointData | None:
        x, y = op.inputs[0], op.outputs[0]
        if not (_quantized(x) and _quantized(y)):
            return None
        (s_in, zp_in), (s_out, zp_out) = _scale_zp(x), _scale_zp(y)
        m, s = rsqrt_multiplier(s_in, s_out, mode)
        if x.dtype == "int16":
            if str(mode) == "tflm":  # TFLite Micro runs its int8 fixed-point code on int16 too
                return RsqrtFixedPointData(zp_in, zp_out, m, s, rounding_of(op, mode))
            return TableData(tables.lut_int16(tables.rsqrt_int16_transform(s_out), s_in, zp_in, s_out, zp_out))
        return TableData(tables.rsqrt_int8_table(zp_in, zp_out, m, s))


@register
class ExpLog(_Elementwise):
    types = ("EXP", "LOG")

    def prepare(self, op, mode: str) -> TableData | None:
        x, y = op.inputs[0], op.outputs[0]
        if not (_quantized(x) and _quantized(y)):
            return None
        (s_in, zp_in), (s_out, zp_out) = _scale_zp(x), _scale_zp(y)
        transform = tables.exp_transform if op.type == "EXP" else tables.log_transform(x.dtype, s_out, zp_out)
        build = tables.lut_int8 if x.dtype == "int8" else tables.lut_int16
        return TableData(build(transform, s_in, zp_in, s_out, zp_out))


@register
class Elu(_Elementwise):
    types = ("ELU",)

    def prepare(self, op, mode: str) -> TableData | None:
        x, y = op.inputs[0], op.outputs[0]
        if x.dtype != "int8" or not (_quantized(x) and _quantized(y)):
            return None
        return TableData(tables.lut_int8(tables.elu_transform(str(mode)), *_scale_zp(x), *_scale_zp(y)))


@dataclass(frozen=True)
class LeakyReluData:
    alpha: float
    input_zero_point: int
    output_zero_point: int
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int  # of |alpha| * s_in / s_out
    alpha_shift: int
    alpha_negative: bool
    rounding: str


@register
class LeakyRelu(_Elementwise):
    types = ("LEAKY_RELU",)
    options = "LeakyReluOptions"

    def attributes(self, op, options: dict) -> dict:
        alpha = float(np.float32(options.get("alpha", 0.0)))
        if not np.isfinite(alpha):
            raise op_error(op, f"has alpha {alpha}")
        return {"alpha": alpha}

    def prepare(self, op, mode: str) -> LeakyReluData | None:
        x, y = op.inputs[0], op.outputs[0]
        alpha = op.attrs.get("alpha", 0.0)
        if not (_quantized(x) and _quantized(y)):
            return LeakyReluData(alpha, 0, 0, 0, 0, 0, 0, False, "double")
        (s_in, zp_in), (s_out, zp_out) = _scale_zp(x), _scale_zp(y)
        # LeakyReluPrepare: input_scale * alpha / output_scale and input_scale / output_scale
        m_alpha, s_alpha = quant.quantize_multiplier(scale_ratio(mode, s_in, alpha, denominator=s_out))
        m_id, s_id = quant.quantize_multiplier(scale_ratio(mode, s_in, denominator=s_out))
        negative = m_alpha < 0
        return LeakyReluData(alpha, zp_in, zp_out, m_id, s_id, -m_alpha if negative else m_alpha, s_alpha, negative,
                             rounding_of(op, mode))


@register
class ZerosLike(_Elementwise):
    types = ("ZEROS_LIKE",)

    def fold(self, op):
        """Zeros of the output's static shape and type, whatever the input holds (edgesdk/ops/folding.py)."""
        from ..importer.tflite_importer import NUMPY_TYPES

        y = op.outputs[0]
        return [np.zeros(y.shape, dtype=NUMPY_TYPES[y.dtype])]


@register
class Cast(_Elementwise):
    types = ("CAST",)
    options = "CastOptions"
