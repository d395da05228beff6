/*
 * edgesdk_transpose_conv.c - int8 and 16x8 TRANSPOSE_CONV, bit-exact with TFLite's
 * reference_integer_ops::TransposeConv, computed as a gather without scratch memory (edgesdk_transpose_conv.h).
 */
#include "edgesdk_transpose_conv.h"

#include "edgesdk_layer16.h"

/* The input rows (or columns) that reach output row o: i with 0 <= o + pad - i * stride < filter, 0 <= i < n. */
typedef struct {
    int32_t first, last; /* i in [first, last) */
} span;

static inline span reaching(int32_t o, int32_t pad, int32_t stride, int32_t filter, int32_t n)
{
    const int32_t top = o + pad; /* i * stride <= top and i * stride > top - filter */
    span s;
    s.last = top >= 0 ? top / stride + 1 : 0;
    const int32_t low = top - filter + 1; /* smallest i * stride */
    s.first = low <= 0 ? 0 : (low + stride - 1) / stride;
    if (s.last > n) {
        s.last = n;
    }
    return s;
}

void edgesdk_transpose_conv_s8(const edgesdk_transpose_conv_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output)
{
    const edgesdk_transpose_conv_params params = *p;
    p = &params;
    const int32_t filter_size = p->filter_h * p->filter_w * p->in_c;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const span sy = reaching(oy, p->pad_top, p->stride_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const span sx = reaching(ox, p->pad_left, p->stride_w, p->filter_w, p->in_w);
                for (int32_t oc = 0; oc < p->out_c; oc++) {
                    const int8_t *w_oc = filter + oc * filter_size;
                    int32_t sum32 = 0;
                    int64_t sum64 = 0;
                    for (int32_t iy = sy.first; iy < sy.last; iy++) {
                        const int32_t fy = oy + p->pad_top - iy * p->stride_h;
                        for (int32_t ix = sx.first; ix < sx.last; ix++) {
                            const int32_t fx = ox + p->pad_left - ix * p->stride_w;
                            const int8_t *x = in_batch + (iy * p->in_w + ix) * p->in_c;
                            const int8_t *w = w_oc + (fy * p->filter_w + fx) * p->in_c;
                            int32_t dot = 0;
                            if (p->sum32) {
                                for (int32_t c = 0; c < p->in_c; c++) {
                                    dot += ((int32_t)x[c] + p->input_offset) * (int32_t)w[c];
                                }
                                sum32 += dot;
                            } else {
                                for (int32_t c = 0; c < p->in_c; c++) {
                                    sum64 += ((int32_t)x[c] + p->input_offset) * (int32_t)w[c];
                                }
                            }
                        }
                    }
                    int64_t acc = p->sum32 ? (int64_t)sum32 : sum64;
                    if (bias != 0) {
                        acc += bias[oc];
                    }
                    /* TFLite's int32 scratch and bias addition wrap: the exact sum modulo 2^32 */
                    int32_t scaled = edgesdk_requantize16(acc, EDGESDK_ACC32, p->rounding, p->multiplier[oc],
                                                          p->shift[oc], 0.0);
                    scaled += p->output_offset;
                    *output++ = (int8_t)edgesdk_clamp_i32(scaled, p->act_min, p->act_max);
                }
            }
        }
    }
}

void edgesdk_transpose_conv_s16(const edgesdk_transpose_conv_params *p, const int16_t *input, const int8_t *filter,
                                const int64_t *bias, int16_t *output)
{
    const edgesdk_transpose_conv_params params = *p;
    p = &params;
    const int32_t filter_size = p->filter_h * p->filter_w * p->in_c;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const span sy = reaching(oy, p->pad_top, p->stride_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const span sx = reaching(ox, p->pad_left, p->stride_w, p->filter_w, p->in_w);
                for (int32_t oc = 0; oc < p->out_c; oc++) {
                    const int8_t *w_oc = filter + oc * filter_size;
                    int32_t sum32 = 0;
                    int64_t sum64 = 0;
                    for (int32_t iy = sy.first; iy < sy.last; iy++) {
                        const int32_t fy = oy + p->pad_top - iy * p->stride_h;
                        for (int32_t ix = sx.first; ix < sx.last; ix++) {
                            const int32_t fx = ox + p->pad_left - ix * p->stride_w;
                            const int16_t *x = in_batch + (iy * p->in_w + ix) * p->in_c;
                            const int8_t *w = w_oc + (fy * p->filter_w + fx) * p->in_c;
                            if (p->sum32) {
                                sum32 += edgesdk_dot_s16_s8(x, w, p->in_c);
                            } else {
                                sum64 += edgesdk_dot_s16_s8_wide(x, w, p->in_c);
                            }
                        }
                    }
                    int32_t scaled;
                    if (p->sum32) {
                        const int32_t acc = edgesdk_add_bias32(sum32, bias, oc);
                        scaled = p->fast_requant
                                     ? edgesdk_mbqm64_fast(acc, p->fast_multiplier[oc], p->fast_shift[oc])
                                     : edgesdk_requantize16_small(acc, p->accumulator, p->rounding,
                                                                  p->multiplier[oc], p->shift[oc]);
                    } else {
                        const int64_t acc = sum64 + (bias != 0 ? bias[oc] : 0);
                        scaled = edgesdk_requantize16(acc, p->accumulator, p->rounding, p->multiplier[oc],
                                                      p->shift[oc], 0.0);
                    }
                    *output++ = edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
                }
            }
        }
    }
}
