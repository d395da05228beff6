"""PRELU: x >= 0 ? x : alpha * x, with alpha broadcast to the input's shape.

Build-time data, quantized (TFLite's PreluPrepare / CalculatePreluParams): two output multipliers,
s_x / s_y for the non-negative side and s_x * s_alpha / s_y for the negative side (float32 arithmetic in
LiteRT, double in TFLite Micro: docs/rounding.md). float32 needs no data.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, dtype_range, op_error, rounding_of
from . import register
from .binary import quantized
from .broadcast import broadcasts_to


@dataclass(frozen=True)
class PreluData:
    input_offset: int
    alpha_offset: int
    output_offset: int
    output_multiplier_1: int
    output_shift_1: int
    output_multiplier_2: int
    output_shift_2: int
    act_min: int
    act_max: int
    rounding: str


def prelu_effective_scales(op, mode: str) -> tuple:
    """(s_x / s_y, s_x * s_alpha / s_y): float32 arithmetic in LiteRT (activations.cc), double in TFLite Micro."""
    x, alpha, y = op.inputs[0], op.inputs[1], op.outputs[0]
    sx, sa, sy = (np.float32(t.quant.scale[0]) for t in (x, alpha, y))
    if str(mode) == "tflm":
        return float(sx) / float(sy), float(sx) * float(sa) / float(sy)
    return float(np.float32(sx / sy)), float(np.float32(np.float32(sx * sa) / sy))


@register
class Prelu(OpDef):
    types = ("PRELU",)
    operands = Operands(inputs=("input", "alpha"))

    def check(self, op) -> None:
        x, alpha, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if tuple(x.shape) != tuple(y.shape) or not broadcasts_to([tuple(x.shape), tuple(alpha.shape)], tuple(y.shape)):
            raise op_error(op, f"alpha {list(alpha.shape)} does not broadcast to the input {list(x.shape)} "
                               f"(output {list(y.shape)})")

    def prepare(self, op, mode: str):
        x, alpha, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if y.dtype not in ("int8", "int16") or not quantized(op):
            return None
        (m1, s1), (m2, s2) = (quant.quantize_multiplier(r) for r in prelu_effective_scales(op, mode))
        qmin, qmax = dtype_range(y.dtype)
        return PreluData(-int(x.quant.zero_point[0]), -int(alpha.quant.zero_point[0]), int(y.quant.zero_point[0]),
                         m1, s1, m2, s2, qmin, qmax, rounding_of(op, mode))
