"""DEPTHWISE_CONV_2D: NHWC input, 1HW(C*M) filter; each input channel feeds `depth_multiplier` outputs.

Build-time data as CONV_2D (edgesdk/ops/conv_2d.py)."""

from __future__ import annotations

from ..ir.rounding import conv_effective_scales
from .base import OpDef, Operands, fused_activation, op_error
from . import register
from .conv_2d import ConvData, FloatLayerData, conv_like_data, float_layer_data, require_bias, require_constant_weights
from .window import padding_name, window_attributes


@register
class DepthwiseConv2D(OpDef):
    types = ("DEPTHWISE_CONV_2D",)
    operands = Operands(inputs=("input", "filter", "bias"), optional=("bias",))
    options = "DepthwiseConv2DOptions"

    def attributes(self, op, options: dict) -> dict:
        x, w = op.inputs[0], op.inputs[1]
        if len(w.shape) != 4:
            raise op_error(op, f"filter must be 4-D 1HWC, got {list(w.shape)}")
        attrs = window_attributes(op, padding_name(op, options.get("padding", 0)), options.get("stride_h", 1),
                                  options.get("stride_w", 1), options.get("dilation_h_factor", 1),
                                  options.get("dilation_w_factor", 1), w.shape[1], w.shape[2])
        attrs["activation"] = fused_activation(op, options)
        in_c = x.shape[3]
        attrs["depth_multiplier"] = w.shape[3] // in_c if in_c else 0
        return attrs

    def check(self, op) -> None:
        require_constant_weights(op)
        x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
        in_c, multiplier = x.shape[3], op.attrs["depth_multiplier"]
        if in_c == 0 or w.shape[3] != in_c * multiplier or y.shape[3] != w.shape[3]:
            raise op_error(op, f"channels do not match (input {in_c}, filter {list(w.shape)}, output {y.shape[3]})")
        require_bias(op, w.shape[3])

    def prepare(self, op, mode: str) -> ConvData | FloatLayerData:
        if op.outputs[0].dtype == "float32":
            return float_layer_data(op)
        if str(mode) == "ort":  # ONNX Runtime's QLinearConv (depthwise: group = channels)
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.conv_data(op)
        return conv_like_data(op, mode, conv_effective_scales(op))
