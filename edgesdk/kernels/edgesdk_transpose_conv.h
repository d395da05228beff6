/*
 * edgesdk_transpose_conv.h - int8 and 16x8 TRANSPOSE_CONV, TFLite reference semantics
 * (reference_integer_ops::TransposeConv for int8 and int16 input).
 *
 * TFLite scatters every input pixel into an int32 (int8) or int64/int32 (16x8) scratch copy of the output and
 * requantizes that afterwards. Integer sums do not depend on their order, so these kernels gather instead, one
 * output value at a time, and need no scratch memory: output (oy, ox) sums the input pixels iy with
 * fy = oy + pad_top - iy * stride_h in [0, filter_h) (and likewise ix), over all input channels.
 */
#ifndef EDGESDK_TRANSPOSE_CONV_H
#define EDGESDK_TRANSPOSE_CONV_H

#include <stdint.h>

#include "edgesdk_layer16.h" /* the accumulator modes (EDGESDK_ACC64, EDGESDK_ACC32) */

typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t filter_h, filter_w; /* filter OHWI: [out_c][filter_h][filter_w][in_c] */
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t input_offset;  /* -input zero point (0 for int16) */
    int32_t output_offset; /* output zero point (0 for int16) */
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output channel */
    const int32_t *shift;      /* per output channel; in [-31, 14] with EDGESDK_ACC64 */
    int32_t rounding;          /* EDGESDK_ROUNDING_DOUBLE / _SINGLE (the int32 requantization) */
    int32_t accumulator;       /* int8: EDGESDK_ACC32; 16x8: EDGESDK_ACC64 or EDGESDK_ACC32 */
    int32_t sum32;             /* 1: no partial sum can leave int32 (the compiler proved it) */
    int32_t fast_requant;           /* 1: requantize with edgesdk_mbqm64_fast (needs sum32, EDGESDK_ACC64) */
    const int32_t *fast_multiplier; /* per output channel, that form of multiplier/shift (edgesdk_layer16.h) */
    const int32_t *fast_shift;
} edgesdk_transpose_conv_params;

/* input NHWC, filter OHWI, bias[out_c] or NULL, output NHWC. */
void edgesdk_transpose_conv_s8(const edgesdk_transpose_conv_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output);
/* int32 biases of 16x8 layers are widened to int64 by the compiler. */
void edgesdk_transpose_conv_s16(const edgesdk_transpose_conv_params *p, const int16_t *input, const int8_t *filter,
                                const int64_t *bias, int16_t *output);

#endif /* EDGESDK_TRANSPOSE_CONV_H */
