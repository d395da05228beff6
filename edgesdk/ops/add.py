"""ADD: elementwise sum with broadcasting and a fused activation.

Build-time data:
* int8 and int16 (TFLite's general quantized path, AddPrepare / CalculateOpDataAdd): both inputs are rescaled
  to twice the larger input scale with `left_shift` bits of headroom (20 for int8, 15 for int16), summed, and
  requantized to the output;
* int16 with `pot_scale_int16` and power-of-two scales (zero points 0): LiteRT's special path, which shifts
  one input right onto the output scale and adds in 16-bit saturating fixed point. TFLite Micro has no such
  path and always takes the general one (docs/rounding.md);
* float32 and int32: the fused activation's clamp only (`PlainData`).
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import quant
from .activation import activation_range
from .base import OpDef, Operands, fused_activation, rounding_of
from . import register
from .binary import RescaledData, checked_log2, plain_data, quantized
from .broadcast import require_broadcast

INT8_LEFT_SHIFT = 20
INT16_LEFT_SHIFT = 15


@dataclass(frozen=True)
class AddData(RescaledData):
    """real_output_multiplier: twice the larger input scale over 2^left_shift * output scale."""


@dataclass(frozen=True)
class AddPotData:
    """LiteRT's int16 ADD/SUB with power-of-two scales: out = clamp(sat16(x_unshifted + rdivpot(x_shifted)))."""

    input1_shift: int  # <= 0: right shift of input 1 onto the output scale
    input2_shift: int
    act_min: int
    act_max: int
    problem: str = ""  # why LiteRT's Prepare rejects it (TF_LITE_ENSURE), "" when it runs


def add_sub_data(op, mode: str, left_shift: int | None = None) -> AddData:
    """The constants of ADD and SUB's general quantized path (SUB subtracts the rescaled input 2 in the kernel), in
    double as both references compute them (measured for SUB too, docs/rounding.md)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if left_shift is None:
        left_shift = INT16_LEFT_SHIFT if y.dtype == "int16" else INT8_LEFT_SHIFT
    sa, sb, sy = (float(np.float32(t.quant.scale[0])) for t in (a, b, y))
    twice_max = 2.0 * max(sa, sb)
    real_out = twice_max / (float(1 << left_shift) * sy)
    (m1, s1), (m2, s2), (mo, so) = (quant.quantize_multiplier(r) for r in (sa / twice_max, sb / twice_max, real_out))
    act_min, act_max = activation_range(op)
    return AddData(-int(a.quant.zero_point[0]), -int(b.quant.zero_point[0]), int(y.quant.zero_point[0]), left_shift,
                   m1, s1, m2, s2, mo, so, act_min, act_max, rounding_of(op, mode), real_out)


def uses_pot_int16(op, mode: str) -> bool:
    """LiteRT takes its power-of-two int16 path: int16 tensors, the pot_scale_int16 option, and every scale a
    power of two within CheckedLog2's tolerance. TFLite Micro never does."""
    if mode != "ref" or op.outputs[0].dtype != "int16" or not op.attrs.get("pot_scale_int16", False):
        return False
    return all(checked_log2(float(t.quant.scale[0]))[0] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))


def add_pot_data(op) -> AddPotData:
    """PrepareInt16SubOpPOT / the POT branch of AddPrepare: shifts log2(s_in) - log2(s_out)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    la, lb, ly = (checked_log2(float(t.quant.scale[0]))[1] for t in (a, b, y))
    s1, s2 = la - ly, lb - ly
    act_min, act_max = activation_range(op)
    problem = ""
    if any(int(t.quant.zero_point[0]) != 0 for t in (a, b, y)):
        problem = "int16 zero points must be 0"
    elif not (s1 == 0 or s2 == 0) or s1 > 0 or s2 > 0:
        problem = (f"input scales 2^{la}, 2^{lb} and output scale 2^{ly}: one input must have the output's scale "
                   "and the other a smaller one")
    return AddPotData(s1, s2, act_min, act_max, problem)


def prepare_add_sub(op, mode: str):
    """AddData / AddPotData for quantized tensors, PlainData for float32 and int32 (None: other dtypes)."""
    y = op.outputs[0]
    if y.dtype in ("float32", "int32"):
        return plain_data(op)
    if y.dtype not in ("int8", "int16") or not quantized(op):
        return None
    if uses_pot_int16(op, mode):
        return add_pot_data(op)
    return add_sub_data(op, mode)


@register
class Add(OpDef):
    types = ("ADD",)
    operands = Operands(inputs=("input1", "input2"))
    options = "AddOptions"

    def attributes(self, op, options: dict) -> dict:
        # A missing options table leaves TFLite's params zero-initialized: no activation, pot_scale_int16 false.
        return {"activation": fused_activation(op, options), "pot_scale_int16": bool(options.get("pot_scale_int16", False))}

    def check(self, op) -> None:
        require_broadcast(op)

    def prepare(self, op, mode: str):
        if str(mode) == "ort":  # QLinearAdd, or float Add between DequantizeLinear and QuantizeLinear
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return ort.binary_data(op)
        if op.outputs[0].dtype == "int32" and str(mode) == "tflm":
            return plain_data(op, "NONE")  # TFLite Micro's int32 ADD ignores the fused activation
        return prepare_add_sub(op, mode)
