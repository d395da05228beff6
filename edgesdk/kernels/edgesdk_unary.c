/*
 * edgesdk_unary.c - single-input elementwise kernels, bit-exact with TFLite's reference kernels (LiteRT's
 * tflite/kernels/elementwise.cc, activations.cc, cast.cc, floor.cc, ceil.cc, round.cc, neg.cc, zeros_like.cc
 * and TFLite Micro's counterparts; docs/rounding.md says where the two differ).
 */
#include "edgesdk_unary.h"

#include "edgesdk_arith.h"

/* -- ABS --------------------------------------------------------------------------------------------------- */

static inline int32_t abs_quantized(const edgesdk_abs_params *p, int32_t x, int32_t lo, int32_t hi)
{
    int32_t value = x - p->input_zero_point;
    value = value < 0 ? -value : value; /* |x - zp| <= 65535: no overflow */
    const int32_t scaled = p->needs_rescale ? edgesdk_requantize(value, p->multiplier, p->shift, p->rounding) : value;
    /* int32 wrap-around of the zero-point addition, as on x86 (only reachable with absurd scales) */
    return edgesdk_clamp_i32((int32_t)((uint32_t)scaled + (uint32_t)p->output_zero_point), lo, hi);
}

void edgesdk_abs_s8(const edgesdk_abs_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (int8_t)abs_quantized(p, input[i], INT8_MIN, INT8_MAX);
    }
}

void edgesdk_abs_s16(const edgesdk_abs_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (int16_t)abs_quantized(p, input[i], INT16_MIN, INT16_MAX);
    }
}

void edgesdk_abs_i32(const edgesdk_unary_params *p, const int32_t *input, int32_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const uint32_t x = (uint32_t)input[i];
        /* std::abs(INT32_MIN) is INT32_MIN on x86: negate in unsigned arithmetic, then reinterpret */
        const uint32_t magnitude = input[i] < 0 ? 0u - x : x;
        memcpy(&output[i], &magnitude, sizeof magnitude);
    }
}

void edgesdk_abs_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_unary_from_bits(edgesdk_unary_bits(input[i]) & 0x7fffffffu); /* NaN too (fabsf) */
    }
}

/* -- NEG --------------------------------------------------------------------------------------------------- */

void edgesdk_neg_i32(const edgesdk_unary_params *p, const int32_t *input, int32_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const uint32_t negated = 0u - (uint32_t)input[i]; /* -INT32_MIN wraps to INT32_MIN, as on x86 */
        memcpy(&output[i], &negated, sizeof negated);
    }
}

void edgesdk_neg_i64(const edgesdk_unary_params *p, const int64_t *input, int64_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const uint64_t negated = 0u - (uint64_t)input[i];
        memcpy(&output[i], &negated, sizeof negated);
    }
}

void edgesdk_neg_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_unary_from_bits(edgesdk_unary_bits(input[i]) ^ 0x80000000u); /* NaN's sign too */
    }
}

/* -- SQUARE, SQRT, RSQRT ----------------------------------------------------------------------------------- */

