/*
 * edgesdk_average_pool2d.c - int8 AVERAGE_POOL_2D, bit-exact with TFLite's reference kernels
 * (reference_integer_ops::AveragePool for int8, reference_ops::AveragePool for uint8).
 */
#include "edgesdk_arith.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_window.h"

/* int8 kernel: round to nearest, halves away from zero (C division truncates toward zero). */
static inline int32_t average_s8(int32_t sum, int32_t count)
{
    return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

/* uint8 kernel: the sum of uint8 values is never negative, (sum + count/2) / count. Our values are
 * uint8 - 128, so add the 128s back, divide, and shift the result down again. */
static inline int32_t average_u8(int32_t sum, int32_t count)
{
    const int32_t sum_u8 = sum + 128 * count;
    return (sum_u8 + count / 2) / count - 128;
}

void edgesdk_average_pool2d_s8(const edgesdk_pool2d_params *p, const int8_t *input, int8_t *output)
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
                const int32_t count = (wy.last - wy.first) * (wx.last - wx.first);
                const int32_t step = p->channels, columns = wx.last - wx.first;
                for (int32_t c = 0; c < p->channels; c++) {
                    int32_t sum = 0;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int8_t *x = in_batch + ((y0 + fy) * p->in_w + x0 + wx.first) * step + c;
                        const int8_t *const end = x + columns * step;
                        for (; end - x >= 4 * step; x += 4 * step) { /* four taps per step */
                            sum += x[0] + x[step] + x[2 * step] + x[3 * step];
                        }
                        for (; x != end; x += step) {
                            sum += *x;
                        }
                    }
                    int32_t avg = 0;
                    if (count > 0) { /* TFLite fails the op on an empty window; emit 0 rather than divide by 0 */
                        avg = p->uint8_rounding ? average_u8(sum, count) : average_s8(sum, count);
                    }
                    *output++ = (int8_t)edgesdk_clamp_i32(avg, p->act_min, p->act_max);
                }
            }
        }
    }
}
