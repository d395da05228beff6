/*
 * edgesdk_log_softmax.h - LOG_SOFTMAX over the last axis, TFLite reference semantics.
 *
 * int8 (reference_integer_ops::LogSoftmax, output scale 16/256, zero point 127): per row, differences to the
 * maximum scaled into Q5.26, exp() summed in Q12.19 in gemmlowp fixed point, the sum's log taken in Q5.26
 * (log_x_for_x_greater_than_or_equal_to_1), and each (diff - log sum) rounded into the output scale; diffs
 * at or below a threshold derived from the log sum give -128.
 * float32 (reference_ops::LogSoftmax): x - max - logf(sum of expf(x - max)), with the references' expf and
 * logf (edgesdk_reduce_libm.h).
 */
#ifndef EDGESDK_LOG_SOFTMAX_H
#define EDGESDK_LOG_SOFTMAX_H

#include <stdint.h>

typedef struct {
    int32_t rows;               /* product of all dims but the last */
    int32_t depth;              /* last dim */
    int32_t input_multiplier;   /* input_scale * 2^26 as a Q31 multiplier ... */
    int32_t input_left_shift;   /* ... and its left shift (PreprocessSoftmaxScaling) */
    int32_t reverse_multiplier; /* Q5.26 back to input units (PreprocessLogSoftmaxScalingExp) ... */
    int32_t reverse_shift;      /* ... and its shift (<= 0) */
    int32_t diff_min;           /* differences below this give exp() = 0 */
    int32_t rounding;           /* EDGESDK_ROUNDING_*: MultiplyByQuantizedMultiplier */
} edgesdk_log_softmax_params;

void edgesdk_log_softmax_s8(const edgesdk_log_softmax_params *p, const int8_t *input, int8_t *output);
void edgesdk_log_softmax_f32(const edgesdk_log_softmax_params *p, const float *input, float *output);

#endif /* EDGESDK_LOG_SOFTMAX_H */
