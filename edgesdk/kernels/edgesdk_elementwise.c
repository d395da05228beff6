/*
 * edgesdk_elementwise.c - float32 and int32 ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE,
 * FLOOR_DIV, FLOOR_MOD and ADD_N (plus MAXIMUM/MINIMUM on int8 and int16, which compare stored values), with
 * TFLite's reference semantics (reference_ops::Add/Sub/Mul/Div/MaximumMinimumBroadcastSlow/FloorDiv/FloorMod/
 * AddN). Float arithmetic is IEEE single precision, as on the host the references run on, with x86's NaN results
 * (edgesdk_x86_nan_f32); FLOOR_DIV divides in double as TFLite does.
 */
#include "edgesdk_elementwise.h"

#include <float.h>
#include <math.h>

#include "edgesdk_arith.h"

/* -- ADD, SUB, MUL, DIV ------------------------------------------------------------------------------------ */

static inline float add_f32(const edgesdk_binary_f32_params *p, float a, float b)
{
    return edgesdk_clamp_f32(edgesdk_x86_nan_f32(a + b, a, b, p->nan_rule), p->act_min, p->act_max);
}

static inline float sub_f32(const edgesdk_binary_f32_params *p, float a, float b)
{
    return edgesdk_clamp_f32(edgesdk_x86_nan_f32(a - b, a, b, p->nan_rule), p->act_min, p->act_max);
}

static inline float mul_f32(const edgesdk_binary_f32_params *p, float a, float b)
{
    return edgesdk_clamp_f32(edgesdk_x86_nan_f32(a * b, a, b, p->nan_rule), p->act_min, p->act_max);
}

static inline float div_f32(const edgesdk_binary_f32_params *p, float a, float b)
{
    return edgesdk_clamp_f32(edgesdk_x86_nan_f32(a / b, a, b, p->nan_rule), p->act_min, p->act_max);
}

static inline int32_t add_i32(const edgesdk_binary_i32_params *p, int32_t a, int32_t b)
{
    return edgesdk_clamp_i32(edgesdk_wrap_add_i32(a, b), p->act_min, p->act_max);
}

static inline int32_t sub_i32(const edgesdk_binary_i32_params *p, int32_t a, int32_t b)
{
    return edgesdk_clamp_i32(edgesdk_wrap_sub_i32(a, b), p->act_min, p->act_max);
}

static inline int32_t mul_i32(const edgesdk_binary_i32_params *p, int32_t a, int32_t b)
{
    return edgesdk_clamp_i32(edgesdk_wrap_mul_i32(a, b), p->act_min, p->act_max);
}

/* a / b truncated. Both references refuse b == 0 at run time: 0 here. INT32_MIN / -1 wraps to INT32_MIN. */
static inline int32_t div_i32(const edgesdk_binary_i32_params *p, int32_t a, int32_t b)
{
    int32_t q;
    if (b == 0) {
        q = 0;
    } else if (b == -1) {
        q = edgesdk_wrap_sub_i32(0, a);
    } else {
        q = a / b;
    }
    return edgesdk_clamp_i32(q, p->act_min, p->act_max);
}

EDGESDK_BINARY_KERNEL(edgesdk_add_f32, edgesdk_binary_f32_params, float, float, float, add_f32)
EDGESDK_BINARY_KERNEL(edgesdk_sub_f32, edgesdk_binary_f32_params, float, float, float, sub_f32)
EDGESDK_BINARY_KERNEL(edgesdk_mul_f32, edgesdk_binary_f32_params, float, float, float, mul_f32)
EDGESDK_BINARY_KERNEL(edgesdk_div_f32, edgesdk_binary_f32_params, float, float, float, div_f32)
EDGESDK_BINARY_KERNEL(edgesdk_add_i32, edgesdk_binary_i32_params, int32_t, int32_t, int32_t, add_i32)
EDGESDK_BINARY_KERNEL(edgesdk_sub_i32, edgesdk_binary_i32_params, int32_t, int32_t, int32_t, sub_i32)
EDGESDK_BINARY_KERNEL(edgesdk_mul_i32, edgesdk_binary_i32_params, int32_t, int32_t, int32_t, mul_i32)
EDGESDK_BINARY_KERNEL(edgesdk_div_i32, edgesdk_binary_i32_params, int32_t, int32_t, int32_t, div_i32)

/* -- MAXIMUM, MINIMUM: el1 > el2 ? el1 : el2 and el1 < el2 ? el1 : el2, on stored values ---------------------- */

