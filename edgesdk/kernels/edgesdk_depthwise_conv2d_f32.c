/*
 * edgesdk_depthwise_conv2d_f32.c - float32 DEPTHWISE_CONV_2D, bit-exact with TFLite's reference_ops::DepthwiseConv.
 */
#include "edgesdk_depthwise_conv2d.h"
#include "edgesdk_float.h"
#include "edgesdk_window.h"

void edgesdk_depthwise_conv2d_f32(const edgesdk_depthwise_conv2d_f32_params *p, const float *input, const float *filter,
                                  const float *bias, float *output)
{
    const edgesdk_depthwise_conv2d_f32_params params = *p;
    p = &params;
    const int32_t x_step = p->dilation_w * p->in_c;
    for (int32_t b = 0; b < p->batches; b++) {
        const float *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, p->dilation_w, p->filter_w, p->in_w);
                for (int32_t ic = 0; ic < p->in_c; ic++) {
                    for (int32_t m = 0; m < p->depth_multiplier; m++) {
                        const int32_t oc = ic * p->depth_multiplier + m;
                        float total = 0.0f;
                        for (int32_t fy = wy.first; fy < wy.last; fy++) {
                            const float *x = in_batch + ((y0 + fy * p->dilation_h) * p->in_w + x0
                                                         + wx.first * p->dilation_w) * p->in_c + ic;
                            const float *w = filter + (fy * p->filter_w + wx.first) * p->out_c + oc;
                            for (int32_t fx = wx.first; fx < wx.last; fx++) {
                                const float product = *x * *w;
                                total += product;
                                x += x_step;
                                w += p->out_c;
                            }
                        }
                        const float bias_value = bias != 0 ? bias[oc] : 0.0f;
                        *output++ = edgesdk_clamp_f32(total + bias_value, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}
