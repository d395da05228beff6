"""HARD_SWISH: x * relu6(x + 3) / 6 in TFLite's 16-bit fixed point (HardSwishPrepare's multipliers)."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, require_same_elements
from . import register


@dataclass(frozen=True)
class HardSwishData:
    input_zero_point: int
    output_zero_point: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int


def _down_scale_int16(m: int) -> int:
    """TFLite DownScaleInt32ToInt16Multiplier."""
    if m >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1
    return (m + (1 << 15)) >> 16


def hard_swish_constants(input_scale: float, output_scale: float) -> dict:
    """HardSwishPrepare's 16-bit multipliers (float32 arithmetic, as TFLite)."""
    f32 = np.float32
    hires_input_scale = f32(f32(1.0) / f32(128.0)) * f32(input_scale)
    reluish_scale = f32(3.0) / f32(32768.0)
    m_out, e_out = quant.quantize_multiplier(float(f32(hires_input_scale / f32(output_scale))))
    m_rel, e_rel = quant.quantize_multiplier(float(f32(hires_input_scale / reluish_scale)))
    return {"output_multiplier_fixedpoint_int16": _down_scale_int16(m_out), "output_multiplier_exponent": e_out,
            "reluish_multiplier_fixedpoint_int16": _down_scale_int16(m_rel), "reluish_multiplier_exponent": e_rel}


@register
class HardSwish(OpDef):
    types = ("HARD_SWISH",)
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)

    def prepare(self, op, mode: str) -> HardSwishData | None:
        x, y = op.inputs[0], op.outputs[0]
        if x.quant is None or y.quant is None:
            return None
        consts = hard_swish_constants(float(x.quant.scale[0]), float(y.quant.scale[0]))
        return HardSwishData(int(x.quant.zero_point[0]), int(y.quant.zero_point[0]), **consts)
