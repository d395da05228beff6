"""The table the LUT-1 applies for one op: entry (uint8)x = the reference kernel's output for input x.

The arithmetic is TFLite's, through edgesdk's public helpers: LiteRT's own LOGISTIC/TANH tables
(edgesdk.ops.tables) and QuantizedReluX's requantize-and-clamp (edgesdk.ir.quant, edgesdk.ir.rounding),
so the accelerator's output equals LiteRT's reference kernels byte for byte.
"""

from __future__ import annotations

import numpy as np

from edgesdk.errors import UnsupportedOpError
from edgesdk.ir import quant
from edgesdk.ir.rounding import relu_effective_scale
from edgesdk.ops.relu import relu_range
from edgesdk.ops.tables import tflite_lut


def op_table(op, rounding: str, mode: str) -> np.ndarray:
    """256 int8 entries, indexed by the input byte as unsigned (the hardware's addressing)."""
    if mode != "ref":
        raise UnsupportedOpError(
            f"{op.location}: the LUT-1 tables reproduce LiteRT's reference kernels (--rounding ref); TFLite "
            f"Micro computes {op.type} differently. Build with --rounding ref, or leave 'lut' out of --target.")
    x, y = op.inputs[0], op.outputs[0]
    sx, zx = float(x.quant.scale[0]), int(x.quant.zero_point[0])
    sy, zy = float(y.quant.scale[0]), int(y.quant.zero_point[0])
    if op.type in ("LOGISTIC", "TANH"):
        return tflite_lut(op.type, sx, zx, sy, zy)
    multiplier, shift = quant.quantize_multiplier(relu_effective_scale(op, mode))
    low, high = relu_range(op.type, sy, zy)
    table = np.zeros(256, np.int8)
    for value in range(-128, 128):
        scaled = quant.multiply_by_quantized_multiplier(value - zx, multiplier, shift, rounding)
        table[value & 0xFF] = min(max(scaled + zy, low), high)
    return table
