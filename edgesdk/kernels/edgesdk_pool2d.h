/*
 * edgesdk_pool2d.h - int8 AVERAGE_POOL_2D and MAX_POOL_2D, TFLite reference semantics.
 *
 * The window only counts taps inside the input (TFLite never pads with values); average rounds the
 * int8 way (to nearest, halves away from zero) or, for ops that ran in uint8, the uint8 way
 * ((sum + n/2) / n on the non-negative uint8 sum).
 */
#ifndef EDGESDK_POOL2D_H
#define EDGESDK_POOL2D_H

#include <stdint.h>

typedef struct {
    int32_t batches;
    int32_t in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t act_min, act_max;
    int32_t uint8_rounding; /* AVERAGE_POOL_2D only: 1 when the op originally ran on uint8 */
} edgesdk_pool2d_params;

void edgesdk_average_pool2d_s8(const edgesdk_pool2d_params *p, const int8_t *input, int8_t *output);
void edgesdk_max_pool2d_s8(const edgesdk_pool2d_params *p, const int8_t *input, int8_t *output);

/* int16 (edgesdk_pool2d_s16.c): reference_integer_ops::AveragePool / MaxPool for int16, the int8 arithmetic
 * (an int32 sum, round to nearest with halves away from zero); uint8_rounding is 0. */
void edgesdk_average_pool2d_s16(const edgesdk_pool2d_params *p, const int16_t *input, int16_t *output);
void edgesdk_max_pool2d_s16(const edgesdk_pool2d_params *p, const int16_t *input, int16_t *output);

/* float32 (edgesdk_pool2d_f32.c): reference_ops::AveragePool / MaxPool / L2Pool, the window summed in float in
 * row-major tap order, then the fused activation's float clamp (NaN passes through, as std::min/max do). */
typedef struct {
    int32_t batches;
    int32_t in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    float act_min, act_max;
} edgesdk_pool2d_f32_params;

void edgesdk_average_pool2d_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output);
void edgesdk_max_pool2d_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output);
void edgesdk_l2_pool2d_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output);

#endif /* EDGESDK_POOL2D_H */
