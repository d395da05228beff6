"""The build-time data of the integer convolution-like layers (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
TRANSPOSE_CONV): what every rounding mode's prepare computes (conv_2d.py, ort.py)."""

from __future__ import annotations

from ..dataclass_cache import dataclass


@dataclass(frozen=True)
class ConvData:
    input_offset: int  # -input zero point
    filter_offset: int  # -filter zero point where the reference applies it (uint8 kernels), else 0
    output_offset: int  # output zero point
    scales: tuple  # real multiplier per output channel
    multipliers: tuple
    shifts: tuple
    act_min: int
    act_max: int
    rounding: str  # edgesdk.ir.rounding: "double" | "single" | "fp64"
