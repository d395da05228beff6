"""The layer ops (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, the pools, ...) on cases the converter corpus
(tests/models/ops) lacks, built by hand with tests/modelgen.py: 16x8 layers with an int32 accumulator
(quantized_bias_type INT32), without bias, with accumulators past int32, with left-shift requantization;
float32 pools and L2_POOL_2D (which the converter never keeps); and the models edgesdk must refuse.

Each model is compiled for the C target and run op by op on the host kernels (edgesdk.targets.c.testing)
against LiteRT's reference kernels (--rounding ref) and TFLite Micro (--rounding tflm) on seeded random,
small-magnitude, all-min and all-max inputs, byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.partition.partitioner import partition
from edgesdk.targets.c import testing
from image_batches import batch, link_and_run, load_runs
from modelgen import (ACTIVATION_CODES, SAME, VALID, ModelBuilder, _conv_out_shape, batch_matmul_model, pool_model,
                      resize_model, transpose_conv_model)

INT32, INT64 = 2, 4  # TensorType codes of quantized_bias_type
BOTH = ("ref", "tflm")


# -- model builders -------------------------------------------------------------------------------------------

def _bias(m, bias, bias_dtype, scales):
    if bias is None:
        return -1
    return m.const(np.asarray(bias), bias_dtype, scale=scales, zero_point=0, axis=0)


def conv16_model(shape, weights, bias, x_scale, w_scales, y_scale, bias_dtype="int64", bias_type=None,
                 stride=(1, 1), dilation=(1, 1), padding=SAME, activation="NONE", w_zero_point=0):
    """A 16x8 CONV_2D: int16 input/output (zero point 0), OHWI int8 weights with per-channel scales."""
    out_shape = _conv_out_shape(shape, weights.shape[1:3], stride, dilation, padding, weights.shape[0])
    m = ModelBuilder()
    x = m.tensor(shape, "int16", x_scale, 0)
    w = m.const(weights, "int8", scale=w_scales, zero_point=w_zero_point, axis=0)
    b = _bias(m, bias, bias_dtype, np.float32(x_scale) * np.asarray(w_scales, np.float32))
    y = m.tensor(out_shape, "int16", y_scale, 0)
    fields = dict(Padding=padding, StrideH=stride[0], StrideW=stride[1], DilationHFactor=dilation[0],
                  DilationWFactor=dilation[1], FusedActivationFunction=ACTIVATION_CODES[activation])
    if bias_type is not None:
        fields["QuantizedBiasType"] = bias_type
    m.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", **fields)
    return m.build([x], [y])


def depthwise16_model(shape, weights, bias, x_scale, w_scales, y_scale, multiplier=1, bias_dtype="int64",
                      stride=(1, 1), dilation=(1, 1), padding=SAME, activation="NONE"):
    out_shape = _conv_out_shape(shape, weights.shape[1:3], stride, dilation, padding, weights.shape[3])
    m = ModelBuilder()
    x = m.tensor(shape, "int16", x_scale, 0)
    w = m.const(weights, "int8", scale=w_scales, zero_point=0, axis=3)
    b = _bias(m, bias, bias_dtype, np.float32(x_scale) * np.asarray(w_scales, np.float32))
    y = m.tensor(out_shape, "int16", y_scale, 0)
    inputs = [x, w] if bias is None else [x, w, b]  # an omitted (-1) bias fails LiteRT's Prepare, crashes TFLite Micro
    m.op("DEPTHWISE_CONV_2D", inputs, [y], "DepthwiseConv2DOptions", Padding=padding, StrideH=stride[0],
         StrideW=stride[1], DepthMultiplier=multiplier, DilationHFactor=dilation[0], DilationWFactor=dilation[1],
         FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build([x], [y])


def fc16_model(batch, weights, bias, x_scale, w_scales, y_scale, bias_dtype="int64", bias_type=None,
               activation="NONE"):
    m = ModelBuilder()
    x = m.tensor((batch, weights.shape[1]), "int16", x_scale, 0)
    w = m.const(weights, "int8", scale=w_scales, zero_point=0, axis=0)
    b = _bias(m, bias, bias_dtype, np.float32(x_scale) * np.asarray(w_scales, np.float32))
    y = m.tensor((batch, weights.shape[0]), "int16", y_scale, 0)
    fields = dict(FusedActivationFunction=ACTIVATION_CODES[activation])
    if bias_type is not None:
        fields["QuantizedBiasType"] = bias_type
    m.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions", **fields)
    return m.build([x], [y])


def fc_f32_model(in_shape, weights, bias, activation="NONE", keep_num_dims=False):
    m = ModelBuilder()
    x = m.tensor(in_shape, "float32")
    w = m.const(np.asarray(weights, np.float32), "float32")
    b = -1 if bias is None else m.const(np.asarray(bias, np.float32), "float32")
    units = weights.shape[0]
    out_shape = (*in_shape[:-1], units) if keep_num_dims else (int(np.prod(in_shape)) // weights.shape[1], units)
    y = m.tensor(out_shape, "float32")
    m.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions",
         FusedActivationFunction=ACTIVATION_CODES[activation], KeepNumDims=keep_num_dims)
    return m.build([x], [y])


def conv_f32_model(shape, weights, bias, depthwise=False, multiplier=1, stride=(1, 1), dilation=(1, 1), padding=SAME,
                   activation="NONE"):
    """float32 CONV_2D (OHWI weights) or DEPTHWISE_CONV_2D (1HW(C*M) weights)."""
    out_c = weights.shape[3] if depthwise else weights.shape[0]
    out_shape = _conv_out_shape(shape, weights.shape[1:3], stride, dilation, padding, out_c)
    m = ModelBuilder()
    x = m.tensor(shape, "float32")
    w = m.const(np.asarray(weights, np.float32), "float32")
    inputs = [x, w] if bias is None else [x, w, m.const(np.asarray(bias, np.float32), "float32")]
    y = m.tensor(out_shape, "float32")
    fields = dict(Padding=padding, StrideH=stride[0], StrideW=stride[1], DilationHFactor=dilation[0],
                  DilationWFactor=dilation[1], FusedActivationFunction=ACTIVATION_CODES[activation])
    if depthwise:
        m.op("DEPTHWISE_CONV_2D", inputs, [y], "DepthwiseConv2DOptions", DepthMultiplier=multiplier, **fields)
    else:
        m.op("CONV_2D", inputs, [y], "Conv2DOptions", **fields)
    return m.build([x], [y])


def _rng(seed):
    return np.random.default_rng(seed)


def _w(rng, shape, lo=-127, hi=127):
    return rng.integers(lo, hi + 1, shape).astype(np.int8)


def _scales(rng, n, lo=0.002, hi=0.02):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(np.float32)


# -- the models (name -> (bytes, modes whose reference runs it)) ------------------------------------------------

def layer16_models() -> dict:
    r = _rng(7)
    models = {}
    w = _w(r, (5, 3, 3, 4))
    models["conv16_int32_bias"] = (conv16_model(
        (1, 7, 6, 4), w, r.integers(-30000, 30000, 5), 1 / 32768, _scales(r, 5), 2e-4, bias_dtype="int32",
        bias_type=INT32, stride=(2, 1), activation="RELU"), BOTH)
    # 600 taps of |w| = 127: an all-max input takes the int32 accumulator past 2^31 (it wraps in TFLite too)
    w = (np.where(_rng(1).random((3, 1, 1, 600)) < 0.9, 127, -127)).astype(np.int8)
    w[0] = 127
    models["conv16_int32_wraps"] = (conv16_model(
        (1, 2, 2, 600), w, [5, -7, 100], 1 / 32768, [0.01, 0.011, 0.012], 0.05, bias_dtype="int32",
        bias_type=INT32, padding=VALID), BOTH)
    w = _w(r, (4, 3, 2, 3))
    models["conv16_no_bias"] = (conv16_model(
        (1, 6, 5, 3), w, None, 1 / 32768, _scales(r, 4), 1e-4, dilation=(2, 1)), ("tflm",))  # LiteRT needs a bias
    models["conv16_no_bias_int32_type"] = (conv16_model(
        (1, 6, 5, 3), w, None, 1 / 32768, _scales(r, 4), 1e-4, bias_type=INT32), ("tflm",))
    # 1024 input channels of large weights: partial sums leave int32 (the kernel's 64-bit path)
    w = _w(r, (6, 1, 1, 1024), 60, 127) * np.where(r.random((6, 1, 1, 1024)) < 0.5, 1, -1).astype(np.int8)
    models["conv16_wide_sums"] = (conv16_model(
        (1, 3, 2, 1024), w, r.integers(-10**9, 10**9, 6), 1 / 32768, _scales(r, 6), 0.5), BOTH)
    # effective scales 2^10 .. 2^14: left shifts in the 64-bit requantization
    w = _w(r, (3, 1, 1, 2), -3, 3)
    models["conv16_left_shift"] = (conv16_model(
        (1, 4, 4, 2), w, [1, -2, 3], 1.0, [1.0, 4.0, 16.0], 1.0 / 512, padding=VALID), BOTH)
    w = _w(r, (6, 3, 3, 2))
    models["conv16_grouped"] = (conv16_model(
        (1, 5, 5, 4), w, r.integers(-1000, 1000, 6), 1 / 32768, _scales(r, 6), 1e-4, activation="RELU6"), BOTH)
    # the blocked layout's channels after the last block: two (one block + 2) and three (no block), with dilation
    # across rows and columns, SAME padding, stride 2, ReLU, batches
    w = _w(_rng(17), (6, 3, 3, 3))
    models["conv16_rest2_dilated"] = (conv16_model(
        (2, 9, 8, 3), w, _rng(17).integers(-3000, 3000, 6), 1 / 32768, _scales(_rng(18), 6), 2e-4, stride=(2, 1),
        dilation=(2, 3), activation="RELU"), BOTH)
    w = _w(_rng(19), (3, 2, 3, 5))
    models["conv16_rest3"] = (conv16_model(
        (1, 6, 7, 5), w, None, 1 / 32768, _scales(_rng(20), 3), 3e-4, stride=(1, 2), padding=VALID), ("tflm",))
    models["conv16_rest3_dilated"] = (conv16_model(
        (1, 8, 9, 2), _w(_rng(21), (3, 3, 3, 2)), [5, -5, 9], 1 / 32768, _scales(_rng(22), 3), 1e-4,
        dilation=(2, 2), padding=VALID), BOTH)
    # depthwise with fewer than 4 channels (one pass over each window for all of them): 1, 2 and 3 channels,
    # dilation, SAME padding, stride, ReLU6, batches
    for c, (dilation, stride, padding) in {1: ((1, 2), (1, 1), SAME), 2: ((2, 2), (1, 1), VALID),
                                           3: ((2, 1), (2, 2), SAME)}.items():
        models[f"dwconv16_{c}ch"] = (depthwise16_model(
            (2, 7, 8, c), _w(_rng(30 + c), (1, 3, 3, c)), _rng(40 + c).integers(-5000, 5000, c), 1 / 32768,
            _scales(_rng(50 + c), c), 2e-4, stride=stride, dilation=dilation, padding=padding,
            activation="RELU6"), BOTH)
    w = _w(r, (1, 3, 2, 9))
    models["dwconv16_mult3_no_bias"] = (depthwise16_model(
        (1, 6, 7, 3), w, None, 1 / 32768, _scales(r, 9), 1e-4, multiplier=3, stride=(1, 2), dilation=(2, 1)), BOTH)
    w = _w(r, (1, 5, 5, 4))
    models["dwconv16_big_bias_relu"] = (depthwise16_model(
        (2, 9, 9, 4), w, r.integers(-2**40, 2**40, 4), 1 / 32768, _scales(r, 4), 3e-3, stride=(2, 2),
        activation="RELU"), BOTH)
    w = _w(r, (7, 40))
    models["fc16_int32_bias"] = (fc16_model(
        3, w, r.integers(-50000, 50000, 7), 1 / 32768, _scales(r, 7), 1e-4, bias_dtype="int32", bias_type=INT32), BOTH)
    models["fc16_int32_type_no_bias"] = (fc16_model(
        2, w, None, 1 / 32768, _scales(r, 7), 1e-4, bias_type=INT32), BOTH)
    models["fc16_per_tensor_relu"] = (fc16_model(
        2, _w(r, (5, 33)), r.integers(-9999, 9999, 5), 1 / 32768, [0.004], 1e-4, activation="RELU"), BOTH)
    w = _w(r, (4, 2000), 100, 127)
    models["fc16_wide_sums"] = (fc16_model(1, w, [0, 1, -1, 2**33], 1 / 32768, _scales(r, 4), 2.0), BOTH)
    models["fc16_left_shift"] = (fc16_model(
        2, _w(r, (3, 4), -2, 2), [0, 5, -5], 1.0, [1.0, 2.0, 8.0], 1.0 / 1024), BOTH)
    models.update(fc16_row_block_models())
    return models


def fc16_row_block_models() -> dict:
    """16x8 FULLY_CONNECTED layers for the row-block kernels (edgesdk_fully_connected_s16_fp64 / _mbqm64): every
    block size (15 rows = 8 + 4 + 2 + 1), depths with a four-tap remainder of 1, 2 and 3 taps, batches, ReLU, no
    bias, and the ends of their shift ranges: s = ~shift = 1 (shift -2, the window's smallest) and shift -31 (the
    largest); full-scale weights and biases near the int32 limit of sum32."""
    r = _rng(13)
    x_scale = 1 / 32768
    models = {
        "fc16_rows_all_blocks": fc16_model(2, _w(r, (15, 7)), r.integers(-99999, 99999, 15), x_scale,
                                           _scales(r, 15), 1e-4),
        "fc16_rows_relu_pairs": fc16_model(3, _w(r, (6, 10)), r.integers(-9999, 9999, 6), x_scale, _scales(r, 6),
                                           3e-4, activation="RELU"),
        "fc16_rows_no_bias": fc16_model(1, _w(r, (9, 5)), None, x_scale, _scales(r, 9), 2e-4),
        # effective scale 0.2: shift -2 (s = 1) for LiteRT's window and total shift 17 for TFLite Micro's form
        "fc16_rows_shift_minus2": fc16_model(2, _w(r, (5, 3)), [7, -7, 0, 1, -1], x_scale, [0.01] * 5,
                                             x_scale * 0.01 / 0.2),
        # effective scales ~2^-31 (shift -31): most outputs round to 0 or +-1
        "fc16_rows_tiny_scale": fc16_model(2, _w(r, (4, 33), 100, 127), [2**24, -2**24, 0, 12345], x_scale,
                                           [0.02, 0.02, 0.015, 0.02], x_scale * 0.02 / 2**-31.4),
    }
    # power-of-two scales 2^-3 .. 2^-8: an eighth to a 256th of the accumulators are exact ties, which the window
    # sends to the double rounding with their own output's scale
    models["fc16_rows_ties"] = fc16_model(2, _w(r, (11, 9)), r.integers(-999, 999, 11), x_scale,
                                          [2.0 ** -(7 + k % 6) for k in range(11)], 2.0 ** -19)
    # |bias| + 32768 * sum|w| = 2^31 - 4096: sums near the int32 limit, and the largest window (2^30)
    w = np.full((3, 500), 127, np.int8)
    w[1] = -127
    w[2, ::2] = -127
    bias = [2**31 - 4096 - 32768 * 127 * 500, -(2**31 - 4096 - 32768 * 127 * 500), 0]
    models["fc16_rows_sum32_limit"] = fc16_model(1, w, bias, x_scale, [0.01, 0.01, 0.01], 5.0)
    return {name: (data, BOTH) for name, data in models.items()}


def float_layer_models() -> dict:
    r = _rng(11)
    w = r.normal(0, 0.3, (9, 37)).astype(np.float32)
    return {
        "conv_f32_same_relu": (conv_f32_model((1, 7, 6, 5), r.normal(0, 0.3, (4, 3, 3, 5)), r.normal(0, 1, 4),
                                              stride=(2, 1), activation="RELU"), BOTH),
        "conv_f32_dilated_grouped": (conv_f32_model((2, 8, 7, 4), r.normal(0, 0.3, (6, 3, 2, 2)), r.normal(0, 1, 6),
                                                    dilation=(2, 1), padding=VALID), BOTH),
        "dwconv_f32_mult2_relu6": (conv_f32_model((1, 7, 9, 3), r.normal(0, 0.5, (1, 3, 3, 6)), r.normal(0, 1, 6),
                                                  depthwise=True, multiplier=2, stride=(2, 2), activation="RELU6"),
                                   BOTH),
        "dwconv_f32_no_bias_dilated": (conv_f32_model((1, 9, 9, 4), r.normal(0, 0.5, (1, 3, 3, 4)), None,
                                                      depthwise=True, dilation=(2, 2), padding=VALID), BOTH),
        "fc_f32_bias": (fc_f32_model((3, 37), w, r.normal(0, 1, 9)), BOTH),
        "fc_f32_no_bias_relu6": (fc_f32_model((2, 37), w, None, activation="RELU6"), BOTH),
        "fc_f32_keep_dims_relu": (fc_f32_model((1, 4, 37), w, r.normal(0, 1, 9), activation="RELU",
                                               keep_num_dims=True), BOTH),
    }


def transpose_conv_models() -> dict:
    r = _rng(13)
    q16 = (1 / 32768, 0)
    w = _w(r, (3, 3, 3, 4))
    wide = np.full((1, 6, 6, 2048), 127, np.int8)  # 36 taps x 2048 channels of 255 * 127 pass 2^31: int32 wraps
    return {
        "tconv_s8_per_tensor_relu": (transpose_conv_model(
            (1, 4, 3, 4), w, r.integers(-2000, 2000, 3), (0.05, -7), [0.01], (0.08, 5), activation="RELU"), BOTH),
        "tconv_s8_valid_odd_out": (transpose_conv_model(
            (2, 3, 4, 4), w, None, (0.03, 10), _scales(r, 3), (0.05, -3), stride=(2, 3), padding=VALID,
            out_hw=(8, 13)), BOTH),
        "tconv_s8_same_s1_relu6": (transpose_conv_model(
            (1, 5, 5, 4), w, r.integers(-900, 900, 3), (0.05, 0), _scales(r, 3), (0.02, -128), stride=(1, 1),
            activation="RELU6"), BOTH),
        "tconv_s8_wraps": (transpose_conv_model(
            (1, 6, 6, 2048), wide, [1000], (0.05, -128), [0.01], (40.0, 0), stride=(1, 1), padding=VALID), BOTH),
        "tconv_s16_bias_relu": (transpose_conv_model(
            (1, 3, 4, 4), w, r.integers(-10**6, 10**6, 3), q16, _scales(r, 3), (2e-4, 0), dtype="int16",
            activation="RELU"), BOTH),
        "tconv_s16_no_bias_int32_type": (transpose_conv_model(
            (1, 3, 4, 4), w, None, q16, _scales(r, 3), (2e-4, 0), dtype="int16", bias_type=INT32), BOTH),
        "tconv_s16_wide": (transpose_conv_model(
            (1, 3, 3, 600), _w(r, (2, 2, 2, 600), 100, 127), [7, -7], q16, [0.01, 0.02], (0.5, 0), dtype="int16",
            padding=VALID), BOTH),
    }


def batch_matmul_models() -> dict:
    r = _rng(17)
    q16 = (1 / 4096, 0)
    return {
        "bmm_s8_zero_points": (batch_matmul_model((3, 5, 7), (3, 7, 4), qa=(0.05, -20), qb=(0.03, 17),
                                                  qy=(0.4, 9)), BOTH),
        "bmm_s8_adj_x_bcast": (batch_matmul_model((2, 1, 6, 3), (1, 4, 6, 5), qa=(0.05, 3), qb=(0.02, -128),
                                                  qy=(0.3, -4), adj_x=True), BOTH),
        "bmm_s8_rank5_adj_y_const": (batch_matmul_model(
            (2, 1, 3, 4, 6), (1, 2, 1, 5, 6), qa=(0.05, 1), qb=(0.01, 0), qy=(0.2, 2), adj_y=True,
            b_const=_w(r, (1, 2, 1, 5, 6))), BOTH),
        "bmm_s8_rank2": (batch_matmul_model((4, 9), (9, 3), qa=(0.1, -1), qb=(0.1, 1), qy=(0.9, 0)), BOTH),
        # 33100 products of 255 * 255: the int32 accumulator wraps with all-max inputs (in TFLite too)
        "bmm_s8_wraps": (batch_matmul_model((1, 33100), (33100, 1), qa=(0.05, -128), qb=(0.05, -128),
                                            qy=(2.0, 0)), BOTH),
        "bmm_s16_adj_both": (batch_matmul_model((2, 9, 5), (2, 3, 9), "int16", q16, q16, (0.05, 0), adj_x=True,
                                                adj_y=True), BOTH),
        "bmm_s16_deep": (batch_matmul_model((3, 200), (200, 2), "int16", q16, q16, (2.0, 0)), BOTH),
        "bmm_f32_bcast": (batch_matmul_model((2, 1, 3, 8), (3, 8, 5), "float32"), BOTH),
        "bmm_f32_adj": (batch_matmul_model((4, 7, 3), (4, 6, 7), "float32", adj_x=True, adj_y=True), BOTH),
    }


def resize_models() -> dict:
    bi, nn = "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"
    q8, q16 = (0.05, -3), (1 / 4096, 0)
    tflm_bilinear16 = ("ref",)  # TFLite Micro's RESIZE_BILINEAR has no int16 kernel
    return {
        "bilinear_f32_up": (resize_model(bi, (2, 4, 5, 3), (7, 11), "float32"), BOTH),
        "bilinear_f32_align": (resize_model(bi, (1, 5, 3, 2), (9, 8), "float32", align_corners=True), BOTH),
        "bilinear_f32_half_pixel": (resize_model(bi, (1, 3, 4, 2), (7, 9), "float32", half_pixel=True), BOTH),
        "bilinear_f32_half_pixel_down": (resize_model(bi, (1, 9, 7, 2), (4, 3), "float32", half_pixel=True), BOTH),
        "bilinear_s8_half_pixel_down": (resize_model(bi, (1, 9, 7, 2), (4, 3), q=q8, half_pixel=True), BOTH),
        "bilinear_s8_odd_up": (resize_model(bi, (2, 3, 5, 3), (10, 6), q=q8), BOTH),
        "bilinear_s16_align_up": (resize_model(bi, (1, 3, 4, 2), (8, 13), "int16", q16, align_corners=True),
                                  tflm_bilinear16),
        "bilinear_s16_half_pixel": (resize_model(bi, (1, 6, 4, 2), (5, 9), "int16", q16, half_pixel=True),
                                    tflm_bilinear16),
        "nearest_f32_align_half": (resize_model(nn, (1, 4, 5, 3), (9, 7), "float32", align_corners=True,
                                                half_pixel=True), BOTH),
        "nearest_f32_down": (resize_model(nn, (2, 9, 6, 1), (4, 5), "float32"), BOTH),
        "nearest_s16_half_pixel_up": (resize_model(nn, (1, 3, 3, 4), (8, 7), "int16", q16, half_pixel=True), BOTH),
        "nearest_s8_align": (resize_model(nn, (1, 5, 2, 3), (3, 7), q=q8, align_corners=True), BOTH),
    }


def pool_models() -> dict:
    f32 = dict(dtype="float32")
    none = (None, None)
    q16 = (1 / 4096, 0)
    return {
        "avg_pool_f32_same": (pool_model("AVERAGE_POOL_2D", (1, 7, 9, 3), (3, 3), (2, 2), SAME, none, **f32), BOTH),
        "avg_pool_f32_relu6": (pool_model("AVERAGE_POOL_2D", (2, 6, 6, 2), (2, 3), (1, 2), VALID, none,
                                          activation="RELU6", **f32), BOTH),
        "max_pool_f32_same": (pool_model("MAX_POOL_2D", (1, 7, 9, 3), (3, 2), (2, 2), SAME, none, **f32), BOTH),
        "max_pool_f32_relu": (pool_model("MAX_POOL_2D", (1, 5, 5, 4), (5, 5), (1, 1), VALID, none,
                                         activation="RELU", **f32), BOTH),
        "l2_pool_f32_same": (pool_model("L2_POOL_2D", (1, 7, 7, 3), (3, 3), (2, 2), SAME, none, **f32), BOTH),
        "l2_pool_f32_relu_n1": (pool_model("L2_POOL_2D", (1, 6, 5, 2), (2, 2), (2, 1), VALID, none,
                                           activation="RELU_N1_TO_1", **f32), BOTH),
        "avg_pool_s16_relu_n1": (pool_model("AVERAGE_POOL_2D", (1, 8, 8, 3), (3, 3), (3, 3), SAME, q16,
                                            activation="RELU_N1_TO_1", dtype="int16"), BOTH),
        "max_pool_s16_relu": (pool_model("MAX_POOL_2D", (2, 5, 7, 2), (2, 4), (1, 1), SAME, q16,
                                         activation="RELU", dtype="int16"), BOTH),
    }


ALL_MODELS = {**layer16_models(), **float_layer_models(), **transpose_conv_models(), **batch_matmul_models(),
              **resize_models(), **pool_models()}


# -- the check ------------------------------------------------------------------------------------------------

def case_inputs(path) -> list:
    """(label, inputs): two seeded random, one small-magnitude, all-min and all-max (floats: +-1e4, and one with
    infinities)."""
    random = testing.random_model_inputs(path, 0)
    cases = [("random0", random), ("random1", testing.random_model_inputs(path, 1))]
    rng = np.random.default_rng(5)
    small, low, high, inf = [], [], [], []
    for x in random:
        if x.dtype == np.float32:
            small.append(rng.normal(0.0, 0.05, x.shape).astype(np.float32))
            low.append(np.full_like(x, -1e4))
            high.append(np.full_like(x, 1e4))
            inf.append(np.where(rng.random(x.shape) < 0.3, np.inf, x).astype(np.float32))
        else:
            info = np.iinfo(x.dtype)
            small.append(rng.integers(-64, 65, x.shape).astype(x.dtype))
            low.append(np.full_like(x, info.min))
            high.append(np.full_like(x, info.max))
    cases += [("small", small), ("min", low), ("max", high)]
    if inf:
        cases.append(("inf", inf))
    return cases


def check_bit_exact(path, modes) -> None:
    graph = import_tflite(path)
    partition(graph, ["c"])  # every op runs on the C target
    problems = []
    for mode in modes:
        library = testing.OpLibrary(graph.ops, mode)
        for label, inputs in case_inputs(path):
            ref = testing.reference_tensors(path, inputs, mode)
            for op, diff, count in testing.compare_ops(graph, ref, mode, library):
                problems.append(f"[{mode} {label}] {op.location}: {count} values differ (max {diff})")
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_hand_made_model_bit_exact(name, tmp_path):
    data, modes = ALL_MODELS[name]
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    check_bit_exact(path, modes)


def test_references_that_refuse_are_as_listed(tmp_path):
    """The models checked against one reference only are those the other one refuses."""
    for name, (data, modes) in ALL_MODELS.items():
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        inputs = testing.random_model_inputs(path, 0)
        for mode in set(BOTH) - set(modes):
            with pytest.raises(Exception):
                testing.reference_tensors(path, inputs, mode)


def _import(data, tmp_path, name="model"):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    return import_tflite(path)


def test_layer16_kernels_take_their_paths(tmp_path):
    """The hand-made 16x8 models reach the kernels' int32 accumulator and 64-bit partial-sum paths."""
    seen = set()
    for name, (data, _) in layer16_models().items():
        graph = _import(data, tmp_path, name)
        source = testing.generate_source(graph.ops, "tflm")[0]
        if ".accumulator = EDGESDK_ACC32" in source:
            seen.add("acc32")
        if ".sum32 = 0" in source:
            seen.add("wide")
    assert seen == {"acc32", "wide"}


