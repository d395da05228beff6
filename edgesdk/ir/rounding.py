"""Which integer arithmetic each op uses under each reference, measured (docs/rounding.md).

`requant_rounding(op, mode)` answers, for one op and a rounding mode the user picked:

* mode "ref"  - LiteRT 2.3 BUILTIN_REF (the default oracle),
* mode "tflm" - the TFLite Micro interpreter (`tflite-micro` Python package),
* mode "ort"  - ONNX Runtime's CPU execution of QDQ ONNX models (edgesdk/ir/ort.py),

with one of:

* "double" - gemmlowp: RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << l, M), r);
* "single" - one rounding in 64 bits (TFLITE_SINGLE_ROUNDING builds; neither reference uses it today,
             the kernels and the NPU still implement it);
* "fp64"   - round(acc * scale) in IEEE double, halves away from zero: LiteRT's reference
             FULLY_CONNECTED. Only the host C kernels can do it; an NPU layer cannot match it bit for
             bit (it agrees with "double" except when the product lies within ~2^-24 of a half);
* "lut"    - a 256-entry table built from float32 math at compile time: LiteRT's int8 LOGISTIC and
             TANH. TFLite Micro computes them in gemmlowp fixed point ("double").
* "f32"    - round_half_even(float32(acc) * float32 scale): ONNX Runtime's requantization (MlasRequantizeOutput)
             of convolutions, matrix products and global average pooling. Host C kernels only.

Ops without requantization (pooling, pad, copies) get "double"; the value is then irrelevant.
"""

from __future__ import annotations

import numpy as np

from .quant import ROUNDING_DOUBLE, ROUNDING_SINGLE, effective_scale

ROUNDING_FP64 = "fp64"
ROUNDING_LUT = "lut"
ROUNDING_F32 = "f32"
MODES = ("ref", "tflm", "ort")
ROUNDINGS = (ROUNDING_DOUBLE, ROUNDING_SINGLE, ROUNDING_FP64, ROUNDING_LUT, ROUNDING_F32)

# Measured per op type (tests/test_rounding.py keeps each entry honest); anything absent is "double".
_RULES = {
    "ref": {
        "FULLY_CONNECTED": ROUNDING_FP64,
        "LOGISTIC": ROUNDING_LUT,
        "TANH": ROUNDING_LUT,
    },
    "tflm": {},
    # ONNX Runtime: the accumulator ops requantize in float32; the unary ops are tables (edgesdk/ir/ort.py). Ops
    # with formulas of their own (ADD, MUL, AVERAGE_POOL_2D) carry them in their ort build-time data.
    "ort": {
        "CONV_2D": ROUNDING_F32,
        "DEPTHWISE_CONV_2D": ROUNDING_F32,
        "FULLY_CONNECTED": ROUNDING_F32,
        "MEAN": ROUNDING_F32,
        "LOGISTIC": ROUNDING_LUT,
    },
}


def requant_rounding(op, mode: str) -> str:
    """The arithmetic `op` must use to be bit-exact with reference `mode` ("ref" or "tflm")."""
    if mode not in MODES:
        raise ValueError(f"unknown rounding mode {mode!r} (expected one of {', '.join(MODES)})")
    if mode == "ort":
        return _RULES[mode].get(op.type, ROUNDING_DOUBLE)
    if op.type == "DEPTHWISE_CONV_2D" and op.uint8_semantics:
        # TFLite's uint8 depthwise kernel hard-codes the gemmlowp rounding (DepthwiseConvOutputRounding::
        # kAwayFromZero), whatever the build's rounding.
        return ROUNDING_DOUBLE
    return _RULES[mode].get(op.type, ROUNDING_DOUBLE)


# Where the two references compute differently for reasons other than the rounding itself: how Prepare()
# derives the integer constants. The C codegen follows ctx.rounding_mode for these (measured, docs/rounding.md).
CONSTANT_DIFFERENCES = {
    "MUL": "LiteRT multiplies/divides the float32 scales in float32; TFLite Micro in double",
    "RELU": "LiteRT divides input_scale / output_scale in float32; TFLite Micro in double",
    "BATCH_MATMUL": "LiteRT multiplies s_lhs * s_rhs in float32 (GetQuantizedConvolutionMultipler without bias); "
                    "TFLite Micro in double",
    "RELU6": "TFLite Micro only clamps the input bytes to [zp, zp + round(6 / scale)] of the input "
             "quantization; LiteRT requantizes to the output quantization then clamps",
    "PRELU": "LiteRT derives s_x / s_y and s_x * s_alpha / s_y in float32; TFLite Micro in double",
    "ADD": "int16 with pot_scale_int16 and power-of-two scales: LiteRT's shift-and-saturate path, TFLite Micro's "
           "general one; int32: TFLite Micro ignores the fused activation",
    "SUB": "int16 with pot_scale_int16 and power-of-two scales: LiteRT's shift path, TFLite Micro's general one",
}