/* gemmlowp SaturatingRoundingMultiplyByPOT: x * 2^exponent, saturating (exponent >= 0) */
static inline int32_t unary_mul_pot(int32_t x, int exponent)
{
    const int32_t threshold = (int32_t)((1u << (31 - exponent)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

void edgesdk_square_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        output[i] = edgesdk_unary_isnan(x) ? edgesdk_unary_quiet(x) : x * x;
    }
}

/* floor(sqrt(n)) and whether it is exact, for n < 2^50 (bit by bit, no multiplication). */
static uint32_t isqrt_u64(uint64_t n, int *exact)
{
    uint64_t root = 0;
    uint64_t bit = (uint64_t)1 << 50;
    while (bit > n) {
        bit >>= 2;
    }
    while (bit != 0) {
        if (n >= root + bit) {
            n -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    *exact = n == 0;
    return (uint32_t)root;
}

/* Correctly rounded float32 square root (IEEE 754, round to nearest even), with x86's NaN results. */
float edgesdk_sqrtf(float x)
{
    const uint32_t u = edgesdk_unary_bits(x);
    if (edgesdk_unary_isnan(x)) {
        return edgesdk_unary_quiet(x);
    }
    if ((u & 0x7fffffffu) == 0 || u == 0x7f800000u) {
        return x; /* +-0, +inf */
    }
    if (u & 0x80000000u) {
        return edgesdk_unary_default_nan();
    }
    int32_t e = (int32_t)(u >> 23);
    uint32_t m = u & 0x7fffffu;
    if (e == 0) { /* subnormal: normalize the significand to [2^23, 2^24) */
        e = 1;
        while ((m & 0x800000u) == 0) {
            m <<= 1;
            e--;
        }
    } else {
        m |= 0x800000u;
    }
    /* x = m * 2^(e - 150); make the exponent even, then take sqrt(m << s) with a 25-bit result. */
    int32_t exponent = e - 150;
    if (exponent & 1) {
        m <<= 1;
        exponent -= 1;
    }
    const int s = m < (1u << 24) ? 26 : 24; /* m << s in [2^48, 2^50) */
    int exact;
    const uint32_t root = isqrt_u64((uint64_t)m << s, &exact); /* [2^24, 2^25) */
    uint32_t mantissa = root >> 1;
    const int round_bit = (int)(root & 1u);
    if (round_bit && (!exact || (mantissa & 1u))) {
        mantissa++;
    }
    int32_t result_exponent = (exponent - s) / 2 + 1; /* sqrt(x) = (root / 2) * 2^result_exponent */
    if (mantissa == (1u << 24)) {
        mantissa >>= 1;
        result_exponent++;
    }
    const uint32_t biased = (uint32_t)(result_exponent + 23 + 127);
    return edgesdk_unary_from_bits((biased << 23) | (mantissa & 0x7fffffu));
}

void edgesdk_sqrt_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_sqrtf(input[i]);
    }
}

void edgesdk_rsqrt_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float root = edgesdk_sqrtf(input[i]);
        output[i] = edgesdk_unary_isnan(root) ? root : 1.0f / root; /* 1 / NaN keeps the NaN on x86 */
    }
}

/* 1/sqrt(value) as (multiplier, left shift): TFLite's GetInvSqrtQuantizedMultiplierExp with kReverseShift.
 * The value is normalized into [2^27, 2^29) by pairs of bits, then Newton-Raphson x <- x (3 - v x^2) / 2 runs five
 * times from x = 1 in gemmlowp Q3 fixed point (saturating rescales), and the result is divided by sqrt(2). */
static void inv_sqrt_multiplier(int32_t value, int32_t *multiplier, int32_t *left_shift)
{
    if (value <= 1) {
        *multiplier = INT32_MAX;
        *left_shift = 0;
        return;
    }
    int32_t shift = 11;
    while (value >= (1 << 29)) {
        value /= 4;
        shift++;
    }
    int leading_zeros = 0;
    while (((uint32_t)value << leading_zeros & 0x80000000u) == 0) {
        leading_zeros++;
    }
    const int pairs = (leading_zeros - 1) / 2 - 1;
    shift -= pairs;
    value = (int32_t)((uint32_t)value << (2 * pairs));
    const int32_t half_input = edgesdk_rounding_divide_by_pot(value >> 1, 1); /* Q3 */
    const int32_t half_three = (1 << 28) + (1 << 27);                       /* 1.5 in Q3 */
    int32_t x = 1 << 28;                                                     /* 1.0 in Q3 */
    for (int i = 0; i < 5; i++) {
        const int32_t x3 = unary_mul_pot(edgesdk_saturating_rounding_doubling_high_mul(
                                             edgesdk_saturating_rounding_doubling_high_mul(x, x), x),
                                         6); /* Q9 -> Q3 */
        const int32_t diff = (int32_t)((uint32_t)edgesdk_saturating_rounding_doubling_high_mul(half_three, x) -
                                       (uint32_t)edgesdk_saturating_rounding_doubling_high_mul(half_input, x3));
        x = unary_mul_pot(diff, 3); /* Q6 -> Q3 */
    }
    x = edgesdk_saturating_rounding_doubling_high_mul(x, 1518500250); /* times sqrt(2)/2 (Q0) */
    if (shift < 0) {
        x = (int32_t)((uint32_t)x << -shift);
        shift = 0;
    }
    *multiplier = x;
    *left_shift = -shift;
}

