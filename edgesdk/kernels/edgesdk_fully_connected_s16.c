/*
 * edgesdk_fully_connected_s16.c - int16 FULLY_CONNECTED (16x8), bit-exact with LiteRT's reference kernel
 * (double-precision requantization of the accumulator) and TFLite Micro's (MultiplyByQuantizedMultiplier of
 * the accumulator type: edgesdk_layer16.h).
 */
#include "edgesdk_fully_connected.h"

#include "edgesdk_layer16.h"

/* The four int32 sums x . w[k * n ..], k < 4, of four consecutive filter rows: each input is loaded once for four
 * products, two inputs per step (about 4 instructions per MAC instead of 8 for one row at a time). */
static void dot4_s16_s8(const int16_t *x, const int8_t *w, int32_t n, int32_t sums[4])
{
    const int8_t *w0 = w, *w1 = w + n, *w2 = w + 2 * n, *w3 = w + 3 * n;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t i = 0;
    for (; i + 1 < n; i += 2) {
        const int32_t x0 = x[i], x1 = x[i + 1];
        a0 += x0 * w0[i] + x1 * w0[i + 1];
        a1 += x0 * w1[i] + x1 * w1[i + 1];
        a2 += x0 * w2[i] + x1 * w2[i + 1];
        a3 += x0 * w3[i] + x1 * w3[i + 1];
    }
    if (i < n) {
        const int32_t x0 = x[i];
        a0 += x0 * w0[i];
        a1 += x0 * w1[i];
        a2 += x0 * w2[i];
        a3 += x0 * w3[i];
    }
    sums[0] = a0;
    sums[1] = a1;
    sums[2] = a2;
    sums[3] = a3;
}

/* One output of a sum32 layer: the int32 sum of products plus bias, requantized and clamped. */
static inline __attribute__((always_inline)) int16_t output32_s16(const edgesdk_fully_connected_s16_params *p, int32_t sum, const int64_t *bias, int32_t o)
{
    const int32_t acc = edgesdk_add_bias32(sum, bias, o);
    int32_t scaled;
    if (p->rounding == EDGESDK_ROUNDING_FP64) {
        scaled = edgesdk_requantize_fp64_fast(acc, p->scale[o], p->multiplier[o], p->shift[o]);
    } else {
        scaled = edgesdk_requantize16_small(acc, p->accumulator, p->rounding, p->multiplier[o], p->shift[o]);
    }
    return edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
}

void edgesdk_fully_connected_s16(const edgesdk_fully_connected_s16_params *p, const int16_t *input,
                                 const int8_t *filter, const int64_t *bias, int16_t *output)
{
    /* A local copy: output stores may alias *p as far as C knows; a copy keeps the parameters in registers. */
    const edgesdk_fully_connected_s16_params params = *p;
    p = &params;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *x = input + b * p->in_depth;
        const int8_t *w = filter;
        int32_t o = 0;
        if (p->sum32) {
            for (; o + 3 < p->out_depth; o += 4) {
                int32_t sums[4];
                dot4_s16_s8(x, w, p->in_depth, sums);
                w += 4 * p->in_depth;
                for (int32_t k = 0; k < 4; k++) {
                    *output++ = output32_s16(p, sums[k], bias, o + k);
                }
            }
            for (; o < p->out_depth; o++) {
                *output++ = output32_s16(p, edgesdk_dot_s16_s8(x, w, p->in_depth), bias, o);
                w += p->in_depth;
            }
            continue;
        }
        for (; o < p->out_depth; o++) {
            int64_t acc = edgesdk_dot_s16_s8_wide(x, w, p->in_depth);
            w += p->in_depth;
            if (bias != 0) {
                acc += bias[o];
            }
            const double scale = p->rounding == EDGESDK_ROUNDING_FP64 ? p->scale[o] : 0.0;
            const int32_t scaled = edgesdk_requantize16(acc, p->accumulator, p->rounding, p->multiplier[o],
                                                        p->shift[o], scale);
            *output++ = edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
        }
    }
}

/*
 * The row-block kernels (edgesdk_fully_connected_s16_fp64 and _mbqm64): the filter rows in blocks of 8, then
 * one each of 4, 2 and 1 as out_depth's bits ask, each block stored tap-major ([tap][row], one pointer walks it),
 * and one record per output with the constants of its requantization. Both need sum32: every sum of products
 * plus the bias is exact in int32.
 */
#define FC16_RECORD_FP64 4   /* bias, multiplier, 2^(s - 1), s: edgesdk_requantize_fp64_window with s = ~shift */
#define FC16_RECORD_MBQM64 3 /* bias, m, s: edgesdk_mbqm64_fast */
#define FC16_MODE_FP64 0
#define FC16_MODE_MBQM64 1

typedef struct {
    uint32_t window, window2; /* fp64: the window and twice it */
    const int32_t *records;   /* fp64: the first record, to find an output's scale */
    const double *scale;      /* fp64: the scales, for outputs near a rounding tie */
    int32_t act_min, act_max;
    uint32_t act_span; /* act_max - act_min */
} fc16_requant;

/* The double-precision rounding of an accumulator near a tie (rare, kept out of line); r is its record. */
static __attribute__((noinline)) int32_t fc16_near_tie(int32_t acc, const int32_t *r, const fc16_requant *q)
{
    return edgesdk_requantize_fp64(acc, q->scale[(r - q->records) / FC16_RECORD_FP64]);
}

