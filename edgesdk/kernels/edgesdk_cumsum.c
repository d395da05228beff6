/*
 * edgesdk_cumsum.c - CUMSUM, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_cumsum.h"

void edgesdk_cumsum_f32(const edgesdk_cumsum_params *p, const float *input, float *output)
{
    for (int32_t o = 0; o < p->outer; o++) {
        for (int32_t i = 0; i < p->inner; i++) {
            const int32_t base = o * p->depth * p->inner + i;
            float acc = 0.0f;
            for (int32_t k = 0; k < p->depth; k++) {
                const int32_t index = base + (p->reverse ? p->depth - 1 - k : k) * p->inner;
                if (p->exclusive) {
                    output[index] = acc;
                    acc += input[index];
                } else {
                    acc += input[index];
                    output[index] = acc;
                }
            }
        }
    }
}
