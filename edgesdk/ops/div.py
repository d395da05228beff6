"""DIV: elementwise quotient with broadcasting and a fused activation.

Build-time data, int8 (TFLite's DivPrepare; the same in LiteRT and TFLite Micro): the output multiplier of
s_a / (s_b * s_y), computed in float32 and widened to double. The kernel divides through gemmlowp's reciprocal
(GetReciprocal) per element. float32 and int32: the fused activation's clamp (`PlainData`).
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .activation import activation_range
from .base import OpDef, Operands, fused_activation, rounding_of
from . import register
from .binary import ScaledData, plain_data, quantized
from .broadcast import require_broadcast


@dataclass(frozen=True)
class DivData(ScaledData):
    pass


@register
class Div(OpDef):
    types = ("DIV",)
    operands = Operands(inputs=("input1", "input2"))
    options = "DivOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"activation": fused_activation(op, options)}

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str):
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if y.dtype in ("float32", "int32"):
            return plain_data(op)
        if not quantized(op):
            return None
        sa, sb, sy = (np.float32(t.quant.scale[0]) for t in (a, b, y))
        m, s = quant.quantize_multiplier(float(np.float32(sa / np.float32(sb * sy))))
        act_min, act_max = activation_range(op)
        return DivData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), int(y.quant.zero_point[0]), m, s,
                       act_min, act_max, rounding_of(op, mode))
