/*
 * edgesdk_div.h - int8 DIV with broadcasting, TFLite reference semantics (reference_ops::DivElementwise /
 * BroadcastDivSlow): the divisor's reciprocal in gemmlowp fixed point (GetReciprocal), the numerator normalized
 * by its leading sign bits, and one requantization by s_a / (s_b s_y) with the combined shift. The float32 and
 * int32 kernels are in edgesdk_elementwise.h.
 */
#ifndef EDGESDK_DIV_H
#define EDGESDK_DIV_H

#include <stdint.h>

#include "edgesdk_broadcast.h"
#include "edgesdk_elementwise.h"

typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_offset, input2_offset; /* -zero points */
    int32_t output_offset;
    int32_t output_multiplier, output_shift; /* shift <= 21: the combined shift stays a right shift */
    int32_t act_min, act_max;
} edgesdk_div_params;

void edgesdk_div_s8(const edgesdk_div_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);

#endif /* EDGESDK_DIV_H */
