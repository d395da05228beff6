/*
 * edgesdk_depthwise_conv2d_sliding.c - the fast int8 3x3 DEPTHWISE_CONV_2D (stride 1 or 2): same results as
 * the reference loops in edgesdk_depthwise_conv2d.c, for the layers the compiler qualifies (conditions and
 * data layout in edgesdk_depthwise_conv2d.h).
 *
 * One channel of one output row at a time: its 9 weights, bias and requantization constants stay in
 * registers while the window slides along the row. Each input column (3 values, one per filter row) is
 * loaded once and added to the outputs it belongs to: with stride 1 a column is tap 2 of the output it
 * completes, tap 1 of the next and tap 0 of the one after, so three running sums rotate (the loop is
 * unrolled three times so that they rotate by renaming, not by moves).
 *
 * Padding: columns outside the image read as the input zero point, which the folded bias expects
 * (bias' = bias + input_offset * sum(w), input_offset = -zero_point, so a padded tap adds 0 to the true
 * accumulator, as in TFLite). Filter rows outside the image get zero weights instead and their
 * zero_point * w terms go into that row's bias.
 */
#include "edgesdk_depthwise_conv2d.h"

#include "edgesdk_mac.h" /* EDGESDK_ALWAYS_INLINE */
#include "edgesdk_requant.h"

typedef struct {
    int32_t in_w, channels, out_w, pad_left;
    int32_t zero_point, output_offset, act_min, act_max;
} dw_geometry;

/* One channel of one output row: the input rows of the window at this channel (column 0), the 9 weights
 * [fy][fx] with the rows outside the image zeroed, the bias with their correction, the requantization. */
typedef struct {
    const int8_t *rows[3];
    int32_t w[9];
    int32_t bias, multiplier, shift;
} dw_pass;

/* The column at input x `ix` into x0..x2 (zero point outside the image); q0..q2 advance over the valid
 * columns, which come in one contiguous run. */
#define FETCH_COLUMN()                                                                                  \
    do {                                                                                                \
        if ((uint32_t)ix < (uint32_t)in_w) {                                                            \
            x0 = *q0;                                                                                   \
            x1 = *q1;                                                                                   \
            x2 = *q2;                                                                                   \
            q0 += channels;                                                                             \
            q1 += channels;                                                                             \
            q2 += channels;                                                                             \
        } else {                                                                                        \
            x0 = x1 = x2 = zero_point;                                                                  \
        }                                                                                               \
        ix++;                                                                                           \
    } while (0)

/* The current column times filter column j. */
#define TAPS(j) (w[(j)] * x0 + w[3 + (j)] * x1 + w[6 + (j)] * x2)

/* Requantize and store one output, move to the next output pixel; leave the loop after the last one. */
#define STORE(acc)                                                                                      \
    do {                                                                                                \
        *out = edgesdk_requant_output(edgesdk_requant_right((acc), multiplier, shift), output_offset,   \
                                      act_min, act_max);                                                \
        out += channels;                                                                                \
        if (out == end) {                                                                               \
            return;                                                                                     \
        }                                                                                               \
    } while (0)

#define PASS_LOCALS                                                                                     \
    const int32_t in_w = g->in_w, channels = g->channels, zero_point = g->zero_point;                   \
    const int32_t output_offset = g->output_offset, act_min = g->act_min, act_max = g->act_max;         \
    const int32_t bias = s->bias, multiplier = s->multiplier, shift = s->shift;                         \
    int32_t w[9];                                                                                       \
    _Pragma("GCC unroll 9") for (int k = 0; k < 9; k++) { w[k] = s->w[k]; }                             \
    const int8_t *q0 = s->rows[0], *q1 = s->rows[1], *q2 = s->rows[2];                                  \
    int8_t *const end = out + g->out_w * channels;                                                      \
    int32_t ix = -g->pad_left;                                                                          \
    int32_t x0, x1, x2

