/*
 * edgesdk_conv2d.h - int8 CONV_2D, TFLite reference semantics (reference_integer_ops::ConvPerChannel,
 * and reference_ops::Conv for models legalized from uint8, whose filters keep a zero point).
 */
#ifndef EDGESDK_CONV2D_H
#define EDGESDK_CONV2D_H

#include <stdint.h>

#include "edgesdk_layer16.h" /* the 16x8 accumulator modes (EDGESDK_ACC64, EDGESDK_ACC32) */

typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t filter_h, filter_w, filter_in_c; /* filter_in_c < in_c: grouped convolution */
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point; nonzero only for models legalized from uint8 */
    int32_t output_offset; /* output zero point */
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output channel (repeated when per-tensor) */
    const int32_t *shift;      /* per output channel, TFLite convention: > 0 is a left shift */
    int32_t rounding;          /* EDGESDK_ROUNDING_* */
    int32_t blocked;           /* EDGESDK_CONV_BLOCKED / _PAIRED: a fast path below (filter layout and bias differ) */
    const int32_t *requant;    /* EDGESDK_CONV_PAIRED(_PATCHES): per channel {2 * multiplier, r, k}, see there */
    const float *scale_f32;    /* per output channel, EDGESDK_ROUNDING_F32 only (ONNX Runtime's QLinearConv) */
} edgesdk_conv2d_params;

#define EDGESDK_CONV_BLOCKED 1 /* int8 weights in blocks of 8 output channels (edgesdk_conv2d_blocked.c) */
#define EDGESDK_CONV_PAIRED 2  /* two output channels per 32-bit weight word (edgesdk_conv2d_paired.c) */

/* Largest filter window (filter_h * filter_w * filter_in_c bytes) the fast path copies for border pixels. */
#define EDGESDK_CONV_PATCH_MAX 1024

/* input NHWC, filter OHWI (O = out_c, I = filter_in_c), bias[out_c] or NULL, output NHWC.
 * With p->blocked set, runs edgesdk_conv2d_s8_blocked instead. */
void edgesdk_conv2d_s8(const edgesdk_conv2d_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output);

/*
 * The fast path (edgesdk_conv2d_blocked.c), chosen by the compiler per layer when all of these hold:
 * rounding EDGESDK_ROUNDING_DOUBLE, every shift in [-31, -1], filter_offset 0, dilation 1, no groups,
 * filter window <= EDGESDK_CONV_PATCH_MAX bytes (unless no window reaches into padding), and
 * |folded bias| + 128 * sum|w| < 2^31 for every channel (no sum can overflow). Then:
 *   filter: blocks of 8 output channels, each block [tap][8] (tap = (fy * filter_w + fx) * in_c + c),
 *           then the remaining out_c % 8 channels as in OHWI;
 *   bias:   bias[oc] + input_offset * sum of filter[oc] (required, never NULL).
 * Output pixels are computed in NHWC order, two adjacent ones (possibly across a row end) or one at a time,
 * each after reading its windows.
 */
void edgesdk_conv2d_s8_blocked(const edgesdk_conv2d_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output);

/*
 * The paired fast path (edgesdk_conv2d_paired.c): the conditions of the blocked one, two taps of any output
 * channel summing to [-32767, 32768] for int8 inputs (true of any int8 weights: see the kernel), and
 * k of every channel within the reach of edgesdk_requant_rk. Output channels a, a + 1 form a pair; the pairs
 * (at least two: missing channels are zero) run in blocks of 3, then of 2 (edgesdk_conv_pair_blocks). Then:
 *   filter: int32 words w[a] + 65536 * w[a + 1], 4-byte aligned; per block, per filter row fy, per two taps
 *           t, t + 1 of the row (tap = fx * in_c + c): [tap t: the block's words][tap t + 1: its words], and a
 *           row's odd last tap alone. EDGESDK_CONV_PAIRED_PATCHES: the whole window is one row (every pixel
 *           reads a copy of its window);
 *   bias:   per pair: bias'[a] + 65536 * bias'[a + 1] and bias'[a + 1] - 32767 * chunks (both mod 2^32),
 *           bias' the folded bias of the blocked path (0 for a missing channel), chunks the two-tap chunks
 *           (and odd last taps) of a window: rows * ceil(taps per row / 2);
 *   requant: per channel of every pair 2 * multiplier (uint32 bits), r and k (edgesdk_requant_rk).
 */