def test_16x8_fully_connected_row_block_kernels_are_taken(tmp_path):
    """The row-block models reach edgesdk_fully_connected_s16_fp64 with LiteRT's rounding and _mbqm64 with TFLite
    Micro's, with the shifts at the ends of the window's range (-2 and -31)."""
    from edgesdk.ops import prepared

    shifts = set()
    for name, (data, _) in fc16_row_block_models().items():
        graph = _import(data, tmp_path, name)
        (op,) = graph.ops
        assert "edgesdk_fully_connected_s16_fp64(" in testing.generate_source(graph.ops, "ref")[0], name
        assert "edgesdk_fully_connected_s16_mbqm64(" in testing.generate_source(graph.ops, "tflm")[0], name
        shifts.update(prepared(op, "ref").shifts)
    assert {-2, -31} <= shifts


def test_16x8_row_block_layout_round_trips():
    """s16_block_rows stores blocks of 8, 4, 2, 1 rows tap-major; s16_unblock_rows (the proof's view) inverts it."""
    from edgesdk.targets.c.ops.fully_connected import s16_block_rows, s16_row_blocks, s16_unblock_rows

    assert s16_row_blocks(15) == [8, 4, 2, 1] and s16_row_blocks(16) == [8, 8] and s16_row_blocks(5) == [4, 1]
    w = _w(_rng(3), (23, 6))
    blocked = s16_block_rows(w)
    assert list(blocked[:8]) == list(w[:8, 0]) and list(blocked[16 * 6:16 * 6 + 4]) == list(w[16:20, 0])
    assert np.array_equal(s16_unblock_rows(blocked, 23, 6), w.astype(np.int64))