void edgesdk_rsqrt_s16(const edgesdk_rsqrt_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t value = (int32_t)input[i] - p->input_zero_point;
        if (value <= 0) { /* 0: the largest output (TFLite); below the zero point TFLite fails, edgesdk the same */
            output[i] = INT16_MAX;
            continue;
        }
        int32_t inv_multiplier, inv_shift;
        inv_sqrt_multiplier(value, &inv_multiplier, &inv_shift);
        const int32_t data = edgesdk_requantize(1, inv_multiplier, inv_shift + 20, p->rounding);
        const int32_t scaled = edgesdk_requantize(data, p->multiplier, p->shift - 20, p->rounding);
        output[i] = (int16_t)edgesdk_clamp_i32(scaled + p->output_zero_point, INT16_MIN, INT16_MAX);
    }
}

/* static_cast<int>(float) for the values SQRT produces (non-negative, or NaN): truncation; x86 turns NaN and
 * out-of-range values into INT32_MIN. */
static int32_t trunc_f32_to_i32(float r)
{
    if (!(r > -2147483648.0f && r < 2147483648.0f)) {
        return INT32_MIN;
    }
    return (int32_t)r;
}

void edgesdk_sqrt_s16(const edgesdk_sqrt_q_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        /* LiteRT fails the invocation on a negative input; edgesdk gives the output zero point there. */
        float dequantized = p->input_scale * (float)((int32_t)input[i] - p->input_zero_point);
        if (dequantized < 0.0f) {
            dequantized = 0.0f;
        }
        const int32_t q = trunc_f32_to_i32(edgesdk_sqrtf(dequantized) / p->output_scale);
        const int32_t shifted = (int32_t)((uint32_t)q + (uint32_t)p->output_zero_point);
        output[i] = (int16_t)edgesdk_clamp_i32(shifted, INT16_MIN, INT16_MAX);
    }
}

/* -- FLOOR, CEIL, ROUND ------------------------------------------------------------------------------------ */

/* Round toward -inf (up = 0) or +inf (up = 1) by clearing fraction bits (exact; a NaN is returned as is). */
static float round_toward(float x, int up)
{
    uint32_t u = edgesdk_unary_bits(x);
    const int32_t e = (int32_t)((u >> 23) & 0xffu) - 127;
    const int negative = (u >> 31) != 0;
    if (e >= 23) {
        return x; /* integral, inf or NaN */
    }
    if (e < 0) { /* |x| < 1 */
        if ((u & 0x7fffffffu) == 0) {
            return x;
        }
        if (up) {
            return negative ? edgesdk_unary_from_bits(0x80000000u) : 1.0f;
        }
        return negative ? -1.0f : 0.0f;
    }
    const uint32_t fraction = 0x7fffffu >> e;
    if ((u & fraction) == 0) {
        return x;
    }
    if (negative != up) { /* away from zero: add one unit of the integer part before truncating */
        u += 0x800000u >> e;
    }
    return edgesdk_unary_from_bits(u & ~fraction);
}

static inline float floor_or_ceil(const edgesdk_floor_params *p, float x, int up)
{
    return p->quiet_nan && edgesdk_unary_isnan(x) ? edgesdk_unary_quiet(x) : round_toward(x, up);
}

void edgesdk_floor_f32(const edgesdk_floor_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = floor_or_ceil(p, input[i], 0);
    }
}

