/*
 * edgesdk_pool2d_s16.c - int16 AVERAGE_POOL_2D and MAX_POOL_2D, bit-exact with TFLite's
 * reference_integer_ops::AveragePool / MaxPool for int16 (only taps inside the input count).
 */
#include "edgesdk_arith.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_window.h"

void edgesdk_average_pool2d_s16(const edgesdk_pool2d_params *p, const int16_t *input, int16_t *output)
{
    /* A local copy: output stores may alias *p as far as C knows; a copy keeps the parameters in registers. */
    const edgesdk_pool2d_params params = *p;
    p = &params;
    const int32_t row = p->in_w * p->channels;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * row;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, 1, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, 1, p->filter_w, p->in_w);
                const int32_t count = (wy.last - wy.first) * (wx.last - wx.first);
                const int16_t *corner = in_batch + (y0 + wy.first) * row + (x0 + wx.first) * p->channels;
                for (int32_t c = 0; c < p->channels; c++) {
                    int32_t sum = 0;
                    const int16_t *x_row = corner + c;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int16_t *x = x_row;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            sum += *x;
                            x += p->channels;
                        }
                        x_row += row;
                    }
                    int32_t avg = 0;
                    if (count > 0) { /* TFLite fails the op on an empty window; emit 0 rather than divide by 0 */
                        avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                    }
                    *output++ = (int16_t)edgesdk_clamp_i32(avg, p->act_min, p->act_max);
                }
            }
        }
    }
}

void edgesdk_max_pool2d_s16(const edgesdk_pool2d_params *p, const int16_t *input, int16_t *output)
{
    const edgesdk_pool2d_params params = *p;
    p = &params;
    const int32_t row = p->in_w * p->channels;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * row;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, 1, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, 1, p->filter_w, p->in_w);
                const int16_t *corner = in_batch + (y0 + wy.first) * row + (x0 + wx.first) * p->channels;
                for (int32_t c = 0; c < p->channels; c++) {
                    int32_t max = INT16_MIN;
                    const int16_t *x_row = corner + c;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int16_t *x = x_row;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            max = *x > max ? *x : max;
                            x += p->channels;
                        }
                        x_row += row;
                    }
                    *output++ = (int16_t)edgesdk_clamp_i32(max, p->act_min, p->act_max);
                }
            }
        }
    }
}
