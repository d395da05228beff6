"""MUL: elementwise product with broadcasting and a fused activation.

Build-time data (MulPrepare), int8 and int16: the output multiplier of s_a * s_b / s_y (float32 arithmetic in
LiteRT, double in TFLite Micro: edgesdk.ir.rounding.mul_effective_scale); int16 uses the same arithmetic with
zero points 0. float32 and int32: the fused activation's clamp (`PlainData`)."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from ..ir import quant
from ..ir.rounding import mul_effective_scale
from .activation import activation_range
from .base import OpDef, Operands, fused_activation, rounding_of
from . import register
from .binary import ScaledData, plain_data, quantized
from .broadcast import require_broadcast


@dataclass(frozen=True)
class MulData(ScaledData):
    pass


@register
class Mul(OpDef):
    types = ("MUL",)
    operands = Operands(inputs=("input1", "input2"))
    options = "MulOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"activation": fused_activation(op, options)}

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str):
        if str(mode) == "ort":  # QLinearMul, or float Mul between DequantizeLinear and QuantizeLinear
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.binary_data(op)
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if y.dtype in ("float32", "int32"):
            return plain_data(op)
        if not quantized(op):
            return None
        m, s = quant.quantize_multiplier(mul_effective_scale(op, mode))
        act_min, act_max = activation_range(op)
        return MulData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), int(y.quant.zero_point[0]), m, s,
                       act_min, act_max, rounding_of(op, mode))