def _row_block_call(model, rounding="ref"):
    from edgesdk.compiler import BuildOptions, compile_model

    compiled = compile_model(model, BuildOptions(target="c", rounding=rounding))
    (call,) = [call for layer in compiled.executor.target_data["c"] for call in layer.calls
               if call.kernel.startswith("edgesdk_fully_connected_s16_")]
    return compiled, call


@pytest.mark.parametrize("change,message", [
    ("bias", "sums plus bias can leave int32"),
    ("rounding_term", "rounding term is not 2^(s - 1)"),
    ("s", "s = ~shift in [1, 30]"),
    ("mbqm_shift", "fast shift is outside [0, 31]"),
])
def test_16x8_row_block_records_are_proved(tmp_path, change, message):
    """The build's proof refuses records the row-block kernels would compute wrongly: a bias that takes the sums
    out of int32, a rounding term or shift outside the window's form, a fast shift C cannot shift by."""
    from edgesdk.targets.c.calls import Const
    from edgesdk.verify import VerificationError, verify_build

    path = tmp_path / "fc.tflite"
    path.write_bytes(fc16_row_block_models()["fc16_rows_all_blocks"][0])
    compiled, call = _row_block_call(path, "tflm" if change == "mbqm_shift" else "ref")
    verify_build(compiled)
    params = call.args[0]
    records = params["records"]
    words = 3 if change == "mbqm_shift" else 4
    values = np.array(records.values, np.int64).reshape(-1, words)
    column, value = {"bias": (0, 2**31 - 1), "rounding_term": (2, 3), "s": (3, 31), "mbqm_shift": (2, 32)}[change]
    values[4, column] = value
    params.fields["records"] = Const(records.symbol, records.ctype, values.astype(np.int32).reshape(-1))
    with pytest.raises(VerificationError) as err:
        verify_build(compiled)
    assert message in str(err.value)


