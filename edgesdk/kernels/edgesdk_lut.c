/*
 * edgesdk_lut.c - elementwise int8 table lookup (LOGISTIC, TANH under LiteRT's reference kernels).
 */
#include "edgesdk_lut.h"

void edgesdk_lut_s8(const edgesdk_lut_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = p->table[(uint8_t)input[i]];
    }
}
