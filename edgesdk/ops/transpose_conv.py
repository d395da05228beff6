"""TRANSPOSE_CONV: the gradient of CONV_2D. Inputs: the output shape (int32 [4]), OHWI weights, the NHWC input
and an optional bias. Every input pixel (iy, ix) adds input * weights to the output window whose corner is
(iy * stride - pad_top, ix * stride - pad_left); only the part inside the output counts.

Padding is TFLite's ComputePaddingHeightWidth with the *output* as the convolution's input: the would-be
convolution output n' = ceil(out / stride) (SAME) or (out - filter + stride) / stride (VALID) and
pad = max((n' - 1) * stride + filter - out, 0) / 2, rounded down.

Build-time data (PopulateConvolutionQuantizationParams, as CONV_2D): per-output-channel multipliers and shifts
of double(s_in) * double(s_w[c]) / double(s_out), the offsets and the fused activation's range."""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOpError
from ..ir import quant
from .activation import activation_range
from .base import OpDef, Operands, fused_activation, op_error, rounding_of
from . import register
from .conv_2d import ConvData, multipliers
from .window import padding_name


def conv_input_size(out_size: int, filter_size: int, stride: int, padding: str) -> int:
    """The input size a convolution of the output would produce (TFLite's ComputeOutSize): LiteRT requires it to
    be the TRANSPOSE_CONV's input size."""
    return (out_size + stride - 1) // stride if padding == "SAME" else (out_size - filter_size + stride) // stride


def transpose_padding(out_size: int, filter_size: int, stride: int, padding: str) -> int:
    """The leading pad of one spatial axis (TFLite computes it from the output size)."""
    conv_out = conv_input_size(out_size, filter_size, stride, padding)
    return max((conv_out - 1) * stride + filter_size - out_size, 0) // 2


@register
class TransposeConv(OpDef):
    types = ("TRANSPOSE_CONV",)
    operands = Operands(inputs=("output_shape", "weights", "input", "bias"), optional=("bias",))
    options = "TransposeConvOptions"

    def attributes(self, op, options: dict) -> dict:
        shape, w, x, y = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
        if len(w.shape) != 4 or len(x.shape) != 4 or len(y.shape) != 4:
            raise op_error(op, f"needs a 4-D OHWI filter and 4-D NHWC input and output, got {list(w.shape)}, "
                               f"{list(x.shape)} -> {list(y.shape)}")
        padding = padding_name(op, options.get("padding", 0))
        stride_h, stride_w = options.get("stride_h", 1), options.get("stride_w", 1)
        if min(stride_h, stride_w) < 1:
            raise op_error(op, f"has stride {stride_h}x{stride_w}")
        return {"padding": padding, "stride_h": stride_h, "stride_w": stride_w,
                "pad_top": transpose_padding(y.shape[1], w.shape[1], stride_h, padding),
                "pad_left": transpose_padding(y.shape[2], w.shape[2], stride_w, padding),
                "activation": fused_activation(op, options),
                "quantized_bias_type": int(options.get("quantized_bias_type", 0) or 0)}

    def check(self, op) -> None:
        shape, w, x, y = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
        b = op.inputs[3] if len(op.inputs) > 3 else None
        for t in (w, b):
            if t is not None and not t.is_const:
                raise UnsupportedOpError(f"TRANSPOSE_CONV at {op.location} has non-constant weights or bias "
                                         f"('{t.name}'); edgesdk needs constant weights.")
        if shape.is_const:
            values = [int(v) for v in np.asarray(shape.data).reshape(-1)]
            if values != [int(v) for v in y.shape]:
                raise op_error(op, f"output shape input {values} differs from the output tensor {list(y.shape)}")
        if x.shape[3] != w.shape[3] or w.shape[0] != y.shape[3] or x.shape[0] != y.shape[0]:
            raise op_error(op, f"input {list(x.shape)}, filter {list(w.shape)} and output {list(y.shape)} do not "
                               "match (filter O = output channels, I = input channels, equal batches)")
        for axis, stride in ((1, op.attrs["stride_h"]), (2, op.attrs["stride_w"])):
            expected = conv_input_size(y.shape[axis], w.shape[axis], stride, op.attrs["padding"])
            if expected != x.shape[axis]:
                raise op_error(op, f"output size {y.shape[axis]} with filter {w.shape[axis]}, stride {stride} and "
                                   f"{op.attrs['padding']} padding comes from an input of {expected}, not "
                                   f"{x.shape[axis]}")
        if b is not None and b.num_elements != w.shape[0]:
            raise op_error(op, f"has a bias of {b.num_elements} values for {w.shape[0]} output channels")

    def prepare(self, op, mode: str) -> ConvData | None:
        w, x, y = op.inputs[1], op.inputs[2], op.outputs[0]
        if x.quant is None or y.quant is None or w.quant is None:
            return None
        channels = int(y.shape[3])
        w_scales = np.broadcast_to(np.asarray(w.quant.scale, np.float32).reshape(-1), (channels,)) \
            if w.quant.scale.size == 1 else np.asarray(w.quant.scale, np.float32)
        scales = [quant.effective_scale(x.quant.scale[0], float(s), denominator=y.quant.scale[0]) for s in w_scales]
        mults, shifts = multipliers(scales)
        act_min, act_max = activation_range(op)
        return ConvData(-int(x.quant.zero_point[0]), 0, int(y.quant.zero_point[0]), tuple(scales), mults, shifts,
                        act_min, act_max, rounding_of(op, mode))
