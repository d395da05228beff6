/*
 * edgesdk_mean.c - MEAN, bit-exact with TFLite's reference kernels (edgesdk_reduce.h has the iteration).
 */
#include "edgesdk_mean.h"

void edgesdk_mean_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output)
{
    edgesdk_reduce_mean_or_sum_s8(p, input, output);
}

void edgesdk_mean_s16(const edgesdk_mean_params *p, const int16_t *input, int16_t *output)
{
    edgesdk_reduce_mean_or_sum_s16(p, input, output);
}

void edgesdk_mean_f32(const edgesdk_reduce_params *p, const float *input, float *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    const float count = (float)it.count;
    for (int32_t o = 0; o < it.outputs; o++) {
        output[o] = edgesdk_reduce_sum_f32(&it, input, o, 0) / count;
    }
}
