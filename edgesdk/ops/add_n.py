"""ADD_N: the elementwise sum of two or more tensors of one shape.

float32 and int32 need no build-time data (the kernel's summation order is LiteRT's / TFLite Micro's,
docs/rounding.md). int8 (TFLite Micro only; LiteRT refuses it): every input shares one quantization; each value
is rescaled like ADD's inputs (left shift 20, to twice the input scale) and summed onto a start value that
TFLite Micro takes as the rescaled input offset, then requantized to the output.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, dtype_range, op_error, rounding_of
from . import register
from .binary import quantized

LEFT_SHIFT = 20


@dataclass(frozen=True)
class AddNData:
    input_offset: int
    output_offset: int
    left_shift: int
    input_multiplier: int
    input_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str
    real_output_multiplier: float


@register
class AddN(OpDef):
    types = ("ADD_N",)
    operands = Operands(inputs=(), repeated="inputs")

    def check(self, op) -> None:
        y = op.outputs[0]
        for t in op.inputs:
            if t is None or tuple(t.shape) != tuple(y.shape):
                raise op_error(op, f"input {'(omitted)' if t is None else list(t.shape)} differs from the output "
                                   f"{list(y.shape)}; ADD_N adds tensors of one shape")

    def prepare(self, op, mode: str):
        x, y = op.inputs[0], op.outputs[0]
        if y.dtype != "int8" or not quantized(op):
            return None
        s_in, s_out = np.float32(x.quant.scale[0]), np.float32(y.quant.scale[0])
        twice = 2.0 * float(s_in)
        real_in = float(s_in) / twice
        real_out = twice / (float(1 << LEFT_SHIFT) * float(s_out))
        (mi, si), (mo, so) = quant.quantize_multiplier(real_in), quant.quantize_multiplier(real_out)
        qmin, qmax = dtype_range(y.dtype)
        return AddNData(-int(x.quant.zero_point[0]), int(y.quant.zero_point[0]), LEFT_SHIFT, mi, si, mo, so, qmin, qmax,
                        rounding_of(op, mode), real_out)
