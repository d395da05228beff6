/*
 * edgesdk_conv2d.c - int8 CONV_2D, bit-exact with TFLite's reference kernel.
 *
 * acc = bias + sum((w + filter_offset) * (x + input_offset)) over the taps inside the image (padding
 * contributes nothing, as in TFLite), then requantized per output channel, offset and clamped.
 */
#include "edgesdk_conv2d.h"

#include "edgesdk_arith.h"
#include "edgesdk_window.h"

/* Dot product of one filter row with one input pixel's channels (the innermost, contiguous loop). */
static inline int32_t dot_s8(const int8_t *x, const int8_t *w, int32_t n, int32_t input_offset)
{
    int32_t acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += (int32_t)w[i] * ((int32_t)x[i] + input_offset);
    }
    return acc;
}

/* Same with a filter zero point (uint8-legalized models only; kept apart to keep the common loop lean). */
static inline int32_t dot_s8_filter_offset(const int8_t *x, const int8_t *w, int32_t n, int32_t input_offset,
                                           int32_t filter_offset)
{
    int32_t acc = 0;
    for (int32_t i = 0; i < n; i++) {
        acc += ((int32_t)w[i] + filter_offset) * ((int32_t)x[i] + input_offset);
    }
    return acc;
}

void edgesdk_conv2d_s8(const edgesdk_conv2d_params *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output)
{
    /* A local copy: int8 output stores may alias *p as far as C knows; a copy lets the compiler keep
     * the parameters in registers. */
    if (p->blocked >= EDGESDK_CONV_PAIRED) { /* _PAIRED, _PAIRED_PATCHES, _PAIRED_QUADS, _PAIRED_QUAD_PATCHES */
        edgesdk_conv2d_s8_paired(p, input, filter, bias, output);
        return;
    }
    if (p->blocked) {
        edgesdk_conv2d_s8_blocked(p, input, filter, bias, output);
        return;
    }
    const edgesdk_conv2d_params params = *p;
    p = &params;
    const int32_t groups = p->in_c / p->filter_in_c;
    const int32_t filters_per_group = p->out_c / groups;
    const int32_t filter_size = p->filter_h * p->filter_w * p->filter_in_c;

    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            edgesdk_window wy = edgesdk_window_taps_u32(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                edgesdk_window wx = edgesdk_window_taps_u32(x0, p->dilation_w, p->filter_w, p->in_w);
                for (int32_t oc = 0; oc < p->out_c; oc++) {
                    const int32_t group = oc / filters_per_group;
                    const int8_t *w_oc = filter + oc * filter_size;
                    int32_t acc = 0;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int32_t iy = y0 + fy * p->dilation_h;
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            const int32_t ix = x0 + fx * p->dilation_w;
                            const int8_t *x = in_batch + (iy * p->in_w + ix) * p->in_c + group * p->filter_in_c;
                            const int8_t *w = w_oc + (fy * p->filter_w + fx) * p->filter_in_c;
                            acc += p->filter_offset == 0
                                       ? dot_s8(x, w, p->filter_in_c, p->input_offset)
                                       : dot_s8_filter_offset(x, w, p->filter_in_c, p->input_offset,
                                                              p->filter_offset);
                        }
                    }
                    if (bias != 0) {
                        acc += bias[oc];
                    }
                    acc = (p->rounding == EDGESDK_ROUNDING_F32 ? edgesdk_requantize_f32(acc, p->scale_f32[oc])
                                                               : edgesdk_requantize(acc, p->multiplier[oc], p->shift[oc],
                                                                                    p->rounding)) + p->output_offset;
                    *output++ = (int8_t)edgesdk_clamp_i32(acc, p->act_min, p->act_max);
                }
            }
        }
    }
}