# -- what edgesdk refuses ----------------------------------------------------------------------------------------

def _refusal(data, tmp_path) -> str:
    graph = _import(data, tmp_path)
    with pytest.raises(UnsupportedOpError) as info:
        partition(graph, ["c"])
    return str(info.value)


def test_int16_int32_bias_without_its_type_is_refused(tmp_path):
    """LiteRT reads an int32 bias of a 16x8 layer as int64 unless quantized_bias_type says INT32."""
    r = _rng(3)
    data = conv16_model((1, 4, 4, 2), _w(r, (2, 3, 3, 2)), [1, 2], 1 / 32768, [0.01, 0.01], 1e-3, bias_dtype="int32")
    assert "quantized_bias_type" in _refusal(data, tmp_path)
    data = fc16_model(1, _w(r, (2, 3)), [1, 2], 1 / 32768, [0.01, 0.01], 1e-3, bias_dtype="int32")
    assert "quantized_bias_type" in _refusal(data, tmp_path)
    data = depthwise16_model((1, 4, 4, 2), _w(r, (1, 3, 3, 2)), [1, 2], 1 / 32768, [0.01, 0.01], 1e-3,
                             bias_dtype="int32")
    assert "not int64" in _refusal(data, tmp_path)


def test_int16_requantization_shift_past_14_is_refused(tmp_path):
    r = _rng(4)
    data = conv16_model((1, 4, 4, 1), _w(r, (1, 1, 1, 1)), [0], 1.0, [1.0], 2.0 ** -17)
    assert "int16_shifts_in_range" in _refusal(data, tmp_path)


