"""MIRROR_PAD: each dimension padded with its mirror image, REFLECT (the edge not repeated) or SYMMETRIC.

Build-time data: the AxisMap, each output index mapped to its input index by TFLite's GetInputDimension (the
same in LiteRT and TFLite Micro); the paddings must be constant and at most the dimension (minus one for
REFLECT), as LiteRT requires (TFLite Micro would read outside the input beyond that)."""

from __future__ import annotations

import numpy as np

from . import register
from .axis_map import AxisMap, element_strides, require_shape
from .base import OpDef, Operands, op_error

MODES = {0: "REFLECT", 1: "SYMMETRIC"}


def input_index(p: int, left: int, size: int, offset: int) -> int:
    """GetInputDimension (mirror_pad.cc): output index p of a dimension padded by `left` in front."""
    if p < left:
        original = left + offset - 1
        return original - min(p, original - offset)
    p -= left
    if p >= size:
        p -= size
        original = size - (1 + offset)
        return original - min(p, original)
    return p


def mirror_pad_map(op) -> AxisMap | None:
    paddings = op.inputs[1]
    if not paddings.is_const:
        return None
    x, y = op.inputs[0], op.outputs[0]
    pads = np.asarray(paddings.data).astype(np.int64)
    rank = len(x.shape)
    if pads.shape != (rank, 2):
        raise op_error(op, f"has paddings of shape {list(pads.shape)} for a rank-{rank} input (needs [{rank}, 2])")
    offset = 1 if op.attrs["mode"] == "REFLECT" else 0
    for d, (left, right) in enumerate(pads.tolist()):
        if left < 0 or right < 0 or max(left, right) > x.shape[d] - offset:
            raise op_error(op, f"pads dimension {d} of size {x.shape[d]} by {[left, right]} in {op.attrs['mode']} "
                               f"mode (at most {x.shape[d] - offset} each side)")
    out_shape = [int(n + a + b) for n, (a, b) in zip(x.shape, pads.tolist())]
    require_shape(op, y, out_shape)
    strides = element_strides(x.shape)
    maps = tuple(tuple(input_index(p, int(left), int(n), offset) * s for p in range(out))
                 for n, s, (left, _), out in zip(x.shape, strides, pads.tolist(), out_shape))
    return AxisMap(tuple(int(d) for d in x.shape), tuple(out_shape), maps)


@register
class MirrorPad(OpDef):
    types = ("MIRROR_PAD",)
    operands = Operands(inputs=("input", "paddings"))
    options = "MirrorPadOptions"

    def attributes(self, op, options: dict) -> dict:
        mode = int(options.get("mode", 0))
        if mode not in MODES:
            raise op_error(op, f"has an unknown mirror padding mode {mode}")
        return {"mode": MODES[mode]}

    def check(self, op) -> None:
        mirror_pad_map(op)

    def prepare(self, op, mode: str):
        return mirror_pad_map(op)

    def fold(self, op):
        m = mirror_pad_map(op)
        return [m.apply(op.inputs[0].data)] if m is not None and op.inputs[0].is_const else None
