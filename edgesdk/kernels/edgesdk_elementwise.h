/*
 * edgesdk_elementwise.h - the elementwise family's shared pieces: the broadcast walk of a two-input kernel, the
 * fused-activation clamps of the unquantized paths, and the float32 / int32 / bool kernels (in
 * edgesdk_elementwise.c) of ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD,
 * ADD_N and the comparisons, with TFLite's reference semantics.
 *
 * Integer arithmetic wraps in two's complement where TFLite's int32 kernels overflow (WrappingAdd/WrappingMul,
 * or what its compilers do with a plain `a + b`); a division by zero, which both references refuse at run time,
 * gives a defined value instead (docs/rounding.md).
 */
#ifndef EDGESDK_ELEMENTWISE_H
#define EDGESDK_ELEMENTWISE_H

#include <stdint.h>

#include "edgesdk_broadcast.h"

/* Defines `void name(const params_t *p, const in1_t *input1, const in2_t *input2, out_t *output)`, which sets
 * each output element to element(p, a, b) for its two input elements, walking `p->shape` (an
 * edgesdk_broadcast_shape): a flat loop when the shapes are equal, else row by row with the outer index
 * decomposed once per row (TFLite's BroadcastBinaryOpSimple visits the same pairs in the same order). */
#define EDGESDK_BINARY_KERNEL(name, params_t, in1_t, in2_t, out_t, element)                                  \
    void name(const params_t *p, const in1_t *input1, const in2_t *input2, out_t *output)                   \
    {                                                                                                        \
        const edgesdk_broadcast_shape *s = &p->shape;                                                        \
        if (!s->broadcast) {                                                                                 \
            for (int32_t i = 0; i < s->size; i++) {                                                          \
                output[i] = element(p, input1[i], input2[i]);                                                \
            }                                                                                                \
            return;                                                                                          \
        }                                                                                                    \
        const int32_t inner = s->out_shape[EDGESDK_MAX_DIMS - 1];                                            \
        const int32_t step1 = s->in1_strides[EDGESDK_MAX_DIMS - 1];                                          \
        const int32_t step2 = s->in2_strides[EDGESDK_MAX_DIMS - 1];                                          \
        for (int32_t row = 0; row < s->size / inner; row++) {                                                \
            int32_t o1, o2;                                                                                  \
            edgesdk_broadcast_row(s, row, &o1, &o2);                                                         \
            for (int32_t i = 0; i < inner; i++) {                                                            \
                *output++ = element(p, input1[o1 + i * step1], input2[o2 + i * step2]);                      \
            }                                                                                                \
        }                                                                                                    \
    }

/* A two-input op without constants (MAXIMUM, MINIMUM, FLOOR_DIV, FLOOR_MOD, SQUARED_DIFFERENCE on float32 or
 * int32, the unquantized comparisons, LOGICAL_AND/OR). */
typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t nan_rule; /* float32 arithmetic: EDGESDK_NAN_FIRST, _SECOND or _LARGER */
} edgesdk_binary_params;

/* float32 ADD, SUB, MUL, DIV: the fused activation's clamp, [-FLT_MAX, FLT_MAX] for none (TFLite's
 * CalculateActivationRange<float>), so an infinite result becomes +-FLT_MAX and NaN stays NaN. */
typedef struct {
    edgesdk_broadcast_shape shape;
    float act_min, act_max;
    int32_t nan_rule; /* EDGESDK_NAN_FIRST, _SECOND or _LARGER */
} edgesdk_binary_f32_params;

/* int32 ADD, SUB, MUL, DIV: the fused activation's clamp ([INT32_MIN, INT32_MAX] for none). */
typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t act_min, act_max;
} edgesdk_binary_i32_params;

/* ADD_N: `count` inputs of `size` elements each. */
typedef struct {
    int32_t count;
    int32_t size;
    /* float32: 1 (TFLite Micro): sum the inputs left to right from 0.0f, a NaN sum winning over a NaN input;
     * 0 (LiteRT's optimized_ops::AddN, one thread): start from input 0, clamp each partial sum to
     * [-FLT_MAX, FLT_MAX], a NaN input winning over a NaN sum. */
    int32_t from_zero;
} edgesdk_add_n_params;

/* LiteRT's power-of-two int16 ADD and SUB (pot_scale_int16, all zero points 0): each input's right shift onto
 * the output scale (<= 0: one of them is 0 for ADD) and the activation range. */
typedef struct {
    edgesdk_broadcast_shape shape;
    int32_t input1_shift, input2_shift;
    int32_t act_min, act_max;
} edgesdk_add_pot_params;

/* gemmlowp::RoundingDivideByPOT on int16_t, exponent in [0, 31], in its int16 arithmetic: the mask
 * (1 << exponent) - 1 is truncated to 16 bits, so from exponent 16 on it is -1 (what TFLite computes). */
static inline int32_t edgesdk_rounding_divide_by_pot_s16(int16_t x, int32_t exponent)
{
    const int16_t mask = (int16_t)(uint16_t)((((uint64_t)1) << exponent) - 1u);
    const int16_t remainder = (int16_t)(x & mask);
    const int16_t threshold = (int16_t)((mask >> 1) + (x < 0 ? 1 : 0));
    return (int16_t)((x >> exponent) + (remainder > threshold ? 1 : 0));
}

