"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: NHWC input, a constant int32 size [out_h, out_w], per channel.

Build-time data: where each output row and column reads, computed exactly as TFLite's reference kernels compute
it for every pixel (reference_ops::GetNearestNeighbor, ComputeInterpolationValues in float32,
ComputeInterpolationValuesInteger in int32 with C's truncating division), once per row and column:

* nearest: the source row / column of each output row / column;
* bilinear, int8 / int16 (ResizeBilinearInteger): per output row (y0, y1, dy) with dy = input_y - 1024 * y0 in
  1/1024 units, likewise per column; the kernel weights the four taps with (1024 - dy, dy) x (1024 - dx, dx);
* bilinear, float32 (ResizeBilinear<float>): per row y0, y1, fy = input_y - y0 and 1 - fy as float32, likewise
  per column; the kernel evaluates TFLite's float expression in TFLite's order."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from .base import OpDef, Operands, op_error
from . import register

F32 = np.float32


@dataclass(frozen=True)
class ResizeData:
    rows: tuple  # nearest: source row per output row; bilinear: (y0, y1, dy) or (y0, y1, fy, 1 - fy) per row
    cols: tuple  # the same per output column


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _round_half_away(x: F32) -> int:
    return int(np.floor(abs(float(x)) + 0.5)) * (1 if x >= 0 else -1)


def nearest_source(out_index: int, in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> int:
    """reference_ops::GetNearestNeighbor, float32 arithmetic."""
    if align_corners and out_size > 1:
        scale = F32(in_size - 1) / F32(out_size - 1)
    else:
        scale = F32(in_size) / F32(out_size)
    offset = F32(0.5) if half_pixel else F32(0.0)
    value = F32(F32(out_index) + offset) * scale
    source = _round_half_away(value) if align_corners else int(np.floor(value))
    source = min(source, in_size - 1)
    return max(0, source) if half_pixel else source


def bilinear_integer_axis(out_index: int, in_size: int, out_size: int, align_corners: bool,
                          half_pixel: bool) -> tuple:
    """(lower, upper, input - 1024 * lower) of ComputeInterpolationValuesInteger."""
    scale_10 = _c_div((1 << 10) * in_size + out_size // 2, out_size)
    if align_corners and out_size > 1:
        scale_10 = _c_div((1 << 10) * (in_size - 1) + (out_size - 1) // 2, out_size - 1)
    scaled = out_index * scale_10 + (scale_10 // 2 - (1 << 9) if half_pixel else 0)
    lower = max(_c_div(scaled, 1 << 10), 0)
    upper = min(_c_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
    return lower, upper, scaled - (1 << 10) * lower


def bilinear_float_axis(out_index: int, in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> tuple:
    """(lower, upper, input - lower, 1 - (input - lower)) of ComputeInterpolationValues, in float32."""
    scale = F32(in_size) / F32(out_size)
    if align_corners and out_size > 1:
        scale = F32(in_size - 1) / F32(out_size - 1)
    value = F32(out_index)
    scaled = F32(F32(F32(value + F32(0.5)) * scale) - F32(0.5)) if half_pixel else F32(value * scale)
    floor = F32(np.floor(scaled))
    lower = max(int(floor), 0)
    upper = min(int(np.ceil(scaled)), in_size - 1)
    frac = F32(scaled - F32(lower))
    return lower, upper, float(frac), float(F32(F32(1.0) - frac))


class Resize(OpDef):
    operands = Operands(inputs=("input", "size"))

    def attributes(self, op, options: dict) -> dict:
        return {"align_corners": bool(options.get("align_corners", False)),
                "half_pixel_centers": bool(options.get("half_pixel_centers", False))}

    def check(self, op) -> None:
        x, size, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if len(x.shape) != 4 or len(y.shape) != 4:
            raise op_error(op, f"needs 4-D NHWC input and output, got {list(x.shape)} -> {list(y.shape)}")
        if x.shape[0] != y.shape[0] or x.shape[3] != y.shape[3]:
            raise op_error(op, f"resizes {list(x.shape)} into {list(y.shape)} (batch and channels must match)")
        if size.num_elements != 2:
            raise op_error(op, f"has a size of {size.num_elements} values, not 2")
        if size.is_const and [int(v) for v in np.asarray(size.data).reshape(-1)] != [int(y.shape[1]), int(y.shape[2])]:
            raise op_error(op, f"size {np.asarray(size.data).reshape(-1).tolist()} differs from the output "
                               f"{list(y.shape[1:3])}")
        if min(x.shape[1], x.shape[2], y.shape[1], y.shape[2]) < 1:
            raise op_error(op, "has an empty input or output")
        if op.type == "RESIZE_BILINEAR" and op.attrs["align_corners"] and op.attrs["half_pixel_centers"]:
            raise op_error(op, "sets both align_corners and half_pixel_centers (TFLite refuses the combination)")

    def prepare(self, op, mode: str) -> ResizeData:
        x, y = op.inputs[0], op.outputs[0]
        flags = (op.attrs["align_corners"], op.attrs["half_pixel_centers"])
        if op.type == "RESIZE_NEAREST_NEIGHBOR":
            axis = nearest_source
        elif x.dtype == "float32":
            axis = bilinear_float_axis
        else:
            axis = bilinear_integer_axis
        rows = tuple(axis(i, int(x.shape[1]), int(y.shape[1]), *flags) for i in range(int(y.shape[1])))
        cols = tuple(axis(i, int(x.shape[2]), int(y.shape[2]), *flags) for i in range(int(y.shape[2])))
        return ResizeData(rows, cols)


@register
class ResizeNearestNeighbor(Resize):
    types = ("RESIZE_NEAREST_NEIGHBOR",)
    options = "ResizeNearestNeighborOptions"


@register
class ResizeBilinear(Resize):
    types = ("RESIZE_BILINEAR",)
    options = "ResizeBilinearOptions"
