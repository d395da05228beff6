/*
 * edgesdk_max_pool2d.c - int8 MAX_POOL_2D, bit-exact with TFLite's reference kernel.
 */
#include "edgesdk_arith.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_window.h"

void edgesdk_max_pool2d_s8(const edgesdk_pool2d_params *p, const int8_t *input, int8_t *output)
{
    /* A local copy: int8 output stores may alias *p as far as C knows; a copy lets the compiler keep
     * the parameters in registers. */
    const edgesdk_pool2d_params params = *p;
    p = &params;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *in_batch = input + b * p->in_h * p->in_w * p->channels;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, 1, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, 1, p->filter_w, p->in_w);
                for (int32_t c = 0; c < p->channels; c++) {
                    int32_t max = INT8_MIN;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int8_t *row = in_batch + (y0 + fy) * p->in_w * p->channels + c;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            if (row[(x0 + fx) * p->channels] > max) {
                                max = row[(x0 + fx) * p->channels];
                            }
                        }
                    }
                    *output++ = (int8_t)edgesdk_clamp_i32(max, p->act_min, p->act_max);
                }
            }
        }
    }
}
