/*
 * edgesdk_depthwise_conv2d.h - int8 DEPTHWISE_CONV_2D, TFLite reference semantics
 * (reference_integer_ops::DepthwiseConvPerChannel; reference_ops::DepthwiseConv for uint8-legalized models).
 */
#ifndef EDGESDK_DEPTHWISE_CONV2D_H
#define EDGESDK_DEPTHWISE_CONV2D_H

#include <stdint.h>

#include "edgesdk_arith.h"   /* EDGESDK_ROUNDING_* */
#include "edgesdk_layer16.h" /* the 16x8 accumulator modes (EDGESDK_ACC64, EDGESDK_ACC32) */

typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c; /* out_c = in_c * depth_multiplier */
    int32_t depth_multiplier;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point; nonzero only for models legalized from uint8 */
    int32_t output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output channel */
    const int32_t *shift;      /* per output channel */
    int32_t rounding;          /* EDGESDK_ROUNDING_* */
    int32_t sliding;           /* 1: the fast path below (per-channel records instead of filter and bias) */
    const float *scale_f32;    /* per output channel, EDGESDK_ROUNDING_F32 only (ONNX Runtime's QLinearConv) */
} edgesdk_depthwise_conv2d_params;

/* The reference loops (edgesdk_depthwise_conv2d.c): input NHWC, filter 1HW(out_c), bias[out_c] or NULL, output
 * NHWC; _f32 for EDGESDK_ROUNDING_F32. Called through edgesdk_depthwise_conv2d_s8 below. */
void edgesdk_depthwise_conv2d_s8_loops(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                       const int8_t *filter, const int32_t *bias, int8_t *output);
void edgesdk_depthwise_conv2d_s8_loops_f32(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                           const int8_t *filter, const int32_t *bias, int8_t *output);

/*
 * The fast path (edgesdk_depthwise_conv2d_sliding.c), chosen by the compiler per layer when all of these
 * hold: a 3x3 filter, stride 1 or 2 (both directions alike), dilation 1, depth_multiplier 1, in_h >= 3, at
 * most one padded column on each side, rounding EDGESDK_ROUNDING_DOUBLE, every shift in [-31, -1],
 * filter_offset 0, |folded bias| + 128 * sum|w| < 2^31 for every channel (no sum can overflow) and that bound
 * plus |k| below 2^31 (edgesdk_requant_rk). Then `filter` is NULL, `multiplier` and `shift` are not read, and
 * `bias` points to one record per channel (9 int32 words, edgesdk_dw_channel):
 *   bias:   bias[c] + input_offset * sum of the channel's 9 weights;
 *   m2:     2 * multiplier[c] (as uint32); r: -shift[c]; k: (1 + 2 * output_offset) * 2^(r - 1);
 *   z0, z2: zero_point * (w[0][0] + w[1][0] + w[2][0]) and * (w[0][2] + w[1][2] + w[2][2]), the taps of a
 *           padded left / right column (zero_point = -input_offset);
 *   w:      the 9 weights [fy][fx], then 3 zero bytes.
 * The output is written channel by channel along each output row (every byte once).
 */
typedef struct {
    int32_t bias;
    uint32_t m2;
    int32_t r, k;
    int32_t z0, z2;
    int8_t w[12];
} __attribute__((may_alias)) edgesdk_dw_channel; /* read from the compiler's int32 array */

void edgesdk_depthwise_conv2d_s8_sliding(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                         const edgesdk_dw_channel *channels, int8_t *output);

/* The int8 DEPTHWISE_CONV_2D the generated code calls: the sliding kernel when p->sliding (`bias` then holds the
 * records), the reference loops otherwise. Inline: the generated code's params are constants, so the compiler
 * calls the one kernel a layer takes, and a firmware links only those (no soft-float without
 * EDGESDK_ROUNDING_F32 layers, no loops when every layer slides). */
static inline void edgesdk_depthwise_conv2d_s8(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                               const int8_t *filter, const int32_t *bias, int8_t *output)
{
    if (p->sliding) {
        edgesdk_depthwise_conv2d_s8_sliding(p, input, (const edgesdk_dw_channel *)(const void *)bias, output);
    } else if (p->rounding == EDGESDK_ROUNDING_F32) {
        edgesdk_depthwise_conv2d_s8_loops_f32(p, input, filter, bias, output);
    } else {
        edgesdk_depthwise_conv2d_s8_loops(p, input, filter, bias, output);
    }
}

/*
 * int16 DEPTHWISE_CONV_2D (16x8: int16 activations with zero point 0, int8 symmetric per-channel filters, int64
 * bias), TFLite's reference_integer_ops::DepthwiseConvPerChannel for int16 (edgesdk_depthwise_conv2d_s16.c).
 */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c; /* out_c = in_c * depth_multiplier */
    int32_t depth_multiplier;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output channel */
    const int32_t *shift;      /* per output channel, in [-31, 14] */
    int32_t sum32;             /* 1: no partial sum of products can leave int32 (the compiler proved it) */
    int32_t fast_requant;           /* 1: requantize with edgesdk_mbqm64_fast (needs sum32, EDGESDK_ACC64) */
    const int32_t *fast_multiplier; /* per output channel, that form of multiplier/shift (edgesdk_layer16.h) */
    const int32_t *fast_shift;
} edgesdk_depthwise_conv2d_s16_params;

/* input NHWC, filter 1HW(out_c), bias[out_c] or NULL, output NHWC; int64 accumulator (EDGESDK_ACC64). */
void edgesdk_depthwise_conv2d_s16(const edgesdk_depthwise_conv2d_s16_params *p, const int16_t *input,
                                  const int8_t *filter, const int64_t *bias, int16_t *output);

/* float32 DEPTHWISE_CONV_2D, reference_ops::DepthwiseConv (edgesdk_depthwise_conv2d_f32.c): total += x * w over the
 * taps inside the image in (fy, fx) order, then total + bias, then the activation's float clamp. */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t depth_multiplier;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    float act_min, act_max;
} edgesdk_depthwise_conv2d_f32_params;

void edgesdk_depthwise_conv2d_f32(const edgesdk_depthwise_conv2d_f32_params *p, const float *input, const float *filter,
                                  const float *bias, float *output);

#endif /* EDGESDK_DEPTHWISE_CONV2D_H */
