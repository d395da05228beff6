/*
 * edgesdk_depthwise_conv2d_s16.c - int16 DEPTHWISE_CONV_2D (16x8), bit-exact with TFLite's
 * reference_integer_ops::DepthwiseConvPerChannel for int16 input: output channel oc = ic * depth_multiplier + m
 * reads input channel ic; acc = bias + sum(w * x) in int64, MultiplyByQuantizedMultiplier(int64_t, ...), clamp.
 *
 * With depth multiplier 1 and int32 sums (sum32), four adjacent channels are computed together: their inputs
 * and weights are adjacent in memory, so the window's loop overhead is shared.
 */
#include "edgesdk_depthwise_conv2d.h"

#include "edgesdk_layer16.h"
#include "edgesdk_window.h"

static inline int16_t dw16_output_small(const edgesdk_depthwise_conv2d_s16_params *p, int32_t sum, const int64_t *bias,
                                        int32_t oc)
{
    const int32_t acc = edgesdk_add_bias32(sum, bias, oc);
    const int32_t scaled = p->fast_requant ? edgesdk_mbqm64_fast(acc, p->fast_multiplier[oc], p->fast_shift[oc])
                                           : edgesdk_mbqm64_small(acc, p->multiplier[oc], p->shift[oc]);
    return edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
}

/* Depth multiplier 1, sum32: channels in groups of four, then one at a time. */
static void depthwise_s16_channels(const edgesdk_depthwise_conv2d_s16_params *p, const int16_t *input,
                                   const int8_t *filter, const int64_t *bias, int16_t *output)
{
    const int32_t c_n = p->in_c;
    const int32_t x_step = p->dilation_w * c_n; /* input elements between two taps of a filter row */
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * p->in_w * c_n;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, p->dilation_w, p->filter_w, p->in_w);
                /* the window's first valid tap: input and filter offsets of channel 0 */
                const int16_t *x_first = in_batch + (y0 + wy.first * p->dilation_h) * p->in_w * c_n
                                         + (x0 + wx.first * p->dilation_w) * c_n;
                const int8_t *w_first = filter + (wy.first * p->filter_w + wx.first) * c_n;
                const int32_t x_row_step = p->dilation_h * p->in_w * c_n;
                const int32_t w_row_step = p->filter_w * c_n;
                int32_t c = 0;
                for (; c + 4 <= c_n; c += 4) {
                    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
                    const int16_t *x_row = x_first + c;
                    const int8_t *w_row = w_first + c;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int16_t *x = x_row;
                        const int8_t *w = w_row;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            a0 += x[0] * w[0];
                            a1 += x[1] * w[1];
                            a2 += x[2] * w[2];
                            a3 += x[3] * w[3];
                            x += x_step;
                            w += c_n;
                        }
                        x_row += x_row_step;
                        w_row += w_row_step;
                    }
                    *output++ = dw16_output_small(p, a0, bias, c);
                    *output++ = dw16_output_small(p, a1, bias, c + 1);
                    *output++ = dw16_output_small(p, a2, bias, c + 2);
                    *output++ = dw16_output_small(p, a3, bias, c + 3);
                }
                for (; c < c_n; c++) {
                    int32_t acc = 0;
                    const int16_t *x_row = x_first + c;
                    const int8_t *w_row = w_first + c;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int16_t *x = x_row;
                        const int8_t *w = w_row;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            acc += *x * *w;
                            x += x_step;
                            w += c_n;
                        }
                        x_row += x_row_step;
                        w_row += w_row_step;
                    }
                    *output++ = dw16_output_small(p, acc, bias, c);
                }
            }
        }
    }
}

/* Depth multiplier 1, sum32, R < 4 channels: every pixel's R channels in one pass over its window. */
static inline __attribute__((always_inline)) void depthwise_s16_few_r(const edgesdk_depthwise_conv2d_s16_params *p,
                                                                      const int16_t *input, const int8_t *filter,
                                                                      const int64_t *bias, int16_t *output,
                                                                      const int R)
{
    const int32_t x_step = p->dilation_w * R; /* input elements between two taps of a filter row */
    const int32_t x_row_step = p->dilation_h * p->in_w * R;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * p->in_w * R;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps_u32(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++, output += R) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps_u32(x0, p->dilation_w, p->filter_w, p->in_w);
                const int32_t taps_x = wx.last - wx.first;
                int32_t a[3] = {0, 0, 0};
                const int16_t *x_row = in_batch + ((y0 + wy.first * p->dilation_h) * p->in_w
                                                   + x0 + wx.first * p->dilation_w) * R;
                const int8_t *w_row = filter + (wy.first * p->filter_w + wx.first) * R;
                for (int32_t fy = wy.first; fy < wy.last && taps_x > 0; fy++) {
                    const int16_t *x = x_row;
                    const int8_t *w = w_row;
                    for (const int8_t *w_end = w + taps_x * R; w != w_end; w += R, x += x_step) {
#pragma GCC unroll 3
                        for (int k = 0; k < R; k++) {
                            a[k] += x[k] * w[k];
                        }
                    }
                    x_row += x_row_step;
                    w_row += p->filter_w * R;
                }
#pragma GCC unroll 3
                for (int k = 0; k < R; k++) {
                    output[k] = dw16_output_small(p, a[k], bias, k);
                }
            }
        }
    }
}

/* Out of line, so that its code does not cost the other paths' loops registers. */
static __attribute__((noinline)) void depthwise_s16_few(const edgesdk_depthwise_conv2d_s16_params *p,
                                                        const int16_t *input, const int8_t *filter,
                                                        const int64_t *bias, int16_t *output)
{
    if (p->in_c == 3) {
        depthwise_s16_few_r(p, input, filter, bias, output, 3);
    } else if (p->in_c == 2) {
        depthwise_s16_few_r(p, input, filter, bias, output, 2);
    } else {
        depthwise_s16_few_r(p, input, filter, bias, output, 1);
    }
}

void edgesdk_depthwise_conv2d_s16(const edgesdk_depthwise_conv2d_s16_params *p, const int16_t *input,
                                  const int8_t *filter, const int64_t *bias, int16_t *output)
{
    /* A local copy: output stores may alias *p as far as C knows; a copy keeps the parameters in registers. */
    const edgesdk_depthwise_conv2d_s16_params params = *p;
    p = &params;
    if (p->sum32 && p->depth_multiplier == 1) {
        if (p->in_c < 4) {
            depthwise_s16_few(p, input, filter, bias, output);
        } else {
            depthwise_s16_channels(p, input, filter, bias, output);
        }
        return;
    }
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
                        if (p->sum32) {
                            *output++ = dw16_output_small(p, sum32, bias, oc);
                            continue;
                        }
                        if (bias != 0) {
                            sum64 += bias[oc];
                        }
                        const int32_t scaled = edgesdk_mbqm64(sum64, p->multiplier[oc], p->shift[oc]);
                        *output++ = edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
                    }
                }
            }
        }
    }
}
