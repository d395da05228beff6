/*
 * edgesdk_hard_swish.c - int8 HARD_SWISH, bit-exact with TFLite's reference kernel (16-bit arithmetic).
 */
#include "edgesdk_hard_swish.h"

/* gemmlowp SaturatingRoundingDoublingHighMul for int16. */
static inline int16_t srdhm16(int16_t a, int16_t b)
{
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    const int32_t ab = (int32_t)a * (int32_t)b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15));
}

/* Like srdhm16 but truncating toward zero (ARM SQDMULH); TFLite uses it to cancel rounding bias. */
static inline int16_t sdhm16(int16_t a, int16_t b)
{
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

static inline int16_t rounding_divide_by_pot16(int16_t x, int exponent)
{
    const int16_t mask = (int16_t)((1 << exponent) - 1);
    const int16_t remainder = (int16_t)(x & mask);
    const int16_t threshold = (int16_t)((mask >> 1) + (x < 0 ? 1 : 0));
    return (int16_t)((x >> exponent) + (remainder > threshold ? 1 : 0));
}

static inline int16_t saturating_left_shift16(int16_t value, int amount)
{
    int32_t r = (int32_t)value * (1 << amount);
    r = r > INT16_MAX ? INT16_MAX : r;
    r = r < INT16_MIN ? INT16_MIN : r;
    return (int16_t)r;
}

static inline int8_t hard_swish(const edgesdk_hard_swish_params *p, int32_t x)
{
    const int16_t input_value = (int16_t)(x - p->input_zero_point);
    const int16_t hires = (int16_t)(input_value * (1 << 7));
    const int16_t preshift_output_scale = srdhm16(hires, (int16_t)p->output_multiplier_fixedpoint_int16);

    /* "relu-ish" value: x rescaled from [-3, 3] to [-1, 1] with saturation, then to [0, 1]. */
    int16_t reluish = hires;
    if (p->reluish_multiplier_exponent > 0) {
        reluish = saturating_left_shift16(reluish, p->reluish_multiplier_exponent - 1);
    }
    reluish = srdhm16(reluish, (int16_t)p->reluish_multiplier_fixedpoint_int16);
    if (p->reluish_multiplier_exponent > 0) {
        reluish = saturating_left_shift16(reluish, 1);
    }
    if (p->reluish_multiplier_exponent < 0) {
        reluish = rounding_divide_by_pot16(reluish, -p->reluish_multiplier_exponent);
    }
    reluish = (int16_t)(((int32_t)reluish + (1 << 15)) >> 1);

    const int16_t preshift_output = sdhm16(reluish, preshift_output_scale);
    /* TFLite adds the zero point in int16 (it can wrap only for absurd scales; kept identical). */
    int32_t out = (int16_t)(rounding_divide_by_pot16(preshift_output, -p->output_multiplier_exponent) +
                            p->output_zero_point);
    out = out > INT8_MAX ? INT8_MAX : out;
    out = out < INT8_MIN ? INT8_MIN : out;
    return (int8_t)out;
}

void edgesdk_hard_swish_s8(const edgesdk_hard_swish_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = hard_swish(p, input[i]);
    }
}
