/*
 * edgesdk_add.c - int8 ADD, bit-exact with TFLite's reference kernel (also its uint8 kernel, after the
 * importer's shift to int8: the arithmetic only sees value - zero_point).
 *
 * Each input is rescaled on its own before the sum, so that step depends on one int8 value only: the
 * compiler tabulates it (256 int32 per input) and the loop looks it up instead of requantizing twice per
 * element. The table entries are the very values the formula gives, so the result is unchanged.
 */
#include "edgesdk_add.h"

#include "edgesdk_arith.h"
#include "edgesdk_requant.h"

static inline int32_t scaled_input(int32_t x, int32_t offset, int32_t left_shift, int32_t multiplier, int32_t shift,
                                   int32_t rounding, const int32_t *table)
{
    if (table != 0) {
        return table[x + 128];
    }
    return edgesdk_requantize((x + offset) * (1 << left_shift), multiplier, shift, rounding);
}

static inline int8_t add_element(const edgesdk_add_params *p, int32_t a, int32_t b)
{
    const int32_t scaled1 = scaled_input(a, p->input1_offset, p->left_shift, p->input1_multiplier, p->input1_shift,
                                         p->rounding, p->input1_table);
    const int32_t scaled2 = scaled_input(b, p->input2_offset, p->left_shift, p->input2_multiplier, p->input2_shift,
                                         p->rounding, p->input2_table);
    const int32_t sum = scaled1 + scaled2;
    const int32_t out = edgesdk_requantize(sum, p->output_multiplier, p->output_shift, p->rounding) + p->output_offset;
    return (int8_t)edgesdk_clamp_i32(out, p->act_min, p->act_max);
}

/* Same shapes, both tables, fast output requantization: the common case (residual connections). */
static void add_tabulated(const edgesdk_add_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const int32_t *table1 = p->input1_table + 128;
    const int32_t *table2 = p->input2_table + 128;
    const int32_t multiplier = p->output_multiplier, shift = p->output_shift, offset = p->output_offset;
    const int32_t act_min = p->act_min, act_max = p->act_max;
    const int8_t *const end = input1 + p->shape.size;
    if (act_min >= offset) { /* ReLU after the residual sum: the clamp absorbs the negative-sum correction */
        while (input1 != end) {
            const int32_t sum = table1[*input1++] + table2[*input2++];
            *output++ = edgesdk_requant_output(edgesdk_requant_right_relu(sum, multiplier, shift), offset, act_min,
                                               act_max);
        }
        return;
    }
    while (input1 != end) {
        const int32_t sum = table1[*input1++] + table2[*input2++];
        *output++ = edgesdk_requant_output(edgesdk_requant_right(sum, multiplier, shift), offset, act_min, act_max);
    }
}

/* Same shapes, the compiler's output table: one lookup per element (about 7.3 instructions instead of 27).
 * Sixteen elements per step so that the pointers and the count advance once per sixteen lookups. */
static void add_output_table(const edgesdk_add_params *p, const int8_t *input1, const int8_t *input2,
                             int8_t *output)
{
    const int8_t *const centre = p->output_table + 128 * 256 + 128; /* indexed by a * 256 + b */
    int32_t left = p->shape.size;
    for (; left >= 16; left -= 16, input1 += 16, input2 += 16, output += 16) {
        _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) {
            output[i] = centre[input1[i] * 256 + input2[i]];
        }
    }
    for (; left > 0; left--) {
        *output++ = centre[*input1++ * 256 + *input2++];
    }
}

void edgesdk_add_s8(const edgesdk_add_params *p, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const edgesdk_broadcast_shape *s = &p->shape;
    if (!s->broadcast) {
        if (p->output_table != 0) {
            add_output_table(p, input1, input2, output);
            return;
        }
        if (p->fast_output && p->input1_table != 0 && p->input2_table != 0) {
            add_tabulated(p, input1, input2, output);
            return;
        }
        for (int32_t i = 0; i < s->size; i++) {
            output[i] = add_element(p, input1[i], input2[i]);
        }
        return;
    }
    const int32_t inner = s->out_shape[EDGESDK_MAX_DIMS - 1];
    const int32_t step1 = s->in1_strides[EDGESDK_MAX_DIMS - 1];
    const int32_t step2 = s->in2_strides[EDGESDK_MAX_DIMS - 1];
    for (int32_t row = 0; row < s->size / inner; row++) {
        int32_t o1, o2;
        edgesdk_broadcast_row(s, row, &o1, &o2);
        for (int32_t i = 0; i < inner; i++) {
            *output++ = add_element(p, input1[o1 + i * step1], input2[o2 + i * step2]);
        }
    }
}

static inline int16_t add_s16(const edgesdk_add_params *p, int16_t a, int16_t b)
{
    const int32_t scaled1 = edgesdk_requantize((a + p->input1_offset) * (1 << p->left_shift), p->input1_multiplier,
                                               p->input1_shift, p->rounding);
    const int32_t scaled2 = edgesdk_requantize((b + p->input2_offset) * (1 << p->left_shift), p->input2_multiplier,
                                               p->input2_shift, p->rounding);
    const int32_t out =
        edgesdk_requantize(scaled1 + scaled2, p->output_multiplier, p->output_shift, p->rounding) + p->output_offset;
    return (int16_t)edgesdk_clamp_i32(out, p->act_min, p->act_max);
}

/* LiteRT's reference_ops::Add(int16, pot_scale): the input whose shift is not 0 is rounded-shifted right onto
 * the output scale in int16 arithmetic, added to the other with 16-bit saturation, then clamped. */
static inline int16_t add_pot_s16(const edgesdk_add_pot_params *p, int16_t a, int16_t b)
{
    const int16_t not_shifted = p->input1_shift == 0 ? a : b;
    const int16_t shifted = p->input1_shift == 0 ? b : a;
    const int32_t right_shift = p->input1_shift == 0 ? -p->input2_shift : -p->input1_shift;
    const int32_t sum = edgesdk_rounding_divide_by_pot_s16(shifted, right_shift) + not_shifted;
    const int32_t saturated = edgesdk_clamp_i32(sum, INT16_MIN, INT16_MAX);
    return (int16_t)edgesdk_clamp_i32(saturated, p->act_min, p->act_max);
}

EDGESDK_BINARY_KERNEL(edgesdk_add_s16, edgesdk_add_params, int16_t, int16_t, int16_t, add_s16)
EDGESDK_BINARY_KERNEL(edgesdk_add_pot_s16, edgesdk_add_pot_params, int16_t, int16_t, int16_t, add_pot_s16)
