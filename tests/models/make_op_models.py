"""Build the op-model test corpus: small converter-made .tflite files, one builtin under test each.

Run with the TensorFlow virtualenv (CI never runs this; it reads the committed files):

    /work/tfenv/bin/python tests/models/make_op_models.py [--only PATTERN] [--list]

Needs tensorflow (2.21), tf-keras (for the recurrent models: Keras 3 layers do not fuse into
UNIDIRECTIONAL_SEQUENCE_LSTM) and tflite (to parse the results) in that environment.

Every model is described by a `Spec`: a name, the builtin under test, a short variant text, its inputs
(shape, value range, dtype) and a function that builds the graph from seeded constants. Each spec is
converted in one or more modes:

    int8       full-integer post-training quantization, int8 I/O, per-channel weights
    int16      16x8 quantization (EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8), int16 I/O
    int8_fio   int8 inside, float32 I/O (so the model starts with QUANTIZE and ends with DEQUANTIZE)
    int16_fio  16x8 inside, float32 I/O
    float32    no quantization (float-only ops, and int32/bool graphs)

A conversion counts only if the builtin under test is in the converted model; otherwise (converter
error, op folded or fused away) the attempt is recorded, and an (op, mode) pair with no model at all goes
to the manifest's `not_produced` list with the reason. The representative datasets and all constants are
seeded, so re-running gives the same files.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import sys
import zlib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tflite  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "ops"
MANIFEST = OUT / "manifest.json"
CHECK_FIELDS = ("litert_ref", "tflm", "ref_equals_tflm", "litert_builtin")

Q = ("int8", "int16")
QF = ("int8", "int16", "float32")
F = ("float32",)

OP_NAMES = {v: k for k, v in tflite.BuiltinOperator.__dict__.items() if not k.startswith("_")}
TYPE_NAMES = {v: k.lower() for k, v in tflite.TensorType.__dict__.items() if not k.startswith("_")}


# ----------------------------------------------------------------------------------------------- specs
class I:
    """One model input: shape, real value range for the representative data and the checks, dtype.

    `dyn` leaves the first dimension unknown in the signature (shape_signature -1), which keeps
    shape-dependent ops such as SHAPE from being folded away; the stored shape stays `shape`."""

    def __init__(self, shape, lo=-1.0, hi=1.0, dtype="float32", dyn=False, clip=False):
        self.shape, self.lo, self.hi, self.dtype, self.dyn = tuple(shape), lo, hi, dtype, dyn
        self.clip = clip  # quantized inputs too stay inside [lo, hi] in the reference checks (op domain)


class Spec:
    def __init__(self, name, op, variant, inputs, fn, modes=Q, kind="function", note=None, legacy=False):
        self.name, self.op, self.variant, self.inputs, self.fn = name, op, variant, inputs, fn
        self.modes, self.kind, self.note, self.legacy = tuple(modes), kind, note, legacy


SPECS: list[Spec] = []


def add(name, op, variant, inputs, fn, modes=Q, **kw):
    assert not any(s.name == name for s in SPECS), name
    SPECS.append(Spec(name, op, variant, list(inputs), fn, modes, **kw))


def W(r, shape, scale=0.5):
    """A seeded float32 constant."""
    return tf.constant(r.uniform(-scale, scale, size=shape).astype(np.float32))


def C(value, dtype=tf.float32):
    return tf.constant(value, dtype=dtype)


# --- convolutions -------------------------------------------------------------------------------------
def conv(x, r, cout, k, strides=1, padding="SAME", dilations=1, act=None, bias=True):
    kh, kw = (k, k) if isinstance(k, int) else k
    w = W(r, (kh, kw, x.shape[-1], cout))
    y = tf.nn.conv2d(x, w, strides=strides, padding=padding, dilations=dilations)
    if bias:
        y = y + W(r, (cout,), 0.2)
    return act(y) if act else y


def dwconv(x, r, k, mult=1, strides=1, padding="SAME", dilations=1, act=None):
    kh, kw = (k, k) if isinstance(k, int) else k
    w = W(r, (kh, kw, x.shape[-1], mult))
    s = (1, strides, strides, 1) if isinstance(strides, int) else (1, *strides, 1)
    d = (dilations, dilations) if isinstance(dilations, int) else dilations
    y = tf.nn.depthwise_conv2d(x, w, strides=s, padding=padding, dilations=d) + W(r, (x.shape[-1] * mult,), 0.2)
    return act(y) if act else y


add("conv_3x3_same", "CONV_2D", "3x3 stride 1 SAME, 3->4 ch, bias", [I((1, 8, 8, 3))], lambda r, x: conv(x, r, 4, 3))
add("conv_1x1_valid", "CONV_2D", "1x1 VALID, 4->8 ch", [I((1, 5, 5, 4))], lambda r, x: conv(x, r, 8, 1, padding="VALID"))
add("conv_s2_same_odd", "CONV_2D", "3x3 stride 2 SAME on odd 9x7 input, relu", [I((1, 9, 7, 3))],
    lambda r, x: conv(x, r, 5, 3, strides=2, act=tf.nn.relu))
add("conv_dil2_valid", "CONV_2D", "3x3 dilation 2 VALID", [I((1, 10, 10, 2))],
    lambda r, x: conv(x, r, 3, 3, padding="VALID", dilations=2))
add("conv_asym_relu6", "CONV_2D", "1x3 kernel, strides (2,1), SAME, relu6", [I((1, 6, 7, 4))],
    lambda r, x: conv(x, r, 4, (1, 3), strides=(2, 1), act=tf.nn.relu6))
add("conv_5x5_nobias_range", "CONV_2D", "5x5 VALID, no bias, input range +-50", [I((1, 7, 7, 2), -50, 50)],
    lambda r, x: conv(x, r, 3, 5, padding="VALID", bias=False))
add("conv_batch2", "CONV_2D", "batch 2, 3x3 SAME", [I((2, 4, 4, 2))], lambda r, x: conv(x, r, 3, 3))

add("dwconv_3x3_same", "DEPTHWISE_CONV_2D", "3x3 SAME, multiplier 1", [I((1, 8, 8, 4))], lambda r, x: dwconv(x, r, 3))
add("dwconv_mult2_s2", "DEPTHWISE_CONV_2D", "3x3 stride 2 SAME, multiplier 2, odd input", [I((1, 7, 7, 3))],
    lambda r, x: dwconv(x, r, 3, mult=2, strides=2))
add("dwconv_dil2_valid", "DEPTHWISE_CONV_2D", "3x3 dilation 2 VALID, relu6", [I((1, 9, 9, 2))],
    lambda r, x: dwconv(x, r, 3, padding="VALID", dilations=2, act=tf.nn.relu6))
add("dwconv_5x3_relu", "DEPTHWISE_CONV_2D", "5x3 kernel VALID, relu, range +-20", [I((1, 8, 6, 5), -20, 20)],
    lambda r, x: dwconv(x, r, (5, 3), padding="VALID", act=tf.nn.relu))

add("fc_16_8", "FULLY_CONNECTED", "16->8 with bias", [I((1, 16))], lambda r, x: tf.matmul(x, W(r, (16, 8))) + W(r, (8,), .2))
add("fc_relu_odd", "FULLY_CONNECTED", "37->11 relu", [I((1, 37))],
    lambda r, x: tf.nn.relu(tf.matmul(x, W(r, (37, 11))) + W(r, (11,), .2)))
add("fc_batch3_nobias", "FULLY_CONNECTED", "batch 3, 12->5, no bias", [I((3, 12))], lambda r, x: tf.matmul(x, W(r, (12, 5))))
add("fc_3d_keepdims", "FULLY_CONNECTED", "rank-3 input (1,4,6)->(1,4,7) (keep_num_dims)", [I((1, 4, 6))],
    lambda r, x: tf.matmul(x, W(r, (6, 7))) + W(r, (7,), .2))
add("fc_range", "FULLY_CONNECTED", "input range +-100, 20->4", [I((1, 20), -100, 100)],
    lambda r, x: tf.matmul(x, W(r, (20, 4))) + W(r, (4,), 2))

add("transpose_conv_s2_same", "TRANSPOSE_CONV", "3x3 stride 2 SAME 4x4->8x8", [I((1, 4, 4, 3))],
    lambda r, x: tf.nn.conv2d_transpose(x, W(r, (3, 3, 2, 3)), (1, 8, 8, 2), 2, "SAME"))
add("transpose_conv_s2_valid_bias", "TRANSPOSE_CONV", "2x2 stride 2 VALID + bias", [I((1, 3, 5, 4))],
    lambda r, x: tf.nn.conv2d_transpose(x, W(r, (2, 2, 3, 4)), (1, 6, 10, 3), 2, "VALID") + W(r, (3,), .3))
add("transpose_conv_s1_odd", "TRANSPOSE_CONV", "3x3 stride 1 SAME odd 5x3", [I((1, 5, 3, 2))],
    lambda r, x: tf.nn.conv2d_transpose(x, W(r, (3, 3, 4, 2)), (1, 5, 3, 4), 1, "SAME"))

# --- elementwise binary --------------------------------------------------------------------------------
BIN = {
    "ADD": tf.add, "SUB": tf.subtract, "MUL": tf.multiply, "MINIMUM": tf.minimum, "MAXIMUM": tf.maximum,
    "SQUARED_DIFFERENCE": tf.math.squared_difference, "DIV": tf.divide,
}
BIN_VARIANTS = [  # key, variant text, inputs, f(op, r, *xs)
    ("same4d", "same shape rank 4", [I((1, 4, 4, 3)), I((1, 4, 4, 3), -2, 2)], lambda o, r, a, b: o(a, b)),
    ("bcast_ch", "(1,4,4,3) op (1,1,1,3)", [I((1, 4, 4, 3)), I((1, 1, 1, 3), -3, 3)], lambda o, r, a, b: o(a, b)),
    ("bcast_rev", "(3,) op (2,5,3) (first operand broadcast)", [I((3,), -3, 3), I((2, 5, 3))], lambda o, r, a, b: o(a, b)),
    ("bcast_both", "(4,1,3) op (1,5,1) (both broadcast)", [I((4, 1, 3)), I((1, 5, 1), -2, 2)], lambda o, r, a, b: o(a, b)),
    ("scalar_const", "rank 2 op scalar constant 0.75", [I((3, 7))], lambda o, r, a: o(a, C(0.75))),
    ("const_tensor", "constant first operand (5,) op input (2,5)", [I((2, 5))], lambda o, r, a: o(W(r, (5,), 1.5), a)),
    ("rank1_odd", "rank 1, 13 elements", [I((13,)), I((13,))], lambda o, r, a, b: o(a, b)),
    ("rank5", "rank 5 (1,2,3,2,4) op (1,1,3,1,4)", [I((1, 2, 3, 2, 4)), I((1, 1, 3, 1, 4))], lambda o, r, a, b: o(a, b)),
    ("range", "operand ranges +-100 and +-0.5", [I((2, 8), -100, 100), I((2, 8), -0.5, 0.5)], lambda o, r, a, b: o(a, b)),
    ("single", "single element", [I((1,)), I((1,), -2, 2)], lambda o, r, a, b: o(a, b)),
]
for _op, _f in BIN.items():
    for _k, _v, _ins, _g in BIN_VARIANTS:
        if _op == "DIV":  # keep the divisor away from zero
            _ins = [I(i.shape, 0.5, 4.0, clip=True) if n == len(_ins) - 1 else i for n, i in enumerate(_ins)]
        add(f"{_op.lower()}_{_k}", _op, _v, _ins, (lambda f, g: lambda r, *xs: g(f, r, *xs))(_f, _g),
            modes=QF if _op == "DIV" else Q)
add("add_relu", "ADD", "fused relu", [I((2, 6)), I((2, 6))], lambda r, a, b: tf.nn.relu(a + b))
add("add_relu6_bcast", "ADD", "fused relu6, broadcast", [I((1, 3, 3, 4)), I((4,))], lambda r, a, b: tf.nn.relu6(a + b))
add("sub_relu", "SUB", "fused relu", [I((2, 6)), I((2, 6))], lambda r, a, b: tf.nn.relu(a - b))
add("mul_relu6", "MUL", "fused relu6, range +-4", [I((2, 6), -4, 4), I((2, 6), -4, 4)], lambda r, a, b: tf.nn.relu6(a * b))
add("mul_self", "MUL", "x*x of one input (same tensor both operands)", [I((3, 5))], lambda r, a: a * a)
add("div_int32", "DIV", "int32 / int32 (truncating, tf.math.truncatediv)", [I((2, 6), -50, 50, "int32"), I((2, 6), 1, 9, "int32")],
    lambda r, a, b: tf.truncatediv(a, b), modes=F)

for _op, _f in (("FLOOR_DIV", tf.math.floordiv), ("FLOOR_MOD", tf.math.floormod)):
    _n = _op.lower()
    add(f"{_n}_f32", _op, "float32 same shape", [I((2, 7), -10, 10), I((2, 7), 0.5, 3)], lambda r, a, b, f=_f: f(a, b), modes=F)
    add(f"{_n}_f32_bcast_neg", _op, "float32 broadcast, negative divisors", [I((3, 4), -10, 10), I((4,), -3, -0.5)],
        lambda r, a, b, f=_f: f(a, b), modes=F)
    add(f"{_n}_i32", _op, "int32, divisors of both signs", [I((2, 7), -40, 40, "int32"), I((2, 7), 1, 7, "int32")],
        lambda r, a, b, f=_f: f(a, b * C([[1, -1, 1, -1, 1, -1, 1]], tf.int32)), modes=F)
    add(f"{_n}_i32_scalar", _op, "int32 by constant -3", [I((11,), -40, 40, "int32")], lambda r, a, f=_f: f(a, C(-3, tf.int32)), modes=F)
    add(f"{_n}_q", _op, "quantized attempt", [I((2, 7), -10, 10), I((2, 7), 0.5, 3)], lambda r, a, b, f=_f: f(a, b))

add("add_n_3", "ADD_N", "3 inputs same shape", [I((2, 5)), I((2, 5), -2, 2), I((2, 5), -0.5, 0.5)],
    lambda r, a, b, c: tf.add_n([a, b, c]), modes=QF)
add("add_n_4_rank4", "ADD_N", "4 inputs rank 4", [I((1, 3, 3, 2))] * 4, lambda r, *xs: tf.add_n(list(xs)), modes=QF)

# --- elementwise unary --------------------------------------------------------------------------------
def hard_swish(x):
    return x * tf.nn.relu6(x + 3.0) * (1.0 / 6.0)


UNARY = {  # op: (f, lo, hi, modes)
    "LOGISTIC": (tf.sigmoid, -6, 6, Q), "TANH": (tf.tanh, -4, 4, Q), "HARD_SWISH": (hard_swish, -5, 5, Q),
    "RELU": (tf.nn.relu, -2, 2, Q), "RELU6": (tf.nn.relu6, -3, 9, Q),
    "RELU_N1_TO_1": (lambda x: tf.clip_by_value(x, -1.0, 1.0), -2, 2, Q),
    "LEAKY_RELU": (lambda x: tf.nn.leaky_relu(x, 0.2), -3, 3, Q), "ELU": (tf.nn.elu, -3, 3, QF),
    "ABS": (tf.abs, -3, 3, QF), "NEG": (tf.negative, -3, 3, QF), "SQUARE": (tf.square, -3, 3, QF),
    "SQRT": (tf.sqrt, 0, 9, QF), "RSQRT": (tf.math.rsqrt, 0.1, 9, QF), "EXP": (tf.exp, -4, 2, QF),
    "LOG": (tf.math.log, 0.05, 20, QF), "SIN": (tf.sin, -4, 4, QF), "COS": (tf.cos, -4, 4, QF),
    "FLOOR": (tf.floor, -5, 5, QF), "CEIL": (tf.math.ceil, -5, 5, QF), "ROUND": (tf.round, -5, 5, QF),
}
DOMAIN = {"SQRT", "RSQRT", "LOG"}  # defined for positive inputs only
for _op, (_f, _lo, _hi, _modes) in UNARY.items():
    _n, _c = _op.lower(), _op in DOMAIN
    add(f"{_n}_rank4", _op, "rank 4 (1,4,4,3)", [I((1, 4, 4, 3), _lo, _hi, clip=_c)], lambda r, x, f=_f: f(x), modes=_modes)
    add(f"{_n}_rank1_odd", _op, "rank 1, 31 elements", [I((31,), _lo, _hi, clip=_c)], lambda r, x, f=_f: f(x), modes=_modes)
    add(f"{_n}_rank2_wide", _op, "rank 2, range x4", [I((3, 9), _lo * 4, _hi * 4, clip=_c)], lambda r, x, f=_f: f(x), modes=_modes)
    add(f"{_n}_single", _op, "single element", [I((1,), _lo, _hi, clip=_c)], lambda r, x, f=_f: f(x), modes=_modes)
add("leaky_relu_001", "LEAKY_RELU", "alpha 0.01", [I((2, 10), -5, 5)], lambda r, x: tf.nn.leaky_relu(x, 0.01))
add("leaky_relu_neg", "LEAKY_RELU", "alpha 1.5 (>1)", [I((2, 10), -5, 5)], lambda r, x: tf.nn.leaky_relu(x, 1.5))
add("abs_int32", "ABS", "int32", [I((9,), -100, 100, "int32")], lambda r, x: tf.abs(x), modes=F)


def prelu(x, alpha):
    return tf.nn.relu(x) + (-alpha) * tf.nn.relu(-x)  # the pattern the converter fuses into PRELU


add("prelu_channel", "PRELU", "per-channel alpha (1,1,3) on (1,4,4,3)", [I((1, 4, 4, 3), -3, 3)],
    lambda r, x: prelu(x, tf.constant(r.uniform(0.05, 0.6, (1, 1, 3)).astype(np.float32))))
add("prelu_full", "PRELU", "full alpha (4,5) on (2,4,5)", [I((2, 4, 5), -3, 3)],
    lambda r, x: prelu(x, tf.constant(r.uniform(-0.5, 0.9, (4, 5)).astype(np.float32))))
add("prelu_shared_hw", "PRELU", "alpha shared over H,W (1,1,4) on rank 4, range +-30", [I((1, 3, 5, 4), -30, 30)],
    lambda r, x: prelu(x, tf.constant(r.uniform(0.1, 0.3, (1, 1, 4)).astype(np.float32))))

# --- quantize / dequantize ----------------------------------------------------------------------------
add("quantize_float_in", "QUANTIZE", "float32 input quantized, through an ADD, float output (DEQUANTIZE)",
    [I((2, 8), -3, 3)], lambda r, x: x + W(r, (8,), 1), modes=("int8_fio", "int16_fio"))
add("dequantize_out", "DEQUANTIZE", "quantized model with float32 output", [I((1, 4, 4, 2), -2, 2)],
    lambda r, x: tf.nn.relu(conv(x, r, 3, 3)), modes=("int8_fio", "int16_fio"))
add("requantize_concat_const", "QUANTIZE", "requantize: concat of a tanh output with a wide constant",
    [I((1, 5), -3, 3)], lambda r, a: tf.concat([tf.tanh(a), W(r, (1, 3), 20)], axis=-1))
add("requantize_concat", "QUANTIZE", "requantize: concat of a logistic output (fixed scale) and a wide-range input",
    [I((2, 6), -4, 4), I((2, 6), -50, 50)], lambda r, a, b: tf.concat([tf.sigmoid(a), b], axis=-1))

# --- pooling ------------------------------------------------------------------------------------------
for _op, _f in (("AVERAGE_POOL_2D", tf.nn.avg_pool2d), ("MAX_POOL_2D", tf.nn.max_pool2d)):
    _n = "avgpool" if _op.startswith("AVERAGE") else "maxpool"
    add(f"{_n}_2x2_s2", _op, "2x2 stride 2 VALID", [I((1, 8, 8, 3))], lambda r, x, f=_f: f(x, 2, 2, "VALID"))
    add(f"{_n}_3x3_s1_same", _op, "3x3 stride 1 SAME", [I((1, 5, 5, 4))], lambda r, x, f=_f: f(x, 3, 1, "SAME"))
    add(f"{_n}_3x3_s2_same_odd", _op, "3x3 stride 2 SAME on odd 7x9", [I((1, 7, 9, 2), -20, 20)], lambda r, x, f=_f: f(x, 3, 2, "SAME"))
    add(f"{_n}_global", _op, "global 6x6 window", [I((1, 6, 6, 5))], lambda r, x, f=_f: f(x, 6, 6, "VALID"))
    add(f"{_n}_rect", _op, "2x3 window strides (1,2) VALID, relu6 after", [I((1, 5, 8, 2), -3, 9)],
        lambda r, x, f=_f: tf.nn.relu6(f(x, (2, 3), (1, 2), "VALID")))
add("l2pool_pattern", "L2_POOL_2D", "sqrt(avg_pool(x*x)) pattern", [I((1, 4, 4, 2))],
    lambda r, x: tf.sqrt(tf.nn.avg_pool2d(x * x, 2, 2, "VALID")), modes=QF)

# --- padding ------------------------------------------------------------------------------------------
add("pad_hw", "PAD", "rank 4 spatial pad (1,2)x(2,1)", [I((1, 3, 4, 2))], lambda r, x: tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]]))
add("pad_rank1", "PAD", "rank 1, (3,0)", [I((7,))], lambda r, x: tf.pad(x, [[3, 0]]))
add("pad_rank3_all", "PAD", "rank 3 all axes", [I((2, 3, 2))], lambda r, x: tf.pad(x, [[1, 1], [0, 2], [1, 0]]))
add("pad_rank5", "PAD", "rank 5", [I((1, 2, 2, 2, 2))], lambda r, x: tf.pad(x, [[0, 0], [1, 0], [0, 1], [1, 1], [0, 0]]))
add("pad_positive_range", "PAD", "input range [2,6] (zero is below the range)", [I((1, 3, 3, 1), 2, 6)],
    lambda r, x: tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]))
add("padv2_value", "PADV2", "constant value 0.5", [I((1, 3, 3, 2))], lambda r, x: tf.pad(x, [[0, 0], [1, 1], [2, 0], [0, 0]], constant_values=0.5))
add("padv2_rank1_range", "PADV2", "rank 1, constant value 7.0 outside the input range [-1,1]", [I((5,))],
    lambda r, x: tf.pad(x, [[2, 3]], constant_values=7.0))
add("padv2_rank2_neg", "PADV2", "rank 2, constant value -1.5", [I((3, 4), -2, 2)], lambda r, x: tf.pad(x, [[1, 2], [0, 3]], constant_values=-1.5))
add("mirror_pad_reflect", "MIRROR_PAD", "REFLECT rank 4", [I((1, 4, 4, 2))], lambda r, x: tf.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], "REFLECT"))
add("mirror_pad_symmetric", "MIRROR_PAD", "SYMMETRIC rank 4", [I((1, 4, 4, 2))], lambda r, x: tf.pad(x, [[0, 0], [2, 1], [1, 3], [0, 0]], "SYMMETRIC"))
add("mirror_pad_reflect_r2", "MIRROR_PAD", "REFLECT rank 2", [I((3, 5))], lambda r, x: tf.pad(x, [[2, 2], [4, 0]], "REFLECT"))
add("mirror_pad_symmetric_r1", "MIRROR_PAD", "SYMMETRIC rank 1", [I((6,))], lambda r, x: tf.pad(x, [[6, 2]], "SYMMETRIC"))

# --- concatenation / pack / split ---------------------------------------------------------------------
add("concat_last", "CONCATENATION", "axis -1, 2 inputs", [I((1, 3, 3, 2)), I((1, 3, 3, 5))], lambda r, a, b: tf.concat([a, b], -1))
add("concat_axis1_3in", "CONCATENATION", "axis 1, 3 inputs of different ranges", [I((1, 2, 4), -1, 1), I((1, 3, 4), -8, 8), I((1, 1, 4), 0, 0.1)],
    lambda r, a, b, c: tf.concat([a, b, c], 1))
add("concat_axis0_const", "CONCATENATION", "axis 0 with a constant operand", [I((2, 5))], lambda r, a: tf.concat([W(r, (3, 5), 2), a], 0))
add("concat_rank1", "CONCATENATION", "rank 1", [I((3,)), I((4,), -4, 4)], lambda r, a, b: tf.concat([a, b], 0))
add("concat_rank5_neg", "CONCATENATION", "rank 5, axis -3", [I((1, 2, 2, 3, 2)), I((1, 2, 1, 3, 2))], lambda r, a, b: tf.concat([a, b], -3))
add("pack_axis0", "PACK", "3 x (4,) on axis 0", [I((4,)), I((4,), -2, 2), I((4,))], lambda r, a, b, c: tf.stack([a, b, c], 0))
add("pack_axis_neg1", "PACK", "2 x (2,3) on axis -1", [I((2, 3)), I((2, 3))], lambda r, a, b: tf.stack([a, b], -1))
add("pack_axis1_rank3", "PACK", "2 x (1,3,2) on axis 1", [I((1, 3, 2)), I((1, 3, 2), -5, 5)], lambda r, a, b: tf.stack([a, b], 1))
add("unpack_axis0", "UNPACK", "(3,4) axis 0", [I((3, 4))], lambda r, x: tuple(tf.unstack(x, axis=0)))
add("unpack_axis_neg1", "UNPACK", "(2,3,2) axis -1", [I((2, 3, 2))], lambda r, x: tuple(tf.unstack(x, axis=-1)))
add("unpack_axis1_rank4", "UNPACK", "(1,3,2,2) axis 1", [I((1, 3, 2, 2))], lambda r, x: tuple(tf.unstack(x, axis=1)))
add("split_last", "SPLIT", "(1,4,4,6) into 3 on axis -1", [I((1, 4, 4, 6))], lambda r, x: tuple(tf.split(x, 3, axis=-1)))
add("split_axis0", "SPLIT", "(4,3) into 2 on axis 0", [I((4, 3))], lambda r, x: tuple(tf.split(x, 2, axis=0)))
add("split_rank1", "SPLIT", "(12,) into 4", [I((12,))], lambda r, x: tuple(tf.split(x, 4, axis=0)))
add("split_v_sizes", "SPLIT_V", "(2,9) sizes [2,3,4] axis 1", [I((2, 9))], lambda r, x: tuple(tf.split(x, [2, 3, 4], axis=1)))
add("split_v_neg_axis", "SPLIT_V", "(1,5,2,2) sizes [1,4] axis -3", [I((1, 5, 2, 2))], lambda r, x: tuple(tf.split(x, [1, 4], axis=-3)))
add("split_v_inferred", "SPLIT_V", "(7,3) sizes [2,-1] axis 0", [I((7, 3))], lambda r, x: tuple(tf.split(x, [2, -1], axis=0)))

# --- reductions ---------------------------------------------------------------------------------------
RED = {"MEAN": tf.reduce_mean, "SUM": tf.reduce_sum, "REDUCE_MAX": tf.reduce_max, "REDUCE_MIN": tf.reduce_min}
RED_VARIANTS = [
    ("hw_keep", "axes [1,2] keep_dims (global pool)", (1, 5, 5, 3), [1, 2], True),
    ("last", "axis -1", (2, 3, 6), [-1], False),
    ("axis0", "axis 0 of (4,5)", (4, 5), [0], False),
    ("all_keep", "all axes keep_dims", (2, 3, 4), [0, 1, 2], True),
    ("rank1", "rank 1 to scalar", (11,), [0], False),
    ("mid_neg", "axes [-3,-1] of rank 4", (1, 3, 2, 4), [-3, -1], False),
]
for _op, _f in RED.items():
    _n = _op.lower().replace("reduce_", "reduce")
    for _k, _v, _shape, _axes, _keep in RED_VARIANTS:
        add(f"{_n}_{_k}", _op, _v, [I(_shape)], lambda r, x, f=_f, a=_axes, k=_keep: f(x, axis=a, keepdims=k))
add("mean_range", "MEAN", "axis 1, input range [5,60]", [I((2, 7, 3), 5, 60)], lambda r, x: tf.reduce_mean(x, axis=1))
add("sum_range", "SUM", "axis -1, input range +-40", [I((3, 9), -40, 40)], lambda r, x: tf.reduce_sum(x, axis=-1))
add("reduce_all", "REDUCE_ALL", "bool, axis -1", [I((3, 4), 0, 1, "bool")], lambda r, x: tf.reduce_all(x, axis=-1), modes=F)
add("reduce_all_keep", "REDUCE_ALL", "bool, axes [0,1] keep_dims", [I((2, 3, 2), 0, 1, "bool")], lambda r, x: tf.reduce_all(x, axis=[0, 1], keepdims=True), modes=F)
add("reduce_any", "REDUCE_ANY", "bool, axis 0", [I((3, 4), 0, 1, "bool")], lambda r, x: tf.reduce_any(x, axis=0), modes=F)
add("reduce_all_from_cmp", "REDUCE_ALL", "all(x > 0) over axis 1 of a quantized input", [I((2, 6))], lambda r, x: tf.reduce_all(x > 0.0, axis=1))
add("argmax_last", "ARG_MAX", "axis -1, int32 output", [I((2, 10))], lambda r, x: tf.argmax(x, axis=-1, output_type=tf.int32))
add("argmax_axis1_i64", "ARG_MAX", "axis 1 of rank 4, int64 output", [I((1, 5, 3, 2))], lambda r, x: tf.argmax(x, axis=1))
add("argmax_rank1", "ARG_MAX", "rank 1", [I((17,))], lambda r, x: tf.argmax(x, axis=0, output_type=tf.int32))
add("argmin_last", "ARG_MIN", "axis -1, int32 output", [I((2, 10))], lambda r, x: tf.argmin(x, axis=-1, output_type=tf.int32))
add("argmin_rank1", "ARG_MIN", "rank 1, int32 output", [I((13,))], lambda r, x: tf.argmin(x, axis=0, output_type=tf.int32))
add("argmin_axis0", "ARG_MIN", "axis 0 of (6,3), int64 output", [I((6, 3))], lambda r, x: tf.argmin(x, axis=0))
add("argmax_f32", "ARG_MAX", "float32", [I((3, 8))], lambda r, x: tf.argmax(x, axis=-1, output_type=tf.int32), modes=F)
add("cumsum_last", "CUMSUM", "axis -1", [I((2, 6))], lambda r, x: tf.cumsum(x, axis=-1), modes=QF)
add("cumsum_excl_rev", "CUMSUM", "axis 0, exclusive, reverse", [I((5, 3))], lambda r, x: tf.cumsum(x, axis=0, exclusive=True, reverse=True), modes=QF)

# --- softmax family -----------------------------------------------------------------------------------
add("softmax_10", "SOFTMAX", "(1,10)", [I((1, 10), -4, 4)], lambda r, x: tf.nn.softmax(x))
add("softmax_rank3", "SOFTMAX", "(2,5,7) last axis", [I((2, 5, 7), -4, 4)], lambda r, x: tf.nn.softmax(x))
add("softmax_beta", "SOFTMAX", "softmax(0.5*x) (beta folded)", [I((3, 6), -8, 8)], lambda r, x: tf.nn.softmax(x * 0.5))
add("softmax_range", "SOFTMAX", "input range +-60", [I((1, 12), -60, 60)], lambda r, x: tf.nn.softmax(x))
add("softmax_single", "SOFTMAX", "(4,1) one class", [I((4, 1))], lambda r, x: tf.nn.softmax(x))
add("log_softmax_10", "LOG_SOFTMAX", "(1,10)", [I((1, 10), -4, 4)], lambda r, x: tf.nn.log_softmax(x))
add("log_softmax_range", "LOG_SOFTMAX", "(2,6) range +-40", [I((2, 6), -40, 40)], lambda r, x: tf.nn.log_softmax(x))
add("log_softmax_rank3", "LOG_SOFTMAX", "(2,3,5)", [I((2, 3, 5), -8, 8)], lambda r, x: tf.nn.log_softmax(x))
add("l2norm_last", "L2_NORMALIZATION", "axis -1 of (1,8)", [I((1, 8))], lambda r, x: tf.math.l2_normalize(x, axis=-1))
add("l2norm_rank4", "L2_NORMALIZATION", "axis -1 of (1,3,3,6)", [I((1, 3, 3, 6), -5, 5)], lambda r, x: tf.math.l2_normalize(x, axis=-1))
add("l2norm_range", "L2_NORMALIZATION", "range [0.01, 0.1] (small norms)", [I((2, 5), 0.01, 0.1)], lambda r, x: tf.math.l2_normalize(x, axis=-1))

# --- comparisons, logical, select, cast ---------------------------------------------------------------
CMP = {"EQUAL": tf.equal, "NOT_EQUAL": tf.not_equal, "LESS": tf.less, "LESS_EQUAL": tf.less_equal,
       "GREATER": tf.greater, "GREATER_EQUAL": tf.greater_equal}
for _op, _f in CMP.items():
    _n = _op.lower()
    add(f"{_n}_q", _op, "quantized inputs of different ranges, bool output", [I((2, 7), -2, 2), I((2, 7), -1, 1)],
        lambda r, a, b, f=_f: f(a, b))
    add(f"{_n}_q_bcast", _op, "quantized, broadcast against (7,)", [I((2, 7), -2, 2), I((7,), -2, 2)], lambda r, a, b, f=_f: f(a, b))
    add(f"{_n}_q_const", _op, "quantized vs constant 0.25", [I((9,))], lambda r, a, f=_f: f(a, C(0.25)))
    add(f"{_n}_i32", _op, "int32 inputs", [I((2, 6), -3, 3, "int32"), I((2, 6), -3, 3, "int32")], lambda r, a, b, f=_f: f(a, b), modes=F)
    add(f"{_n}_f32", _op, "float32 inputs, broadcast", [I((3, 4)), I((1, 4))], lambda r, a, b, f=_f: f(a, b), modes=F)
add("logical_and", "LOGICAL_AND", "bool inputs", [I((2, 5), 0, 1, "bool"), I((2, 5), 0, 1, "bool")], lambda r, a, b: tf.logical_and(a, b), modes=F)
add("logical_or_bcast", "LOGICAL_OR", "bool inputs, broadcast", [I((3, 4), 0, 1, "bool"), I((4,), 0, 1, "bool")], lambda r, a, b: tf.logical_or(a, b), modes=F)
add("logical_not", "LOGICAL_NOT", "bool input", [I((7,), 0, 1, "bool")], lambda r, a: tf.logical_not(a), modes=F)
add("logical_and_q", "LOGICAL_AND", "(x>0) and (y<0.5) on quantized inputs", [I((2, 6)), I((2, 6))],
    lambda r, a, b: tf.logical_and(a > 0.0, b < 0.5))
add("logical_or_q", "LOGICAL_OR", "(x>0.3) or not(y>0) on quantized inputs", [I((2, 6)), I((2, 6))],
    lambda r, a, b: tf.logical_or(a > 0.3, tf.logical_not(b > 0.0)))
add("select_v2_col", "SELECT_V2", "bool cond (2,1) broadcast against (2,6) operands", [I((2, 1), 0, 1, "bool"), I((2, 6)), I((2, 6), -3, 3)],
    lambda r, c, a, b: tf.where(c, a, b), modes=QF)
add("select_v2_bcast", "SELECT_V2", "cond (1,4) broadcast against (3,4) and scalar const", [I((1, 4), 0, 1, "bool"), I((3, 4))],
    lambda r, c, a: tf.where(c, a, C(0.5)), modes=QF)
add("select_v2_cmp", "SELECT_V2", "where(x > y, x, y*0.5), x (2,3,4), y (3,4)", [I((2, 3, 4)), I((3, 4))],
    lambda r, a, b: tf.where(a > b, a, b * 0.5), modes=QF)
add("cast_i32_f32", "CAST", "int32 -> float32", [I((2, 5), -100, 100, "int32")], lambda r, x: tf.cast(x, tf.float32), modes=F)
add("cast_f32_i32", "CAST", "float32 -> int32 (truncation)", [I((2, 5), -10, 10)], lambda r, x: tf.cast(x, tf.int32), modes=F)
add("cast_bool_f32", "CAST", "bool -> float32", [I((6,), 0, 1, "bool")], lambda r, x: tf.cast(x, tf.float32), modes=F)
add("cast_i32_bool", "CAST", "int32 -> bool", [I((6,), -2, 2, "int32")], lambda r, x: tf.cast(x, tf.bool), modes=F)
add("cast_i8_i32", "CAST", "int8 input -> int32", [I((8,), -128, 127, "int8")], lambda r, x: tf.cast(x, tf.int32), modes=F)
add("cast_i16_i32", "CAST", "int16 input -> int32", [I((8,), -32768, 32767, "int16")], lambda r, x: tf.cast(x, tf.int32), modes=F)
add("cast_i32_i8", "CAST", "int32 -> int8 (wraps)", [I((8,), -300, 300, "int32")], lambda r, x: tf.cast(x, tf.int8), modes=F)
add("cast_q_argmax", "CAST", "argmax of a quantized input cast to float32", [I((2, 5))],
    lambda r, x: tf.cast(tf.argmax(x, axis=-1, output_type=tf.int32), tf.float32) * 0.5, modes=Q)

# --- slicing and indexing -----------------------------------------------------------------------------
SS = [  # key, variant, shape, fn
    ("basic", "begin/end/stride 1", (1, 6, 6, 3), lambda x: x[:, 1:5, 2:6, :]),
    ("stride2", "strides 2 and 3", (1, 7, 9, 2), lambda x: x[:, ::2, 1::3, :]),
    ("neg_stride", "negative strides (reverse)", (2, 6, 4), lambda x: x[:, ::-1, 3:0:-2]),
    ("shrink", "shrink_axis_mask (x[:, 2])", (3, 5, 4), lambda x: x[:, 2]),
    ("ellipsis", "ellipsis_mask (x[..., 1:3])", (2, 3, 4), lambda x: x[..., 1:3]),
    ("new_axis", "new_axis_mask (x[:, tf.newaxis, 1:])", (3, 4), lambda x: x[:, tf.newaxis, 1:]),
    ("neg_idx", "negative begin/end (x[-3:-1, -4:])", (5, 6), lambda x: x[-3:-1, -4:]),
    ("rank1_odd", "rank 1, x[1:12:3]", (13,), lambda x: x[1:12:3]),
    ("rank5", "rank 5", (1, 2, 3, 4, 5), lambda x: x[:, 1:, ::2, 1:3, -2:]),
    ("shrink_ellipsis", "ellipsis + shrink (x[..., 0])", (2, 3, 4), lambda x: x[..., 0]),
]
for _k, _v, _shape, _f in SS:
    add(f"strided_slice_{_k}", "STRIDED_SLICE", _v, [I(_shape)], lambda r, x, f=_f: f(x))
add("slice_basic", "SLICE", "tf.slice rank 4", [I((1, 5, 5, 3))], lambda r, x: tf.slice(x, [0, 1, 2, 0], [1, 3, 2, 3]))
add("slice_rank2_tail", "SLICE", "rank 2, size -1", [I((4, 6))], lambda r, x: tf.slice(x, [1, 2], [-1, 3]))
add("slice_rank1", "SLICE", "rank 1", [I((9,))], lambda r, x: tf.slice(x, [4], [5]))
add("slice_rank5", "SLICE", "rank 5", [I((1, 2, 3, 4, 2))], lambda r, x: tf.slice(x, [0, 1, 0, 1, 0], [1, 1, 2, 3, 2]))
add("slice_dynamic_begin", "SLICE", "begin from an int32 input", [I((6, 4)), I((2,), 0, 2, "int32")],
    lambda r, x, b: tf.slice(x, b, [3, 2]))
add("transpose_2d", "TRANSPOSE", "rank 2", [I((3, 5))], lambda r, x: tf.transpose(x))
add("transpose_nhwc_nchw", "TRANSPOSE", "rank 4 perm (0,3,1,2)", [I((1, 3, 4, 5))], lambda r, x: tf.transpose(x, [0, 3, 1, 2]))
add("transpose_rank3", "TRANSPOSE", "rank 3 perm (1,2,0)", [I((2, 3, 4))], lambda r, x: tf.transpose(x, [1, 2, 0]))
add("transpose_rank5", "TRANSPOSE", "rank 5 perm (0,4,2,1,3)", [I((1, 2, 3, 2, 3))], lambda r, x: tf.transpose(x, [0, 4, 2, 1, 3]))
add("gather_const_idx", "GATHER", "params input (5,4), constant indices axis 0", [I((5, 4))], lambda r, x: tf.gather(x, [4, 0, 2, 2]))
add("gather_axis1", "GATHER", "axis 1, constant 2-D indices", [I((2, 6, 3))], lambda r, x: tf.gather(x, [[1, 5], [0, 0]], axis=1))
add("gather_idx_input", "GATHER", "int32 indices input, axis -1", [I((3, 7)), I((4,), 0, 6, "int32")], lambda r, x, i: tf.gather(x, i, axis=-1))
add("gather_const_params", "GATHER", "constant params table, int32 indices input (embedding)", [I((5,), 0, 9, "int32")],
    lambda r, i: tf.gather(W(r, (10, 4), 2), i), modes=QF)
add("gather_batch_dims", "GATHER", "batch_dims 1", [I((2, 5, 3)), I((2, 3), 0, 4, "int32")], lambda r, x, i: tf.gather(x, i, axis=1, batch_dims=1))
add("gather_f32", "GATHER", "float32", [I((6, 2)), I((3,), 0, 5, "int32")], lambda r, x, i: tf.gather(x, i), modes=F)
add("gather_nd_full", "GATHER_ND", "indices (3,2) into (4,5) -> elements", [I((4, 5)), I((3, 2), 0, 3, "int32")], lambda r, x, i: tf.gather_nd(x, i))
add("gather_nd_rows", "GATHER_ND", "indices (2,1) into (4,3,2) -> slices", [I((4, 3, 2))], lambda r, x: tf.gather_nd(x, [[3], [1]]))
add("gather_nd_f32", "GATHER_ND", "float32", [I((3, 4)), I((2, 2), 0, 2, "int32")], lambda r, x, i: tf.gather_nd(x, i), modes=F)
add("embedding_lookup", "EMBEDDING_LOOKUP", "tf.nn.embedding_lookup on a constant table", [I((4,), 0, 7, "int32")],
    lambda r, i: tf.nn.embedding_lookup(W(r, (8, 3), 2), i), modes=QF)
add("reverse_axis1", "REVERSE_V2", "axis 1 of rank 4", [I((1, 4, 3, 2))], lambda r, x: tf.reverse(x, [1]))
add("reverse_two_axes", "REVERSE_V2", "axes [0,-2] of rank 3", [I((3, 2, 5))], lambda r, x: tf.reverse(x, [0, -2]))
add("reverse_rank1", "REVERSE_V2", "rank 1", [I((9,))], lambda r, x: tf.reverse(x, [0]))

# --- shape ops ----------------------------------------------------------------------------------------
add("reshape_flatten", "RESHAPE", "(1,3,3,4)->(1,36)", [I((1, 3, 3, 4))], lambda r, x: tf.reshape(x, (1, 36)))
add("reshape_infer", "RESHAPE", "(2,12)->(4,-1,2)", [I((2, 12))], lambda r, x: tf.reshape(x, (4, -1, 2)))
add("reshape_relu", "RESHAPE", "relu(reshape) (6,)->(2,3) between ops", [I((6,))], lambda r, x: tf.nn.relu(tf.reshape(x, (2, 3))) + 0.5)
add("expand_dims_0", "EXPAND_DIMS", "axis 0", [I((3, 4))], lambda r, x: tf.expand_dims(x, 0))
add("expand_dims_neg", "EXPAND_DIMS", "axis -1", [I((2, 3))], lambda r, x: tf.expand_dims(x, -1))
add("expand_dims_dyn", "EXPAND_DIMS", "dynamic batch dimension, axis 1", [I((1, 5), dyn=True)], lambda r, x: tf.expand_dims(x, 1))
add("expand_dims_dyn_last", "EXPAND_DIMS", "dynamic batch dimension, axis -1 of rank 3", [I((1, 3, 2), dyn=True)],
    lambda r, x: tf.expand_dims(x, -1))
add("squeeze_all", "SQUEEZE", "(1,4,1,3) all unit dims", [I((1, 4, 1, 3))], lambda r, x: tf.squeeze(x))
add("squeeze_axis", "SQUEEZE", "(2,1,3,1) axis [-1]", [I((2, 1, 3, 1))], lambda r, x: tf.squeeze(x, [-1]))
add("squeeze_dyn", "SQUEEZE", "dynamic batch dimension, axis 2", [I((1, 4, 1), dyn=True)], lambda r, x: tf.squeeze(x, [2]))
add("broadcast_to_rank3", "BROADCAST_TO", "(1,4) -> (3,2,4)", [I((1, 4))], lambda r, x: tf.broadcast_to(x, (3, 2, 4)))
add("broadcast_to_rank4", "BROADCAST_TO", "(3,1,1) -> (2,3,2,5)", [I((3, 1, 1))], lambda r, x: tf.broadcast_to(x, (2, 3, 2, 5)))
add("broadcast_to_f32", "BROADCAST_TO", "float32 (2,1)->(2,3)", [I((2, 1))], lambda r, x: tf.broadcast_to(x, (2, 3)), modes=F)
add("broadcast_args", "BROADCAST_ARGS", "int32 shape inputs", [I((4,), 1, 1, "int32"), I((4,), 1, 1, "int32")],
    lambda r, a, b: tf.raw_ops.BroadcastArgs(s0=a, s1=b), modes=F)
add("broadcast_args_dyn", "BROADCAST_ARGS", "broadcast of two tensor shapes with a dynamic batch", [I((1, 3), dyn=True), I((4, 1))],
    lambda r, a, b: a + b * 0.0 + tf.cast(tf.reduce_sum(tf.raw_ops.BroadcastArgs(s0=tf.shape(a), s1=tf.shape(b))), tf.float32), modes=F)
add("shape_dyn", "SHAPE", "tf.shape of an input with dynamic batch", [I((1, 4, 3), dyn=True)], lambda r, x: tf.shape(x), modes=F)
add("shape_dyn_q", "SHAPE", "tf.shape of a quantized input with dynamic batch, plus the input", [I((1, 6), dyn=True)],
    lambda r, x: (tf.shape(x), x * 2.0), modes=Q)
add("shape_dyn_rank4", "SHAPE", "tf.shape of a rank-4 dynamic-batch input, int32 output", [I((1, 3, 2, 4), dyn=True)],
    lambda r, x: (tf.shape(x), tf.nn.relu(x)), modes=Q)
add("fill_value_input", "FILL", "tf.fill with constant dims and a value from the input", [I((1,))],
    lambda r, x: tf.fill([2, 3], tf.reduce_max(x)), modes=QF)
add("fill_dyn", "FILL", "tf.fill(tf.shape(x)) for a dynamic-batch input", [I((1, 4), dyn=True)],
    lambda r, x: tf.fill(tf.shape(x), 1.5) + x, modes=QF)
add("fill_dims_input", "FILL", "dims as int32 input (dynamic output)", [I((2,), 2, 2, "int32")], lambda r, d: tf.fill(d, 3), modes=F)
add("zeros_like_dyn", "ZEROS_LIKE", "zeros_like of a dynamic-batch input", [I((1, 5), dyn=True)],
    lambda r, x: tf.zeros_like(x), modes=QF)
add("zeros_like_i32", "ZEROS_LIKE", "int32 input", [I((2, 3), -5, 5, "int32")], lambda r, x: tf.raw_ops.ZerosLike(x=x), modes=F)

# --- space / depth / batch ----------------------------------------------------------------------------
add("depth_to_space_2", "DEPTH_TO_SPACE", "block 2", [I((1, 2, 3, 8))], lambda r, x: tf.nn.depth_to_space(x, 2))
add("depth_to_space_3", "DEPTH_TO_SPACE", "block 3", [I((1, 2, 2, 9))], lambda r, x: tf.nn.depth_to_space(x, 3))
add("space_to_depth_2", "SPACE_TO_DEPTH", "block 2", [I((1, 4, 6, 2))], lambda r, x: tf.nn.space_to_depth(x, 2))
add("space_to_depth_3", "SPACE_TO_DEPTH", "block 3", [I((1, 3, 6, 1))], lambda r, x: tf.nn.space_to_depth(x, 3))
add("space_to_batch", "SPACE_TO_BATCH_ND", "block [2,2] no pad", [I((1, 4, 4, 2))], lambda r, x: tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]))
add("space_to_batch_pad", "SPACE_TO_BATCH_ND", "block [2,3] with padding", [I((1, 3, 4, 1))], lambda r, x: tf.space_to_batch_nd(x, [2, 3], [[1, 0], [0, 2]]))
add("space_to_batch_3d", "SPACE_TO_BATCH_ND", "rank 3, block [2]", [I((2, 6, 3))], lambda r, x: tf.space_to_batch_nd(x, [2], [[0, 0]]))
add("batch_to_space", "BATCH_TO_SPACE_ND", "block [2,2] no crop", [I((4, 2, 2, 2))], lambda r, x: tf.batch_to_space(x, [2, 2], [[0, 0], [0, 0]]))
add("batch_to_space_crop", "BATCH_TO_SPACE_ND", "block [2,3] with crops", [I((6, 2, 2, 1))], lambda r, x: tf.batch_to_space(x, [2, 3], [[1, 0], [0, 2]]))
add("batch_to_space_3d", "BATCH_TO_SPACE_ND", "rank 3, block [2]", [I((4, 3, 2))], lambda r, x: tf.batch_to_space(x, [2], [[0, 1]]))

# --- resize -------------------------------------------------------------------------------------------
RZ = [
    ("x2", "4x4 -> 8x8", (1, 4, 4, 2), (8, 8), False, False),
    ("align", "3x5 -> 5x9 align_corners", (1, 3, 5, 2), (5, 9), True, False),
    ("half_pixel", "3x3 -> 7x5 half_pixel_centers", (1, 3, 3, 3), (7, 5), False, True),
    ("down", "6x6 -> 4x3 (downscale)", (1, 6, 6, 1), (4, 3), False, False),
]
for _k, _v, _shape, _size, _ac, _hp in RZ:
    add(f"resize_bilinear_{_k}", "RESIZE_BILINEAR", _v, [I(_shape)],
        lambda r, x, s=_size, a=_ac, h=_hp: tf.raw_ops.ResizeBilinear(images=x, size=s, align_corners=a, half_pixel_centers=h))
    add(f"resize_nearest_{_k}", "RESIZE_NEAREST_NEIGHBOR", _v, [I(_shape)],
        lambda r, x, s=_size, a=_ac, h=_hp: tf.raw_ops.ResizeNearestNeighbor(images=x, size=s, align_corners=a, half_pixel_centers=h))

# --- matmul -------------------------------------------------------------------------------------------
add("batch_matmul_rank3", "BATCH_MATMUL", "(2,3,4) x (2,4,5) both inputs", [I((2, 3, 4)), I((2, 4, 5))], lambda r, a, b: tf.matmul(a, b))
add("batch_matmul_adj", "BATCH_MATMUL", "adj_x and adj_y", [I((2, 4, 3)), I((2, 5, 4), -2, 2)], lambda r, a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True))
add("batch_matmul_bcast", "BATCH_MATMUL", "rank 4 with batch broadcast (2,1,3,4)x(1,3,4,2)", [I((2, 1, 3, 4)), I((1, 3, 4, 2))], lambda r, a, b: tf.matmul(a, b))
add("batch_matmul_rank2", "BATCH_MATMUL", "rank 2 both inputs (attention-like q*k^T)", [I((5, 8)), I((6, 8))], lambda r, a, b: tf.matmul(a, b, transpose_b=True))

# --- dynamic update slice -----------------------------------------------------------------------------
def _dus(operand, update, idx):
    from tensorflow.compiler.tf2xla.python import xla
    return xla.dynamic_update_slice(operand, update, idx)


add("dynamic_update_slice", "DYNAMIC_UPDATE_SLICE", "(4,6) updated with (2,3) at an int32 index input",
    [I((4, 6)), I((2, 3), -3, 3), I((2,), 0, 3, "int32")], lambda r, x, u, i: _dus(x, u, i), modes=QF)
add("dynamic_update_slice_rank3", "DYNAMIC_UPDATE_SLICE", "rank 3, constant index", [I((2, 5, 3)), I((1, 2, 3))],
    lambda r, x, u: _dus(x, u, tf.constant([1, 2, 0])), modes=QF)


# ------------------------------------------------------------------------------- recurrent and stateful
def _keras():
    import tf_keras
    return tf_keras


def lstm_model(r):
    k = _keras()
    inp = k.Input((10, 4), batch_size=1, name="in0")
    x = k.layers.LSTM(8)(inp)
    return k.Model(inp, k.layers.Dense(3, activation="softmax")(x))


def lstm_seq_model(r):
    k = _keras()
    inp = k.Input((6, 3), batch_size=1, name="in0")
    x = k.layers.LSTM(5, return_sequences=True)(inp)
    return k.Model(inp, k.layers.LSTM(4)(x))


def gru_model(r):
    k = _keras()
    inp = k.Input((5, 3), batch_size=1, name="in0")
    return k.Model(inp, k.layers.Dense(2)(k.layers.GRU(4, unroll=True)(inp)))


def gru_loop_model(r):
    k = _keras()
    inp = k.Input((8, 4), batch_size=1, name="in0")
    return k.Model(inp, k.layers.Dense(3)(k.layers.GRU(6)(inp)))


def rnn_model(r):
    k = _keras()
    inp = k.Input((7, 3), batch_size=1, name="in0")
    return k.Model(inp, k.layers.Dense(2)(k.layers.SimpleRNN(5, unroll=True)(inp)))


def rnn_loop_model(r):
    k = _keras()
    inp = k.Input((7, 3), batch_size=1, name="in0")
    return k.Model(inp, k.layers.Dense(2)(k.layers.SimpleRNN(5)(inp)))


add("lstm_classifier", "UNIDIRECTIONAL_SEQUENCE_LSTM", "Keras LSTM(8) over 10 steps + Dense softmax", [I((1, 10, 4))],
    lstm_model, modes=QF, kind="keras")
add("lstm_stacked_seq", "UNIDIRECTIONAL_SEQUENCE_LSTM", "two stacked LSTMs, return_sequences", [I((1, 6, 3))],
    lstm_seq_model, modes=QF, kind="keras")
add("gru_unrolled", "GRU", "Keras GRU(4) unrolled over 5 steps", [I((1, 5, 3))], gru_model, modes=QF, kind="keras")
add("gru_loop", "GRU", "Keras GRU(6), not unrolled", [I((1, 8, 4))], gru_loop_model, modes=QF, kind="keras")
add("simple_rnn_unrolled", "SIMPLE_RNN", "Keras SimpleRNN(5) unrolled over 7 steps", [I((1, 7, 3))], rnn_model, modes=QF, kind="keras")
add("simple_rnn_loop", "SIMPLE_RNN", "Keras SimpleRNN(5), not unrolled", [I((1, 7, 3))], rnn_loop_model, modes=QF, kind="keras")


class Streaming(tf.Module):
    """A streaming filter: keeps the last frames in resource variables, updated by assign on each call."""

    def __init__(self, r):
        super().__init__()
        self.state = tf.Variable(tf.zeros((1, 3, 4)), trainable=False)
        self.acc = tf.Variable(tf.zeros((1, 4)), trainable=False)
        self.w = tf.constant(r.uniform(-0.5, 0.5, (4, 4)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((1, 4), tf.float32, name="in0")])
    def __call__(self, x):
        s = tf.concat([self.state[:, 1:], tf.expand_dims(x, 1)], axis=1)
        self.state.assign(s)
        y = tf.matmul(tf.reduce_mean(s, axis=1), self.w)
        self.acc.assign(self.acc * 0.5 + y * 0.5)
        return self.acc.read_value() + y


add("streaming_vars_legacyq", "ASSIGN_VARIABLE", "same streaming module, older quantizer: int8/int16 variables",
    [I((1, 4))], lambda r: Streaming(r), modes=Q, kind="module", note="stateful: run as a sequence", legacy=True)
add("streaming_vars", "ASSIGN_VARIABLE", "tf.Module with 2 resource variables (3-frame buffer, leaky accumulator)",
    [I((1, 4))], lambda r: Streaming(r), modes=QF, kind="module", note="stateful: run as a sequence")


class Loops(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec((1, 6), tf.float32, name="in0")])
    def __call__(self, x):
        def body(i, y):
            return i + 1, tf.tanh(y * 1.5 + 0.1)
        _, y = tf.while_loop(lambda i, y: i < 3, body, (tf.constant(0), x))
        return y


class Branch(tf.Module):
    def __init__(self, r):
        super().__init__()
        self.w = tf.constant(r.uniform(-0.5, 0.5, (6, 6)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((1, 6), tf.float32, name="in0")])
    def __call__(self, x):
        return tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.matmul(x, self.w), lambda: tf.nn.relu(x) * 2.0)


add("while_loop", "WHILE", "tf.while_loop 3 iterations of tanh(1.5y+0.1)", [I((1, 6))], lambda r: Loops(), modes=QF, kind="module")
add("if_cond", "IF", "tf.cond on sum(x) > 0", [I((1, 6))], lambda r: Branch(r), modes=QF, kind="module")


# ------------------------------------------------------------------------------------- small networks
def kws_cnn(r, x):
    y = conv(x, r, 8, (10, 4), strides=(2, 2), act=tf.nn.relu)
    y = dwconv(y, r, 3, act=tf.nn.relu)
    y = conv(y, r, 8, 1, act=tf.nn.relu)
    y = tf.reduce_mean(y, axis=[1, 2])
    return tf.nn.softmax(tf.matmul(y, W(r, (8, 4))) + W(r, (4,), .2))


def seg_net(r, x):
    e1 = conv(x, r, 4, 3, act=tf.nn.relu)                      # 8x8x4
    e2 = conv(e1, r, 8, 3, strides=2, act=tf.nn.relu)          # 4x4x8
    b = conv(e2, r, 8, 3, strides=2, act=tf.nn.relu)           # 2x2x8
    d2 = tf.nn.conv2d_transpose(b, W(r, (3, 3, 8, 8)), (1, 4, 4, 8), 2, "SAME")
    d2 = conv(tf.concat([d2, e2], -1), r, 8, 3, act=tf.nn.relu)
    d1 = tf.raw_ops.ResizeBilinear(images=d2, size=(8, 8), half_pixel_centers=True)
    d1 = conv(tf.concat([d1, e1], -1), r, 4, 3, act=tf.nn.relu)
    return tf.sigmoid(conv(d1, r, 2, 1))


def pose_net(r, x):
    f = conv(x, r, 6, 3, strides=2, act=tf.nn.relu6)           # 4x4x6
    f = dwconv(f, r, 3, act=tf.nn.relu6)
    heat = conv(f, r, 3, 1)                                    # 3 keypoint heatmaps
    off = conv(f, r, 6, 1)                                     # x/y offsets per keypoint
    flat = tf.reshape(heat, (1, 16, 3))
    idx = tf.argmax(flat, axis=1, output_type=tf.int32)        # (1, 3)
    offs = tf.reshape(off, (1, 16, 6))[:, :, ::2]              # strided slice: x offsets
    picked = tf.gather(offs, idx[0], axis=1, batch_dims=0)     # (1, 3, 3)
    return tf.sigmoid(heat[:, 1:3, ::2, :]), picked


def nchw_net(r, x):
    y = tf.transpose(x, [0, 2, 3, 1])                          # NCHW -> NHWC
    y = conv(y, r, 4, 3, act=tf.nn.relu)
    y = tf.nn.max_pool2d(y, 2, 2, "VALID")
    y = tf.transpose(y, [0, 3, 1, 2])                          # back to NCHW
    y = tf.reshape(y, (1, -1))
    return tf.matmul(y, W(r, (4 * 3 * 3, 5)))


add("net_kws_cnn", "CONV_2D", "keyword-spotting CNN: conv, dwconv, 1x1, mean, FC, softmax (49x10 features)",
    [I((1, 49, 10, 1), -3, 3)], kws_cnn, modes=Q)
add("net_segmentation", "TRANSPOSE_CONV", "encoder/decoder with TRANSPOSE_CONV, RESIZE_BILINEAR, CONCATENATION skips",
    [I((1, 8, 8, 3))], seg_net, modes=Q)
add("net_pose", "GATHER", "pose-like heads: ARG_MAX over a heatmap, GATHER of offsets, STRIDED_SLICE", [I((1, 8, 8, 3))], pose_net, modes=Q)
add("net_nchw", "TRANSPOSE", "NCHW-exported CNN pattern: TRANSPOSE around CONV_2D / MAX_POOL_2D", [I((1, 2, 6, 6))], nchw_net, modes=Q)


# ------------------------------------------------------------------------------------------ conversion
def np_dtype(d):
    return {"float32": np.float32, "int32": np.int32, "bool": np.bool_, "int8": np.int8, "int16": np.int16, "int64": np.int64}[d]


def sample(rng, inp):
    if inp.dtype == "float32":
        return rng.uniform(inp.lo, inp.hi, size=inp.shape).astype(np.float32)
    if inp.dtype == "bool":
        return rng.integers(0, 2, size=inp.shape).astype(np.bool_)
    return rng.integers(int(inp.lo), int(inp.hi) + 1, size=inp.shape).astype(np_dtype(inp.dtype))


def representative(spec):
    def gen():
        rng = np.random.default_rng(1234)
        for n in range(48):
            xs = [sample(rng, i) for i in spec.inputs]
            if n < 2:  # make sure both ends of each float range are seen
                xs = [np.full(i.shape, i.lo if n == 0 else i.hi, np.float32) if i.dtype == "float32" else x
                      for i, x in zip(spec.inputs, xs)]
            yield {f"in{k}": x for k, x in enumerate(xs)}
    return gen


def seed_of(name):
    return zlib.crc32(name.encode())


def make_converter(spec, r):
    if spec.kind == "keras":
        k = _keras()
        k.utils.set_random_seed(seed_of(spec.name) % 2**31)
        model = spec.fn(r)
        for w in model.weights:
            w.assign(r.uniform(-0.6, 0.6, w.shape).astype(np.float32))
        return tf.lite.TFLiteConverter.from_keras_model(model), model
    if spec.kind == "module":
        mod = spec.fn(r)
        cf = mod.__call__.get_concrete_function()
        return tf.lite.TFLiteConverter.from_concrete_functions([cf], mod), mod
    sig = [tf.TensorSpec(((None,) + i.shape[1:]) if i.dyn else i.shape, i.dtype, name=f"in{n}")
           for n, i in enumerate(spec.inputs)]
    fn = tf.function(lambda *xs: spec.fn(r, *xs), input_signature=sig, autograph=False)
    mod = tf.Module()
    mod.f = fn
    return tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], mod), mod


def convert(spec, mode, legacy=False):
    """Convert one spec in one mode; `legacy` uses the converter's older (non-MLIR) post-training quantizer."""
    r = np.random.default_rng(seed_of(spec.name))
    conv_, keep = make_converter(spec, r)
    if spec.kind == "module":
        conv_.experimental_enable_resource_variables = True
    if mode != "float32":
        conv_.optimizations = [tf.lite.Optimize.DEFAULT]
        conv_.representative_dataset = representative(spec)
        if mode.startswith("int8"):
            conv_.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        else:
            conv_.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        if not mode.endswith("_fio"):
            conv_.inference_input_type = conv_.inference_output_type = tf.int8 if mode == "int8" else tf.int16
        if legacy:
            conv_.experimental_new_quantizer = False
    data = conv_.convert()
    del keep
    return data


