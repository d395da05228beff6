"""Windows of the spatial ops (convolutions, pooling): explicit padding as TFLite's kernels compute it."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from .base import op_error

PADDINGS = {0: "SAME", 1: "VALID"}


def padding_name(op, code) -> str:
    """TFLite's Padding enum. Any other value is refused: LiteRT rejects it too (edgesdk once read it as VALID)."""
    if code not in PADDINGS:
        raise op_error(op, f"has padding code {code}; TFLite defines 0 (SAME) and 1 (VALID)")
    return PADDINGS[code]


def window_attributes(op, padding: str, stride_h: int, stride_w: int, dilation_h: int, dilation_w: int,
                      filter_h: int, filter_w: int) -> dict:
    """Strides, dilations and explicit padding (ComputePaddingHeightWidth: the odd pixel goes bottom/right),
    checked against the input and output sizes."""
    x, y = op.inputs[0], op.outputs[0]
    if len(x.shape) != 4 or len(y.shape) != 4:
        raise op_error(op, f"needs 4-D NHWC input and output, got {list(x.shape)} -> {list(y.shape)}")
    if x.shape[0] != y.shape[0]:
        raise op_error(op, f"input batch {x.shape[0]} differs from output batch {y.shape[0]}")
    if min(stride_h, stride_w, dilation_h, dilation_w, filter_h, filter_w) < 1:
        raise op_error(op, "has a zero or negative stride, dilation or filter size")
    attrs = {"padding": padding, "stride_h": stride_h, "stride_w": stride_w,
             "dilation_h": dilation_h, "dilation_w": dilation_w}
    for axis, key, stride, dilation, size in ((1, "h", stride_h, dilation_h, filter_h),
                                              (2, "w", stride_w, dilation_w, filter_w)):
        in_size, out_size = x.shape[axis], y.shape[axis]
        effective = (size - 1) * dilation + 1
        expected = (in_size + stride - 1) // stride if padding == "SAME" else (in_size - effective + stride) // stride
        if expected != out_size:
            raise op_error(op, f"output {key} size {out_size} does not match the input {in_size}, filter {size}, "
                               f"stride {stride}, dilation {dilation} and {padding} padding (expected {expected})")
        total = max((out_size - 1) * stride + effective - in_size, 0)
        attrs["pad_top" if key == "h" else "pad_left"] = total // 2
        attrs["pad_bottom" if key == "h" else "pad_right"] = total - total // 2
    return attrs


@dataclass(frozen=True)
class WindowGeometry:
    """Where an output pixel's window lies in the input: filter size, stride, leading padding and dilation per
    axis (rows, columns). Shared by the planners that reason about which input rows an output row reads."""

    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    dilation_h: int
    dilation_w: int


WINDOW_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")


def window_geometry(op) -> WindowGeometry:
    """The window of a CONV_2D (weights [O, KH, KW, I]), DEPTHWISE_CONV_2D ([1, KH, KW, O]) or pool."""
    a = op.attrs
    if op.type in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        kh, kw, dh, dw = a["filter_h"], a["filter_w"], 1, 1
    else:
        weights = op.inputs[1].shape
        kh, kw, dh, dw = weights[1], weights[2], a.get("dilation_h", 1), a.get("dilation_w", 1)
    return WindowGeometry(kh, kw, a["stride_h"], a["stride_w"], a.get("pad_top", 0), a.get("pad_left", 0), dh, dw)
