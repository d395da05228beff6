/*
 * edgesdk_depthwise_conv2d_s16.c - int16 DEPTHWISE_CONV_2D (16x8), bit-exact with TFLite's
 * reference_integer_ops::DepthwiseConvPerChannel for int16 input: output channel oc = ic * depth_multiplier + m
 * reads input channel ic; acc = bias + sum(w * x) in int64, MultiplyByQuantizedMultiplier(int64_t, ...), clamp.
 */
#include "edgesdk_depthwise_conv2d.h"

#include "edgesdk_layer16.h"
#include "edgesdk_window.h"

void edgesdk_depthwise_conv2d_s16(const edgesdk_depthwise_conv2d_s16_params *p, const int16_t *input,
                                  const int8_t *filter, const int64_t *bias, int16_t *output)
{
    /* A local copy: output stores may alias *p as far as C knows; a copy keeps the parameters in registers. */
    const edgesdk_depthwise_conv2d_s16_params params = *p;
    p = &params;
    const int32_t x_step = p->dilation_w * p->in_c; /* input elements between two taps of a filter row */
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, p->dilation_w, p->filter_w, p->in_w);
                for (int32_t ic = 0; ic < p->in_c; ic++) {
                    for (int32_t m = 0; m < p->depth_multiplier; m++) {
                        const int32_t oc = ic * p->depth_multiplier + m;
                        int32_t sum32 = 0;
                        int64_t sum64 = 0;
                        for (int32_t fy = wy.first; fy < wy.last; fy++) {
                            const int32_t iy = y0 + fy * p->dilation_h;
                            const int16_t *x = in_batch + (iy * p->in_w + x0 + wx.first * p->dilation_w) * p->in_c + ic;
                            const int8_t *w = filter + (fy * p->filter_w + wx.first) * p->out_c + oc;
                            if (p->sum32) {
                                for (int32_t fx = wx.first; fx < wx.last; fx++) {
                                    sum32 += (int32_t)*x * (int32_t)*w;
                                    x += x_step;
                                    w += p->out_c;
                                }
                            } else {
                                for (int32_t fx = wx.first; fx < wx.last; fx++) {
                                    sum64 += (int32_t)*x * (int32_t)*w;
                                    x += x_step;
                                    w += p->out_c;
                                }
                            }
                        }
                        int64_t acc = p->sum32 ? (int64_t)sum32 : sum64;
                        if (bias != 0) {
                            acc += bias[oc];
                        }
                        const int32_t scaled = edgesdk_mbqm64(acc, p->multiplier[oc], p->shift[oc]);
                        *output++ = edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}