def differing_op_types() -> list:
    """Op types whose arithmetic differs between LiteRT and TFLite Micro (rounding or constants)."""
    types = set(_RULES["ref"]) | set(_RULES["tflm"])
    rounding = {t for t in types if _RULES["ref"].get(t, ROUNDING_DOUBLE) != _RULES["tflm"].get(t, ROUNDING_DOUBLE)}
    return sorted(rounding | set(CONSTANT_DIFFERENCES))


# -- the real-valued scales each reference's Prepare() derives (before QuantizeMultiplier) --------------------
# Shared by the C and NPU codegens so both requantize with the constants the chosen reference uses.

def _f32(x) -> np.float32:
    return np.float32(x)


def conv_effective_scales(op) -> list:
    """CONV_2D / DEPTHWISE_CONV_2D real multiplier per output channel.

    int8 (PopulateConvolutionQuantizationParams): double(s_in) * double(s_w[c]) / double(s_out).
    Ops that ran on uint8 use the per-tensor GetQuantizedConvolutionMultipler, whose s_in * s_w product
    is float32 (measured on LiteRT: tests/test_rounding.py).
    """
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    channels = int(y.shape[-1])
    w_scales = np.broadcast_to(np.asarray(w.quant.scale, np.float32).reshape(-1), (channels,)) \
        if w.quant.scale.size == 1 else np.asarray(w.quant.scale, np.float32)
    if op.uint8_semantics:
        product = float(_f32(_f32(x.quant.scale[0]) * _f32(w.quant.scale[0])))
        return [product / float(_f32(y.quant.scale[0]))] * channels
    return _channel_scales(x.quant.scale[0], w_scales, y.quant.scale[0])


def _channel_scales(x_scale, w_scales: np.ndarray, y_scale) -> list:
    """effective_scale(x_scale, s, denominator=y_scale) for each float32 s of w_scales, as one numpy
    expression: the same float64 multiply then divide per channel, so the same doubles."""
    numerator = np.float64(np.float32(x_scale)) * np.asarray(w_scales, np.float32).astype(np.float64)
    return (numerator / np.float64(np.float32(y_scale))).tolist()


def fully_connected_effective_scales(op, rounding: str) -> list:
    """FULLY_CONNECTED real multiplier per output unit: double(s_in) * double(s_w) / double(s_out) (also the
    fp64 scale of LiteRT, int8 and uint8); the integer uint8 path of TFLite uses the float32 product."""
    if op.uint8_semantics and rounding != ROUNDING_FP64:
        return conv_effective_scales(op)
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    units = int(w.shape[0])
    w_scales = np.broadcast_to(np.asarray(w.quant.scale, np.float32).reshape(-1), (units,)) \
        if w.quant.scale.size == 1 else np.asarray(w.quant.scale, np.float32)
    return _channel_scales(x.quant.scale[0], w_scales, y.quant.scale[0])


def mul_effective_scale(op, mode: str) -> float:
    """MUL's s_a * s_b / s_y: float32 arithmetic in LiteRT (mul.cc), double in TFLite Micro (measured)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if mode == "tflm":
        return effective_scale(a.quant.scale[0], b.quant.scale[0], denominator=y.quant.scale[0])
    return float(_f32(_f32(_f32(a.quant.scale[0]) * _f32(b.quant.scale[0])) / _f32(y.quant.scale[0])))


def relu_effective_scale(op, mode: str) -> float:
    """RELU/RELU6's s_in / s_out: a float32 division in LiteRT (ReluPrepare), double in TFLite Micro."""
    x, y = op.inputs[0], op.outputs[0]
    if mode == "tflm":
        return effective_scale(x.quant.scale[0], denominator=y.quant.scale[0])
    return float(_f32(_f32(x.quant.scale[0]) / _f32(y.quant.scale[0])))