FLOAT_OK = {"QUANTIZE", "DEQUANTIZE"}


def describe(data):
    m = tflite.Model.GetRootAsModel(data, 0)
    ops, dtypes, op_types = [], set(), {}
    for s in range(m.SubgraphsLength()):
        g = m.Subgraphs(s)
        for i in range(g.OperatorsLength()):
            op = g.Operators(i)
            oc = m.OperatorCodes(op.OpcodeIndex())
            name = OP_NAMES.get(max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode()), "?")
            if name == "CUSTOM":
                name = "CUSTOM:" + oc.CustomCode().decode()
            if name not in ops:
                ops.append(name)
            ins = [t for t in (op.InputsAsNumpy() if op.InputsLength() else []) if t >= 0]
            outs = [t for t in (op.OutputsAsNumpy() if op.OutputsLength() else []) if t >= 0]
            op_types.setdefault(name, []).append([TYPE_NAMES[g.Tensors(t[0]).Type()] if t else None for t in (ins, outs)])
        for t in range(g.TensorsLength()):
            dtypes.add(TYPE_NAMES[g.Tensors(t).Type()])
    g = m.Subgraphs(0)

    def io(idxs):
        out = []
        for t in idxs:
            tt = g.Tensors(t)
            d = dict(name=tt.Name().decode(), dtype=TYPE_NAMES[tt.Type()], shape=tt.ShapeAsNumpy().tolist()
                     if tt.ShapeLength() else [])
            q = tt.Quantization()
            if q is not None and q.ScaleLength() == 1:
                d["scale"], d["zero_point"] = float(q.Scale(0)), int(q.ZeroPoint(0))
            out.append(d)
        return out
    return dict(ops=ops, tensor_dtypes=sorted(dtypes), subgraphs=m.SubgraphsLength(), op_types=op_types,
                inputs=io(g.InputsAsNumpy()), outputs=io(g.OutputsAsNumpy()))


