/*
 * edgesdk_fully_connected_s16.c - int16 FULLY_CONNECTED (16x8), bit-exact with LiteRT's reference kernel
 * (double-precision requantization of the accumulator) and TFLite Micro's (MultiplyByQuantizedMultiplier of
 * the accumulator type: edgesdk_layer16.h).
 */
#include "edgesdk_fully_connected.h"

#include "edgesdk_layer16.h"

void edgesdk_fully_connected_s16(const edgesdk_fully_connected_s16_params *p, const int16_t *input,
                                 const int8_t *filter, const int64_t *bias, int16_t *output)
{
    /* A local copy: output stores may alias *p as far as C knows; a copy keeps the parameters in registers. */
    const edgesdk_fully_connected_s16_params params = *p;
    p = &params;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *x = input + b * p->in_depth;
        const int8_t *w = filter;
        for (int32_t o = 0; o < p->out_depth; o++) {
            if (p->sum32) {
                const int32_t acc = edgesdk_add_bias32(edgesdk_dot_s16_s8(x, w, p->in_depth), bias, o);
                w += p->in_depth;
                int32_t scaled;
                if (p->fast_requant) {
                    scaled = edgesdk_mbqm64_fast(acc, p->fast_multiplier[o], p->fast_shift[o]);
                } else if (p->rounding == EDGESDK_ROUNDING_FP64) {
                    scaled = edgesdk_requantize_fp64_fast(acc, p->scale[o], p->multiplier[o], p->shift[o]);
                } else {
                    scaled = edgesdk_requantize16_small(acc, p->accumulator, p->rounding, p->multiplier[o],
                                                        p->shift[o]);
                }
                *output++ = edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
                continue;
            }
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
