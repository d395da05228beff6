/*
 * edgesdk_mean.h - int8 MEAN over any set of axes (up to 6 dims), TFLite reference semantics
 * (reference_ops::QuantizedMeanOrSum): out = zp_out + requantize(sum - zp_in * count), where the
 * compiler folds 1/count into the multiplier exactly as TFLite does.
 */
#ifndef EDGESDK_MEAN_H
#define EDGESDK_MEAN_H

#include <stdint.h>

#include "edgesdk_broadcast.h" /* EDGESDK_MAX_DIMS */

typedef struct {
    int32_t in_shape[EDGESDK_MAX_DIMS]; /* leading dims padded with 1 */
    int32_t reduce[EDGESDK_MAX_DIMS];   /* 1 for each reduced dim */
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier, shift; /* input_scale / output_scale / count */
    int32_t rounding;          /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
} edgesdk_mean_params;

void edgesdk_mean_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_MEAN_H */
