"""FULLY_CONNECTED: input [..., depth] (any shape whose size is a multiple of depth), weights [units, depth],
optional bias.

Build-time data (FullyConnectedPrepare): per-unit requantization scales, multipliers and shifts; LiteRT's
reference kernel requantizes in double precision ("fp64"), TFLite Micro with the integer multiplier."""

from __future__ import annotations

from ..errors import UnsupportedOpError
from ..ir.rounding import fully_connected_effective_scales
from .base import OpDef, Operands, fused_activation, op_error, rounding_of
from . import register
from .conv_2d import ConvData, FloatLayerData, conv_like_data, float_layer_data, require_bias, require_constant_weights


@register
class FullyConnected(OpDef):
    types = ("FULLY_CONNECTED",)
    operands = Operands(inputs=("input", "weights", "bias"), optional=("bias",))
    options = "FullyConnectedOptions"

    def attributes(self, op, options: dict) -> dict:
        if options.get("weights_format", 0) != 0:
            raise UnsupportedOpError(f"FULLY_CONNECTED at {op.location} uses shuffled weights; export with the "
                                     "default weights format.")
        return {"activation": fused_activation(op, options), "keep_num_dims": bool(options.get("keep_num_dims", False)),
                "quantized_bias_type": int(options.get("quantized_bias_type", 0) or 0)}  # TensorType; 16x8 bias

    def check(self, op) -> None:
        require_constant_weights(op)
        x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if len(w.shape) != 2 or w.shape[1] == 0 or x.num_elements % w.shape[1] != 0:
            raise op_error(op, f"weights {list(w.shape)} do not fit input {list(x.shape)}")
        if y.num_elements != x.num_elements // w.shape[1] * w.shape[0]:
            raise op_error(op, f"output {list(y.shape)} does not hold {x.num_elements // w.shape[1]} batches of "
                               f"{w.shape[0]} units")
        require_bias(op, w.shape[0])

    def prepare(self, op, mode: str) -> ConvData | FloatLayerData:
        if op.outputs[0].dtype == "float32":
            return float_layer_data(op)
        if str(mode) == "ort":  # ONNX Runtime's QGemm / QLinearMatMul: float32 requantization
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.conv_data(op)
        return conv_like_data(op, mode, fully_connected_effective_scales(op, rounding_of(op, mode)))