static EDGESDK_ALWAYS_INLINE void row_stride1(const dw_geometry *g, const dw_pass *s, int8_t *out)
{
    PASS_LOCALS;
    FETCH_COLUMN();
    int32_t a = bias + TAPS(0);
    FETCH_COLUMN();
    a += TAPS(1);
    int32_t b = bias + TAPS(0);
    int32_t c;
    for (;;) {
        FETCH_COLUMN();
        c = bias + TAPS(0);
        b += TAPS(1);
        STORE(a + TAPS(2));
        FETCH_COLUMN();
        a = bias + TAPS(0);
        c += TAPS(1);
        STORE(b + TAPS(2));
        FETCH_COLUMN();
        b = bias + TAPS(0);
        a += TAPS(1);
        STORE(c + TAPS(2));
    }
}

static EDGESDK_ALWAYS_INLINE void row_stride2(const dw_geometry *g, const dw_pass *s, int8_t *out)
{
    PASS_LOCALS;
    FETCH_COLUMN();
    int32_t a = bias + TAPS(0);
    int32_t b;
    for (;;) {
        FETCH_COLUMN();
        a += TAPS(1);
        FETCH_COLUMN();
        b = bias + TAPS(0);
        STORE(a + TAPS(2));
        FETCH_COLUMN();
        b += TAPS(1);
        FETCH_COLUMN();
        a = bias + TAPS(0);
        STORE(b + TAPS(2));
    }
}

/* Every channel of output row oy. rows[r]: input row r of the window at channel 0, or NULL outside the image. */
static void output_row(const edgesdk_depthwise_conv2d_params *q, const dw_geometry *g, const int8_t *const rows[3],
                       const int8_t *filter, const int32_t *bias, int8_t *out_row)
{
    const int8_t *const any_row = rows[0] ? rows[0] : rows[1] ? rows[1] : rows[2];
    for (int32_t c = 0; c < g->channels; c++, filter += 9) {
        dw_pass s;
        s.bias = bias[c];
        s.multiplier = q->multiplier[c];
        s.shift = q->shift[c];
#pragma GCC unroll 3
        for (int r = 0; r < 3; r++) {
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++) {
                s.w[3 * r + j] = filter[3 * r + j];
            }
            s.rows[r] = (rows[r] ? rows[r] : any_row) + c;
            if (rows[r] == 0) { /* outside the image: zero weights, the zero_point * w terms go into the bias */
                s.bias += g->zero_point * (s.w[3 * r] + s.w[3 * r + 1] + s.w[3 * r + 2]);
                s.w[3 * r] = s.w[3 * r + 1] = s.w[3 * r + 2] = 0;
            }
        }
        if (q->stride_w == 1) {
            row_stride1(g, &s, out_row + c);
        } else {
            row_stride2(g, &s, out_row + c);
        }
    }
}

void edgesdk_depthwise_conv2d_s8_sliding(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                         const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const edgesdk_depthwise_conv2d_params q = *p; /* a copy: int8 stores may alias *p as far as C knows */
    const dw_geometry g = {q.in_w, q.in_c, q.out_w, q.pad_left, -q.input_offset, q.output_offset, q.act_min,
                           q.act_max};
    const int32_t row_bytes = q.in_w * q.in_c;
    for (int32_t b = 0; b < q.batches; b++) {
        const int8_t *in = input + b * q.in_h * row_bytes;
        int8_t *out_row = output + b * q.out_h * q.out_w * q.out_c;
        for (int32_t oy = 0; oy < q.out_h; oy++, out_row += q.out_w * q.out_c) {
            const int8_t *rows[3];
            for (int r = 0; r < 3; r++) {
                const int32_t iy = oy * q.stride_h - q.pad_top + r;
                rows[r] = iy >= 0 && iy < q.in_h ? in + iy * row_bytes : 0;
            }
            output_row(&q, &g, rows, filter, bias, out_row);
        }
    }
}
