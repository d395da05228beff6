"""SQUARED_DIFFERENCE: (a - b)^2 elementwise with broadcasting.

Build-time data, quantized (TFLite's Prepare): both inputs are rescaled to twice the larger input scale with
`left_shift` bits of headroom (7 for int8, 0 for int16), subtracted, squared, and the square requantized with
(2 max(s_a, s_b))^2 / (2^(2 left_shift) s_y). LiteRT runs int8 only (it rejects int16); TFLite Micro runs both.
float32 and int32 need no data.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, dtype_range, rounding_of
from . import register
from .binary import RescaledData, quantized
from .broadcast import require_broadcast

LEFT_SHIFTS = {"int8": 7, "int16": 0}


@dataclass(frozen=True)
class SquaredDifferenceData(RescaledData):
    """real_output_multiplier: (2 max(s_a, s_b))^2 / (2^(2 left_shift) s_y)."""


@register
class SquaredDifference(OpDef):
    types = ("SQUARED_DIFFERENCE",)
    operands = Operands(inputs=("input1", "input2"))

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str):
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if y.dtype not in LEFT_SHIFTS or not quantized(op):
            return None
        left_shift = LEFT_SHIFTS[y.dtype]
        sa, sb, sy = (np.float32(t.quant.scale[0]) for t in (a, b, y))
        twice_max = 2.0 * float(max(sa, sb))
        real1, real2 = float(sa) / twice_max, float(sb) / twice_max
        real_out = (twice_max * twice_max) / float(np.float32(np.float32(1 << (2 * left_shift)) * sy))
        (m1, s1), (m2, s2), (mo, so) = (quant.quantize_multiplier(r) for r in (real1, real2, real_out))
        qmin, qmax = dtype_range(y.dtype)
        return SquaredDifferenceData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), int(y.quant.zero_point[0]),
                                     left_shift, m1, s1, m2, s2, mo, so, qmin, qmax, rounding_of(op, mode), real_out)
