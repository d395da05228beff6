"""BATCH_MATMUL: lhs [..., R, K] x rhs [..., K, C] -> [..., R, C] (adj_x: lhs stored [..., K, R]; adj_y: rhs stored
[..., C, K]), the batch dimensions broadcast (numpy rules). No fused activation.

Build-time data (BatchMatMul Prepare): the multiplier of s_lhs * s_rhs / s_out, the offsets and the output type's
range. The references derive the multiplier differently: LiteRT calls GetQuantizedConvolutionMultipler without
a bias, whose scale product is float32 (double(float32(s_lhs * s_rhs)) / double(s_out)); TFLite Micro
multiplies in double (measured: the int16 corpus models differ by up to 2 steps otherwise)."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, dtype_range, op_error
from . import register

MAX_BATCH_DIMS = 4  # edgesdk_batch_matmul.h: outputs up to rank 6


@dataclass(frozen=True)
class BatchMatMulData:
    lhs_offset: int  # -lhs zero point
    rhs_offset: int  # -rhs zero point
    output_offset: int
    scale: float
    multiplier: int
    shift: int
    act_min: int
    act_max: int


def matmul_dims(op) -> tuple:
    """(rows, depth, cols) of the product."""
    a, b = op.inputs[0], op.inputs[1]
    adj_x, adj_y = op.attrs.get("adj_x", False), op.attrs.get("adj_y", False)
    rows, depth = (a.shape[-1], a.shape[-2]) if adj_x else (a.shape[-2], a.shape[-1])
    depth_b, cols = (b.shape[-1], b.shape[-2]) if adj_y else (b.shape[-2], b.shape[-1])
    return rows, depth, depth_b, cols


def batch_shape(op) -> tuple:
    """The broadcast batch dimensions, or None when they do not broadcast."""
    a, b = op.inputs[0], op.inputs[1]
    sa, sb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    rank = max(len(sa), len(sb))
    sa, sb = (1,) * (rank - len(sa)) + sa, (1,) * (rank - len(sb)) + sb
    out = []
    for da, db in zip(sa, sb):
        if da != db and 1 not in (da, db):
            return None
        out.append(max(da, db))
    return tuple(out)


@register
class BatchMatMul(OpDef):
    types = ("BATCH_MATMUL",)
    operands = Operands(inputs=("lhs", "rhs"))
    options = "BatchMatMulOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"adj_x": bool(options.get("adj_x", False)), "adj_y": bool(options.get("adj_y", False))}

    def check(self, op) -> None:
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise op_error(op, f"needs inputs of rank 2 or more, got {list(a.shape)} and {list(b.shape)}")
        rows, depth, depth_b, cols = matmul_dims(op)
        if depth != depth_b:
            raise op_error(op, f"multiplies {list(a.shape)} by {list(b.shape)}: depths {depth} and {depth_b} differ "
                               f"(adj_x {op.attrs['adj_x']}, adj_y {op.attrs['adj_y']})")
        batch = batch_shape(op)
        if batch is None:
            raise op_error(op, f"batch dimensions of {list(a.shape)} and {list(b.shape)} do not broadcast")
        if tuple(y.shape) != (*batch, rows, cols):
            raise op_error(op, f"output {list(y.shape)} is not {[*batch, rows, cols]}")

    def prepare(self, op, mode: str) -> BatchMatMulData | None:
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if any(t.quant is None for t in (a, b, y)):
            return None
        if mode == "tflm":
            scale = quant.effective_scale(a.quant.scale[0], b.quant.scale[0], denominator=y.quant.scale[0])
        else:
            product = np.float32(np.float32(a.quant.scale[0]) * np.float32(b.quant.scale[0]))
            scale = float(product) / float(np.float32(y.quant.scale[0]))
        multiplier, shift = quant.quantize_multiplier(scale)
        qmin, qmax = dtype_range(y.dtype) if y.dtype in ("int8", "int16") else (0, 0)
        return BatchMatMulData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), int(y.quant.zero_point[0]),
                               scale, multiplier, shift, qmin, qmax)