# Ops whose own tensors are resources, conditions or loop state: a quantized model keeps them whatever the
# dtype of the data that flows through them (recorded in the manifest's `quantized_data` field).
STRUCTURAL = {"WHILE", "IF", "CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"}
QTYPES = {"int8", "int16"}
# Ops that work on bool or int32 tensors inside a quantized model (fed by comparisons or ARG_MAX).
NONFLOAT_OK = {"LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT", "REDUCE_ALL", "REDUCE_ANY", "CAST"}


def check_kept(spec, mode, info):
    """Raise unless the builtin under test is in the model, and works on int8/int16 data in quantized modes."""
    if spec.op in ("GRU", "SIMPLE_RNN"):
        return
    if spec.op not in info["ops"]:
        raise RuntimeError(f"converter did not keep {spec.op}: model ops {info['ops']}")
    if mode == "float32" or spec.op in FLOAT_OK or spec.op in STRUCTURAL:
        return
    if spec.op in NONFLOAT_OK and any(i not in (None, "float32") for i, _ in info["op_types"][spec.op]):
        return
    if not any(i in QTYPES or o in QTYPES for i, o in info["op_types"][spec.op]):
        raise RuntimeError(f"{spec.op} stays float32 in the quantized model: model ops {info['ops']}")


def input_ranges(spec, info):
    """Attach each spec input's real range to the model input it became (matched by name, else order)."""
    for n, mi in enumerate(info["inputs"]):
        match = [i for k, i in enumerate(spec.inputs) if f"in{k}" in mi["name"] or f"in{k}:" in mi["name"]]
        src = match[0] if len(match) == 1 else (spec.inputs[n] if n < len(spec.inputs) else None)
        if src is not None and mi["dtype"] in ("float32", "int32", "int64", "bool"):
            mi["range"] = [src.lo, src.hi]
        elif src is not None and src.clip and "scale" in mi:
            info = np.iinfo(np_dtype(mi["dtype"]))
            mi["qrange"] = [max(info.min, int(np.ceil(src.lo / mi["scale"] + mi["zero_point"]))),
                            min(info.max, int(np.floor(src.hi / mi["scale"] + mi["zero_point"])))]


