/*
 * edgesdk_unary.h - single-input elementwise kernels (ABS, NEG, SQUARE, SQRT, RSQRT, FLOOR, CEIL, ROUND,
 * LEAKY_RELU, ZEROS_LIKE, CAST, int16 table lookups), bit-exact with TFLite's reference kernels as LiteRT
 * runs them on x86 (docs/rounding.md, "Single-input ops").
 *
 * float32 kernels use only IEEE-754 operations that round the same on every machine (+ - * / sqrt, with
 * round-to-nearest-even) and handle NaN themselves, because the RISC-V soft-float library returns the
 * canonical NaN (0x7fc00000) where x86 propagates the input NaN (quieted) or returns its default NaN
 * 0xffc00000: the kernels reproduce x86's bytes.
 */
#ifndef EDGESDK_UNARY_H
#define EDGESDK_UNARY_H

#include <stdint.h>
#include <string.h>

/* -- float32 bit helpers ----------------------------------------------------------------------------- */

#define EDGESDK_UNARY_X86_DEFAULT_NAN 0xffc00000u /* what x86 produces for an invalid operation */
#define EDGESDK_UNARY_QUIET_BIT 0x00400000u

static inline uint32_t edgesdk_unary_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float edgesdk_unary_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline int edgesdk_unary_isnan(float x)
{
    return (edgesdk_unary_bits(x) & 0x7fffffffu) > 0x7f800000u;
}

/* An x86 SSE operation on a NaN operand returns that NaN with its quiet bit set. */
static inline float edgesdk_unary_quiet(float x)
{
    return edgesdk_unary_from_bits(edgesdk_unary_bits(x) | EDGESDK_UNARY_QUIET_BIT);
}

static inline float edgesdk_unary_default_nan(void)
{
    return edgesdk_unary_from_bits(EDGESDK_UNARY_X86_DEFAULT_NAN);
}

/* -- parameter structs ------------------------------------------------------------------------------- */

typedef struct {
    int32_t size;
} edgesdk_unary_params;

/* FLOOR, CEIL: what a NaN input becomes. glibc's floorf/ceilf (LiteRT) quiet a signalling NaN, TFLite
 * Micro's returns it unchanged. */
typedef struct {
    int32_t size;
    int32_t quiet_nan;
} edgesdk_floor_params;

/* ABS on quantized tensors: |x - zp_in|, rescaled by s_in / s_out when the scales differ. */
typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t needs_rescale; /* 0: the scales are equal, no multiplication */
    int32_t multiplier, shift;
    int32_t rounding; /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_abs_params;

/* LEAKY_RELU on quantized tensors: x >= zp_in: rescale by s_in / s_out, else by alpha * s_in / s_out. */
typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t identity_multiplier, identity_shift;
    int32_t alpha_multiplier, alpha_shift; /* |alpha| * s_in / s_out */
    int32_t alpha_negative;                /* negate the scaled value (alpha < 0) */
    int32_t rounding;
} edgesdk_leaky_relu_params;

typedef struct {
    int32_t size;
    float alpha;
} edgesdk_leaky_relu_f32_params;

/* SQRT on int16 (LiteRT computes it in float: trunc(sqrt(s_in * (x - zp_in)) / s_out) + zp_out). */
typedef struct {
    int32_t size;
    float input_scale;
    int32_t input_zero_point;
    float output_scale;
    int32_t output_zero_point;
} edgesdk_sqrt_q_params;

/* RSQRT int16 as TFLite Micro computes it: 1/sqrt(x - zp_in) by fixed-point Newton-Raphson, rescaled by
 * 1 / (sqrt(s_in) * s_out) (multiplier, shift), + zp_out. */
typedef struct {
    int32_t size;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier, shift; /* shift - 20 must be >= -31 */
    int32_t rounding;
} edgesdk_rsqrt_params;

/* int16 -> int16 lookup in a 513-entry table with linear interpolation (TFLite LUTLookup). */
typedef struct {
    int32_t size;
    const int16_t *table;
} edgesdk_lut16_params;

/* ZEROS_LIKE: `bytes` zero bytes (0 and 0.0f are all-zero bits). */
typedef struct {
    int32_t bytes;
} edgesdk_zeros_params;

/* CAST: element types (EDGESDK_CAST_*) and what a float NaN becomes in an integer (LiteRT: the maximum,
 * TFLite Micro: 0). */
#define EDGESDK_CAST_FLOAT32 0
#define EDGESDK_CAST_INT8 1
#define EDGESDK_CAST_UINT8 2
#define EDGESDK_CAST_INT16 3
#define EDGESDK_CAST_INT32 4
#define EDGESDK_CAST_INT64 5
#define EDGESDK_CAST_BOOL 6

typedef struct {
    int32_t size;
    int32_t from_type, to_type;
    int32_t nan_to_max; /* 1: NaN -> the integer type's maximum (LiteRT), 0: NaN -> 0 (TFLite Micro) */
} edgesdk_cast_params;

/* -- kernels ----------------------------------------------------------------------------------------- */

void edgesdk_abs_s8(const edgesdk_abs_params *p, const int8_t *input, int8_t *output);
void edgesdk_abs_s16(const edgesdk_abs_params *p, const int16_t *input, int16_t *output);
void edgesdk_abs_i32(const edgesdk_unary_params *p, const int32_t *input, int32_t *output);
void edgesdk_abs_f32(const edgesdk_unary_params *p, const float *input, float *output);

void edgesdk_neg_i32(const edgesdk_unary_params *p, const int32_t *input, int32_t *output);
void edgesdk_neg_i64(const edgesdk_unary_params *p, const int64_t *input, int64_t *output);
void edgesdk_neg_f32(const edgesdk_unary_params *p, const float *input, float *output);

void edgesdk_square_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_sqrt_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_rsqrt_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_rsqrt_s16(const edgesdk_rsqrt_params *p, const int16_t *input, int16_t *output);
void edgesdk_sqrt_s16(const edgesdk_sqrt_q_params *p, const int16_t *input, int16_t *output);

void edgesdk_floor_f32(const edgesdk_floor_params *p, const float *input, float *output);
void edgesdk_ceil_f32(const edgesdk_floor_params *p, const float *input, float *output);
void edgesdk_round_f32(const edgesdk_unary_params *p, const float *input, float *output);

void edgesdk_leaky_relu_s8(const edgesdk_leaky_relu_params *p, const int8_t *input, int8_t *output);
void edgesdk_leaky_relu_s16(const edgesdk_leaky_relu_params *p, const int16_t *input, int16_t *output);
void edgesdk_leaky_relu_f32(const edgesdk_leaky_relu_f32_params *p, const float *input, float *output);

/* TFLite's reference HardSwish<float>: x * min(6, max(0, x + 3)) / 6 */
void edgesdk_hard_swish_f32(const edgesdk_unary_params *p, const float *input, float *output);

void edgesdk_lut_s16(const edgesdk_lut16_params *p, const int16_t *input, int16_t *output);

void edgesdk_zeros(const edgesdk_zeros_params *p, void *output);
void edgesdk_cast(const edgesdk_cast_params *p, const void *input, void *output);

/* float helpers shared with the other float kernels of the family */
float edgesdk_sqrtf(float x);

#endif /* EDGESDK_UNARY_H */
