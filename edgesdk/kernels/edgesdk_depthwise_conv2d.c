/*
 * edgesdk_depthwise_conv2d.c - int8 DEPTHWISE_CONV_2D, bit-exact with TFLite's reference kernel.
 *
 * Output channel oc = ic * depth_multiplier + m reads input channel ic only.
 */
#include "edgesdk_depthwise_conv2d.h"

#include "edgesdk_arith.h"
#include "edgesdk_window.h"

/* Accumulates one output channel over the valid part of the filter window. */
static int32_t depthwise_acc(const edgesdk_depthwise_conv2d_params *p, const int8_t *in_batch, const int8_t *filter,
                             int32_t y0, int32_t x0, edgesdk_window wy, edgesdk_window wx, int32_t ic, int32_t oc)
{
    int32_t acc = 0;
    for (int32_t fy = wy.first; fy < wy.last; fy++) {
        const int32_t iy = y0 + fy * p->dilation_h;
        const int8_t *x_row = in_batch + iy * p->in_w * p->in_c + ic;
        const int8_t *w_row = filter + fy * p->filter_w * p->out_c + oc;
        for (int32_t fx = wx.first; fx < wx.last; fx++) {
            const int32_t ix = x0 + fx * p->dilation_w;
            const int32_t x = (int32_t)x_row[ix * p->in_c] + p->input_offset;
            const int32_t w = (int32_t)w_row[fx * p->out_c] + p->filter_offset;
            acc += w * x;
        }
    }
    return acc;
}

/* The loops; F32: ONNX Runtime's float requantization (EDGESDK_ROUNDING_F32), TFLite's integer one otherwise. */
static inline __attribute__((always_inline)) void depthwise_loops(const edgesdk_depthwise_conv2d_params *p,
                                                                  const int8_t *input, const int8_t *filter,
                                                                  const int32_t *bias, int8_t *output, const int F32)
{
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps_u32(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps_u32(x0, p->dilation_w, p->filter_w, p->in_w);
                for (int32_t ic = 0; ic < p->in_c; ic++) {
                    for (int32_t m = 0; m < p->depth_multiplier; m++) {
                        const int32_t oc = ic * p->depth_multiplier + m;
                        int32_t acc = depthwise_acc(p, in_batch, filter, y0, x0, wy, wx, ic, oc);
                        if (bias != 0) {
                            acc += bias[oc];
                        }
                        acc = (F32 ? edgesdk_requantize_f32(acc, p->scale_f32[oc])
                                   : edgesdk_requantize(acc, p->multiplier[oc], p->shift[oc], p->rounding))
                              + p->output_offset;
                        *output++ = (int8_t)edgesdk_clamp_i32(acc, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}

/* Two functions, not a test of p->rounding: a firmware without EDGESDK_ROUNDING_F32 layers links no soft-float. */
void edgesdk_depthwise_conv2d_s8_loops(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                       const int8_t *filter, const int32_t *bias, int8_t *output)
{
    /* A local copy: int8 output stores may alias *p as far as C knows; a copy lets the compiler keep
     * the parameters in registers. */
    const edgesdk_depthwise_conv2d_params params = *p;
    depthwise_loops(&params, input, filter, bias, output, 0);
}

void edgesdk_depthwise_conv2d_s8_loops_f32(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                           const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const edgesdk_depthwise_conv2d_params params = *p;
    depthwise_loops(&params, input, filter, bias, output, 1);
}
