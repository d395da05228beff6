"""LOGISTIC and TANH.

int8: LiteRT's reference kernels look the result up in a 256-entry table built in float32 at prepare time
(edgesdk/ops/tables.py, rounding "lut"); TFLite Micro computes in gemmlowp fixed point on the input rescaled to
Q4.27 (rounding "double"). Build-time data: the table, or the input multiplier, shift and range radius.

int16 (both references, the same code): the input is rescaled to 1/(3 * 4096) units by an integer multiplier
and shift (none for a power-of-two scale) and sigmoid is interpolated in a 256-entry table
(edgesdk/kernels/edgesdk_sigmoid16.c). Build-time data: that multiplier and shift."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from ..ir.rounding import ROUNDING_LUT
from . import fixedpoint
from .base import OpDef, Operands, require_same_elements, rounding_of
from . import register
from .softmax import input_radius
from .tables import tflite_lut

INPUT_INTEGER_BITS = 4  # TFLite Micro's LOGISTIC/TANH work on the input in Q4.27


@dataclass(frozen=True)
class SigmoidData:
    rounding: str
    table: np.ndarray | None  # "lut": entry (uint8)x holds op(x)
    input_zero_point: int
    input_multiplier: int
    input_left_shift: int
    input_range_radius: int
    int16_multiplier: int = 0  # int16: 0 for a power-of-two input scale
    int16_left_shift: int = 0


def checked_log2(x: float) -> tuple:
    """TFLite CheckedLog2 in float32 (logf(x) * (1 / logf(2))): (rounded log2, whether x is a power of two
    within 1e-3 in log2)."""
    from .unary_tables import _roundf, logf

    f32 = np.float32
    x_log2 = f32(logf(f32(x)) * f32(f32(1.0) / logf(f32(2.0))))
    if not np.isfinite(x_log2):  # a zero, infinite or NaN scale: no power of two
        return 0, False
    rounded = f32(_roundf(x_log2))
    return int(rounded), bool(abs(f32(x_log2 - rounded)) < f32(1e-3))


def sigmoid16_input_rescale(op_type: str, input_scale: float) -> tuple:
    """(multiplier, left shift) of the int16 LOGISTIC/TANH input (SigmoidPrepare / TanhPrepare for int16):
    a power-of-two scale with the shift TFLite allows keeps multiplier 0, any other scale gets
    int(s_in * 3 * 4096 * 2^k) with the smallest k that brings it above 32767 / 2."""
    log2_rounded, pot = checked_log2(input_scale)
    left_shift = (15 - 3) + log2_rounded
    pot = pot and (left_shift == 0 or (op_type == "TANH" and left_shift == 1))
    if pot:
        return 0, left_shift
    multiplier = float(np.float32(input_scale)) * 4096.0 * 3.0
    left_shift = 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    return int(multiplier), left_shift


def sigmoid_input_rescale(input_scale: float) -> tuple:
    """(multiplier, left shift) scaling a LOGISTIC/TANH input into Q4.27, as TFLite Micro: frexp, not
    QuantizeMultiplier (no fix-up when the fraction rounds to 2^31; x86 turns that into INT32_MIN)."""
    real = float(np.float32(input_scale)) * float(1 << (31 - INPUT_INTEGER_BITS))
    fraction, left_shift = np.frexp(real)
    multiplier = quant._round_half_away(float(fraction) * float(1 << 31))
    if multiplier == 1 << 31:  # static_cast<int32_t>(2^31) on x86 gives INT32_MIN; kept identical
        multiplier = -(1 << 31)
    return multiplier, int(left_shift)


def fixed_point_table(op_type: str, input_zero_point: int, input_multiplier: int, input_left_shift: int,
                      rounding: str) -> np.ndarray:
    """TFLite Micro's int8 LOGISTIC/TANH (reference_integer_ops::Logistic / Tanh, edgesdk_logistic_s8 and
    edgesdk_tanh_s8) for every input, as 256 int8 entries in TFLite's order (entry (uint8)x holds op(x)): the
    input minus its zero point rescaled to Q4.27 in the op's rounding, the function in Q0.31, the result shifted
    to the fixed int8 output (logistic: scale 1/256, zero point -128; tanh: 1/128, 0)."""
    radius = input_radius(INPUT_INTEGER_BITS, input_left_shift) if input_left_shift >= 0 else 0
    function, output_bits, output_offset = ((fixedpoint.logistic, 8, -128) if op_type == "LOGISTIC"
                                            else (fixedpoint.tanh, 7, 0))
    table = np.zeros(256, np.int8)
    for code in range(-128, 128):
        x = code - input_zero_point
        if x <= -radius:
            y = -128
        elif x >= radius:
            y = 127
        else:
            x_q4 = quant.multiply_by_quantized_multiplier(x, input_multiplier, input_left_shift, rounding)
            y_q0 = function(x_q4, INPUT_INTEGER_BITS)
            y = min(max(quant.rounding_divide_by_pot(y_q0, 31 - output_bits) + output_offset, -128), 127)
        table[code & 0xFF] = y
    return table


@register
class Sigmoid(OpDef):
    types = ("LOGISTIC", "TANH")
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)

    def prepare(self, op, mode: str) -> SigmoidData | None:
        x, y = op.inputs[0], op.outputs[0]
        if x.quant is None or y.quant is None:
            return None
        if str(mode) == "ort" and op.type == "LOGISTIC":  # QLinearSigmoid's table
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.table_data(op)
        rounding = rounding_of(op, mode)
        if x.dtype == "int16":
            multiplier, left_shift = sigmoid16_input_rescale(op.type, float(x.quant.scale[0]))
            return SigmoidData("double", None, int(x.quant.zero_point[0]), 0, 0, 0, multiplier, left_shift)
        x_scale, x_zp = float(x.quant.scale[0]), int(x.quant.zero_point[0])
        multiplier, left_shift = sigmoid_input_rescale(x_scale)
        radius = input_radius(INPUT_INTEGER_BITS, left_shift) if left_shift >= 0 else 0
        table = None
        if rounding == ROUNDING_LUT:
            table = tflite_lut(op.type, x_scale, x_zp, float(y.quant.scale[0]), int(y.quant.zero_point[0]))
        return SigmoidData(rounding, table, x_zp, multiplier, left_shift, radius)
