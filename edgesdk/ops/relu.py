"""RELU, RELU6, RELU_N1_TO_1 (and RELU_0_TO_1): requantize to the output scale, then clamp.

Build-time data: the requantization of s_in / s_out (float32 division in LiteRT, double in TFLite Micro) and the
clamp range. TFLite Micro's RELU6 does not requantize at all: it clamps the input bytes to [zp, zp + round(6 /
s_in)] of the input quantization (measured; docs/rounding.md)."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from ..ir.rounding import relu_effective_scale
from .base import OpDef, Operands, dtype_range, require_same_elements, rounding_of
from . import register

RELU_RANGES = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}


@dataclass(frozen=True)
class ReluData:
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int
    rounding: str
    clamp_only: bool  # TFLite Micro's RELU6: no requantization


def relu_range(op_type: str, scale: float, zero_point: int, qmin: int = -128, qmax: int = 127) -> tuple:
    """QuantizedReluX's clamp: zp + round(limit / scale) in float32, within the type's range."""
    lo, hi = RELU_RANGES[op_type]

    def q(v):
        return zero_point + quant._round_half_away(float(np.float32(v) / np.float32(scale)))

    return max(qmin, q(lo)), qmax if hi is None else min(qmax, q(hi))


@register
class Relu(OpDef):
    types = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)

    def prepare(self, op, mode: str) -> ReluData | None:
        x, y = op.inputs[0], op.outputs[0]
        if x.quant is None or y.quant is None or x.dtype not in ("int8", "int16"):
            return None
        if str(mode) == "ort" and x.dtype == y.dtype == "int8":  # float Relu/Clip between DQ and Q: a table
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.table_data(op)
        qmin, qmax = dtype_range(y.dtype)
        rounding = rounding_of(op, mode)
        x_zp, x_scale = int(x.quant.zero_point[0]), float(x.quant.scale[0])
        if mode == "tflm" and op.type == "RELU6":
            six = x_zp + quant._round_half_away(float(np.float32(6.0) / np.float32(x_scale)))
            return ReluData(0, 0, 1 << 30, 1, max(qmin, x_zp), max(qmin, min(qmax, six)), rounding, True)
        m, s = quant.quantize_multiplier(relu_effective_scale(op, mode))
        act_min, act_max = relu_range(op.type, float(y.quant.scale[0]), int(y.quant.zero_point[0]), qmin, qmax)
        return ReluData(x_zp, int(y.quant.zero_point[0]), m, s, act_min, act_max, rounding, False)
