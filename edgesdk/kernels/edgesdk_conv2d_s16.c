/*
 * edgesdk_conv2d_s16.c - int16 CONV_2D (16x8), bit-exact with TFLite's reference_integer_ops::ConvPerChannel
 * for int16 input: acc = bias + sum(w * x) over the taps inside the image (no offsets: int16 zero points are
 * 0), requantized per output channel in the accumulator mode of edgesdk_layer16.h, clamped, no output offset.
 */
#include "edgesdk_conv2d.h"

#include "edgesdk_layer16.h"
#include "edgesdk_window.h"

/* acc[j] += sum_i x[i] * w[i * 4 + j], j < 4: one input load feeds the block's four channels. */
static inline void mac_block4(const int16_t *x, const int8_t *w, int32_t n, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
#pragma GCC unroll 2
    for (int32_t i = 0; i < n; i++) {
        const int32_t v = x[i];
        a0 += v * w[0];
        a1 += v * w[1];
        a2 += v * w[2];
        a3 += v * w[3];
        w += EDGESDK_CONV16_BLOCK;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

static inline int16_t conv16_output(const edgesdk_conv2d_s16_params *p, int64_t acc, const int64_t *bias, int32_t oc)
{
    if (bias != 0) {
        acc += bias[oc];
    }
    const int32_t scaled = edgesdk_requantize16(acc, p->accumulator, p->rounding, p->multiplier[oc], p->shift[oc], 0.0);
    return edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
}

/* The same when the compiler proved sum32: sum and bias in int32. */
static inline __attribute__((always_inline)) int16_t conv16_output_small(const edgesdk_conv2d_s16_params *p, int32_t sum, const int64_t *bias,
                                          int32_t oc)
{
    const int32_t acc = edgesdk_add_bias32(sum, bias, oc);
    const int32_t scaled = p->fast_requant
                               ? edgesdk_mbqm64_fast(acc, p->fast_multiplier[oc], p->fast_shift[oc])
                               : edgesdk_requantize16_small(acc, p->accumulator, p->rounding, p->multiplier[oc],
                                                            p->shift[oc]);
    return edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
}

/* acc0[j] += sum_i x0[i] * w[i * 4 + j] and acc1[j] the same over x1, j < 4: each weight load feeds two pixels
 * and each input load four channels (about 3 instructions per MAC instead of 3.6 for one pixel). */
static inline void mac_block4x2(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t n, int32_t *acc0,
                                int32_t *acc1)
{
    int32_t a0 = acc0[0], a1 = acc0[1], a2 = acc0[2], a3 = acc0[3];
    int32_t b0 = acc1[0], b1 = acc1[1], b2 = acc1[2], b3 = acc1[3];
    for (int32_t i = 0; i < n; i++) {
        const int32_t u = x0[i], v = x1[i];
        const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
        a0 += u * w0;
        b0 += v * w0;
        a1 += u * w1;
        b1 += v * w1;
        a2 += u * w2;
        b2 += v * w2;
        a3 += u * w3;
        b3 += v * w3;
        w += EDGESDK_CONV16_BLOCK;
    }
    acc0[0] = a0;
    acc0[1] = a1;
    acc0[2] = a2;
    acc0[3] = a3;
    acc1[0] = b0;
    acc1[1] = b1;
    acc1[2] = b2;
    acc1[3] = b3;
}

/* One output row position of the blocked layout: where its window lies in the input. */
typedef struct {
    const int16_t *in_batch;
    int32_t y0, x0;
    edgesdk_window wy, wx;
} conv16_pixel;

/* The loop head both blocked passes over the pixels share: the batch, row (oy) and column (ox) a pixel is at and where
 * its window lies. always_inline: as plain inline functions they changed GCC's inlining in the passes (more
 * code, other registers); inlined they compile to the very instructions the loops had written out. */
static inline __attribute__((always_inline)) void conv16_at_batch(const edgesdk_conv2d_s16_params *p, conv16_pixel *px,
                                                                  const int16_t *input, int32_t b)
{
    px->in_batch = input + b * p->in_h * p->in_w * p->in_c;
}

static inline __attribute__((always_inline)) void conv16_at_row(const edgesdk_conv2d_s16_params *p, conv16_pixel *px,
                                                                int32_t oy)
{
    px->y0 = oy * p->stride_h - p->pad_top;
    px->wy = edgesdk_window_taps_u32(px->y0, p->dilation_h, p->filter_h, p->in_h);
}

static inline __attribute__((always_inline)) void conv16_at_column(const edgesdk_conv2d_s16_params *p, conv16_pixel *px,
                                                                   int32_t ox)
{
    px->x0 = ox * p->stride_w - p->pad_left;
    px->wx = edgesdk_window_taps_u32(px->x0, p->dilation_w, p->filter_w, p->in_w);
}

/* The R channels after the last full block (R < 4; OHWI, `taps` apart), for one pixel: each input tap is loaded
 * once for the R channels. */
static inline __attribute__((always_inline)) void conv16_rest_r(const edgesdk_conv2d_s16_params *p,
                                                                const conv16_pixel *px, const int8_t *rest,
                                                                int32_t taps, int32_t first_oc, const int64_t *bias,
                                                                int16_t *output, const int R)
{
    const int32_t in_c = p->in_c;
    const int32_t x_step = p->dilation_w * in_c; /* input elements between two taps of a filter row */
    const int32_t row_in = (px->wx.last - px->wx.first) * in_c; /* a row's taps inside the image */
    int32_t a[3] = {0, 0, 0};
    for (int32_t fy = px->wy.first; fy < px->wy.last; fy++) {
        const int16_t *x = px->in_batch + (px->y0 + fy * p->dilation_h) * p->in_w * in_c +
                           (px->x0 + px->wx.first * p->dilation_w) * in_c;
        const int8_t *w = rest + (fy * p->filter_w + px->wx.first) * in_c;
        if (x_step == in_c) { /* no dilation across columns: one run */
            for (int32_t i = 0; i < row_in; i++) {
                const int32_t v = x[i];
#pragma GCC unroll 3
                for (int k = 0; k < R; k++) {
                    a[k] += v * w[k * taps + i];
                }
            }
            continue;
        }
        for (const int8_t *w_end = w + row_in; w != w_end; w += in_c, x += x_step) {
            for (int32_t i = 0; i < in_c; i++) {
                const int32_t v = x[i];
#pragma GCC unroll 3
                for (int k = 0; k < R; k++) {
                    a[k] += v * w[k * taps + i];
                }
            }
        }
    }
#pragma GCC unroll 3
    for (int k = 0; k < R; k++) {
        output[k] = conv16_output_small(p, a[k], bias, first_oc + k);
    }
}

/* The channel after the last full block when one is left (OHWI), for one pixel; two or three run in
 * conv16_rest_pass. */
static inline __attribute__((always_inline)) void conv16_rest(const edgesdk_conv2d_s16_params *p, const conv16_pixel *px, const int8_t *rest, int32_t taps,
                        int32_t first_oc, const int64_t *bias, int16_t *output)
{
    for (int32_t oc = first_oc; oc < p->out_c; oc++) {
        const int8_t *w_oc = rest + (oc - first_oc) * taps;
        int32_t sum = 0;
        for (int32_t fy = px->wy.first; fy < px->wy.last; fy++) {
            const int16_t *x_row = px->in_batch + (px->y0 + fy * p->dilation_h) * p->in_w * p->in_c;
            const int8_t *w_row = w_oc + fy * p->filter_w * p->in_c;
            if (p->dilation_w == 1) { /* the row's taps inside the image are one run */
                const int32_t n = px->wx.last > px->wx.first ? (px->wx.last - px->wx.first) * p->in_c : 0;
                sum += edgesdk_dot_s16_s8(x_row + (px->x0 + px->wx.first) * p->in_c, w_row + px->wx.first * p->in_c,
                                          n);
                continue;
            }
            for (int32_t fx = px->wx.first; fx < px->wx.last; fx++) {
                sum += edgesdk_dot_s16_s8(x_row + (px->x0 + fx * p->dilation_w) * p->in_c, w_row + fx * p->in_c,
                                          p->in_c);
            }
        }
        *output++ = conv16_output_small(p, sum, bias, oc);
    }
}

/* The R channels after the last full blocks of every pixel (a pass of their own, after the blocks: in the blocks'
 * pixel loop their code would cost those loops registers). */
static inline __attribute__((always_inline)) void conv16_rest_pass_r(const edgesdk_conv2d_s16_params *p,
                                                                     const int16_t *input, const int8_t *rest,
                                                                     int32_t taps, int32_t first_oc,
                                                                     const int64_t *bias, int16_t *output,
                                                                     const int R)
{
    for (int32_t b = 0; b < p->batches; b++) {
        conv16_pixel px;
        conv16_at_batch(p, &px, input, b);
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            conv16_at_row(p, &px, oy);
            for (int32_t ox = 0; ox < p->out_w; ox++, output += p->out_c) {
                conv16_at_column(p, &px, ox);
                if (px.wx.last <= px.wx.first) { /* no tap inside the image: the bias alone */
                    for (int k = 0; k < R; k++) {
                        output[first_oc + k] = conv16_output_small(p, 0, bias, first_oc + k);
                    }
                    continue;
                }
                conv16_rest_r(p, &px, rest, taps, first_oc, bias, output + first_oc, R);
            }
        }
    }
}

static __attribute__((noinline)) void conv16_rest_pass(const edgesdk_conv2d_s16_params *p, const int16_t *input,
                                                       const int8_t *rest, int32_t taps, int32_t first_oc,
                                                       const int64_t *bias, int16_t *output)
{
    switch (p->out_c - first_oc) {
    case 3:
        conv16_rest_pass_r(p, input, rest, taps, first_oc, bias, output, 3);
        break;
    case 2:
        conv16_rest_pass_r(p, input, rest, taps, first_oc, bias, output, 2);
        break;
    default:
        break;
    }
}

/* The full blocks of one pixel. */
static void conv16_blocks(const edgesdk_conv2d_s16_params *p, const conv16_pixel *px, const int8_t *filter,
                          int32_t taps, int32_t blocks, const int64_t *bias, int16_t *output)
{
    const int32_t taps_x = px->wx.last > px->wx.first ? px->wx.last - px->wx.first : 0;
    for (int32_t blk = 0, oc = 0; blk < blocks; blk++, oc += EDGESDK_CONV16_BLOCK) {
        const int8_t *w_blk = filter + blk * EDGESDK_CONV16_BLOCK * taps;
        int32_t acc[EDGESDK_CONV16_BLOCK] = {0, 0, 0, 0};
        for (int32_t fy = px->wy.first; fy < px->wy.last; fy++) {
            const int16_t *x_row = px->in_batch + (px->y0 + fy * p->dilation_h) * p->in_w * p->in_c;
            const int32_t tap_row = fy * p->filter_w * p->in_c;
            if (p->dilation_w == 1) {
                mac_block4(x_row + (px->x0 + px->wx.first) * p->in_c,
                           w_blk + (tap_row + px->wx.first * p->in_c) * EDGESDK_CONV16_BLOCK, taps_x * p->in_c, acc);
                continue;
            }
            for (int32_t fx = px->wx.first; fx < px->wx.last; fx++) {
                mac_block4(x_row + (px->x0 + fx * p->dilation_w) * p->in_c,
                           w_blk + (tap_row + fx * p->in_c) * EDGESDK_CONV16_BLOCK, p->in_c, acc);
            }
        }
        for (int32_t j = 0; j < EDGESDK_CONV16_BLOCK; j++) {
            *output++ = conv16_output_small(p, acc[j], bias, oc + j);
        }
    }
}

/* The full blocks of two pixels of one output row whose windows cover the same taps (no dilation across
 * columns): out0 and out1 are their outputs. */
static void conv16_blocks_pair(const edgesdk_conv2d_s16_params *p, const conv16_pixel *px, const int8_t *filter,
                               int32_t taps, int32_t blocks, const int64_t *bias, int16_t *out0, int16_t *out1)
{
    const int32_t run = (px->wx.last - px->wx.first) * p->in_c;
    const int32_t step = p->stride_w * p->in_c; /* the second pixel's window, in input elements */
    for (int32_t blk = 0, oc = 0; blk < blocks; blk++, oc += EDGESDK_CONV16_BLOCK) {
        const int8_t *w_blk = filter + blk * EDGESDK_CONV16_BLOCK * taps;
        int32_t acc0[EDGESDK_CONV16_BLOCK] = {0, 0, 0, 0};
        int32_t acc1[EDGESDK_CONV16_BLOCK] = {0, 0, 0, 0};
        for (int32_t fy = px->wy.first; fy < px->wy.last; fy++) {
            const int16_t *x = px->in_batch + (px->y0 + fy * p->dilation_h) * p->in_w * p->in_c +
                               (px->x0 + px->wx.first) * p->in_c;
            const int32_t tap = fy * p->filter_w * p->in_c + px->wx.first * p->in_c;
            mac_block4x2(x, x + step, w_blk + tap * EDGESDK_CONV16_BLOCK, run, acc0, acc1);
        }
        for (int32_t j = 0; j < EDGESDK_CONV16_BLOCK; j++) {
            *out0++ = conv16_output_small(p, acc0[j], bias, oc + j);
            *out1++ = conv16_output_small(p, acc1[j], bias, oc + j);
        }
    }
}

/* The blocked layout (edgesdk_conv2d.h): no groups, int32 partial sums. Without dilation across columns, two
 * neighbouring pixels whose windows cover the same taps (every pair away from the padded edges) run together. */
static void conv2d_s16_blocked(const edgesdk_conv2d_s16_params *p, const int16_t *input, const int8_t *filter,
                               const int64_t *bias, int16_t *output, int32_t rest_in_loop)
{
    const int32_t taps = p->filter_h * p->filter_w * p->in_c;
    const int32_t blocks = p->out_c / EDGESDK_CONV16_BLOCK;
    const int8_t *rest = filter + blocks * EDGESDK_CONV16_BLOCK * taps; /* the remaining channels, OHWI */
    const int32_t first_rest = rest_in_loop ? blocks * EDGESDK_CONV16_BLOCK : p->out_c;
    for (int32_t b = 0; b < p->batches; b++) {
        conv16_pixel px;
        conv16_at_batch(p, &px, input, b);
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            conv16_at_row(p, &px, oy);
            int32_t ox = 0;
            while (ox < p->out_w) {
                conv16_at_column(p, &px, ox);
                if (p->dilation_w == 1 && blocks > 0 && ox + 1 < p->out_w && px.wx.last > px.wx.first) {
                    const edgesdk_window next = edgesdk_window_taps_u32(px.x0 + p->stride_w, 1, p->filter_w, p->in_w);
                    if (next.first == px.wx.first && next.last == px.wx.last) {
                        conv16_blocks_pair(p, &px, filter, taps, blocks, bias, output, output + p->out_c);
                        conv16_rest(p, &px, rest, taps, first_rest, bias, output + first_rest);
                        px.x0 += p->stride_w;
                        conv16_rest(p, &px, rest, taps, first_rest, bias, output + p->out_c + first_rest);
                        output += 2 * p->out_c;
                        ox += 2;
                        continue;
                    }
                }
                conv16_blocks(p, &px, filter, taps, blocks, bias, output);
                conv16_rest(p, &px, rest, taps, first_rest, bias, output + first_rest);
                output += p->out_c;
                ox++;
            }
        }
    }
}

