/*
 * edgesdk_fully_connected.h - int8 FULLY_CONNECTED, TFLite reference semantics.
 *
 * LiteRT's reference kernel requantizes in double precision (rounding EDGESDK_ROUNDING_FP64, uses
 * `scale`); TFLite Micro uses the integer multiplier (EDGESDK_ROUNDING_DOUBLE/SINGLE, uses
 * `multiplier`/`shift`). The compiler fills the fields the chosen rounding needs.
 */
#ifndef EDGESDK_FULLY_CONNECTED_H
#define EDGESDK_FULLY_CONNECTED_H

#include <stdint.h>

#include "edgesdk_arith.h"   /* EDGESDK_ROUNDING_* */
#include "edgesdk_layer16.h" /* the 16x8 accumulator modes (EDGESDK_ACC64, EDGESDK_ACC32) */

typedef struct {
    int32_t batches;
    int32_t in_depth;  /* accumulation depth */
    int32_t out_depth; /* output units */
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point (per-tensor only; 0 for per-channel) */
    int32_t output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output unit (with FP64: of the same scale, for the integer fast path) */
    const int32_t *shift;      /* per output unit */
    const double *scale;       /* per output unit; EDGESDK_ROUNDING_FP64 only */
    int32_t rounding;          /* EDGESDK_ROUNDING_* */
    int32_t blocked;           /* EDGESDK_FC_BLOCKED or _PAIRED: the fast path below (layout and bias differ) */
    int32_t per_tensor;        /* 1: multiplier, shift and scale are the same for every output unit */
    uint32_t fp64_window;      /* fast path with FP64: see edgesdk_requantize_fp64_window */
    const float *scale_f32;    /* per output unit, EDGESDK_ROUNDING_F32 only (ONNX Runtime's QGemm / QLinearMatMul) */
} edgesdk_fully_connected_params;

/* The reference loops (edgesdk_fully_connected.c): input [batches, in_depth], filter [out_depth, in_depth],
 * bias[out_depth] or NULL, output [batches, out_depth]; _f32 for EDGESDK_ROUNDING_F32. Called through
 * edgesdk_fully_connected_s8 below. */
void edgesdk_fully_connected_s8_loops(const edgesdk_fully_connected_params *p, const int8_t *input,
                                      const int8_t *filter, const int32_t *bias, int8_t *output);
void edgesdk_fully_connected_s8_loops_f32(const edgesdk_fully_connected_params *p, const int8_t *input,
                                          const int8_t *filter, const int32_t *bias, int8_t *output);

#define EDGESDK_FC_BLOCKED 1 /* int8 weights in blocks of 16 units */
#define EDGESDK_FC_PAIRED 2  /* two units per 32-bit weight word (twice the flash, 2.25 instead of 3 per MAC) */
#define EDGESDK_FC_PAIRED_QUADS 3 /* EDGESDK_FC_PAIRED, lanes read every four taps (see below) */

/*
 * The fast path (edgesdk_fully_connected_blocked.c), chosen by the compiler per layer when: filter_offset 0,
 * |folded bias| + 128 * sum|w| < 2^31 for every unit, and either rounding EDGESDK_ROUNDING_DOUBLE with every
 * shift in [-31, -1], or EDGESDK_ROUNDING_FP64 with every multiplier > 0, every shift in [-31, -2] and
 * fp64_window a power of two >= B / 2 + B * 2^-22 + 2 and <= 2^30, B the largest |accumulator|. Then:
 *   bias:   bias[o] + input_offset * sum of filter row o (required, never NULL);
 *   filter, EDGESDK_FC_BLOCKED: blocks of 16 units, each [in_depth][16]; then, if 8 or more units remain,
 *           one block of 8 [in_depth][8]; then the remaining units as [unit][in_depth];
 *   filter, EDGESDK_FC_PAIRED (also needs every weight in [-127, 127]): int32 words w[a] + 65536 * w[a + 1]
 *           for unit pairs (a, a + 1) (an odd last unit pairs with zeros), 4-byte aligned, in blocks of 8
 *           pairs: per two taps [tap][8 pairs] twice, an odd last tap [8 pairs] once; then the remaining
 *           pairs one by one in the same order;
 *   EDGESDK_FC_PAIRED_QUADS: the EDGESDK_FC_PAIRED layout, for weights whose every four taps 4q..4q + 3 of a
 *           unit sum to [-32767, 32768] for any int8 input (sum of max(127 w, -128 w) <= 32768 and of
 *           min(127 w, -128 w) >= -32767).
 */
void edgesdk_fully_connected_s8_blocked(const edgesdk_fully_connected_params *p, const int8_t *input,
                                        const int8_t *filter, const int32_t *bias, int8_t *output);

