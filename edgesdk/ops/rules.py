"""Constraints that follow from an op's TFLite definition and its reference kernels' Prepare checks (types,
quantization, shapes, fused activations): the same for every target that implements the op the reference way,
so the targets share them instead of importing each other's tables. Each is `(op) -> (ok, detail)`; the first
line of its docstring is the rule shown to users (docs/supported-ops.md)."""

from __future__ import annotations

import numpy as np

MAX_RANK = 6
FUSED_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


def _tensors(op):
    return [t for t in op.inputs + op.outputs if t is not None]


def _activations(op):
    return [t for t in _tensors(op) if not t.is_const]


def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def _output_quant(y) -> str:
    return f"output scale {y.quant.scale0}, zero point {y.quant.zp0}" if y.quant else "output not quantized"


def _same_quant(a, b) -> bool:
    return (a.quant is not None and b.quant is not None and float(a.quant.scale[0]) == float(b.quant.scale[0])
            and int(a.quant.zero_point[0]) == int(b.quant.zero_point[0]))


# -- generic ------------------------------------------------------------------------------------------

def rank_at_most_6(op):
    """Tensors have at most 6 dimensions"""
    bad = [t.name for t in _tensors(op) if len(t.shape) > MAX_RANK]
    return not bad, f"{', '.join(bad)} has more than {MAX_RANK} dimensions" if bad else ""


# -- dtype / quantization ---------------------------------------------------------------------------------

def int8_quantized_activations(op):
    """Activation inputs and outputs are int8, quantized per tensor"""
    bad = [f"{t.name} ({t.dtype})" for t in _activations(op) if t.dtype != "int8" or not _per_tensor(t)]
    return not bad, f"not per-tensor int8: {', '.join(bad)}" if bad else ""


def int8_weights_int32_bias(op):
    """Weights are int8 constants and the bias, if any, is an int32 constant"""
    w = op.inputs[1]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    if w is None or not w.is_const or w.dtype != "int8" or w.quant is None:
        return False, "weights are not quantized int8 constants"
    if b is not None and (not b.is_const or b.dtype != "int32"):
        return False, f"bias {b.name} is {b.dtype}{'' if b.is_const else ', not constant'}"
    return True, ""


def per_channel_filters_symmetric(op):
    """Per-channel quantized weights have zero point 0 (a per-tensor zero point is allowed)"""
    w = op.inputs[1]
    if w.quant.scale.size > 1 and any(int(z) != 0 for z in w.quant.zero_point):
        return False, f"{w.name} has nonzero per-channel zero points"
    return True, ""


def supported_fused_activation(op):
    """The fused activation is NONE, RELU, RELU6 or RELU_N1_TO_1"""
    act = op.attrs.get("activation", "NONE")
    return act in FUSED_ACTIVATIONS, f"fused activation {act}"


def input_output_same_quantization(op):
    """Input and output share scale and zero point (TFLite's int8 kernel does not rescale)"""
    x, y = op.inputs[0], op.outputs[0]
    return _same_quant(x, y), f"{x.name} and {y.name} are quantized differently"


# -- convolutions ------------------------------------------------------------------------------------------

def conv_shapes(op):
    """Input, filter and output are 4-D (NHWC input/output, OHWI filter) and the channels match"""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if len(x.shape) != 4 or len(w.shape) != 4 or len(y.shape) != 4:
        return False, f"shapes {list(x.shape)}, {list(w.shape)} -> {list(y.shape)}"
    if w.shape[3] == 0 or x.shape[3] % w.shape[3] != 0 or w.shape[0] != y.shape[3]:
        return False, f"input channels {x.shape[3]}, filter {list(w.shape)}, output channels {y.shape[3]}"
    groups = x.shape[3] // w.shape[3]
    if y.shape[3] % groups != 0:
        return False, f"{y.shape[3]} output channels do not split into {groups} groups"
    return True, ""


