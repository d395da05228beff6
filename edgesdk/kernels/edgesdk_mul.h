/*
 * edgesdk_mul.h - int8 and int16 MUL with broadcasting, TFLite reference semantics (reference_integer_ops::Mul /
 * BroadcastMul6DSlow): out = zp_out + requantize((a - zp_a) * (b - zp_b)).
 * int16 has zero points 0 (TFLite requires it). The float32 and int32 kernels are in edgesdk_elementwise.h.
 */
#ifndef EDGESDK_MUL_H
#define EDGESDK_MUL_H

#include <stdint.h>

#include "edgesdk_broadcast.h"
#include "edgesdk_elementwise.h"

typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_offset, input2_offset; /* -zero points */
    int32_t output_offset;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
    int32_t rounding; /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_mul_params;

void edgesdk_mul_s8(const edgesdk_mul_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
void edgesdk_mul_s16(const edgesdk_mul_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);

#endif /* EDGESDK_MUL_H */
