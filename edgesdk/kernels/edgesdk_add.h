/*
 * edgesdk_add.h - int8 and int16 ADD with broadcasting, TFLite reference semantics (reference_integer_ops::Add /
 * BroadcastAdd6DSlow, reference_ops::AddElementwise for int16): both inputs are shifted left by `left_shift`
 * (20 for int8, 15 for int16), rescaled to twice the larger input scale, summed, and rescaled to the output.
 * edgesdk_add_pot_s16 is LiteRT's power-of-two int16 path (reference_ops::Add with pot_scale). The float32 and
 * int32 kernels are in edgesdk_elementwise.h.
 */
#ifndef EDGESDK_ADD_H
#define EDGESDK_ADD_H

#include <stdint.h>

#include "edgesdk_broadcast.h"
#include "edgesdk_elementwise.h"

typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_offset, input2_offset; /* -zero points */
    int32_t output_offset;
    int32_t left_shift;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    int32_t act_min, act_max;
    int32_t rounding; /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
    /* Optional (NULL: computed per element): the rescaled input for each of the 256 int8 values, indexed by
     * value + 128, i.e. requantize((x + input_offset) << left_shift, input multiplier, input shift). SUB passes
     * input 2's table negated (the kernel then computes TFLite's scaled1 - scaled2). */
    const int32_t *input1_table, *input2_table;
    /* 1: the output requantization may use edgesdk_requant_right (double rounding, output_shift in [-31, -1],
     * |scaled1| + |scaled2| < 2^31 for all inputs; the compiler checks this). */
    int32_t fast_output;
    /* Optional (NULL: the tables above): the int8 output for every pair of inputs, 65536 bytes, a's value + 128
     * times 256 plus b's value + 128, computed by the compiler exactly as the tables and the output
     * requantization would (same shapes only; large residual ADDs when the flash holds it). */
    const int8_t *output_table;
} edgesdk_add_params;

void edgesdk_add_s8(const edgesdk_add_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
/* The general int16 path: no tables (NULL), fast_output 0. */
void edgesdk_add_s16(const edgesdk_add_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void edgesdk_add_pot_s16(const edgesdk_add_pot_params *p, const int16_t *input1, const int16_t *input2,
                         int16_t *output);

#endif /* EDGESDK_ADD_H */