void edgesdk_ceil_f32(const edgesdk_floor_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = floor_or_ceil(p, input[i], 1);
    }
}

/* TFLite's RoundToNearest: floor, then up when the fraction is above one half or exactly one half with an
 * odd floor (halves to even), in float32 arithmetic as the reference does it. */
void edgesdk_round_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        if (edgesdk_unary_isnan(x)) {
            output[i] = edgesdk_unary_quiet(x);
            continue;
        }
        const float floor_value = round_toward(x, 0);
        const float diff = x - floor_value; /* NaN for +-inf: neither branch below, inf + 1 = inf */
        if (diff < 0.5f || (diff == 0.5f && ((int32_t)floor_value % 2) == 0)) {
            output[i] = floor_value;
        } else {
            output[i] = floor_value + 1.0f;
        }
    }
}

/* -- LEAKY_RELU -------------------------------------------------------------------------------------------- */

static inline int32_t leaky_relu_quantized(const edgesdk_leaky_relu_params *p, int32_t x, int32_t lo, int32_t hi)
{
    const int32_t value = x - p->input_zero_point;
    int32_t result = p->output_zero_point;
    if (value >= 0) {
        result += edgesdk_requantize(value, p->identity_multiplier, p->identity_shift, p->rounding);
    } else {
        const int32_t scaled = edgesdk_requantize(value, p->alpha_multiplier, p->alpha_shift, p->rounding);
        result += p->alpha_negative ? -scaled : scaled;
    }
    return edgesdk_clamp_i32(result, lo, hi);
}

void edgesdk_leaky_relu_s8(const edgesdk_leaky_relu_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (int8_t)leaky_relu_quantized(p, input[i], INT8_MIN, INT8_MAX);
    }
}

void edgesdk_leaky_relu_s16(const edgesdk_leaky_relu_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (int16_t)leaky_relu_quantized(p, input[i], INT16_MIN, INT16_MAX);
    }
}

void edgesdk_leaky_relu_f32(const edgesdk_leaky_relu_f32_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        if (edgesdk_unary_isnan(x)) {
            output[i] = edgesdk_unary_quiet(x);
        } else {
            output[i] = x > 0.0f ? x : x * p->alpha;
        }
    }
}

/* -- HARD_SWISH (float32) --------------------------------------------------------------------------------- */

void edgesdk_hard_swish_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        if (edgesdk_unary_isnan(x)) {
            output[i] = edgesdk_unary_quiet(x);
            continue;
        }
        const float shifted = x + 3.0f;
        float relu6 = 0.0f < shifted ? shifted : 0.0f; /* std::max(0, x + 3) */
        relu6 = relu6 < 6.0f ? relu6 : 6.0f;           /* std::min(6, ...) */
        if (relu6 == 0.0f && (edgesdk_unary_bits(x) & 0x7fffffffu) == 0x7f800000u) {
            output[i] = edgesdk_unary_default_nan(); /* -inf * 0 */
            continue;
        }
        output[i] = x * relu6 / 6.0f;
    }
}

/* -- int16 table lookup ------------------------------------------------------------------------------------ */

/* TFLite LUTLookup for int16: the top 9 bits pick an entry, the low 7 interpolate towards the next one. The
 * int16 differences and sums wrap as in TFLite (two's complement conversions). */
static inline int16_t lut16_lookup(int16_t value, const int16_t *table)
{
    const int32_t index = 256 + ((int32_t)value >> 7); /* 0..511 */
    const int32_t offset = (int32_t)value & 0x7f;
    const int32_t base = table[index];
    const int16_t slope = (int16_t)(uint16_t)(uint32_t)(table[index + 1] - table[index]);
    const int32_t delta = ((int32_t)slope * offset + 64) >> 7;
    return (int16_t)(uint16_t)(uint32_t)(base + delta);
}

void edgesdk_lut_s16(const edgesdk_lut16_params *p, const int16_t *input, int16_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = lut16_lookup(input[i], p->table);
    }
}