/* Which NaN a float32 result carries when both operands are NaN, as measured on the references' x86-64 builds: */
#define EDGESDK_NAN_FIRST 0  /* operand a's (SSE with the operands in source order) */
#define EDGESDK_NAN_SECOND 1 /* operand b's (SSE, the compiler swapped a commutative operation) */
#define EDGESDK_NAN_LARGER 2 /* the larger significand once quiet (x87's rule: TFLite Micro's fmodf) */

typedef union {
    float f;
    uint32_t u;
} edgesdk_f32_bits;

static inline int edgesdk_is_nan_bits(uint32_t u)
{
    return (u & 0x7fffffffu) > 0x7f800000u;
}

/* The NaN the references produce for `r = a <op> b`: an operation on one NaN returns it made quiet, on two NaNs
 * the one `nan_rule` picks, an invalid operation (inf - inf, 0 * inf, 0 / 0, fmod(inf, y), ...) SSE's default
 * NaN, which has the sign bit set (0xffc00000). RISC-V's soft-float returns 0x7fc00000 for every NaN result;
 * this puts the x86 bits back. Integer tests only: no soft-float calls. */
static inline float edgesdk_x86_nan_f32(float r, float a, float b, int32_t nan_rule)
{
    edgesdk_f32_bits v = {r};
    if (!edgesdk_is_nan_bits(v.u)) {
        return r;
    }
    const edgesdk_f32_bits x = {a}, y = {b};
    const uint32_t qa = x.u | 0x00400000u, qb = y.u | 0x00400000u;
    if (edgesdk_is_nan_bits(x.u) && edgesdk_is_nan_bits(y.u)) {
        const int second = nan_rule == EDGESDK_NAN_SECOND ||
                           (nan_rule == EDGESDK_NAN_LARGER && (qb & 0x007fffffu) > (qa & 0x007fffffu));
        v.u = second ? qb : qa;
    } else {
        v.u = edgesdk_is_nan_bits(x.u) ? qa : edgesdk_is_nan_bits(y.u) ? qb : 0xffc00000u;
    }
    return v.f;
}

/* std::min(std::max(x, lo), hi) exactly: NaN passes through, -0.0f stays -0.0f. */
static inline float edgesdk_clamp_f32(float x, float lo, float hi)
{
    const float t = x < lo ? lo : x;
    return hi < t ? hi : t;
}

static inline int32_t edgesdk_wrap_add_i32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t edgesdk_wrap_sub_i32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

static inline int32_t edgesdk_wrap_mul_i32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a * (uint32_t)b);
}

void edgesdk_add_f32(const edgesdk_binary_f32_params *p, const float *input1, const float *input2, float *output);
void edgesdk_sub_f32(const edgesdk_binary_f32_params *p, const float *input1, const float *input2, float *output);
void edgesdk_mul_f32(const edgesdk_binary_f32_params *p, const float *input1, const float *input2, float *output);
void edgesdk_div_f32(const edgesdk_binary_f32_params *p, const float *input1, const float *input2, float *output);
void edgesdk_add_i32(const edgesdk_binary_i32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void edgesdk_sub_i32(const edgesdk_binary_i32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void edgesdk_mul_i32(const edgesdk_binary_i32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void edgesdk_div_i32(const edgesdk_binary_i32_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);

void edgesdk_maximum_s8(const edgesdk_binary_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
void edgesdk_maximum_s16(const edgesdk_binary_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void edgesdk_maximum_i32(const edgesdk_binary_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void edgesdk_maximum_f32(const edgesdk_binary_params *p, const float *input1, const float *input2, float *output);
void edgesdk_minimum_s8(const edgesdk_binary_params *p, const int8_t *input1, const int8_t *input2, int8_t *output);
void edgesdk_minimum_s16(const edgesdk_binary_params *p, const int16_t *input1, const int16_t *input2, int16_t *output);
void edgesdk_minimum_i32(const edgesdk_binary_params *p, const int32_t *input1, const int32_t *input2, int32_t *output);
void edgesdk_minimum_f32(const edgesdk_binary_params *p, const float *input1, const float *input2, float *output);

void edgesdk_squared_difference_f32(const edgesdk_binary_params *p, const float *input1, const float *input2,
                                    float *output);
void edgesdk_squared_difference_i32(const edgesdk_binary_params *p, const int32_t *input1, const int32_t *input2,
                                    int32_t *output);

void edgesdk_floor_div_f32(const edgesdk_binary_params *p, const float *input1, const float *input2, float *output);
void edgesdk_floor_div_i32(const edgesdk_binary_params *p, const int32_t *input1, const int32_t *input2,
                           int32_t *output);
void edgesdk_floor_mod_f32(const edgesdk_binary_params *p, const float *input1, const float *input2, float *output);
void edgesdk_floor_mod_i32(const edgesdk_binary_params *p, const int32_t *input1, const int32_t *input2,
                           int32_t *output);

/* `inputs` holds `count` pointers to float / int32_t tensors. */
void edgesdk_add_n_f32(const edgesdk_add_n_params *p, const void *const *inputs, float *output);
void edgesdk_add_n_i32(const edgesdk_add_n_params *p, const void *const *inputs, int32_t *output);

#endif /* EDGESDK_ELEMENTWISE_H */
