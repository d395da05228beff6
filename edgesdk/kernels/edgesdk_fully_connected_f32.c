/*
 * edgesdk_fully_connected_f32.c - float32 FULLY_CONNECTED, bit-exact with TFLite's reference_ops::FullyConnected.
 */
#include "edgesdk_float.h"
#include "edgesdk_fully_connected.h"

void edgesdk_fully_connected_f32(const edgesdk_fully_connected_f32_params *p, const float *input, const float *filter,
                                 const float *bias, float *output)
{
    const edgesdk_fully_connected_f32_params params = *p;
    p = &params;
    for (int32_t b = 0; b < p->batches; b++) {
        const float *x = input + b * p->in_depth;
        const float *w = filter;
        for (int32_t o = 0; o < p->out_depth; o++) {
            float total = 0.0f;
            for (int32_t d = 0; d < p->in_depth; d++) {
                const float product = x[d] * w[d];
                total += product;
            }
            w += p->in_depth;
            const float bias_value = bias != 0 ? bias[o] : 0.0f;
            *output++ = edgesdk_clamp_f32(total + bias_value, p->act_min, p->act_max);
        }
    }
}