/* -- ZEROS_LIKE -------------------------------------------------------------------------------------------- */

void edgesdk_zeros(const edgesdk_zeros_params *p, void *output)
{
    uint8_t *bytes = output;
    for (int32_t i = 0; i < p->bytes; i++) {
        bytes[i] = 0;
    }
}

/* -- CAST -------------------------------------------------------------------------------------------------- */

typedef struct {
    int is_float;
    float f;
    int64_t i;
} cast_value;

static cast_value cast_read(int32_t type, const void *data, int32_t k)
{
    cast_value v = {0, 0.0f, 0};
    switch (type) {
    case EDGESDK_CAST_FLOAT32:
        v.is_float = 1;
        v.f = ((const float *)data)[k];
        break;
    case EDGESDK_CAST_INT8:
        v.i = ((const int8_t *)data)[k];
        break;
    case EDGESDK_CAST_UINT8:
        v.i = ((const uint8_t *)data)[k];
        break;
    case EDGESDK_CAST_BOOL:
        v.i = ((const uint8_t *)data)[k] != 0;
        break;
    case EDGESDK_CAST_INT16:
        v.i = ((const int16_t *)data)[k];
        break;
    case EDGESDK_CAST_INT32:
        v.i = ((const int32_t *)data)[k];
        break;
    default:
        v.i = ((const int64_t *)data)[k];
        break;
    }
    return v;
}

/* float -> integer: truncation toward zero, saturated to [lo, hi] (LiteRT's SafeCast; TFLite Micro saturates
 * too); NaN -> hi or 0. */
static int64_t cast_float_to_int(float f, int64_t lo, int64_t hi, int nan_to_max)
{
    if (edgesdk_unary_isnan(f)) {
        return nan_to_max ? hi : 0;
    }
    if (f >= 9223372036854775808.0f) {
        return hi;
    }
    if (f <= -9223372036854775808.0f) {
        return lo;
    }
    const int64_t t = (int64_t)f;
    return t < lo ? lo : (t > hi ? hi : t);
}

static void cast_write(const edgesdk_cast_params *p, void *data, int32_t k, cast_value v)
{
    static const int64_t lo[] = {0, INT8_MIN, 0, INT16_MIN, INT32_MIN, INT64_MIN, 0};
    static const int64_t hi[] = {0, INT8_MAX, UINT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX, 1};
    const int32_t type = p->to_type;
    if (type == EDGESDK_CAST_FLOAT32) {
        ((float *)data)[k] = v.is_float ? v.f : (float)v.i; /* int -> float rounds to nearest even */
        return;
    }
    if (type == EDGESDK_CAST_BOOL) {
        ((uint8_t *)data)[k] = (uint8_t)(v.is_float ? v.f != 0.0f || edgesdk_unary_isnan(v.f) : v.i != 0);
        return;
    }
    /* integers wrap (two's complement truncation), floats saturate */
    const uint64_t bits = v.is_float ? (uint64_t)cast_float_to_int(v.f, lo[type], hi[type], p->nan_to_max)
                                     : (uint64_t)v.i;
    switch (type) {
    case EDGESDK_CAST_INT8: {
        const uint8_t b = (uint8_t)bits;
        memcpy((int8_t *)data + k, &b, 1);
        break;
    }
    case EDGESDK_CAST_UINT8:
        ((uint8_t *)data)[k] = (uint8_t)bits;
        break;
    case EDGESDK_CAST_INT16: {
        const uint16_t b = (uint16_t)bits;
        memcpy((int16_t *)data + k, &b, 2);
        break;
    }
    case EDGESDK_CAST_INT32: {
        const uint32_t b = (uint32_t)bits;
        memcpy((int32_t *)data + k, &b, 4);
        break;
    }
    default:
        memcpy((int64_t *)data + k, &bits, 8);
        break;
    }
}

void edgesdk_cast(const edgesdk_cast_params *p, const void *input, void *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        cast_write(p, output, i, cast_read(p->from_type, input, i));
    }
}
