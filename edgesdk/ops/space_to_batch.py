"""SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND on 4-D NHWC (or 3-D NHC) tensors, with a constant block shape and
paddings / crops.

BATCH_TO_SPACE_ND is separable (each output row and column comes from one input row and column of a known
batch): its build-time data is an AxisMap. SPACE_TO_BATCH_ND pads, and whether a position is padding depends
on the output batch and row together, so it has its own kernel; its data is SpaceToBatchData. The padding is
the output zero point in LiteRT (memset with it, for 8- and 16-bit tensors) and 0 in TFLite Micro, whose
SpaceToBatchParams.output_offset is never set (docs/rounding.md)."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from . import register
from .axis_map import AxisMap, constant_ints, element_strides, require_shape
from .base import OpDef, Operands, op_error


@dataclass(frozen=True)
class SpaceToBatchData:
    batch: int
    height: int
    width: int
    out_batch: int
    out_height: int
    out_width: int
    block_h: int
    block_w: int
    pad_top: int
    pad_left: int
    depth: int  # elements per pixel
    pad_byte: int  # every byte of a padded pixel


def _nhwc(op, x) -> tuple:
    if len(x.shape) == 4:
        return tuple(int(d) for d in x.shape)
    if len(x.shape) == 3:
        n, h, c = (int(d) for d in x.shape)
        return n, h, 1, c
    raise op_error(op, f"needs a 3-D or 4-D input, not {list(x.shape)}")


def _block_and_pads(op):
    """(block [h, w], pads [[top, bottom], [left, right]]) extended to two spatial dimensions, or None."""
    x = op.inputs[0]
    block, pads = constant_ints(op, 1), constant_ints(op, 2)
    if block is None or pads is None:
        return None
    spatial = len(x.shape) - 2
    if len(block) != spatial or len(pads) != 2 * spatial or any(b < 1 for b in block) or any(p < 0 for p in pads):
        what = "paddings" if op.type == "SPACE_TO_BATCH_ND" else "crops"
        raise op_error(op, f"has block shape {block} and {what} {pads} for a rank-{len(x.shape)} input")
    if spatial == 1:
        block, pads = block + [1], pads + [0, 0]
    return block, [pads[0:2], pads[2:4]]


def space_to_batch_data(op, mode: str) -> SpaceToBatchData | None:
    found = _block_and_pads(op)
    if found is None:
        return None
    (bh, bw), ((top, bottom), (left, right)) = found
    x, y = op.inputs[0], op.outputs[0]
    n, h, w, c = _nhwc(op, x)
    if (h + top + bottom) % bh or (w + left + right) % bw:
        raise op_error(op, f"pads {[h, w]} by {[[top, bottom], [left, right]]} to sizes not divisible by the "
                           f"block {[bh, bw]}")
    oh, ow = (h + top + bottom) // bh, (w + left + right) // bw
    require_shape(op, y, [n * bh * bw, oh, ow, c] if len(x.shape) == 4 else [n * bh, oh, c])
    pad = 0
    if mode != "tflm" and y.dtype in ("int8", "uint8", "int16") and y.quant is not None:
        pad = int(y.quant.zero_point[0]) & 0xFF
    return SpaceToBatchData(n, h, w, n * bh * bw, oh, ow, bh, bw, top, left, c, pad)


def batch_to_space_map(op) -> AxisMap | None:
    found = _block_and_pads(op)
    if found is None:
        return None
    (bh, bw), ((top, bottom), (left, right)) = found
    x, y = op.inputs[0], op.outputs[0]
    nb, h, w, c = _nhwc(op, x)
    if nb % (bh * bw):
        raise op_error(op, f"has {nb} batches, not a multiple of the block {[bh, bw]}")
    n = nb // (bh * bw)
    oh, ow = h * bh - top - bottom, w * bw - left - right
    if oh < 1 or ow < 1:
        raise op_error(op, f"crops {[[top, bottom], [left, right]]} remove the whole {[h * bh, w * bw]} image")
    require_shape(op, y, [n, oh, ow, c] if len(x.shape) == 4 else [n, oh, c])
    sb, sh, sw, _ = element_strides((nb, h, w, c))
    # input batch (shift_h * block_w + shift_w) * n + b holds output pixel (b, row * block_h + shift_h - top, ...)
    batch = tuple(b * sb for b in range(n))
    rows = tuple(((r + top) % bh) * bw * n * sb + ((r + top) // bh) * sh for r in range(oh))
    cols = tuple(((q + left) % bw) * n * sb + ((q + left) // bw) * sw for q in range(ow))
    chans = tuple(range(c))
    if len(x.shape) == 4:
        return AxisMap((nb, h, w, c), (n, oh, ow, c), (batch, rows, cols, chans))
    return AxisMap((nb, h, c), (n, oh, c), (batch, rows, chans))


def space_to_batch_fold(d: SpaceToBatchData, x: np.ndarray, shape) -> np.ndarray:
    """The kernel's loop in numpy (the build-time fold and the tests' model of edgesdk_space_to_batch)."""
    data = np.asarray(x).reshape(d.batch, d.height, d.width, d.depth)
    pad = np.frombuffer(bytes([d.pad_byte]) * data.dtype.itemsize, dtype=data.dtype)[0]
    out = np.full((d.out_batch, d.out_height, d.out_width, d.depth), pad, dtype=data.dtype)
    for b in range(d.out_batch):
        n, shift = b % d.batch, b // d.batch
        sh, sw = shift // d.block_w, shift % d.block_w
        for oh in range(d.out_height):
            r = oh * d.block_h + sh - d.pad_top
            for ow in range(d.out_width):
                q = ow * d.block_w + sw - d.pad_left
                if 0 <= r < d.height and 0 <= q < d.width:
                    out[b, oh, ow] = data[n, r, q]
    return out.reshape(shape)


@register
class SpaceToBatchNd(OpDef):
    types = ("SPACE_TO_BATCH_ND",)
    operands = Operands(inputs=("input", "block_shape", "paddings"))

    def check(self, op) -> None:
        space_to_batch_data(op, "ref")

    def prepare(self, op, mode: str):
        return space_to_batch_data(op, str(mode))

    def fold(self, op):
        x = op.inputs[0]
        ref, tflm = space_to_batch_data(op, "ref"), space_to_batch_data(op, "tflm")
        if ref is None or not x.is_const or ref != tflm:  # the padding differs between the references
            return None
        return [space_to_batch_fold(ref, x.data, op.outputs[0].shape)]


@register
class BatchToSpaceNd(OpDef):
    types = ("BATCH_TO_SPACE_ND",)
    operands = Operands(inputs=("input", "block_shape", "crops"))

    def check(self, op) -> None:
        batch_to_space_map(op)

    def prepare(self, op, mode: str):
        return batch_to_space_map(op)

    def fold(self, op):
        m = batch_to_space_map(op)
        return [m.apply(op.inputs[0].data)] if m is not None and op.inputs[0].is_const else None