def test_int16_nonzero_zero_point_is_refused(tmp_path):
    r = _rng(5)
    m = ModelBuilder()
    x = m.tensor((1, 8), "int16", 1 / 32768, 3)
    w = m.const(_w(r, (2, 8)), "int8", scale=[0.01, 0.01], zero_point=0, axis=0)
    y = m.tensor((1, 2), "int16", 1e-3, 0)
    m.op("FULLY_CONNECTED", [x, w, -1], [y], "FullyConnectedOptions")
    assert "zero point 0" in _refusal(m.build([x], [y]), tmp_path)


def test_inconsistent_transpose_conv_is_a_model_error(tmp_path):
    """LiteRT checks that the output size comes from the input size; edgesdk refuses such a file the same way."""
    w = _w(_rng(8), (2, 3, 3, 4))
    data = transpose_conv_model((1, 3, 4, 4), w, None, (0.05, 0), [0.01], (0.05, 0), stride=(2, 3), padding=VALID,
                                out_hw=(8, 11))
    with pytest.raises(ModelError, match="comes from an input of 3"):
        _import(data, tmp_path)
    m = ModelBuilder()
    shape = m.const(np.asarray((1, 8, 8, 3), np.int32), "int32")
    wt = m.const(w, "int8", scale=[0.01], zero_point=0, axis=0)
    x = m.tensor((1, 4, 4, 4), "int8", 0.05, 0)
    y = m.tensor((1, 8, 8, 2), "int8", 0.05, 0)
    m.op("TRANSPOSE_CONV", [shape, wt, x], [y], "TransposeConvOptions", Padding=SAME, StrideH=2, StrideW=2)
    with pytest.raises(ModelError):
        _import(m.build([x], [y]), tmp_path)


