/*
 * edgesdk_softmax.c - int8 SOFTMAX, bit-exact with TFLite's reference kernel.
 *
 * Per row: differences to the row maximum are scaled into Q5.26, exponentiated in fixed point (Q0.31),
 * summed in Q12.19, the sum's reciprocal is taken, and each exp is scaled by it into [0, 256).
 */
#include "edgesdk_softmax.h"

#include <float.h>

#include "edgesdk_fixedpoint.h"
#include "edgesdk_reduce_libm.h"

#define SCALED_DIFF_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12

/* exp(beta * scale * (x - max)) in Q0, for a difference already known to be >= diff_min. */
static inline int32_t exp_of_diff(const edgesdk_softmax_params *p, int32_t diff)
{
    const int32_t scaled = edgesdk_requantize(diff, p->input_multiplier, p->input_left_shift, p->rounding);
    return edgesdk_fp_exp_on_negative_values(scaled, SCALED_DIFF_INTEGER_BITS);
}

static int count_leading_zeros(uint32_t x)
{
    int n = 0;
    if (x == 0) {
        return 32;
    }
    while ((x & 0x80000000u) == 0) {
        x <<= 1;
        n++;
    }
    return n;
}

static void softmax_row(const edgesdk_softmax_params *p, const int8_t *in, int8_t *out)
{
    int32_t max = INT8_MIN;
    for (int32_t c = 0; c < p->depth; c++) {
        if (in[c] > max) {
            max = in[c];
        }
    }

    int32_t sum_of_exps = 0; /* Q12 */
    for (int32_t c = 0; c < p->depth; c++) {
        const int32_t diff = in[c] - max;
        if (diff >= p->diff_min) {
            sum_of_exps += edgesdk_fp_rescale(exp_of_diff(p, diff), 0, ACCUMULATION_INTEGER_BITS);
        }
    }

    /* 1 / sum: normalize the sum to [1, 2), take 1 / (1 + x), remember the power of two (GetReciprocal). */
    const int headroom_plus_one = count_leading_zeros((uint32_t)sum_of_exps);
    const int num_bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom_plus_one;
    const int32_t shifted_sum_minus_one = (int32_t)(((uint32_t)sum_of_exps << headroom_plus_one) - (1u << 31));
    const int32_t shifted_scale = edgesdk_fp_one_over_one_plus_x(shifted_sum_minus_one);
    const int exponent = num_bits_over_unit + 31 - 8;

    for (int32_t c = 0; c < p->depth; c++) {
        const int32_t diff = in[c] - max;
        if (diff >= p->diff_min) {
            const int32_t prob = edgesdk_fp_mul(shifted_scale, exp_of_diff(p, diff));
            const int32_t unsat = edgesdk_rounding_divide_by_pot(prob, exponent);
            out[c] = (int8_t)edgesdk_clamp_i32(unsat - 128, INT8_MIN, INT8_MAX);
        } else {
            out[c] = INT8_MIN;
        }
    }
}

void edgesdk_softmax_s8(const edgesdk_softmax_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t r = 0; r < p->rows; r++) {
        softmax_row(p, input + r * p->depth, output + r * p->depth);
    }
}

/* TFLite's LUTLookup for int16: 512 intervals indexed by the top 9 bits, interpolated with the low 7. */
static inline int16_t table_lookup_s16(int16_t value, const int16_t *table)
{
    const int32_t index = 256 + (value >> 7);
    const int32_t offset = value & 0x7f;
    const int32_t base = table[index];
    const int16_t slope = (int16_t)(table[index + 1] - table[index]);
    const int32_t delta = (slope * offset + 64) >> 7;
    return (int16_t)(base + delta);
}

static void softmax_row_s16(const edgesdk_softmax16_params *p, const int16_t *in, int16_t *out)
{
    int16_t max = INT16_MIN;
    for (int32_t c = 0; c < p->depth; c++) {
        max = in[c] > max ? in[c] : max;
    }
    /* exp of each difference, cached in the output as TFLite does, and their sum (Q16.15) */
    int32_t sum_of_exps = 0;
    for (int32_t c = 0; c < p->depth; c++) {
        const int32_t scaled = edgesdk_requantize(in[c] - max, p->input_multiplier, p->input_shift, p->rounding);
        const int32_t centered = edgesdk_clamp_i32(scaled + 32767, INT16_MIN, INT16_MAX); /* [-65535, 0] -> int16 */
        out[c] = table_lookup_s16((int16_t)centered, p->exp_table);
        sum_of_exps += out[c];
    }
    /* 1 / sum: the sum normalized to [1, 2) in Q1.15, re-centered to int16, through the 1/(1 + x) table */
    const int headroom_plus_one = count_leading_zeros((uint32_t)sum_of_exps);
    const int32_t shifted_sum = (int32_t)((((int64_t)sum_of_exps << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
    const int32_t centered_sum = edgesdk_clamp_i32(shifted_sum - ((1 << 15) + (1 << 16)), INT16_MIN, INT16_MAX);
    const int16_t reciprocal = table_lookup_s16((int16_t)centered_sum, p->reciprocal_table);
    const int right_shift = 31 - headroom_plus_one;
    const int64_t round = (int64_t)1 << (right_shift - 1);
    for (int32_t c = 0; c < p->depth; c++) {
        const int32_t result = (int32_t)(((int64_t)out[c] * reciprocal + round) >> right_shift);
        out[c] = (int16_t)edgesdk_clamp_i32(result, 0, INT16_MAX);
    }
}

void edgesdk_softmax_s16(const edgesdk_softmax16_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t r = 0; r < p->rows; r++) {
        softmax_row_s16(p, input + r * p->depth, output + r * p->depth);
    }
}

void edgesdk_softmax_f32(const edgesdk_softmax_f32_params *p, const float *input, float *output)
{
    for (int32_t r = 0; r < p->rows; r++) {
        const float *in = input + r * p->depth;
        float *out = output + r * p->depth;
        float max = -FLT_MAX; /* numeric_limits<float>::lowest() */
        for (int32_t c = 0; c < p->depth; c++) {
            max = max < in[c] ? in[c] : max; /* std::max(max, x) */
        }
        float sum = 0.0f;
        for (int32_t c = 0; c < p->depth; c++) {
            const float e = edgesdk_expf((in[c] - max) * p->beta);
            out[c] = e;
            sum += e;
        }
        for (int32_t c = 0; c < p->depth; c++) {
            out[c] = out[c] / sum;
        }
    }
}
