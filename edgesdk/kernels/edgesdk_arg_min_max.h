/*
 * edgesdk_arg_min_max.h - ARG_MAX / ARG_MIN along one axis, TFLite reference semantics
 * (reference_ops::ArgMinMax and LiteRT's optimized last-axis path, which agree): the first index of the
 * largest (smallest) value. float32 with nan_aware (LiteRT): a NaN never replaces a number and a number always
 * replaces a NaN, so an all-NaN slice gives 0; without (TFLite Micro): plain comparisons, so a NaN in front
 * keeps index 0. Indices are written as int32 or int64.
 */
#ifndef EDGESDK_ARG_MIN_MAX_H
#define EDGESDK_ARG_MIN_MAX_H

#include <stdint.h>

typedef struct {
    int32_t outer;     /* product of the dims before the axis */
    int32_t axis_size; /* >= 1 */
    int32_t inner;     /* product of the dims after the axis */
    int32_t nan_aware; /* float32 only, see above */
} edgesdk_arg_min_max_params;

void edgesdk_arg_max_s8_i32(const edgesdk_arg_min_max_params *p, const int8_t *input, int32_t *output);
void edgesdk_arg_max_s8_i64(const edgesdk_arg_min_max_params *p, const int8_t *input, int64_t *output);
void edgesdk_arg_max_f32_i32(const edgesdk_arg_min_max_params *p, const float *input, int32_t *output);
void edgesdk_arg_max_f32_i64(const edgesdk_arg_min_max_params *p, const float *input, int64_t *output);
void edgesdk_arg_min_s8_i32(const edgesdk_arg_min_max_params *p, const int8_t *input, int32_t *output);
void edgesdk_arg_min_s8_i64(const edgesdk_arg_min_max_params *p, const int8_t *input, int64_t *output);
void edgesdk_arg_min_f32_i32(const edgesdk_arg_min_max_params *p, const float *input, int32_t *output);
void edgesdk_arg_min_f32_i64(const edgesdk_arg_min_max_params *p, const float *input, int64_t *output);

#endif /* EDGESDK_ARG_MIN_MAX_H */