def error_reason(exc):
    text = str(exc)
    if isinstance(exc, RuntimeError) and "(legacy quantizer:" in text:
        return text[:400]
    for pat in (r"error: ([^\n]*)", r"(Quantization not yet supported for op[^\n]*)", r"(Unsupported[^\n]*)"):
        m = re.search(pat, text)
        if m:
            return m.group(1).strip()[:300]
    return text.strip().splitlines()[-1][:300] if text.strip() else type(exc).__name__


def io_dtype(mode, info):
    if mode in ("int8", "int16"):
        return mode
    ins = sorted({i["dtype"] for i in info["inputs"]})
    outs = sorted({o["dtype"] for o in info["outputs"]})
    return "/".join(ins) if ins == outs else "/".join(ins) + "->" + "/".join(outs)


MANUAL_NOT_PRODUCED = [
    dict(op="QUANTIZE", dtype="int8->int16 / int16->int8",
         reason="the converter never mixes int8 and int16 activations: 16x8 mode accepts only float32 or int16 "
                "I/O ('The inference_input_type and inference_output_type must be in [tf.float32, tf.int16]') "
                "and int8 mode has no int16 tensors"),
    dict(op="SVDF", dtype="int8/int16/float32",
         reason="TF 2.21's MLIR converter has no SVDF fusion and no tf/Keras op lowers to SVDF. The legacy TOCO "
                "path (experimental_new_converter=False) still ships a graph-matching SvdfCluster, but it only "
                "fires on TF1 GraphDefs laid out like Google's old speech models (Const nodes named "
                ".../SVDF_weights_feature/part_N, .../SVDF_weights_time/part_N, a Reshape/shape of "
                "[units, rank, -1]); not attempted: edgesdk should hand-build SVDF"),
]