#define EDGESDK_MAX_MIN(suffix, type)                                                                         \
    static inline type maximum_##suffix(const edgesdk_binary_params *p, type a, type b)                      \
    {                                                                                                         \
        (void)p;                                                                                              \
        return a > b ? a : b;                                                                                 \
    }                                                                                                         \
    static inline type minimum_##suffix(const edgesdk_binary_params *p, type a, type b)                      \
    {                                                                                                         \
        (void)p;                                                                                              \
        return a < b ? a : b;                                                                                 \
    }                                                                                                         \
    EDGESDK_BINARY_KERNEL(edgesdk_maximum_##suffix, edgesdk_binary_params, type, type, type, maximum_##suffix) \
    EDGESDK_BINARY_KERNEL(edgesdk_minimum_##suffix, edgesdk_binary_params, type, type, type, minimum_##suffix)

EDGESDK_MAX_MIN(s8, int8_t)
EDGESDK_MAX_MIN(s16, int16_t)
EDGESDK_MAX_MIN(i32, int32_t)
EDGESDK_MAX_MIN(f32, float)

/* -- SQUARED_DIFFERENCE ------------------------------------------------------------------------------------ */

static inline float squared_difference_f32(const edgesdk_binary_params *p, float a, float b)
{
    const float d = edgesdk_x86_nan_f32(a - b, a, b, p->nan_rule);
    return edgesdk_x86_nan_f32(d * d, d, d, EDGESDK_NAN_FIRST);
}

static inline int32_t squared_difference_i32(const edgesdk_binary_params *p, int32_t a, int32_t b)
{
    (void)p;
    const int32_t d = edgesdk_wrap_sub_i32(a, b);
    return edgesdk_wrap_mul_i32(d, d);
}

EDGESDK_BINARY_KERNEL(edgesdk_squared_difference_f32, edgesdk_binary_params, float, float, float,
                      squared_difference_f32)
EDGESDK_BINARY_KERNEL(edgesdk_squared_difference_i32, edgesdk_binary_params, int32_t, int32_t, int32_t,
                      squared_difference_i32)

/* -- FLOOR_DIV, FLOOR_MOD ---------------------------------------------------------------------------------- */

/* std::floor(double(a) / double(b)), back to float. */
static inline float floor_div_f32(const edgesdk_binary_params *p, float a, float b)
{
    return edgesdk_x86_nan_f32((float)floor((double)a / (double)b), a, b, p->nan_rule);
}

/* floor(double(a) / double(b)) is the exact floored quotient for int32 operands (the double quotient never
 * rounds across an integer), computed here in integers. b == 0 (refused by the references): 0; INT32_MIN / -1
 * gives INT32_MIN, as x86 converts 2^31. */
static inline int32_t floor_div_i32(const edgesdk_binary_params *p, int32_t a, int32_t b)
{
    (void)p;
    if (b == 0) {
        return 0;
    }
    if (b == -1) {
        return edgesdk_wrap_sub_i32(0, a);
    }
    int32_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) {
        q -= 1;
    }
    return q;
}

/* fmodf, moved into the divisor's sign (reference_ops::FloorMod). */
static inline float floor_mod_f32(const edgesdk_binary_params *p, float a, float b)
{
    const float trunc_mod = edgesdk_x86_nan_f32(fmodf(a, b), a, b, p->nan_rule);
    return (trunc_mod != 0) && ((b < 0) != (trunc_mod < 0))
               ? edgesdk_x86_nan_f32(trunc_mod + b, trunc_mod, b, EDGESDK_NAN_FIRST)
               : trunc_mod;
}

/* a % b moved into b's sign. b == 0 (refused by the references) and INT32_MIN % -1: 0. */
static inline int32_t floor_mod_i32(const edgesdk_binary_params *p, int32_t a, int32_t b)
{
    (void)p;
    if (b == 0 || b == -1) {
        return 0;
    }
    const int32_t trunc_mod = a % b;
    return (trunc_mod != 0) && ((b < 0) != (trunc_mod < 0)) ? trunc_mod + b : trunc_mod;
}

EDGESDK_BINARY_KERNEL(edgesdk_floor_div_f32, edgesdk_binary_params, float, float, float, floor_div_f32)
EDGESDK_BINARY_KERNEL(edgesdk_floor_div_i32, edgesdk_binary_params, int32_t, int32_t, int32_t, floor_div_i32)
EDGESDK_BINARY_KERNEL(edgesdk_floor_mod_f32, edgesdk_binary_params, float, float, float, floor_mod_f32)
EDGESDK_BINARY_KERNEL(edgesdk_floor_mod_i32, edgesdk_binary_params, int32_t, int32_t, int32_t, floor_mod_i32)

/* -- ADD_N ------------------------------------------------------------------------------------------------- */

void edgesdk_add_n_f32(const edgesdk_add_n_params *p, const void *const *inputs, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        float sum;
        if (p->from_zero) {
            sum = 0.0f;
            for (int32_t k = 0; k < p->count; k++) {
                const float x = ((const float *)inputs[k])[i];
                sum = edgesdk_x86_nan_f32(sum + x, sum, x, EDGESDK_NAN_FIRST);
            }
        } else {
            sum = ((const float *)inputs[0])[i];
            for (int32_t k = 1; k < p->count; k++) {
                const float x = ((const float *)inputs[k])[i];
                sum = edgesdk_clamp_f32(edgesdk_x86_nan_f32(sum + x, sum, x, EDGESDK_NAN_SECOND), -FLT_MAX, FLT_MAX);
            }
        }
        output[i] = sum;
    }
}

void edgesdk_add_n_i32(const edgesdk_add_n_params *p, const void *const *inputs, int32_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        int32_t sum = 0;
        for (int32_t k = 0; k < p->count; k++) {
            sum = edgesdk_wrap_add_i32(sum, ((const int32_t *)inputs[k])[i]);
        }
        output[i] = sum;
    }
}
