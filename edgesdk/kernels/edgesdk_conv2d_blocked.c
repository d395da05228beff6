/*
 * edgesdk_conv2d_blocked.c - the fast int8 CONV_2D: same results as edgesdk_conv2d_s8's reference loops,
 * for the layers the compiler qualifies (see edgesdk_conv2d.h for the conditions and the data layout).
 *
 * Work is split by output pixel:
 *   - interior pixel pairs (both filter windows inside the image): 2 pixels x 8 channels per register block,
 *     reading each filter row's taps straight from the input (filter_w * in_c contiguous bytes per row);
 *   - every other pixel (image border, or an odd one out): its window is first copied to a small patch on
 *     the stack with the input zero point in place of padding, then 1 pixel x 8 channels over the patch.
 * Padding contributes w * zero_point, which is exactly what the folded bias expects: with
 * bias' = bias + input_offset * sum(w) and input_offset = -zero_point, a padded tap adds
 * w * zero_point + input_offset * w = 0 to the true accumulator, as in TFLite.
 */
#include "edgesdk_conv2d.h"

#include "edgesdk_mac.h"
#include "edgesdk_requant.h"

enum { BLOCK = 8 }; /* output channels per register block: the filter's packed layout */

typedef struct {
    edgesdk_conv2d_params p;
    const int8_t *filter;
    const int32_t *bias;
    int32_t taps;      /* filter_h * filter_w * in_c: the length of one output's dot product */
    int32_t run;       /* filter_w * in_c: one filter row, contiguous in the input and in the filter */
    int32_t row_bytes; /* in_w * in_c */
    int32_t blocks;    /* out_c / BLOCK */
} conv_plan;

/* The requantization of one call, in locals: int8 output stores may alias anything reached through a
 * pointer as far as C knows, and would otherwise force these to be reloaded for every output. */
typedef struct {
    const int32_t *multiplier, *shift;
    int32_t offset, act_min, act_max;
} output_stage;

static EDGESDK_ALWAYS_INLINE output_stage output_stage_of(const conv_plan *c)
{
    const output_stage o = {c->p.multiplier, c->p.shift, c->p.output_offset, c->p.act_min, c->p.act_max};
    return o;
}

static EDGESDK_ALWAYS_INLINE int8_t requant_one(output_stage o, int32_t acc, int32_t oc)
{
    const int32_t v = edgesdk_requant_right(acc, o.multiplier[oc], o.shift[oc]);
    return edgesdk_requant_output(v, o.offset, o.act_min, o.act_max);
}

/* Requantize the 8 accumulators of channels oc0.. and store them at out[oc0..]. */
static EDGESDK_ALWAYS_INLINE void store_block(output_stage o, const int32_t acc[BLOCK], int32_t oc0, int8_t *out)
{
#pragma GCC unroll 8
    for (int n = 0; n < BLOCK; n++) {
        out[oc0 + n] = requant_one(o, acc[n], oc0 + n);
    }
}

/* Two horizontally adjacent output pixels whose windows are inside the input: x0 is pixel 0's window
 * start in filter row 0, pixel 1's is `step` bytes further. */
static void pixel_pair(const conv_plan *c, const int8_t *x0, int32_t step, int8_t *out0, int8_t *out1)
{
    const output_stage o = output_stage_of(c);
    const int32_t *const bias = c->bias;
    const int32_t filter_h = c->p.filter_h, row_bytes = c->row_bytes, run = c->run, out_c = c->p.out_c;
    const int8_t *w = c->filter;
    int32_t oc = 0;
    for (int32_t b = 0; b < c->blocks; b++, oc += BLOCK) {
        int32_t acc[2][BLOCK];
#pragma GCC unroll 8
        for (int n = 0; n < BLOCK; n++) {
            acc[0][n] = acc[1][n] = bias[oc + n];
        }
        const int8_t *row = x0;
        for (int32_t fy = 0; fy < filter_h; fy++, row += row_bytes) {
            w = edgesdk_mac_p2n8(acc, row, row + step, w, run);
        }
        store_block(o, acc[0], oc, out0);
        store_block(o, acc[1], oc, out1);
    }
    for (; oc < out_c; oc++) {
        int32_t acc[2][1] = {{bias[oc]}, {bias[oc]}};
        const int8_t *row = x0;
        for (int32_t fy = 0; fy < filter_h; fy++, row += row_bytes) {
            w = edgesdk_mac_p2n1(acc, row, row + step, w, run);
        }
        out0[oc] = requant_one(o, acc[0][0], oc);
        out1[oc] = requant_one(o, acc[1][0], oc);
    }
}

