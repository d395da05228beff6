/*
 * edgesdk_log_softmax.c - LOG_SOFTMAX, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_log_softmax.h"

#include <float.h>

#include "edgesdk_fixedpoint.h"
#include "edgesdk_reduce_libm.h"

#define INPUT_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12
#define OUTPUT_INTEGER_BITS 4

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

/* gemmlowp's plain fixed-point + and -: wrapping int32 arithmetic. */
static inline int32_t add_wrap(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t sub_wrap(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

static inline int32_t saturating_add(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + (int64_t)b;
    return (int32_t)(sum > INT32_MAX ? INT32_MAX : (sum < INT32_MIN ? INT32_MIN : sum));
}

static inline int32_t saturating_sub(int32_t a, int32_t b)
{
    const int64_t diff = (int64_t)a - (int64_t)b;
    return (int32_t)(diff > INT32_MAX ? INT32_MAX : (diff < INT32_MIN ? INT32_MIN : diff));
}

/* TFLite's SaturatingRoundingMultiplyByPOTParam for exponent >= 0: a saturating left shift. */
static inline int32_t saturating_shift_left(int32_t x, int exponent)
{
    return exponent == 0 ? x : edgesdk_fp_mul_pot(x, exponent);
}

/* log(x) for a Q12 input x >= 1, result Q5 (TFLite's log_x_for_x_greater_than_or_equal_to_1<5>, which
 * accumulates in Q6 and evaluates a rational approximation of log around sqrt(sqrt(1/2))). */
static int32_t log_q12_to_q5(int32_t input)
{
    enum { ACCUM_BITS = INPUT_INTEGER_BITS + 1 }; /* the log's output bits (5) + 1 of headroom */
    const int32_t log_2 = 1488522236;
    const int32_t sqrt_sqrt_half = 1805811301;
    const int32_t sqrt_half = 1518500250;
    const int32_t one_quarter = 536870912;
    const int32_t alpha_n = 117049297;
    const int32_t alpha_d = 127690142;
    const int32_t alpha_i = 1057819769;
    const int32_t alpha_f = 638450708;
    const int32_t shifted_quarter = edgesdk_fp_rescale(one_quarter, 0, ACCUM_BITS);

    /* The input read as Q0: find its power of two, once directly and once after a sqrt(1/2) premultiply. */
    const int32_t z_a = input;
    const int z_a_headroom_plus_1 = count_leading_zeros((uint32_t)z_a);
    const int32_t r_a_tmp = saturating_shift_left(z_a, z_a_headroom_plus_1 - 1);
    const int32_t r_a_raw = saturating_shift_left(edgesdk_fp_mul(r_a_tmp, sqrt_half), 1);
    const int32_t z_a_pow_2_adj = saturating_add(
        saturating_shift_left(ACCUMULATION_INTEGER_BITS - z_a_headroom_plus_1, 31 - ACCUM_BITS), shifted_quarter);

    const int32_t z_b = edgesdk_fp_mul(z_a, sqrt_half);
    const int z_b_headroom = count_leading_zeros((uint32_t)z_b) - 1;
    const int32_t r_b_raw = saturating_shift_left(z_a, z_b_headroom);
    const int32_t z_b_pow_2_adj = saturating_sub(
        saturating_shift_left(ACCUMULATION_INTEGER_BITS - z_b_headroom, 31 - ACCUM_BITS), shifted_quarter);

    const int32_t r = r_a_raw < r_b_raw ? r_a_raw : r_b_raw;
    const int32_t z_pow_2_adj = z_a_pow_2_adj > z_b_pow_2_adj ? z_a_pow_2_adj : z_b_pow_2_adj;

    const int32_t p = edgesdk_fp_rounding_half_sum(r, sqrt_sqrt_half);
    int32_t q = sub_wrap(r, sqrt_sqrt_half);
    q = add_wrap(q, q);

    const int32_t common_sq = edgesdk_fp_mul(q, q);
    const int32_t num = add_wrap(edgesdk_fp_mul(q, r), edgesdk_fp_mul(edgesdk_fp_mul(q, common_sq), alpha_n));
    const int32_t denom_minus_one = add_wrap(
        edgesdk_fp_mul(p, add_wrap(add_wrap(alpha_i, q), edgesdk_fp_mul(alpha_d, common_sq))),
        edgesdk_fp_mul(alpha_f, q));
    const int32_t recip_denom = edgesdk_fp_one_over_one_plus_x(denom_minus_one);

    const int32_t num_scaled = edgesdk_fp_rescale(num, 0, ACCUM_BITS);
    const int32_t sum = add_wrap(edgesdk_fp_mul(z_pow_2_adj, log_2), edgesdk_fp_mul(num_scaled, recip_denom));
    return edgesdk_fp_rescale(sum, ACCUM_BITS, INPUT_INTEGER_BITS);
}

static void log_softmax_row_s8(const edgesdk_log_softmax_params *p, const int8_t *in, int8_t *out)
{
    int32_t max = INT8_MIN;
    for (int32_t c = 0; c < p->depth; c++) {
        max = in[c] > max ? in[c] : max;
    }

    int32_t sum_of_exps = 0; /* Q12 */
    for (int32_t c = 0; c < p->depth; c++) {
        const int32_t diff = in[c] - max;
        if (diff >= p->diff_min) {
            const int32_t diff_q5 = edgesdk_requantize(diff, p->input_multiplier, p->input_left_shift, p->rounding);
            const int32_t e = edgesdk_fp_exp_on_negative_values(diff_q5, INPUT_INTEGER_BITS);
            sum_of_exps = add_wrap(sum_of_exps, edgesdk_fp_rescale(e, 0, ACCUMULATION_INTEGER_BITS));
        }
    }

    const int32_t log_sum_q5 = log_q12_to_q5(sum_of_exps);
    /* The smallest Q5.26 value plus the log sum, back in input units: lower diffs give -128. */
    const int32_t shifted_log_sum = add_wrap(log_sum_q5, INT32_MIN);
    const int32_t reverse = edgesdk_requantize(shifted_log_sum, p->reverse_multiplier, p->reverse_shift, p->rounding);
    const int32_t adjusted_diff_min = (p->diff_min - 1) > reverse ? (p->diff_min - 1) : reverse;

    for (int32_t c = 0; c < p->depth; c++) {
        const int32_t diff = in[c] - max;
        if (diff > adjusted_diff_min) {
            const int32_t diff_q5 = edgesdk_requantize(diff, p->input_multiplier, p->input_left_shift, p->rounding);
            const int32_t v = edgesdk_rounding_divide_by_pot(sub_wrap(diff_q5, log_sum_q5),
                                                             31 - INPUT_INTEGER_BITS - OUTPUT_INTEGER_BITS) + 127;
            out[c] = (int8_t)edgesdk_clamp_i32(v, INT8_MIN, INT8_MAX);
        } else {
            out[c] = INT8_MIN;
        }
    }
}

void edgesdk_log_softmax_s8(const edgesdk_log_softmax_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t r = 0; r < p->rows; r++) {
        log_softmax_row_s8(p, input + r * p->depth, output + r * p->depth);
    }
}

void edgesdk_log_softmax_f32(const edgesdk_log_softmax_params *p, const float *input, float *output)
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
            sum += edgesdk_expf(in[c] - max);
        }
        const float log_sum = edgesdk_logf(sum);
        for (int32_t c = 0; c < p->depth; c++) {
            out[c] = in[c] - max - log_sum;
        }
    }
}
