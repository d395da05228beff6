/*
 * edgesdk_sub.h - int16 SUB with broadcasting, TFLite reference semantics (reference_ops::Sub /
 * BroadcastQuantSubSlow): both inputs are shifted left by `left_shift` (15), rescaled to twice the larger input
 * scale, subtracted, and rescaled to the output. int8 SUB runs ADD's tabulated kernel (edgesdk_add.h) with
 * input 2's table negated. LiteRT's power-of-two int16 path
 * (Sub16 / BroadcastSub16POTSlow) is edgesdk_sub_pot_s16, with ADD's parameters (edgesdk_add.h).
 */
#ifndef EDGESDK_SUB_H
#define EDGESDK_SUB_H

#include <stdint.h>

#include "edgesdk_add.h"
#include "edgesdk_broadcast.h"

typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_offset, input2_offset; /* -zero points */
    int32_t output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift; /* shifts <= 0 (QuantizeMultiplierSmallerThanOneExp) */
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
    int32_t rounding; /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_sub_params;

void edgesdk_sub_s16(const edgesdk_sub_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void edgesdk_sub_pot_s16(const edgesdk_add_pot_params *p, const int16_t *input1, const int16_t *input2,
                         int16_t *output);

#endif /* EDGESDK_SUB_H */
