"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D: windows over NHWC, per channel; only taps inside the input count.

Build-time data: the fused activation's range (the input and output share their quantization; float32 pools
clamp to the float range)."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from .activation import activation_range, float_activation_range
from .base import OpDef, Operands, fused_activation, op_error
from . import register
from .window import padding_name, window_attributes


@dataclass(frozen=True)
class PoolData:
    act_min: int | float  # float for float32 pools
    act_max: int | float
    uint8_rounding: bool  # AVERAGE_POOL_2D that ran on uint8 rounds (sum + n/2) / n on the uint8 sum


@register
class Pool2D(OpDef):
    types = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
    operands = Operands(inputs=("input",))
    options = "Pool2DOptions"

    def attributes(self, op, options: dict) -> dict:
        if not options:
            raise op_error(op, "has no pooling options (filter size and strides)")
        fh, fw = options.get("filter_height", 0), options.get("filter_width", 0)
        attrs = window_attributes(op, padding_name(op, options.get("padding", 0)), options.get("stride_h", 1),
                                  options.get("stride_w", 1), 1, 1, fh, fw)
        attrs.update(filter_h=fh, filter_w=fw, activation=fused_activation(op, options))
        return attrs

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        if x.shape[3] != y.shape[3]:
            raise op_error(op, f"pools {x.shape[3]} input channels into {y.shape[3]} output channels")

    def prepare(self, op, mode: str) -> PoolData | None:
        if op.outputs[0].dtype == "float32":
            return PoolData(*float_activation_range(op), False)
        if op.outputs[0].quant is None:
            return None
        if str(mode) == "ort" and op.type == "AVERAGE_POOL_2D":  # QLinearAveragePool
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.average_pool_data(op)
        act_min, act_max = activation_range(op)
        return PoolData(act_min, act_max, bool(op.uint8_semantics) and op.type == "AVERAGE_POOL_2D")
