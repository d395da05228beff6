/*
 * edgesdk_mean.h - MEAN over any set of axes (up to 6 dims), TFLite reference semantics.
 *
 * int8/int16: reference_ops::QuantizedMeanOrSum, out = zp_out + requantize(sum - zp_in * count), where the
 * compiler folds 1/count into the multiplier exactly as TFLite does. float32: reference_ops::Mean, the block
 * summed in float from 0.0f in TFLite's order, then divided by (float)count.
 */
#ifndef EDGESDK_MEAN_H
#define EDGESDK_MEAN_H

#include <stdint.h>

#include "edgesdk_reduce.h" /* edgesdk_mean_params, edgesdk_reduce_params */

void edgesdk_mean_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output);
void edgesdk_mean_s16(const edgesdk_mean_params *p, const int16_t *input, int16_t *output);
void edgesdk_mean_f32(const edgesdk_reduce_params *p, const float *input, float *output);

#endif /* EDGESDK_MEAN_H */
