/*
 * edgesdk_depthwise_conv2d.h - int8 DEPTHWISE_CONV_2D, TFLite reference semantics
 * (reference_integer_ops::DepthwiseConvPerChannel; reference_ops::DepthwiseConv for uint8-legalized models).
 */
#ifndef EDGESDK_DEPTHWISE_CONV2D_H
#define EDGESDK_DEPTHWISE_CONV2D_H

#include <stdint.h>

typedef struct {
    int32_t batches;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c; /* out_c = in_c * depth_multiplier */
    int32_t depth_multiplier;
    int32_t filter_h, filter_w;
    int32_t stride_h, stride_w;
    int32_t dilation_h, dilation_w;
    int32_t pad_top, pad_left;
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point; nonzero only for models legalized from uint8 */
    int32_t output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output channel */
    const int32_t *shift;      /* per output channel */
    int32_t rounding;          /* EDGESDK_ROUNDING_* */
} edgesdk_depthwise_conv2d_params;

/* input NHWC, filter 1HW(out_c), bias[out_c] or NULL, output NHWC. */
void edgesdk_depthwise_conv2d_s8(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                 const int8_t *filter, const int32_t *bias, int8_t *output);

#endif /* EDGESDK_DEPTHWISE_CONV2D_H */
