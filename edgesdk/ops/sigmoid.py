"""LOGISTIC and TANH.

LiteRT's reference int8 kernels look the result up in a 256-entry table built in float32 at prepare time
(edgesdk/ops/tables.py, rounding "lut"); TFLite Micro computes in gemmlowp fixed point on the input rescaled to
Q4.27 (rounding "double"). Build-time data: the table, or the input multiplier, shift and range radius."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import quant
from ..ir.rounding import ROUNDING_LUT
from . import ort
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


def sigmoid_input_rescale(input_scale: float) -> tuple:
    """(multiplier, left shift) scaling a LOGISTIC/TANH input into Q4.27, as TFLite Micro: frexp, not
    QuantizeMultiplier (no fix-up when the fraction rounds to 2^31; x86 turns that into INT32_MIN)."""
    real = float(np.float32(input_scale)) * float(1 << (31 - INPUT_INTEGER_BITS))
    fraction, left_shift = np.frexp(real)
    multiplier = quant._round_half_away(float(fraction) * float(1 << 31))
    if multiplier == 1 << 31:  # static_cast<int32_t>(2^31) on x86 gives INT32_MIN; kept identical
        multiplier = -(1 << 31)
    return multiplier, int(left_shift)


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
            return ort.table_data(op)
        rounding = rounding_of(op, mode)
        x_scale, x_zp = float(x.quant.scale[0]), int(x.quant.zero_point[0])
        multiplier, left_shift = sigmoid_input_rescale(x_scale)
        radius = input_radius(INPUT_INTEGER_BITS, left_shift) if left_shift >= 0 else 0
        table = None
        if rounding == ROUNDING_LUT:
            table = tflite_lut(op.type, x_scale, x_zp, float(y.quant.scale[0]), int(y.quant.zero_point[0]))
        return SigmoidData(rounding, table, x_zp, multiplier, left_shift, radius)
