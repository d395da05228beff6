"""Fused activations on quantized outputs (TFLite CalculateActivationRangeQuantized)."""

from __future__ import annotations

import numpy as np

from ..ir import quant
from .base import dtype_range


def activation_range(op, output=None) -> tuple:
    """(act_min, act_max) of the op's fused activation in the output's quantized units."""
    y = output if output is not None else op.outputs[0]
    qmin, qmax = dtype_range(y.dtype)
    return quant.activation_range(op.attrs.get("activation", "NONE"), float(y.quant.scale[0]),
                                  int(y.quant.zero_point[0]), qmin, qmax)


FLOAT32_MAX = float(np.finfo(np.float32).max)


def float_activation_range(op) -> tuple:
    """(min, max) of the op's fused activation on a float32 output (TFLite CalculateActivationRange<float>):
    NONE and RELU are bounded by float32's lowest / max, so they clamp infinities too."""
    activation = op.attrs.get("activation", "NONE")
    ranges = {"NONE": (-FLOAT32_MAX, FLOAT32_MAX), "RELU": (0.0, FLOAT32_MAX), "RELU6": (0.0, 6.0),
              "RELU_N1_TO_1": (-1.0, 1.0)}
    if activation not in ranges:
        raise ValueError(f"fused activation {activation}")
    return ranges[activation]