/* The int8 FULLY_CONNECTED the generated code calls: the fast path when p->blocked, the reference loops
 * otherwise. Inline: the generated code's params are constants, so the compiler calls the one kernel a layer
 * takes, and a firmware links only those (no single-precision soft-float without EDGESDK_ROUNDING_F32
 * layers, no loops when every layer is blocked). */
static inline void edgesdk_fully_connected_s8(const edgesdk_fully_connected_params *p, const int8_t *input,
                                              const int8_t *filter, const int32_t *bias, int8_t *output)
{
    if (p->blocked) {
        edgesdk_fully_connected_s8_blocked(p, input, filter, bias, output);
    } else if (p->rounding == EDGESDK_ROUNDING_F32) {
        edgesdk_fully_connected_s8_loops_f32(p, input, filter, bias, output);
    } else {
        edgesdk_fully_connected_s8_loops(p, input, filter, bias, output);
    }
}

/*
 * int16 FULLY_CONNECTED (16x8: int16 activations with zero point 0, int8 symmetric weights, int64 or int32 bias),
 * TFLite's reference_integer_ops::FullyConnected(PerChannel) for int16 (edgesdk_fully_connected_s16.c): LiteRT
 * requantizes in double precision (EDGESDK_ROUNDING_FP64, `scale`), TFLite Micro with the integer multiplier.
 */
typedef struct {
    int32_t batches;
    int32_t in_depth;  /* accumulation depth */
    int32_t out_depth; /* output units */
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output unit (repeated when per-tensor) */
    const int32_t *shift;      /* per output unit; in [-31, 14] with EDGESDK_ACC64 */
    const double *scale;       /* per output unit; EDGESDK_ROUNDING_FP64 only */
    int32_t rounding;          /* EDGESDK_ROUNDING_FP64, or _DOUBLE / _SINGLE */
    int32_t accumulator;       /* EDGESDK_ACC64 or EDGESDK_ACC32 (edgesdk_layer16.h) */
    int32_t sum32;             /* 1: no partial sum of products can leave int32 (the compiler proved it) */
} edgesdk_fully_connected_s16_params;

/* input [batches, in_depth], filter [out_depth, in_depth], bias[out_depth] or NULL (int32 biases widened to
 * int64 by the compiler), output [batches, out_depth]. */
void edgesdk_fully_connected_s16(const edgesdk_fully_connected_s16_params *p, const int16_t *input,
                                 const int8_t *filter, const int64_t *bias, int16_t *output);

/*
 * The int16 FULLY_CONNECTED of layers whose sums plus bias fit int32 (sum32), with the requantization's constants
 * precomputed per output (edgesdk_fully_connected_s16.c): _fp64 is LiteRT's double-precision rounding through
 * edgesdk_requantize_fp64_window (every shift in [-31, -2], multipliers > 0, `window` covering the largest
 * accumulator), _mbqm64 TFLite Micro's MultiplyByQuantizedMultiplier(int64_t, ...) through edgesdk_mbqm64_fast.
 * filter: the rows in blocks of 8, then one block each of 4, 2 and 1 rows as the bits of out_depth ask, each
 * block tap-major ([tap][row]). records: per output, _fp64 {bias, multiplier, 2^(s - 1), s} with s = ~shift,
 * _mbqm64 {bias, fast multiplier, fast shift} (edgesdk_layer16.h).
 */
typedef struct {
    int32_t batches;
    int32_t in_depth;
    int32_t out_depth;
    int32_t act_min, act_max;
    const int8_t *filter;
    const int32_t *records;
    const double *scale; /* _fp64: per output, for accumulators near a rounding tie */
    uint32_t window;     /* _fp64: edgesdk_requantize_fp64_window's window */
} edgesdk_fully_connected_s16_rows_params;

void edgesdk_fully_connected_s16_fp64(const edgesdk_fully_connected_s16_rows_params *p, const int16_t *input,
                                      int16_t *output);
void edgesdk_fully_connected_s16_mbqm64(const edgesdk_fully_connected_s16_rows_params *p, const int16_t *input,
                                        int16_t *output);

/*
 * float32 FULLY_CONNECTED, TFLite's reference_ops::FullyConnected (edgesdk_fully_connected_f32.c): per output,
 * total += x[d] * w[o][d] in float in order d = 0.., then total + bias, then the activation's float clamp.
 */
typedef struct {
    int32_t batches;
    int32_t in_depth;
    int32_t out_depth;
    float act_min, act_max;
} edgesdk_fully_connected_f32_params;

void edgesdk_fully_connected_f32(const edgesdk_fully_connected_f32_params *p, const float *input, const float *filter,
                                 const float *bias, float *output);

#endif /* EDGESDK_FULLY_CONNECTED_H */