def test_16x8_transpose_conv_int32_bias_is_refused(tmp_path):
    """TFLite Micro reads every 16x8 TRANSPOSE_CONV bias as int64."""
    data = transpose_conv_model((1, 3, 3, 4), _w(_rng(9), (2, 3, 3, 4)), [1, 2], (1 / 32768, 0), [0.01], (1e-4, 0),
                                dtype="int16", bias_dtype="int32", bias_type=INT32)
    assert "not int64" in _refusal(data, tmp_path)


def test_inconsistent_pool_is_a_model_error(tmp_path):
    m = ModelBuilder()
    x = m.tensor((1, 4, 4, 3), "float32")
    y = m.tensor((1, 2, 2, 2), "float32")
    m.op("L2_POOL_2D", [x], [y], "Pool2DOptions", Padding=VALID, StrideH=2, StrideW=2, FilterHeight=2, FilterWidth=2)
    with pytest.raises(ModelError):
        _import(m.build([x], [y]), tmp_path)


# -- the fast 64-bit requantization ------------------------------------------------------------------------------

def _mbqm64(x: int, multiplier: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier(int64_t, int32_t, int), in Python integers."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total = 15 - shift
    return (x * reduced + (1 << (total - 1))) >> total


def test_fast_requantization_form_equals_the_64_bit_formula():
    """edgesdk_mbqm64_fast's (m, s) reproduce MultiplyByQuantizedMultiplier(int64_t, ...) for int32 accumulators,
    ties included; the C kernels use the same form (their outputs are checked against the references above)."""
    from edgesdk.ir import quant
    from edgesdk.targets.c.ops.layer16 import fast_requant

    rng = np.random.default_rng(21)
    checked = 0
    for scale in np.exp(rng.uniform(np.log(1e-9), np.log(0.99), 400)):
        multiplier, shift = quant.quantize_multiplier(float(scale))
        form = fast_requant([multiplier], [shift])
        if form is None:
            continue
        m, s = form[0][0] & 0xFFFFFFFF, form[1][0]
        reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
        total = 15 - shift
        ties = [k * (1 << (total - 1)) // reduced for k in range(-7, 8, 2)] if reduced else []
        xs = [*rng.integers(-2**31, 2**31, 20).tolist(), *rng.integers(-5000, 5000, 20).tolist(),
              -2**31, 2**31 - 1, 0, 1, -1, *ties, *[t + 1 for t in ties], *[t - 1 for t in ties]]
        for x in xs:
            x = int(np.clip(x, -2**31, 2**31 - 1))
            q = ((x * m) >> 32) >> s
            assert (q >> 1) + (q & 1) == _mbqm64(x, multiplier, shift), (scale, x)
            checked += 1
    assert checked > 10000
    assert fast_requant([1 << 30], [1]) is None  # a left shift keeps the general path


# -- firmware ------------------------------------------------------------------------------------------------------

FIRMWARE_MODELS = ["conv16_int32_bias", "conv_f32_same_relu", "dwconv_f32_mult2_relu6", "conv16_wide_sums", "dwconv16_mult3_no_bias", "fc16_int32_bias",
                   "fc_f32_bias", "tconv_s8_wraps", "tconv_s16_bias_relu", "bmm_s8_adj_x_bcast", "bmm_f32_adj",
                   "bilinear_f32_half_pixel", "bilinear_s16_align_up", "nearest_s8_align", "l2_pool_f32_same",
                   "avg_pool_f32_relu6", "max_pool_s16_relu", "fc16_rows_ties", "conv16_rest2_dilated", "dwconv16_2ch"]


FIRMWARE_BATCH = 10  # models per firmware image, each built for each rounding mode it is checked in
FIRMWARE_LABELS = ("random0", "random1", "small", "min", "max")  # case_inputs' cases but "inf" (NaN bytes differ
# between x86 and the soft-float, docs/rounding.md)


@pytest.fixture(scope="session")
def conv_firmware(session_builds):
    """name -> (model path, {label: {(name, mode): (status, outputs, uart)}}): the model built with --target c for
    each of its rounding modes (sources only, under names of their own), linked with the other models of its
    batch into one firmware image and run on each case, once per session (any worker; tests/image_batches.py)."""
    from edgesdk.compiler import BuildOptions, build

    def get(name: str):
        index, members = batch(FIRMWARE_MODELS, name, FIRMWARE_BATCH)

        def make(out):
            builds, cases = {}, {}
            for k, member in enumerate(members):
                data, modes = ALL_MODELS[member]
                path = out / f"{member}.tflite"
                path.write_bytes(data)
                cases[member] = dict(case_inputs(path))
                for mode in modes:
                    build(path, out / f"{member}_{mode}",
                          BuildOptions(target="c", rounding=mode, name=f"m{k}_{mode}", compile_firmware=False))
                    builds[member, mode] = out / f"{member}_{mode}"
            link_and_run(out, builds,
                         {label: {key: cases[key[0]][label] for key in builds} for label in FIRMWARE_LABELS})

        out = session_builds(f"conv-batch{index}", make)
        return out / f"{name}.tflite", load_runs(out)

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", FIRMWARE_MODELS)
def test_hand_made_model_firmware_bit_exact(name, conv_firmware):
    """Built for the emulator with --target c and run end to end against each reference that runs it (in a
    firmware image with other models of this file, under a name of its own)."""
    from edgesdk.reference import run_reference

    path, runs = conv_firmware(name)
    assert [label for label, _ in case_inputs(path) if label != "inf"] == list(FIRMWARE_LABELS)
    problems = []
    for mode in ALL_MODELS[name][1]:
        for label, inputs in case_inputs(path):
            if label == "inf":
                continue  # NaN bytes differ between x86 and the soft-float (docs/rounding.md)
            status, outputs, uart = runs[label][name, mode]
            assert status == 0, f"{name} {mode} {label}: exit {-status} {uart!r}"
            for want, got in zip(run_reference(path, inputs, mode), outputs):
                if np.asarray(want).tobytes() != np.asarray(got).tobytes():
                    problems.append(f"{name} {mode} {label}")
    assert not problems, problems


def test_16x8_fully_connected_window_is_set_and_proved(tmp_path):
    """A 16x8 FULLY_CONNECTED whose sums fit int32 requantizes LiteRT's double product through the integer window
    (the row-block kernel edgesdk_fully_connected_s16_fp64); the build's proof refuses a window smaller than its
    accumulators need."""
    from edgesdk.compiler import BuildOptions, compile_model
    from edgesdk.verify import VerificationError, verify_build

    model = Path(__file__).parent / "models" / "ops" / "fc_16_8_int16.tflite"
    compiled = compile_model(model, BuildOptions(target="c"))
    (params,) = [call.args[0] for layer in compiled.executor.target_data["c"] for call in layer.calls
                 if call.kernel == "edgesdk_fully_connected_s16_fp64"]
    window = params["window"]
    assert window and window & (window - 1) == 0
    verify_build(compiled)
    params.fields["window"] = window // 2
    with pytest.raises(VerificationError) as err:
        verify_build(compiled)
    assert "window does not cover the accumulators" in str(err.value)
