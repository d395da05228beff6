"""QUANTIZE: float32 -> quantized, quantized -> quantized (a requantization), and the exact uint8 <-> int8
conversions that edgesdk inserts at the edges of uint8 models.

Build-time data: the requantization multiplier of s_in / s_out and the zero points."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, require_same_elements, rounding_of
from . import register


@dataclass(frozen=True)
class QuantizeData:
    kind: str  # "from_float" | "requantize" | "uint8_to_int8" | "int8_to_uint8" | "unsupported"
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    scale: float  # output scale (from_float)
    rounding: str


def _is_uint8_edge(u8, s8) -> bool:
    """Same scale, zero points 128 apart: the conversion is exact (flip the top bit)."""
    return (u8.quant is not None and s8.quant is not None and float(u8.quant.scale[0]) == float(s8.quant.scale[0])
            and int(u8.quant.zero_point[0]) - 128 == int(s8.quant.zero_point[0]))


@register
class Quantize(OpDef):
    types = ("QUANTIZE",)
    operands = Operands(inputs=("input",))

    def check(self, op) -> None:
        require_same_elements(op)

    def prepare(self, op, mode: str) -> QuantizeData | None:
        x, y = op.inputs[0], op.outputs[0]
        if y.quant is None or (x.dtype != "float32" and x.quant is None):
            return None
        if str(mode) == "ort" and y.dtype == "int8" and x.dtype in ("float32", "int8"):
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            # QuantizeLinear of a float input; DequantizeLinear -> QuantizeLinear of an int8 one (a table)
            return ort.quantize_data(op) if x.dtype == "float32" else ort.table_data(op)
        rounding = rounding_of(op, mode)
        y_zp, y_scale = int(y.quant.zero_point[0]), float(y.quant.scale[0])
        if x.dtype == "float32":
            return QuantizeData("from_float", 0, y_zp, 0, 0, y_scale, rounding)
        x_zp = int(x.quant.zero_point[0])
        if x.dtype == "uint8" and y.dtype == "int8" and _is_uint8_edge(x, y):
            return QuantizeData("uint8_to_int8", x_zp, y_zp, 0, 0, y_scale, rounding)
        if x.dtype == "int8" and y.dtype == "uint8" and _is_uint8_edge(y, x):
            return QuantizeData("int8_to_uint8", x_zp, y_zp, 0, 0, y_scale, rounding)
        m, s = quant.quantize_multiplier(quant.effective_scale(float(x.quant.scale[0]), denominator=y_scale))
        return QuantizeData("requantize", x_zp, y_zp, m, s, y_scale, rounding)