void edgesdk_conv2d_s16(const edgesdk_conv2d_s16_params *p, const int16_t *input, const int8_t *filter,
                        const int64_t *bias, int16_t *output)
{
    /* A local copy: output stores may alias *p as far as C knows; a copy keeps the parameters in registers. */
    const edgesdk_conv2d_s16_params params = *p;
    p = &params;
    if (p->blocked) {
        /* Two or three channels after the last block: a pass of their own (conv16_rest_pass), after the blocks */
        const int32_t first_rest = p->out_c / EDGESDK_CONV16_BLOCK * EDGESDK_CONV16_BLOCK;
        const int32_t rest_pass = p->out_c - first_rest >= 2;
        if (first_rest > 0 || !rest_pass) {
            conv2d_s16_blocked(p, input, filter, bias, output, !rest_pass);
        }
        if (rest_pass) {
            const int8_t *rest = filter + first_rest * p->filter_h * p->filter_w * p->in_c;
            conv16_rest_pass(p, input, rest, p->filter_h * p->filter_w * p->in_c, first_rest, bias, output);
        }
        return;
    }
    const int32_t groups = p->in_c / p->filter_in_c;
    const int32_t filters_per_group = p->out_c / groups;
    const int32_t filter_size = p->filter_h * p->filter_w * p->filter_in_c;
    /* Without dilation or groups, the taps of one filter row inside the image are one contiguous run. */
    const int32_t row_runs = p->dilation_w == 1 && groups == 1;

    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            const edgesdk_window wy = edgesdk_window_taps_u32(y0, p->dilation_h, p->filter_h, p->in_h);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                const edgesdk_window wx = edgesdk_window_taps_u32(x0, p->dilation_w, p->filter_w, p->in_w);
                const int32_t taps_x = wx.last > wx.first ? wx.last - wx.first : 0;
                for (int32_t oc = 0; oc < p->out_c; oc++) {
                    const int32_t group = oc / filters_per_group;
                    const int8_t *w_oc = filter + oc * filter_size;
                    int32_t sum32 = 0;
                    int64_t sum64 = 0;
                    for (int32_t fy = wy.first; fy < wy.last; fy++) {
                        const int32_t iy = y0 + fy * p->dilation_h;
                        const int16_t *x_row = in_batch + iy * p->in_w * p->in_c + group * p->filter_in_c;
                        const int8_t *w_row = w_oc + fy * p->filter_w * p->filter_in_c;
                        if (row_runs) {
                            const int16_t *x = x_row + (x0 + wx.first) * p->in_c;
                            const int8_t *w = w_row + wx.first * p->filter_in_c;
                            if (p->sum32) {
                                sum32 += edgesdk_dot_s16_s8(x, w, taps_x * p->in_c);
                            } else {
                                sum64 += edgesdk_dot_s16_s8_wide(x, w, taps_x * p->in_c);
                            }
                            continue;
                        }
                        for (int32_t fx = wx.first; fx < wx.last; fx++) {
                            const int16_t *x = x_row + (x0 + fx * p->dilation_w) * p->in_c;
                            const int8_t *w = w_row + fx * p->filter_in_c;
                            if (p->sum32) {
                                sum32 += edgesdk_dot_s16_s8(x, w, p->filter_in_c);
                            } else {
                                sum64 += edgesdk_dot_s16_s8_wide(x, w, p->filter_in_c);
                            }
                        }
                    }
                    *output++ = p->sum32 ? conv16_output_small(p, sum32, bias, oc) : conv16_output(p, sum64, bias, oc);
                }
            }
        }
    }
}
