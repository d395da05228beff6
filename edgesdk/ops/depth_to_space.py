"""DEPTH_TO_SPACE and SPACE_TO_DEPTH (NHWC, block_size): blocks of channels to pixels and back.

DEPTH_TO_SPACE: output[n, h*b + i, w*b + j, c] = input[n, h, w, (i*b + j)*C' + c]; SPACE_TO_DEPTH the inverse.
Both are separable: the build-time data is an AxisMap."""

from __future__ import annotations

from . import register
from .axis_map import AxisMap, element_strides, require_shape
from .base import OpDef, Operands, op_error


def depth_space_map(op) -> AxisMap:
    x, y, b = op.inputs[0], op.outputs[0], int(op.attrs["block_size"])
    if len(x.shape) != 4 or b < 1:
        raise op_error(op, f"needs a 4-D input and a block size >= 1, not {list(x.shape)} and {b}")
    n, h, w, c = (int(d) for d in x.shape)
    sn, sh, sw, _ = element_strides((n, h, w, c))
    if op.type == "DEPTH_TO_SPACE":
        if c % (b * b):
            raise op_error(op, f"has {c} channels, not a multiple of block size {b} squared")
        co = c // (b * b)
        require_shape(op, y, [n, h * b, w * b, co])
        rows = tuple((r // b) * sh + (r % b) * b * co for r in range(h * b))
        cols = tuple((q // b) * sw + (q % b) * co for q in range(w * b))
        return AxisMap((n, h, w, c), (n, h * b, w * b, co), (tuple(i * sn for i in range(n)), rows, cols,
                                                             tuple(range(co))))
    if h % b or w % b:
        raise op_error(op, f"has spatial size {[h, w]}, not a multiple of block size {b}")
    require_shape(op, y, [n, h // b, w // b, c * b * b])
    rows = tuple(r * b * sh for r in range(h // b))
    cols = tuple(q * b * sw for q in range(w // b))
    chans = tuple(((k // c) // b) * sh + ((k // c) % b) * sw + k % c for k in range(c * b * b))
    return AxisMap((n, h, w, c), (n, h // b, w // b, c * b * b), (tuple(i * sn for i in range(n)), rows, cols, chans))


@register
class DepthToSpace(OpDef):
    types = ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
    operands = Operands(inputs=("input",))

    def attributes(self, op, options: dict) -> dict:
        return {"block_size": int(options.get("block_size", 0))}

    def check(self, op) -> None:
        depth_space_map(op)

    def prepare(self, op, mode: str):
        return depth_space_map(op)

    def fold(self, op):
        x = op.inputs[0]
        return [depth_space_map(op).apply(x.data)] if x.is_const else None