def depthwise_shapes(op):
    """Input and output are 4-D NHWC, the filter 1HW(C*M), output channels = input channels * depth multiplier"""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if len(x.shape) != 4 or len(w.shape) != 4 or len(y.shape) != 4 or w.shape[0] != 1:
        return False, f"shapes {list(x.shape)}, {list(w.shape)} -> {list(y.shape)}"
    if x.shape[3] == 0 or y.shape[3] % x.shape[3] != 0 or w.shape[3] != y.shape[3]:
        return False, f"input channels {x.shape[3]}, filter channels {w.shape[3]}, output channels {y.shape[3]}"
    return True, ""


def fully_connected_shapes(op):
    """Weights are 2-D [units, depth] and the input's element count is a multiple of depth"""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if len(w.shape) != 2 or w.shape[1] == 0 or x.num_elements % w.shape[1] != 0:
        return False, f"weights {list(w.shape)} for input {list(x.shape)}"
    if y.num_elements != (x.num_elements // w.shape[1]) * w.shape[0]:
        return False, f"output {list(y.shape)} does not hold batches x units"
    return True, ""


def pool_shapes(op):
    """Input and output are 4-D NHWC with the same channels"""
    x, y = op.inputs[0], op.outputs[0]
    ok = len(x.shape) == 4 and len(y.shape) == 4 and x.shape[3] == y.shape[3] and x.shape[0] == y.shape[0]
    return ok, f"shapes {list(x.shape)} -> {list(y.shape)}"


# -- elementwise ---------------------------------------------------------------------------------------------

def broadcastable_inputs(op):
    """The two inputs have equal shapes or broadcast to the output (numpy rules)"""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    rank = len(y.shape)
    if len(a.shape) > rank or len(b.shape) > rank:
        return False, f"{list(a.shape)} and {list(b.shape)} -> {list(y.shape)}"
    pa = (1,) * (rank - len(a.shape)) + tuple(a.shape)
    pb = (1,) * (rank - len(b.shape)) + tuple(b.shape)
    for da, db, dy in zip(pa, pb, y.shape):
        if not ((da == dy or da == 1) and (db == dy or db == 1) and max(da, db) == dy):
            return False, f"{list(a.shape)} and {list(b.shape)} do not broadcast to {list(y.shape)}"
    return True, ""


# -- single-input ops ------------------------------------------------------------------------------------------

def softmax_output_quantization(op):
    """The output is quantized with scale 1/256 and zero point -128 (TFLite's int8 softmax)"""
    y = op.outputs[0]
    ok = _per_tensor(y) and abs(y.quant.scale0 - 1.0 / 256) <= 0.001 / 256 and y.quant.zp0 == -128
    return ok, _output_quant(y)


def softmax_positive_beta(op):
    """beta is positive"""
    beta = float(op.attrs.get("beta", 1.0))
    return beta > 0, f"beta {beta}"


_REQUANTIZE_INPUT = "re-quantize the input from its real value range (a calibration dataset)"


def softmax_input_scale_in_range(op):
    """beta * input scale is at least 2^-27 (the fixed-point input rescaling shifts by log2(beta * scale * 2^26))"""
    # PreprocessSoftmaxScaling scales input differences into Q5.26 by beta * input_scale * 2^26, and
    # CalculateInputRadius shifts left by the exponent of that product: negative (undefined in TFLite) below
    # 2^-27. Such a softmax sees every int8 difference as ~0; re-quantize its input with a realistic range.
    x = op.inputs[0]
    beta = float(op.attrs.get("beta", 1.0))
    if not _per_tensor(x) or not beta > 0:
        return True, ""  # refused by int8_quantized_activations / softmax_positive_beta
    from .softmax import softmax_input_rescale  # here: a model without SOFTMAX does not import its op module

    multiplier, shift = softmax_input_rescale(x.quant.scale0, beta)
    return multiplier > 0 and shift >= 0, f"beta {beta:g} * input scale {x.quant.scale0:.3g} < 2^-27: {_REQUANTIZE_INPUT}"


def sigmoid_input_scale_in_range(op):
    """The input scale is at least 2^-28 (TFLite Micro's fixed-point input rescaling shifts by log2(scale * 2^27))"""
    # TFLite Micro scales the input into Q4.27 (input_scale * 2^27) and CalculateInputRadius shifts left by
    # the exponent of that product: negative (undefined) below 2^-28. The rule holds for both --rounding
    # modes (LiteRT's table would cope), so whether a model builds does not depend on the reference chosen;
    # such an input spans under 1e-6 around zero, where the output is constant.
    x = op.inputs[0]
    if not _per_tensor(x):
        return True, ""  # refused by int8_quantized_activations
    from .sigmoid import sigmoid_input_rescale  # here: a model without LOGISTIC does not import its op module

    _multiplier, shift = sigmoid_input_rescale(x.quant.scale0)
    return shift >= 0, f"input scale {x.quant.scale0:.3g} < 2^-28: {_REQUANTIZE_INPUT}"


def logistic_output_quantization(op):
    """The output is quantized with scale 1/256 and zero point -128 (TFLite's int8 LOGISTIC)"""
    y = op.outputs[0]
    ok = _per_tensor(y) and y.quant.scale0 == 1.0 / 256 and y.quant.zp0 == -128
    return ok, _output_quant(y)


def tanh_output_quantization(op):
    """The output is quantized with scale 1/128 and zero point 0 (what the TFLite converter emits for TANH)"""
    y = op.outputs[0]
    ok = _per_tensor(y) and y.quant.scale0 == 1.0 / 128 and y.quant.zp0 == 0
    return ok, _output_quant(y)


def hard_swish_output_range(op):
    """The output scale is at least input_scale / 128 (TFLite's HARD_SWISH requirement)"""
    x, y = op.inputs[0], op.outputs[0]
    hires = np.float32(np.float32(1.0 / 128.0) * np.float32(x.quant.scale[0]))
    ratio = float(np.float32(hires / np.float32(y.quant.scale[0])))
    return ratio < 1.0, f"input_scale/128 / output_scale = {ratio:.3g}"


QUANTIZE_DIRECTIONS = {("float32", "int8"), ("float32", "int16"), ("int8", "int8"), ("int8", "int16"), ("int8", "int32"),
                       ("int16", "int8"), ("int16", "int16"), ("int16", "int32"), ("int32", "int8"), ("int32", "int16")}


def quantize_types(op):
    """QUANTIZE is float32 -> int8/int16, a requantization between int8, int16 and int32 (int16 -> int16 with zero points 0), or uint8 <-> int8 with equal scale at model edges"""
    x, y = op.inputs[0], op.outputs[0]
    if not (_per_tensor(y) and (x.dtype == "float32" or _per_tensor(x))):
        return False, "per-channel or missing quantization"
    if (x.dtype, y.dtype) in QUANTIZE_DIRECTIONS:
        if x.dtype == y.dtype == "int16" and (x.quant.zp0 != 0 or y.quant.zp0 != 0):
            return False, f"int16 zero points {x.quant.zp0} and {y.quant.zp0}"
        return True, ""
    if (x.dtype, y.dtype) in (("uint8", "int8"), ("int8", "uint8")):
        u8, s8 = (x, y) if x.dtype == "uint8" else (y, x)
        ok = float(u8.quant.scale[0]) == float(s8.quant.scale[0]) and u8.quant.zp0 - 128 == s8.quant.zp0
        return ok, "uint8/int8 conversion that changes the scale"
    return False, f"{x.dtype} -> {y.dtype}"


def dequantize_types(op):
    """DEQUANTIZE is int8 or int16 -> float32, quantized per tensor"""
    x, y = op.inputs[0], op.outputs[0]
    ok = x.dtype in ("int8", "int16") and y.dtype == "float32" and _per_tensor(x)
    return ok, f"{x.dtype} -> {y.dtype}"


def reshape_same_size(op):
    """Input and output have the same element count and type"""
    x, y = op.inputs[0], op.outputs[0]
    ok = x.num_elements == y.num_elements and x.dtype == y.dtype
    return ok, f"{list(x.shape)} {x.dtype} -> {list(y.shape)} {y.dtype}"
