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
    if (p->fast_requant) {
        scaled = edgesdk_mbqm64_fast(acc, p->fast_multiplier[o], p->fast_shift[o]);
    } else if (p->fp64_window != 0) {
        scaled = edgesdk_requantize_fp64_window(acc, p->scale[o], p->multiplier[o], p->shift[o], p->fp64_window);
    } else if (p->rounding == EDGESDK_ROUNDING_FP64) {
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