#define EDGESDK_CONV_PAIRED_PATCHES 3 /* blocked: EDGESDK_CONV_PAIRED over copies of every window */
/*
 * EDGESDK_CONV_PAIRED_QUADS (in place) and _QUAD_PATCHES (over window copies): the paired layout with taps per row
 * a multiple of 4, in blocks of 2 pairs only (the pairs padded to an even count, at least 2), in four-tap chunks:
 * per block, per filter row, per four taps t..t + 3 a flag word (1: for
 * every channel of the block the four taps' products sum to [-32767, 32768] for int8 inputs, so one lane
 * extraction serves them; 0: one per two taps), then [tap t: the block's words]..[tap t + 3: its words]. The
 * bias' chunks count per block: its flag-1 chunks once, the others twice.
 */
#define EDGESDK_CONV_PAIRED_QUADS 4
#define EDGESDK_CONV_PAIRED_QUAD_PATCHES 5
/* EDGESDK_CONV_PAIRED_QUADS3 and _QUAD3_PATCHES: the same four-tap chunks in the blocks of the two-tap layout
 * (3 pairs, then 2: edgesdk_conv_pair_blocks), a flag word per chunk of each block. */
#define EDGESDK_CONV_PAIRED_QUADS3 6
#define EDGESDK_CONV_PAIRED_QUAD3_PATCHES 7
void edgesdk_conv2d_s8_paired(const edgesdk_conv2d_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *init, int8_t *output);

/* The paired kernel's blocks for `pairs` channel pairs: 3-pair blocks, then 2-pair ones (pairs < 2 count as 2). */
static inline void edgesdk_conv_pair_blocks(int32_t pairs, int32_t *blocks3, int32_t *blocks2)
{
    pairs = pairs < 2 ? 2 : pairs;
    const int32_t rest = pairs % 3;
    *blocks3 = pairs / 3 - (rest == 1);
    *blocks2 = rest == 0 ? 0 : rest == 2 ? 1 : 2;
}

/*
 * int16 CONV_2D (16x8: int16 activations with zero point 0, int8 symmetric per-channel filters, int64 or int32
 * bias), TFLite's reference_integer_ops::ConvPerChannel for int16 (edgesdk_conv2d_s16.c, edgesdk_layer16.h).
 */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t filter_h, filter_w, filter_in_c; /* filter_in_c < in_c: grouped convolution */
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output channel */
    const int32_t *shift;      /* per output channel; in [-31, 14] with EDGESDK_ACC64 */
    int32_t rounding;          /* EDGESDK_ROUNDING_DOUBLE / _SINGLE (the int32 requantization of EDGESDK_ACC32) */
    int32_t accumulator;       /* EDGESDK_ACC64 or EDGESDK_ACC32 (edgesdk_layer16.h) */
    int32_t sum32;             /* 1: no partial sum of products can leave int32 (the compiler proved it) */
    int32_t blocked;           /* 1: filter in blocks of EDGESDK_CONV16_BLOCK output channels (below) */
    int32_t fast_requant;           /* 1: requantize with edgesdk_mbqm64_fast (needs sum32, EDGESDK_ACC64) */
    const int32_t *fast_multiplier; /* per output channel, that form of multiplier/shift (edgesdk_layer16.h) */
    const int32_t *fast_shift;
} edgesdk_conv2d_s16_params;

/*
 * input NHWC, filter OHWI, bias[out_c] or NULL (int32 biases are widened to int64 by the compiler), output NHWC.
 * With p->blocked (chosen by the compiler when sum32 holds and there are no groups), the filter holds the
 * out_c / EDGESDK_CONV16_BLOCK full blocks first, each [tap][EDGESDK_CONV16_BLOCK] with tap = (fy * filter_w + fx)
 * * in_c + c, then the remaining channels as OHWI rows; the channels of a block share each input load.
 */
#define EDGESDK_CONV16_BLOCK 4

/* float32 CONV_2D, reference_ops::Conv (edgesdk_conv2d_f32.c): per output, total += x * w over the taps inside the
 * image in (fy, fx, c) order, then total + bias, then the activation's float clamp. */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t filter_h, filter_w, filter_in_c;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    float act_min, act_max;
} edgesdk_conv2d_f32_params;

void edgesdk_conv2d_f32(const edgesdk_conv2d_f32_params *p, const float *input, const float *filter, const float *bias,
                        float *output);
void edgesdk_conv2d_s16(const edgesdk_conv2d_s16_params *p, const int16_t *input, const int8_t *filter,
                        const int64_t *bias, int16_t *output);

#endif /* EDGESDK_CONV2D_H */
