"""Which ops DSP-1 runs, under which named constraints (limits of docs/dsp-datasheet.md).

Each constraint is a small function `(op) -> (ok, detail)` whose docstring's first line is the rule (as in
Vela's supported-operators tables); the partitioner reports the first failing one and `edgesdk inspect`
lists them. Where the rule is TFLite's own quantization requirement, the host C target's constraint is
reused (edgesdk/ops/rules.py, shared with the C target), so an op the DSP refuses for that reason fails the same way on
every target. The DSP's own limits: int8 only, rank <= 4, dimensions up to 65535, windows up to 255,
requantization shifts in [-31, 30].
"""

from __future__ import annotations

import numpy as np

from ...ir import quant
from ...ir import rounding as rounding_rules
from ...partition.target import TargetSupport
from ...ops import rules as op_rules

MAX_RANK = 4
MAX_DIM = 65535
MAX_WINDOW = 255
MAX_TAPS = 4096
SHIFT_RANGE = (-31, 30)


def _tensors(op) -> list:
    return [t for t in op.inputs + op.outputs if t is not None]


def _shift_ok(shift: int) -> bool:
    return SHIFT_RANGE[0] <= shift <= SHIFT_RANGE[1]


# -- generic --------------------------------------------------------------------------------------------------
def int8_tensors(op):
    """Every input and output is int8 (constant operands included; not weights, bias or a shape)"""
    data = op.inputs[:1] if op.type in ("DEPTHWISE_CONV_2D", "RESHAPE") else op.inputs  # RESHAPE: + int32 shape
    bad = [f"{t.name} ({t.dtype})" for t in [*data, *op.outputs] if t is not None and t.dtype != "int8"]
    return not bad, ", ".join(bad)


def rank_at_most_4(op):
    """Tensors have at most 4 dimensions (the blob's tensor table holds 4)"""
    bad = [f"{t.name}{list(t.shape)}" for t in _tensors(op) if len(t.shape) > MAX_RANK]
    return not bad, ", ".join(bad)


def dimensions_in_range(op):
    """Every dimension is 1..65535"""
    bad = [f"{t.name}{list(t.shape)}" for t in _tensors(op) if any(not 1 <= int(d) <= MAX_DIM for d in t.shape)]
    return not bad, ", ".join(bad)


# -- windows (pooling, depthwise convolution) ------------------------------------------------------------------
def window_limits(op):
    """Filter sizes, strides and dilations are 1..255, paddings 0..255"""
    a = op.attrs
    if op.type == "DEPTHWISE_CONV_2D":
        fh, fw = op.inputs[1].shape[1], op.inputs[1].shape[2]
    else:
        fh, fw = a["filter_h"], a["filter_w"]
    ones = [fh, fw, a["stride_h"], a["stride_w"], a.get("dilation_h", 1), a.get("dilation_w", 1)]
    zeros = [a["pad_top"], a["pad_left"]]
    ok = all(1 <= int(v) <= MAX_WINDOW for v in ones) and all(0 <= int(v) <= MAX_WINDOW for v in zeros)
    return ok, f"filter {fh}x{fw}, stride {a['stride_h']}x{a['stride_w']}, pad {a['pad_top']}/{a['pad_left']}"


def filter_taps(op):
    """A depthwise filter has at most 4096 taps (filter height x width)"""
    taps = int(op.inputs[1].shape[1]) * int(op.inputs[1].shape[2])
    return taps <= MAX_TAPS, f"{taps} taps"


def weight_scales_per_channel(op):
    """Weights have one scale, or one per output channel"""
    w, channels = op.inputs[1], int(op.outputs[0].shape[-1])
    return w.quant.scale.size in (1, channels), f"{w.quant.scale.size} scales for {channels} channels"


def depthwise_requant_shifts(op):
    """Every output channel's requantization multiplier has a shift in [-31, 30]"""
    for c, scale in enumerate(rounding_rules.conv_effective_scales(op)):
        _m, shift = quant.quantize_multiplier(float(scale))
        if not _shift_ok(shift):
            return False, f"channel {c}: scale {scale:.3g} needs shift {shift}"
    return True, ""


# -- elementwise -----------------------------------------------------------------------------------------------
def add_requant_shifts(op):
    """ADD's input and output rescaling multipliers have shifts in [-31, 30]"""
    from .codegen import add_multipliers

    _m1, s1, _m2, s2, _mo, so = add_multipliers(op)
    return all(_shift_ok(s) for s in (s1, s2, so)), f"shifts {s1}, {s2}, {so}"


def mul_requant_shift(op):
    """MUL's output rescaling multiplier has a shift in [-31, 30] (under both rounding references)"""
    shifts = [quant.quantize_multiplier(rounding_rules.mul_effective_scale(op, mode))[1] for mode in ("ref", "tflm")]
    return all(_shift_ok(s) for s in shifts), f"shifts {shifts}"


def per_tensor_constant_operands(op):
    """Constant operands are quantized per tensor"""
    bad = [t.name for t in op.inputs[:2] if t is not None and t.is_const and
           (t.quant is None or np.asarray(t.quant.scale).size != 1)]
    return not bad, ", ".join(bad)


def no_float_requantization(op):
    """With --rounding ort, the op only moves int8 data of one quantization (ONNX Runtime requantizes in float32, the DSP in fixed point)"""
    from ...ir.ort import execution, requantizes

    run = execution(op)
    return not requantizes(op), f"ONNX Runtime computes it as {run.text if run else op.type}"


GENERIC = [int8_tensors, rank_at_most_4, dimensions_in_range, no_float_requantization]
_ACTIVATIONS = [op_rules.int8_quantized_activations]
POOL = [*_ACTIVATIONS, op_rules.pool_shapes, op_rules.input_output_same_quantization, op_rules.supported_fused_activation,
        window_limits]
ELEMENTWISE = [*_ACTIVATIONS, per_tensor_constant_operands, op_rules.broadcastable_inputs,
               op_rules.supported_fused_activation]

DSP_SUPPORT = TargetSupport(
    name="dsp",
    generic=GENERIC,
    ops={
        "SOFTMAX": [*_ACTIVATIONS, op_rules.softmax_output_quantization, op_rules.softmax_positive_beta,
                    op_rules.softmax_input_scale_in_range],
        "DEPTHWISE_CONV_2D": [*_ACTIVATIONS, op_rules.depthwise_shapes, op_rules.int8_weights_int32_bias,
                              op_rules.per_channel_filters_symmetric, weight_scales_per_channel,
                              op_rules.supported_fused_activation, window_limits, filter_taps,
                              depthwise_requant_shifts],
        "AVERAGE_POOL_2D": POOL,
        "MAX_POOL_2D": POOL,
        "ADD": [*ELEMENTWISE, add_requant_shifts],
        "MUL": [*ELEMENTWISE, mul_requant_shift],
        "RESHAPE": [op_rules.reshape_same_size],
        "LOGISTIC": [*_ACTIVATIONS, op_rules.logistic_output_quantization, op_rules.sigmoid_input_scale_in_range],
        "TANH": [*_ACTIVATIONS, op_rules.tanh_output_quantization, op_rules.sigmoid_input_scale_in_range],
    },
)