def work(items, results):
    """Convert `items` ("spec:mode") in this process, appending one JSON line per step to `results`."""
    by_name = {s.name: s for s in SPECS}
    with open(results, "a") as out:
        for item in items:
            name, mode = item.split(":")
            spec = by_name[name]
            out.write(json.dumps(dict(begin=item)) + "\n")
            out.flush()
            fname = f"{name}_{mode}.tflite"
            quantizer = None if mode == "float32" else "legacy" if spec.legacy else "mlir"
            try:
                try:
                    data = convert(spec, mode, legacy=spec.legacy)
                    info = describe(data)
                    check_kept(spec, mode, info)
                except Exception as exc:  # noqa: BLE001
                    if mode == "float32":
                        raise
                    # The MLIR quantizer leaves some ops in float32 where the older quantizer makes them int8
                    # (NOT_EQUAL) or says plainly that it cannot: try it before giving up.
                    first = error_reason(exc)
                    try:
                        data = convert(spec, mode, legacy=True)
                        info = describe(data)
                        check_kept(spec, mode, info)
                        quantizer = "legacy"
                    except Exception as exc2:  # noqa: BLE001
                        second = error_reason(exc2)
                        raise RuntimeError(first if second == first else f"{first} (legacy quantizer: {second})") from None
            except Exception as exc:  # noqa: BLE001 - record every failure, keep going
                reason = error_reason(exc)
                out.write(json.dumps(dict(item=item, fail=reason)) + "\n")
                out.flush()
                print(f"  FAIL {fname}: {reason}", flush=True)
                continue
            (OUT / fname).write_bytes(data)
            quantized_data = None
            if mode != "float32" and spec.op in STRUCTURAL | {"GRU", "SIMPLE_RNN"}:
                quantized_data = not any("float32" in t for ts in info["op_types"].values() for t in ts)
            del info["op_types"]
            input_ranges(spec, info)
            entry = dict(file=fname, spec=name, op=spec.op, variant=spec.variant, mode=mode,
                         io_dtype=io_dtype(mode, info), ops=info["ops"], tensor_dtypes=info["tensor_dtypes"],
                         subgraphs=info["subgraphs"], inputs=info["inputs"], outputs=info["outputs"],
                         stateful="VAR_HANDLE" in info["ops"], quantizer=quantizer, size=len(data),
                         sha256=hashlib.sha256(data).hexdigest())
            if quantized_data is not None:
                entry["quantized_data"] = quantized_data
            if spec.note:
                entry["note"] = spec.note
            out.write(json.dumps(dict(item=item, ok=entry)) + "\n")
            out.flush()
            print(f"  ok   {fname} ({len(data)} B) {info['ops']}", flush=True)