/* One output pixel from its window, `taps` contiguous bytes (a patch, or the input itself). */
static void pixel_single(const conv_plan *c, const int8_t *window, int8_t *out)
{
    const output_stage o = output_stage_of(c);
    const int32_t *const bias = c->bias;
    const int32_t taps = c->taps, out_c = c->p.out_c;
    const int8_t *w = c->filter;
    int32_t oc = 0;
    for (int32_t b = 0; b < c->blocks; b++, oc += BLOCK) {
        int32_t acc[1][BLOCK];
#pragma GCC unroll 8
        for (int n = 0; n < BLOCK; n++) {
            acc[0][n] = bias[oc + n];
        }
        w = edgesdk_mac_p1n8(acc, window, w, taps);
        store_block(o, acc[0], oc, out);
    }
    for (; oc < out_c; oc++) {
        int32_t acc[1][1] = {{bias[oc]}};
        w = edgesdk_mac_p1n1(acc, window, w, taps);
        out[oc] = requant_one(o, acc[0][0], oc);
    }
}

/* Copy the window at input (y0, x0) into patch, the input zero point where it lies outside the image. */
static void fill_patch(const conv_plan *c, const int8_t *in, int32_t y0, int32_t x0, int8_t *patch)
{
    const int8_t zero_point = (int8_t)-c->p.input_offset;
    const int32_t channels = c->p.in_c;
    for (int32_t fy = 0; fy < c->p.filter_h; fy++) {
        const int32_t iy = y0 + fy;
        for (int32_t fx = 0; fx < c->p.filter_w; fx++) {
            const int32_t ix = x0 + fx;
            if (iy >= 0 && iy < c->p.in_h && ix >= 0 && ix < c->p.in_w) {
                const int8_t *src = in + (iy * c->p.in_w + ix) * channels;
                for (int32_t ch = 0; ch < channels; ch++) {
                    *patch++ = src[ch];
                }
            } else {
                for (int32_t ch = 0; ch < channels; ch++) {
                    *patch++ = zero_point;
                }
            }
        }
    }
}

void edgesdk_conv2d_s8_blocked(const edgesdk_conv2d_params *p, const int8_t *input, const int8_t *filter,
                               const int32_t *bias, int8_t *output)
{
    conv_plan c;
    c.p = *p; /* a copy: int8 stores may alias *p as far as C knows */
    c.filter = filter;
    c.bias = bias;
    c.run = p->filter_w * p->in_c;
    c.taps = p->filter_h * c.run;
    c.row_bytes = p->in_w * p->in_c;
    c.blocks = p->out_c / BLOCK;
    const int32_t pixel_step = p->stride_w * p->in_c; /* between horizontally adjacent windows */
    int8_t patch[EDGESDK_CONV_PATCH_MAX];

    for (int32_t b = 0; b < c.p.batches; b++) {
        const int8_t *in = input + b * c.p.in_h * c.row_bytes;
        for (int32_t oy = 0; oy < c.p.out_h; oy++) {
            const int32_t y0 = oy * c.p.stride_h - c.p.pad_top;
            const int rows_inside = y0 >= 0 && y0 + c.p.filter_h <= c.p.in_h;
            int32_t ox = 0;
            while (ox < c.p.out_w) {
                const int32_t x0 = ox * c.p.stride_w - c.p.pad_left;
                int8_t *out = output + ((b * c.p.out_h + oy) * c.p.out_w + ox) * c.p.out_c;
                if (rows_inside && x0 >= 0 && ox + 1 < c.p.out_w && x0 + c.p.stride_w + c.p.filter_w <= c.p.in_w) {
                    pixel_pair(&c, in + y0 * c.row_bytes + x0 * c.p.in_c, pixel_step, out, out + c.p.out_c);
                    ox += 2;
                    continue;
                }
                if (rows_inside && c.p.filter_h == 1 && x0 >= 0 && x0 + c.p.filter_w <= c.p.in_w) {
                    pixel_single(&c, in + y0 * c.row_bytes + x0 * c.p.in_c, out); /* window is contiguous */
                } else {
                    fill_patch(&c, in, y0, x0, patch);
                    pixel_single(&c, patch, out);
                }
                ox += 1;
            }
        }
    }
}
