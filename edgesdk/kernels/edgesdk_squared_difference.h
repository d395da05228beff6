/*
 * edgesdk_squared_difference.h - int8 and int16 SQUARED_DIFFERENCE with broadcasting, TFLite reference
 * semantics: both inputs shifted left by `left_shift` (7 for int8, 0 for int16), rescaled to twice the larger
 * input scale, subtracted, squared in int32, and the square requantized to the output. The float32 and int32
 * kernels are in edgesdk_elementwise.h.
 */
#ifndef EDGESDK_SQUARED_DIFFERENCE_H
#define EDGESDK_SQUARED_DIFFERENCE_H

#include <stdint.h>

#include "edgesdk_elementwise.h"

typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_offset, input2_offset; /* -zero points */
    int32_t output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift; /* shifts <= 0 */
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max; /* the output type's range */
    int32_t rounding;         /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_squared_difference_params;

void edgesdk_squared_difference_s8(const edgesdk_squared_difference_params *p, const int8_t *input1,
                                   const int8_t *input2, int8_t *output);
void edgesdk_squared_difference_s16(const edgesdk_squared_difference_params *p, const int16_t *input1,
                                    const int16_t *input2, int16_t *output);

#endif /* EDGESDK_SQUARED_DIFFERENCE_H */
