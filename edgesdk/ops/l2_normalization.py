"""L2_NORMALIZATION over the last axis.

Build-time data: rows x depth and the input zero point (int8). The int8 kernel finds each row's 1/sqrt(sum of
squares) at run time in fixed point (TFLite's GetInvSqrtQuantizedMultiplierExp); float32 divides by
max(sqrt(sum of squares), 1e-6)."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from .base import OpDef, Operands, fused_activation, op_error, require_same_shape, rounding_of
from . import register


@dataclass(frozen=True)
class L2NormData:
    rows: int
    depth: int
    input_zero_point: int
    rounding: str


@register
class L2Normalization(OpDef):
    types = ("L2_NORMALIZATION",)
    operands = Operands(inputs=("input",))
    options = "L2NormOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"activation": fused_activation(op, options)}

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        if not x.shape:
            raise op_error(op, "normalizes a scalar (it needs at least one dimension)")
        require_same_shape(op, x, y)
        if x.dtype != y.dtype:
            raise op_error(op, f"normalizes a {x.dtype} input into a {y.dtype} output (the types must match)")

    def prepare(self, op, mode: str) -> L2NormData:
        x = op.inputs[0]
        depth = int(x.shape[-1])
        zp = int(x.quant.zero_point[0]) if x.quant is not None else 0
        return L2NormData(x.num_elements // max(depth, 1), depth, zp, rounding_of(op, mode))
