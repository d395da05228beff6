"""LOG_SOFTMAX over the last axis.

Build-time data (int8, both references' Prepare: PreprocessLogSoftmaxScalingExp with beta 1): the input
difference multiplier and left shift into Q5.26, the reverse multiplier and shift back to input units, and
diff_min, below which exp() is taken as 0. float32 needs only rows x depth."""

from __future__ import annotations

from ..dataclass_cache import dataclass
from ..ir import quant
from .base import OpDef, Operands, op_error, require_same_shape, rounding_of
from .softmax import SCALED_DIFF_INTEGER_BITS, input_radius, softmax_input_rescale
from . import register


@dataclass(frozen=True)
class LogSoftmaxData:
    rows: int
    depth: int
    input_multiplier: int = 0
    input_left_shift: int = 0
    reverse_multiplier: int = 0
    reverse_shift: int = 0  # a left shift (<= 0) for MultiplyByQuantizedMultiplier
    diff_min: int = 0
    rounding: str = "double"


def log_softmax_constants(input_scale: float, rounding: str = "double") -> tuple | None:
    """(input_multiplier, input_left_shift, reverse_multiplier, reverse_shift, diff_min), or None when TFLite's
    Prepare would fail (a left shift outside [1, 31]: the input scale is out of range)."""
    m, left_shift = softmax_input_rescale(input_scale, 1.0, rounding)
    if m <= 0 or not 1 <= left_shift <= 31:
        return None
    # real_reverse_scaling_divisor = (1 << (31 - left_shift)) / double(multiplier): below 1 for left_shift >= 1
    reverse_m, reverse_shift = quant.quantize_multiplier(float(1 << (31 - left_shift)) / float(m))
    if reverse_m <= 0 or reverse_shift > 0:
        return None
    return m, left_shift, reverse_m, reverse_shift, -input_radius(SCALED_DIFF_INTEGER_BITS, left_shift)


@register
class LogSoftmax(OpDef):
    types = ("LOG_SOFTMAX",)
    operands = Operands(inputs=("input",))
    options = "LogSoftmaxOptions"

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        if not x.shape:
            raise op_error(op, "is a log-softmax over a scalar (it needs at least one axis)")
        require_same_shape(op, x, y)
        if x.dtype != y.dtype:
            raise op_error(op, f"maps a {x.dtype} input to a {y.dtype} output (the types must match)")

    def prepare(self, op, mode: str) -> LogSoftmaxData:
        x = op.inputs[0]
        depth = int(x.shape[-1])
        rows = x.num_elements // max(depth, 1)
        if x.quant is None:
            return LogSoftmaxData(rows, depth)
        rounding = rounding_of(op, mode)
        constants = log_softmax_constants(float(x.quant.scale[0]), rounding)
        if constants is None:
            return LogSoftmaxData(rows, depth, rounding=rounding)  # refused by the targets' constraints
        m, left_shift, reverse_m, reverse_shift, diff_min = constants
        return LogSoftmaxData(rows, depth, m, left_shift, reverse_m, reverse_shift, diff_min, rounding)
