"""CONV_2D: NHWC input, OHWI filter (grouped when the filter has fewer input channels), optional bias.

Build-time data (TFLite's ConvPrepare / PopulateConvolutionQuantizationParams): the per-output-channel
requantization multipliers and shifts, the offsets, the fused activation's range and the rounding."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from ..errors import UnsupportedOpError
from ..ir import quant
from ..ir.rounding import conv_effective_scales
from .conv_data import ConvData  # noqa: F401  (other modules import it from here)
from .activation import activation_range, float_activation_range
from .base import OpDef, Operands, fused_activation, input_of, op_error, rounding_of
from . import register
from .window import padding_name, window_attributes


@dataclass(frozen=True)
class FloatLayerData:
    """A float32 layer's build-time data: its fused activation's float range (CalculateActivationRange)."""
    act_min: float
    act_max: float


def float_layer_data(op) -> FloatLayerData:
    return FloatLayerData(*float_activation_range(op))


def filter_offset(op) -> int:
    """-filter zero point. TFLite's int8 convolutions ignore it (int8 filters are symmetric); its uint8 kernels
    and every per-tensor FULLY_CONNECTED apply it."""
    w = op.inputs[1]
    if w.quant.zero_point.size != 1:
        return 0
    if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D") and not op.uint8_semantics:
        return 0
    return -int(w.quant.zero_point[0])


def multipliers(scales) -> tuple:
    pairs = [quant.quantize_multiplier(float(s)) for s in scales]
    return tuple(m for m, _ in pairs), tuple(s for _, s in pairs)


def conv_like_data(op, mode: str, scales) -> ConvData:
    x, y = op.inputs[0], op.outputs[0]
    mults, shifts = multipliers(scales)
    act_min, act_max = activation_range(op)
    return ConvData(-int(x.quant.zero_point[0]), filter_offset(op), int(y.quant.zero_point[0]), tuple(scales),
                    mults, shifts, act_min, act_max, rounding_of(op, mode))


def require_bias(op, channels: int) -> None:
    """The optional bias (input 2) holds one value per output channel."""
    b = input_of(op, 2)
    if b is not None and b.num_elements != channels:
        raise op_error(op, f"has a bias of {b.num_elements} values for {channels} output channels")


def require_constant_weights(op) -> None:
    for t in op.inputs[1:]:
        if t is not None and not t.is_const:
            raise UnsupportedOpError(f"{op.type} at {op.location} has non-constant weights or bias ('{t.name}'); "
                                     "edgesdk needs constant weights (export with weights folded as constants).")


@register
class Conv2D(OpDef):
    types = ("CONV_2D",)
    operands = Operands(inputs=("input", "filter", "bias"), optional=("bias",))
    options = "Conv2DOptions"

    def attributes(self, op, options: dict) -> dict:
        w = op.inputs[1]
        if len(w.shape) != 4:
            raise op_error(op, f"filter must be 4-D OHWI, got {list(w.shape)}")
        attrs = window_attributes(op, padding_name(op, options.get("padding", 0)), options.get("stride_h", 1),
                                  options.get("stride_w", 1), options.get("dilation_h_factor", 1),
                                  options.get("dilation_w_factor", 1), w.shape[1], w.shape[2])
        attrs["activation"] = fused_activation(op, options)
        attrs["quantized_bias_type"] = int(options.get("quantized_bias_type", 0) or 0)  # TensorType; 16x8 bias
        return attrs

    def check(self, op) -> None:
        require_constant_weights(op)
        x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if w.shape[3] == 0 or x.shape[3] % w.shape[3] != 0 or w.shape[0] != y.shape[3]:
            raise op_error(op, f"input channels {x.shape[3]}, filter {list(w.shape)} and output channels "
                               f"{y.shape[3]} do not match")
        if y.shape[3] % (x.shape[3] // w.shape[3]) != 0:
            raise op_error(op, f"{y.shape[3]} output channels do not split into {x.shape[3] // w.shape[3]} groups")
        require_bias(op, w.shape[0])

    def prepare(self, op, mode: str) -> ConvData | FloatLayerData:
        if op.outputs[0].dtype == "float32":
            return float_layer_data(op)
        if str(mode) == "ort":  # ONNX Runtime's QLinearConv: float32 requantization (edgesdk/ops/ort.py)
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.conv_data(op)
        return conv_like_data(op, mode, conv_effective_scales(op))
