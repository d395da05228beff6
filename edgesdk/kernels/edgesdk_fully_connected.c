/*
 * edgesdk_fully_connected.c - int8 FULLY_CONNECTED, bit-exact with LiteRT's reference kernel
 * (double-precision requantization) and with TFLite Micro's (integer requantization).
 */
#include "edgesdk_fully_connected.h"

#include "edgesdk_arith.h"
#include "edgesdk_fp64.h"

static int32_t dot_row(const int8_t *x, const int8_t *w, int32_t n, int32_t input_offset, int32_t filter_offset)
{
    int32_t acc = 0;
    if (filter_offset == 0) {
        for (int32_t i = 0; i < n; i++) {
            acc += (int32_t)w[i] * ((int32_t)x[i] + input_offset);
        }
    } else {
        for (int32_t i = 0; i < n; i++) {
            acc += ((int32_t)w[i] + filter_offset) * ((int32_t)x[i] + input_offset);
        }
    }
    return acc;
}

/* The loops; F32: ONNX Runtime's float requantization (EDGESDK_ROUNDING_F32), otherwise p->rounding's. */
static inline __attribute__((always_inline)) void fully_connected_loops(const edgesdk_fully_connected_params *p,
                                                                        const int8_t *input, const int8_t *filter,
                                                                        const int32_t *bias, int8_t *output,
                                                                        const int F32)
{
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *x = input + b * p->in_depth;
        for (int32_t o = 0; o < p->out_depth; o++) {
            int32_t acc = dot_row(x, filter + o * p->in_depth, p->in_depth, p->input_offset, p->filter_offset);
            if (bias != 0) {
                acc += bias[o];
            }
            if (F32) {
                acc = edgesdk_requantize_f32(acc, p->scale_f32[o]);
            } else if (p->rounding == EDGESDK_ROUNDING_FP64) {
                acc = edgesdk_requantize_fp64_fast(acc, p->scale[o], p->multiplier[o], p->shift[o]);
            } else {
                acc = edgesdk_requantize(acc, p->multiplier[o], p->shift[o], p->rounding);
            }
            acc += p->output_offset;
            *output++ = (int8_t)edgesdk_clamp_i32(acc, p->act_min, p->act_max);
        }
    }
}

/* Two functions, not a test of p->rounding: a firmware without EDGESDK_ROUNDING_F32 layers links no
 * single-precision soft-float. */
void edgesdk_fully_connected_s8_loops(const edgesdk_fully_connected_params *p, const int8_t *input,
                                      const int8_t *filter, const int32_t *bias, int8_t *output)
{
    /* A local copy: int8 output stores may alias *p as far as C knows; a copy lets the compiler keep
     * the parameters in registers. */
    const edgesdk_fully_connected_params params = *p;
    fully_connected_loops(&params, input, filter, bias, output, 0);
}

void edgesdk_fully_connected_s8_loops_f32(const edgesdk_fully_connected_params *p, const int8_t *input,
                                          const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const edgesdk_fully_connected_params params = *p;
    fully_connected_loops(&params, input, filter, bias, output, 1);
}