def run_isolated(items):
    """Run `work` in child processes; a converter crash (it segfaults on some graphs) fails one item only."""
    import subprocess
    import tempfile
    results, todo = [], list(items)
    while todo:
        with tempfile.TemporaryDirectory() as tmp:
            lst, res = Path(tmp, "items"), Path(tmp, "results")
            lst.write_text("\n".join(todo))
            res.write_text("")
            proc = subprocess.run([sys.executable, __file__, "--worker", str(lst), str(res)])
            lines = [json.loads(x) for x in res.read_text().splitlines() if x.strip()]
        done = [x for x in lines if "item" in x]
        results += done
        finished = {x["item"] for x in done}
        begun = [x["begin"] for x in lines if "begin" in x]
        crashed = [b for b in begun if b not in finished]
        for c in crashed:
            reason = f"converter crashed (exit status {proc.returncode})"
            print(f"  FAIL {c}: {reason}", flush=True)
            results.append(dict(item=c, fail=reason))
            finished.add(c)
        if not begun and proc.returncode != 0:
            raise SystemExit(f"worker failed before converting anything (exit status {proc.returncode})")
        todo = [t for t in todo if t not in finished]
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="fnmatch pattern on the spec name (e.g. 'conv*'); others keep their manifest entries")
    ap.add_argument("--list", action="store_true", help="list the specs and exit")
    ap.add_argument("--worker", nargs=2, metavar=("ITEMS", "RESULTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        work(Path(args.worker[0]).read_text().split(), args.worker[1])
        return 0
    if args.list:
        for s in SPECS:
            print(f"{s.name:32s} {s.op:28s} {','.join(s.modes):24s} {s.variant}")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    old = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {"models": [], "attempts": []}
    old_models = {m["file"]: m for m in old.get("models", [])}
    selected = [s for s in SPECS if not args.only or fnmatch.fnmatch(s.name, args.only)]
    sel_names = {s.name for s in selected}
    models = [m for m in old.get("models", []) if m["spec"] not in sel_names] if args.only else []
    attempts = [a for a in old.get("attempts", []) if a["spec"] not in sel_names] if args.only else []
    items = [f"{s.name}:{m}" for s in selected for m in s.modes]
    for res in run_isolated(items):
        name, mode = res["item"].split(":")
        if "fail" in res:
            attempts.append(dict(spec=name, op=next(s.op for s in SPECS if s.name == name), mode=mode, reason=res["fail"]))
            continue
        entry = res["ok"]
        prev = old_models.get(entry["file"])
        if prev and prev.get("sha256") == entry["sha256"]:
            entry.update({k: prev[k] for k in CHECK_FIELDS if k in prev})
        models.append(entry)
    order = {s.name: n for n, s in enumerate(SPECS)}
    models.sort(key=lambda m: (order.get(m["spec"], 1e9), m["file"]))
    attempts.sort(key=lambda a: (order.get(a["spec"], 1e9), a["mode"]))
    produced = {(m["op"], m["mode"]) for m in models}
    not_produced, seen = list(MANUAL_NOT_PRODUCED), set()
    for a in attempts:
        key = (a["op"], a["mode"])
        if key not in produced and key not in seen:
            seen.add(key)
            not_produced.append(dict(op=a["op"], dtype=a["mode"], reason=a["reason"]))
    if not args.only:
        keep = {m["file"] for m in models}
        for f in OUT.glob("*.tflite"):
            if f.name not in keep:
                f.unlink()
    manifest = dict(generator="tests/models/make_op_models.py", tensorflow=tf.__version__,
                    models=models, not_produced=not_produced, attempts=attempts)
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(models)} models, {len(attempts)} failed attempts, {len(not_produced)} not produced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
