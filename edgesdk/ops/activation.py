"""Fused activations on quantized outputs (TFLite CalculateActivationRangeQuantized)."""

from __future__ import annotations

from ..ir import quant
from .base import dtype_range


def activation_range(op, output=None) -> tuple:
    """(act_min, act_max) of the op's fused activation in the output's quantized units."""
    y = output if output is not None else op.outputs[0]
    qmin, qmax = dtype_range(y.dtype)
    return quant.activation_range(op.attrs.get("activation", "NONE"), float(y.quant.scale[0]),
                                  int(y.quant.zero_point[0]), qmin, qmax)