/* One output: the accumulator (sum of products plus bias) requantized with its record r, then clamped. */
static inline __attribute__((always_inline)) int32_t fc16_output(int32_t acc, const int32_t *r,
                                                                 const fc16_requant *q, const int mode)
{
    int32_t v;
    if (mode == FC16_MODE_FP64) {
        /* edgesdk_requantize_fp64_window, with 2^(s - 1) and s read from the record */
        const int64_t t = (int64_t)acc * r[1];
        const uint32_t u_low = (uint32_t)t + q->window;
        const int32_t u_high = (int32_t)(t >> 32) + r[2] + (int32_t)(u_low < q->window);
        const int32_t s = r[3];
        if (__builtin_expect(((uint32_t)u_high << (-s & 31)) == 0, 0) && u_low <= q->window2) {
            v = fc16_near_tie(acc, r, q);
        } else {
            v = u_high >> s;
        }
    } else {
        v = edgesdk_mbqm64_fast(acc, r[1], r[2]);
    }
    /* one unsigned compare for values inside the activation range (the usual case), two more outside it */
    if (__builtin_expect((uint32_t)(v - q->act_min) > q->act_span, 0)) {
        v = v < q->act_min ? q->act_min : q->act_max;
    }
    return v;
}

/* The R outputs y[0..R) of one block of rows (filter w, records r): x . w over n taps, two taps per step, from
 * the biases; each then requantized. Returns the filter of the next block. */
static inline __attribute__((always_inline)) const int8_t *fc16_block(const int16_t *x, const int8_t *w, int32_t n,
                                                                      const int32_t *r, const fc16_requant *q,
                                                                      int16_t *y, const int R, const int mode)
{
    const int stride = mode == FC16_MODE_FP64 ? FC16_RECORD_FP64 : FC16_RECORD_MBQM64;
    int32_t a[8];
#pragma GCC unroll 8
    for (int k = 0; k < R; k++) {
        a[k] = r[k * stride];
    }
    const int16_t *quads_end = x + (n & ~3);
    for (; x != quads_end; x += 4) {
        const int32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
#pragma GCC unroll 8
        for (int k = 0; k < R; k++) {
            a[k] += x0 * w[k] + x1 * w[R + k] + x2 * w[2 * R + k] + x3 * w[3 * R + k];
        }
        w += 4 * R;
    }
    if (n & 2) {
        const int32_t x0 = x[0], x1 = x[1];
#pragma GCC unroll 8
        for (int k = 0; k < R; k++) {
            a[k] += x0 * w[k] + x1 * w[R + k];
        }
        w += 2 * R;
        x += 2;
    }
    if (n & 1) {
        const int32_t x0 = x[0];
#pragma GCC unroll 8
        for (int k = 0; k < R; k++) {
            a[k] += x0 * w[k];
        }
        w += R;
    }
#pragma GCC unroll 8
    for (int k = 0; k < R; k++) {
        y[k] = (int16_t)fc16_output(a[k], r + k * stride, q, mode);
    }
    return w;
}

static inline __attribute__((always_inline)) void fc16_rows(const edgesdk_fully_connected_s16_rows_params *p,
                                                            const int16_t *input, int16_t *output, const int mode)
{
    const int32_t n = p->in_depth, out_depth = p->out_depth;
    const int stride = mode == FC16_MODE_FP64 ? FC16_RECORD_FP64 : FC16_RECORD_MBQM64;
    const fc16_requant q = {p->window, 2 * p->window, p->records, p->scale, p->act_min, p->act_max,
                            (uint32_t)p->act_max - (uint32_t)p->act_min};
    int16_t *const end = output + p->batches * out_depth;
    for (; output != end; output += out_depth, input += n) {
        const int8_t *w = p->filter;
        const int32_t *r = p->records;
        int16_t *y = output;
        int32_t rest = out_depth;
        for (; rest >= 8; rest -= 8, y += 8, r += 8 * stride) {
            w = fc16_block(input, w, n, r, &q, y, 8, mode);
        }
        if (rest & 4) {
            w = fc16_block(input, w, n, r, &q, y, 4, mode);
            y += 4;
            r += 4 * stride;
        }
        if (rest & 2) {
            w = fc16_block(input, w, n, r, &q, y, 2, mode);
            y += 2;
            r += 2 * stride;
        }
        if (rest & 1) {
            fc16_block(input, w, n, r, &q, y, 1, mode);
        }
    }
}

/* -fsched-pressure: GCC's first scheduling pass otherwise hoists the loads of a step and spills accumulators.
 * -fno-tree-loop-optimize: GCC's loop passes otherwise precompute each block's trip counts and filter advance
 * up front and spill them (the four FC layers of benchmarks/tflm_int16.py: 6,575 instructions with it, 6,753
 * without, before the four-tap step). The pragmas still unroll the loops over a block's rows. */
__attribute__((optimize("sched-pressure", "no-tree-loop-optimize"))) void edgesdk_fully_connected_s16_fp64(
    const edgesdk_fully_connected_s16_rows_params *p, const int16_t *input, int16_t *output)
{
    fc16_rows(p, input, output, FC16_MODE_FP64);
}

__attribute__((optimize("sched-pressure", "no-tree-loop-optimize"))) void edgesdk_fully_connected_s16_mbqm64(
    const edgesdk_fully_connected_s16_rows_params *p, const int16_t *input, int16_t *output)
{
    fc16_rows(p, input, output, FC16_MODE_MBQM64);
}
