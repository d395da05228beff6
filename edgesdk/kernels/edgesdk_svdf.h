/*
 * edgesdk_svdf.h - SVDF: a rank-r SVD filter over time with its memory (the activation state) in a persistent
 * buffer the caller keeps between runs.
 *
 * Per inference and batch: every filter's memory moves one step back (the whole state buffer shifts by one
 * element, as in TFLite), the newest slot of filter f gets the input projected on weights_feature[f], and unit u
 * sums the time products weights_time[f] . memory[f] of its `rank` filters f = u * rank + r, plus its bias.
 *
 *   edgesdk_svdf_s8_s16  int8 input and output, int16 weights_time and state, int32 bias (both references)
 *   edgesdk_svdf_s8_s8   int8 weights_time and state (TFLite Micro's variant)
 *   edgesdk_svdf_f32     float32; `tflm` puts the bias first in each unit's sum (TFLite Micro), else last (LiteRT)
 *
 * No scratch memory: each unit's filter sums are formed when needed, in the references' order.
 */
#ifndef EDGESDK_SVDF_H
#define EDGESDK_SVDF_H

#include <stdint.h>

typedef struct {
    int32_t batches;
    int32_t input_size;
    int32_t num_filters;
    int32_t num_units;
    int32_t rank;
    int32_t memory_size;
    int32_t feature_multiplier;
    int32_t feature_shift;
    int32_t time_multiplier;
    int32_t time_shift;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t state_zero_point; /* 0 under LiteRT, which ignores it */
} edgesdk_svdf_s8_params;

#define EDGESDK_SVDF_ACT_NONE 0
#define EDGESDK_SVDF_ACT_RELU 1
#define EDGESDK_SVDF_ACT_RELU_N1_TO_1 2
#define EDGESDK_SVDF_ACT_RELU6 3
#define EDGESDK_SVDF_ACT_SIGN_BIT 5

typedef struct {
    int32_t batches;
    int32_t input_size;
    int32_t num_filters;
    int32_t num_units;
    int32_t rank;
    int32_t memory_size;
    int32_t activation; /* EDGESDK_SVDF_ACT_* (TFLite's ActivationFunctionType codes) */
    int32_t tflm;
} edgesdk_svdf_f32_params;

void edgesdk_svdf_s8_s16(const edgesdk_svdf_s8_params *p, const int8_t *input, const int8_t *weights_feature,
                         const int16_t *weights_time, const int32_t *bias, int16_t *state, int8_t *output);
void edgesdk_svdf_s8_s8(const edgesdk_svdf_s8_params *p, const int8_t *input, const int8_t *weights_feature,
                        const int8_t *weights_time, const int32_t *bias, int8_t *state, int8_t *output);
void edgesdk_svdf_f32(const edgesdk_svdf_f32_params *p, const float *input, const float *weights_feature,
                      const float *weights_time, const float *bias, float *state, float *output);

#endif /* EDGESDK_SVDF_H */
