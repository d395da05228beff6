/*
 * edgesdk_conv2d_f32.c - float32 CONV_2D, bit-exact with TFLite's reference_ops::Conv (float ops in its order).
 */
#include "edgesdk_conv2d.h"
#include "edgesdk_float.h"
#include "edgesdk_window.h"

void edgesdk_conv2d_f32(const edgesdk_conv2d_f32_params *p, const float *input, const float *filter, const float *bias,
                        float *output)
{
    const edgesdk_conv2d_f32_params params = *p;
    p = &params;
    const int32_t groups = p->in_c / p->filter_in_c;
    const int32_t filters_per_group = p->out_c / groups;
    const int32_t filter_size = p->filter_h * p->filter_w * p->filter_in_c;
    for (int32_t b = 0; b < p->batches; b++) {
        const float *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, p->dilation_w, p->filter_w, p->in_w);
                for (int32_t oc = 0; oc < p->out_c; oc++) {
                    const int32_t group = oc / filters_per_group;
                    const float *w_oc = filter + oc * filter_size;
                    float total = 0.0f;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const float *x_row = in_batch + (y0 + fy * p->dilation_h) * p->in_w * p->in_c
                                             + group * p->filter_in_c;
                        const float *w_row = w_oc + fy * p->filter_w * p->filter_in_c;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            const float *x = x_row + (x0 + fx * p->dilation_w) * p->in_c;
                            const float *w = w_row + fx * p->filter_in_c;
                            for (int32_t c = 0; c < p->filter_in_c; c++) {
                                const float product = x[c] * w[c];
                                total += product;
                            }
                        }
                    }
                    const float bias_value = bias != 0 ? bias[oc] : 0.0f;
                    *output++ = edgesdk_clamp_f32(total + bias_value, p->act_min, p->act_max);
                }
            }
        }
    }
}
