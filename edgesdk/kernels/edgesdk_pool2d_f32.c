/*
 * edgesdk_pool2d_f32.c - float32 AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D, bit-exact with TFLite's
 * reference_ops::AveragePool / MaxPool / L2Pool: the same float operations in the same order (taps row by row,
 * only those inside the input), then min(max(v, act_min), act_max) as ActivationFunctionWithMinMax does it.
 */
#include <math.h>

#include "edgesdk_float.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_window.h"

#define POOL_AVERAGE 0
#define POOL_MAX 1
#define POOL_L2 2

static void pool_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output, int kind)
{
    const edgesdk_pool2d_f32_params params = *p;
    p = &params;
    const int32_t row = p->in_w * p->channels;
    for (int32_t b = 0; b < p->batches; b++) {
        const float *in_batch = input + b * p->in_h * row;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps(y0, 1, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps(x0, 1, p->filter_w, p->in_w);
                const int32_t count = (wy.last - wy.first) * (wx.last - wx.first);
                const float *corner = in_batch + (y0 + wy.first) * row + (x0 + wx.first) * p->channels;
                for (int32_t c = 0; c < p->channels; c++) {
                    float acc = kind == POOL_MAX ? -3.40282347e+38f : 0.0f;
                    const float *x_row = corner + c;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const float *x = x_row;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            const float v = *x;
                            if (kind == POOL_MAX) {
                                acc = acc < v ? v : acc; /* std::max(acc, v) */
                            } else if (kind == POOL_L2) {
                                const float square = v * v;
                                acc += square;
                            } else {
                                acc += v;
                            }
                            x += p->channels;
                        }
                        x_row += row;
                    }
                    float result = acc;
                    if (kind == POOL_AVERAGE) {
                        result = count > 0 ? acc / (float)count : 0.0f;
                    } else if (kind == POOL_L2) {
                        result = sqrtf(acc / (float)count);
                    }
                    *output++ = edgesdk_clamp_f32(result, p->act_min, p->act_max);
                }
            }
        }
    }
}

void edgesdk_average_pool2d_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output)
{
    pool_f32(p, input, output, POOL_AVERAGE);
}

void edgesdk_max_pool2d_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output)
{
    pool_f32(p, input, output, POOL_MAX);
}

void edgesdk_l2_pool2d_f32(const edgesdk_pool2d_f32_params *p, const float *input, float *output)
{
    pool_f32(p, input, output, POOL_L2);
}
