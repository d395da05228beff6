"""PAD and PADV2: constant padding before and after every dimension (PADV2 names the pad value).

Build-time data: the paddings (a constant input), the pad value (PADV2's constant value as stored, else the
output zero point, 0 for unquantized tensors: LiteRT's and TFLite Micro's choice) and the movement as an
AxisMap (edgesdk/ops/axis_map.py) for the kernels of other types than int8 and the build-time fold."""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from .axis_map import AxisMap, numpy_scalar, padded
from .base import OpDef, Operands, input_of, op_error
from . import register


@dataclass(frozen=True)
class PadData:
    pad_before: tuple
    pad_value: int | float  # the pad element, a number of the output's type
    axes: AxisMap | None = None


@register
class Pad(OpDef):
    types = ("PAD", "PADV2")
    operands = Operands(inputs=("input", "paddings", "constant_values"), optional=("constant_values",))

    def attributes(self, op, options: dict) -> dict:
        pads = paddings_of(op)
        return {"paddings": pads} if pads is not None else {}

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        value = input_of(op, 2)
        if value is not None and value.num_elements != 1:
            raise op_error(op, f"has a pad value of {value.num_elements} elements (needs one)")
        pads = paddings_of(op)
        if pads is None:
            return
        padded_shape = [int(d + before + after) for d, (before, after) in zip(x.shape, pads)]
        if padded_shape != list(y.shape):
            raise op_error(op, f"input {list(x.shape)} padded by {[list(p) for p in pads]} is "
                               f"{padded_shape}, not the output {list(y.shape)}")

    def prepare(self, op, mode: str) -> PadData | None:
        pads = paddings_of(op)
        if pads is None:
            return None
        y, value = op.outputs[0], input_of(op, 2)
        if value is not None and value.is_const:
            pad_value = numpy_scalar(y, value.data.reshape(-1)[0])
        else:
            pad_value = numpy_scalar(y, int(y.quant.zero_point[0]) if y.quant is not None else 0)
        before = tuple(p[0] for p in pads)
        after = tuple(p[1] for p in pads)
        return PadData(before, pad_value, padded(op.inputs[0].shape, before, after, pad_value))

    def fold(self, op):
        x, value = op.inputs[0], input_of(op, 2)
        if not x.is_const or (value is not None and not value.is_const) or paddings_of(op) is None:
            return None
        return [self.prepare(op, "ref").axes.apply(x.data)]


def paddings_of(op) -> list | None:
    """[(before, after)] per dimension from the constant paddings (read at import, or once folding made them
    constant), None while they are computed at run time."""
    if "paddings" in op.attrs:
        return op.attrs["paddings"]
    paddings = input_of(op, 1)
    if paddings is None or not paddings.is_const:
        return None
    pads = paddings.data.astype(np.int64)
    rank = len(op.inputs[0].shape)
    if pads.shape != (rank, 2) or np.any(pads < 0):
        raise op_error(op, f"has paddings of shape {list(pads.shape)} (need [{rank}, 2], non-negative)")
    return [tuple(int(v) for v in row) for row in pads]
