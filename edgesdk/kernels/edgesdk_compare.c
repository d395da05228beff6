/*
 * edgesdk_compare.c - the comparisons, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_compare.h"

#include "edgesdk_arith.h"

/* One input's value in real units: MultiplyByQuantizedMultiplierSmallerThanOneExp((x - zp) << left_shift). */
static inline int32_t scaled(int32_t x, int32_t offset, int32_t left_shift, int32_t multiplier, int32_t shift,
                             int32_t rounding)
{
    return edgesdk_requantize((x + offset) * (1 << left_shift), multiplier, shift, rounding);
}

#define EDGESDK_COMPARISON(op, cmp)                                                                            \
    static inline uint8_t op##_q(const edgesdk_compare_params *p, int32_t a, int32_t b)                        \
    {                                                                                                          \
        const int32_t x = scaled(a, p->input1_offset, p->left_shift, p->input1_multiplier, p->input1_shift,    \
                                 p->rounding);                                                                 \
        const int32_t y = scaled(b, p->input2_offset, p->left_shift, p->input2_multiplier, p->input2_shift,    \
                                 p->rounding);                                                                 \
        return (uint8_t)(x cmp y);                                                                             \
    }                                                                                                          \
    static inline uint8_t op##_s8e(const edgesdk_compare_params *p, int8_t a, int8_t b)                        \
    {                                                                                                          \
        return op##_q(p, a, b);                                                                                \
    }                                                                                                          \
    static inline uint8_t op##_s16e(const edgesdk_compare_params *p, int16_t a, int16_t b)                     \
    {                                                                                                          \
        return op##_q(p, a, b);                                                                                \
    }                                                                                                          \
    static inline uint8_t op##_s16se(const edgesdk_binary_params *p, int16_t a, int16_t b)                     \
    {                                                                                                          \
        (void)p;                                                                                               \
        return (uint8_t)(a cmp b);                                                                             \
    }                                                                                                          \
    static inline uint8_t op##_i32e(const edgesdk_binary_params *p, int32_t a, int32_t b)                      \
    {                                                                                                          \
        (void)p;                                                                                               \
        return (uint8_t)(a cmp b);                                                                             \
    }                                                                                                          \
    static inline uint8_t op##_f32e(const edgesdk_binary_params *p, float a, float b)                          \
    {                                                                                                          \
        (void)p;                                                                                               \
        return (uint8_t)(a cmp b);                                                                             \
    }                                                                                                          \
    EDGESDK_BINARY_KERNEL(edgesdk_##op##_s8, edgesdk_compare_params, int8_t, int8_t, uint8_t, op##_s8e)        \
    EDGESDK_BINARY_KERNEL(edgesdk_##op##_s16, edgesdk_compare_params, int16_t, int16_t, uint8_t, op##_s16e)    \
    EDGESDK_BINARY_KERNEL(edgesdk_##op##_s16_stored, edgesdk_binary_params, int16_t, int16_t, uint8_t,         \
                          op##_s16se)                                                                          \
    EDGESDK_BINARY_KERNEL(edgesdk_##op##_i32, edgesdk_binary_params, int32_t, int32_t, uint8_t, op##_i32e)     \
    EDGESDK_BINARY_KERNEL(edgesdk_##op##_f32, edgesdk_binary_params, float, float, uint8_t, op##_f32e)

EDGESDK_COMPARISON(equal, ==)
EDGESDK_COMPARISON(not_equal, !=)
EDGESDK_COMPARISON(less, <)
EDGESDK_COMPARISON(less_equal, <=)
EDGESDK_COMPARISON(greater, >)
EDGESDK_COMPARISON(greater_equal, >=)

/* bool tensors hold 0 or 1: compare their truth values. */
static inline uint8_t equal_be(const edgesdk_binary_params *p, uint8_t a, uint8_t b)
{
    (void)p;
    return (uint8_t)((a != 0) == (b != 0));
}

static inline uint8_t not_equal_be(const edgesdk_binary_params *p, uint8_t a, uint8_t b)
{
    (void)p;
    return (uint8_t)((a != 0) != (b != 0));
}

EDGESDK_BINARY_KERNEL(edgesdk_equal_b, edgesdk_binary_params, uint8_t, uint8_t, uint8_t, equal_be)
EDGESDK_BINARY_KERNEL(edgesdk_not_equal_b, edgesdk_binary_params, uint8_t, uint8_t, uint8_t, not_equal_be)
