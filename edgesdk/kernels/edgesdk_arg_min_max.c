/*
 * edgesdk_arg_min_max.c - ARG_MAX / ARG_MIN, bit-exact with TFLite's reference kernels.
 */
#include "edgesdk_arg_min_max.h"

static int32_t arg_s8(const int8_t *x, int32_t n, int32_t stride, int is_max, int nan_aware)
{
    (void)nan_aware;
    int8_t best = x[0];
    int32_t index = 0;
    for (int32_t i = 1; i < n; i++) {
        const int8_t v = x[i * stride];
        if (is_max ? v > best : v < best) {
            best = v;
            index = i;
        }
    }
    return index;
}

static int is_nan(float v)
{
    return v != v;
}

static int32_t arg_f32(const float *x, int32_t n, int32_t stride, int is_max, int nan_aware)
{
    float best = x[0];
    int32_t index = 0;
    for (int32_t i = 1; i < n; i++) {
        const float v = x[i * stride];
        const int better = is_max ? v > best : v < best;
        if (nan_aware ? !is_nan(v) && (is_nan(best) || better) : better) {
            best = v;
            index = i;
        }
    }
    return index;
}

#define EDGESDK_ARG_KERNEL(name, in_t, out_t, fn, is_max)                                          \
    void name(const edgesdk_arg_min_max_params *p, const in_t *input, out_t *output)               \
    {                                                                                              \
        for (int32_t o = 0; o < p->outer; o++) {                                                   \
            for (int32_t i = 0; i < p->inner; i++) {                                               \
                const in_t *x = input + o * p->axis_size * p->inner + i;                           \
                output[o * p->inner + i] = (out_t)fn(x, p->axis_size, p->inner, is_max, p->nan_aware);       \
            }                                                                                      \
        }                                                                                          \
    }

EDGESDK_ARG_KERNEL(edgesdk_arg_max_s8_i32, int8_t, int32_t, arg_s8, 1)
EDGESDK_ARG_KERNEL(edgesdk_arg_max_s8_i64, int8_t, int64_t, arg_s8, 1)
EDGESDK_ARG_KERNEL(edgesdk_arg_max_f32_i32, float, int32_t, arg_f32, 1)
EDGESDK_ARG_KERNEL(edgesdk_arg_max_f32_i64, float, int64_t, arg_f32, 1)
EDGESDK_ARG_KERNEL(edgesdk_arg_min_s8_i32, int8_t, int32_t, arg_s8, 0)
EDGESDK_ARG_KERNEL(edgesdk_arg_min_s8_i64, int8_t, int64_t, arg_s8, 0)
EDGESDK_ARG_KERNEL(edgesdk_arg_min_f32_i32, float, int32_t, arg_f32, 0)
EDGESDK_ARG_KERNEL(edgesdk_arg_min_f32_i64, float, int64_t, arg_f32, 0)
