/*
 * edgesdk_depthwise_conv2d_sliding.c - the fast int8 3x3 DEPTHWISE_CONV_2D (stride 1 or 2): same results as
 * the reference loops in edgesdk_depthwise_conv2d.c, for the layers the compiler qualifies (conditions and
 * data layout in edgesdk_depthwise_conv2d.h).
 *
 * One channel of one output row at a time: its 9 weights, bias and requantization constants (one record,
 * edgesdk_dw_channel) stay in registers while the window slides along the row. Each input column (3 values,
 * one per filter row) is loaded once and added to the outputs it belongs to: with stride 1 a column is tap 2
 * of the output it completes, tap 1 of the next and tap 0 of the one after, so three running sums rotate (the
 * loop is unrolled three times so that they rotate by renaming, not by moves; stride 2: two columns per
 * output, unrolled twice). Per output that is 3 (stride 2: 6) loads, 9 multiplies, 9 adds, the 8-instruction
 * requantization (edgesdk_requant_rk), the clamp and the store.
 *
 * Padding (at most one column on each side): a column outside the image would hold the input zero point,
 * which the folded bias expects (bias' = bias + input_offset * sum(w), input_offset = -zero_point, so a padded
 * tap adds 0 to the true accumulator, as in TFLite); its taps are the record's constants z0 (left column, tap
 * 0 of the first output) and z2 (right column, tap 2 of the last), so no loop tests where a column lies. The
 * kernel always reads three image rows; on a row whose window reaches past the top or bottom, the weights are
 * moved to the rows they multiply and a filter row outside the image gets zero weights, its zero_point * w
 * terms going into the bias (edge_row).
 */
#pragma GCC optimize("sched-pressure")
#include "edgesdk_depthwise_conv2d.h"

#include "edgesdk_mac.h" /* EDGESDK_ALWAYS_INLINE */
#include "edgesdk_requant.h"

typedef struct {
    int32_t channels, row_bytes;
    int32_t pad_left, pad_right; /* 0 or 1 */
    int32_t body_bytes;          /* output bytes of the outputs before a padded right column */
    int32_t zero_point, act_min, act_max;
    int32_t relu; /* act_min >= output offset: the clamp absorbs the rounding correction of negative sums */
} dw_geometry;

/* The next column inside the image, into x0..x2. The empty asm keeps the column pointer opaque, so that GCC
 * does not derive a pointer per unrolled column (which needs more registers than RV32 has). */
#define COLUMN()                                                                                        \
    do {                                                                                                \
        const int8_t *r_ = q;                                                                           \
        x0 = *r_;                                                                                       \
        r_ += row_bytes;                                                                                \
        x1 = *r_;                                                                                       \
        r_ += row_bytes;                                                                                \
        x2 = *r_;                                                                                       \
        q += channels;                                                                                  \
        __asm__("" : "+r"(q));                                                                          \
    } while (0)

/* The current column times filter column j. */
#define TAPS(j) (w[(j)] * x0 + w[3 + (j)] * x1 + w[6 + (j)] * x2)

/* Requantize and store one output and move to the next output pixel (RELU: the row function's parameter). */
#define STORE(acc)                                                                                      \
    do {                                                                                                \
        const int32_t v_ = RELU ? edgesdk_requant_rk_relu((acc), m2, r, big_k)                          \
                                : edgesdk_requant_rk((acc), m2, r, big_k);                              \
        *out = edgesdk_clamp_s8(v_, act_min, act_max);                                                  \
        out += channels;                                                                                \
        __asm__("" : "+r"(out));                                                                        \
    } while (0)

#define CHANNEL_LOCALS                                                                                  \
    const int32_t channels = g->channels, row_bytes = g->row_bytes;                                     \
    const int32_t act_min = g->act_min, act_max = g->act_max;                                           \
    const int32_t bias = rec->bias, r = rec->r, big_k = rec->k;                                         \
    const uint32_t m2 = rec->m2;                                                                        \
    int32_t w[9];                                                                                       \
    _Pragma("GCC unroll 9") for (int k_ = 0; k_ < 9; k_++) { w[k_] = rec->w[k_]; }                      \
    const int8_t *q = row0;                                                                             \
    int8_t *const body_end = out + g->body_bytes;                                                       \
    int32_t x0, x1, x2

/* Stride 1: output ox reads columns ox - pad_left + {0, 1, 2}. Before column ox - pad_left + 2, `a` holds
 * output ox's sum of taps 0 and 1, `b` output ox + 1's tap 0. */
static EDGESDK_ALWAYS_INLINE void row_stride1(const dw_geometry *g, const edgesdk_dw_channel *rec,
                                              const int8_t *row0, int8_t *out, const int RELU)
{
    CHANNEL_LOCALS;
    int32_t a, b, c;
    if (g->pad_left) {
        a = bias + rec->z0;
    } else {
        COLUMN();
        a = bias + TAPS(0);
    }
    COLUMN();
    a += TAPS(1);
    b = bias + TAPS(0);
    if (out != body_end) {
        for (;;) {
            COLUMN();
            c = bias + TAPS(0);
            b += TAPS(1);
            STORE(a + TAPS(2));
            if (out == body_end) {
                a = b;
                break;
            }
            COLUMN();
            a = bias + TAPS(0);
            c += TAPS(1);
            STORE(b + TAPS(2));
            if (out == body_end) {
                a = c;
                break;
            }
            COLUMN();
            b = bias + TAPS(0);
            a += TAPS(1);
            STORE(c + TAPS(2));
            if (out == body_end) {
                break;
            }
        }
    }
    if (g->pad_right) { /* the last output: its third column is padding */
        STORE(a + rec->z2);
    }
}

/* Stride 2: output ox reads columns 2 * ox - pad_left + {0, 1, 2}; the last is tap 0 of output ox + 1.
 * Before column 2 * ox - pad_left + 1, `b` holds output ox's tap 0. */
static EDGESDK_ALWAYS_INLINE void row_stride2(const dw_geometry *g, const edgesdk_dw_channel *rec,
                                              const int8_t *row0, int8_t *out, const int RELU)
{
    CHANNEL_LOCALS;
    int32_t a, b, c;
    if (g->pad_left) {
        b = bias + rec->z0;
    } else {
        COLUMN();
        b = bias + TAPS(0);
    }
    if (out != body_end) {
        for (;;) {
            COLUMN();
            a = b + TAPS(1);
            COLUMN();
            c = bias + TAPS(0);
            STORE(a + TAPS(2));
            if (out == body_end) {
                b = c;
                break;
            }
            COLUMN();
            a = c + TAPS(1);
            COLUMN();
            b = bias + TAPS(0);
            STORE(a + TAPS(2));
            if (out == body_end) {
                break;
            }
        }
    }
    if (g->pad_right) { /* the last output: its middle column is inside the image, its third is padding */
        COLUMN();
        a = b + TAPS(1);
        STORE(a + rec->z2);
    }
}

/* `count` channels of one output row, from the channel at row0 / out on, with records rec[0..count). */
static void run_channels(const dw_geometry *g, int32_t stride, const edgesdk_dw_channel *rec, int32_t count,
                         const int8_t *row0, int8_t *out)
{
    const edgesdk_dw_channel *const rec_end = rec + count;
    if (stride == 1 && g->relu) {
        for (; rec != rec_end; rec++, row0++, out++) {
            row_stride1(g, rec, row0, out, 1);
        }
    } else if (stride == 1) {
        for (; rec != rec_end; rec++, row0++, out++) {
            row_stride1(g, rec, row0, out, 0);
        }
    } else {
        for (; rec != rec_end; rec++, row0++, out++) {
            row_stride2(g, rec, row0, out, 0);
        }
    }
}

enum { EDGE_CHUNK = 16 }; /* channels whose adjusted records an edge row builds at a time (on the stack) */

/* An output row whose window starts at input row iy0 outside [0, in_h - 3]: the loaded rows are base..base+2;
 * filter row fy multiplies loaded row iy0 + fy - base, or nothing (bias correction) outside the image. */
static void edge_row(const dw_geometry *g, int32_t stride, const edgesdk_dw_channel *rec, int32_t iy0, int32_t base,
                     int32_t in_h, const int8_t *row0, int8_t *out)
{
    edgesdk_dw_channel adjusted[EDGE_CHUNK];
    for (int32_t c0 = 0; c0 < g->channels; c0 += EDGE_CHUNK) {
        const int32_t count = g->channels - c0 < EDGE_CHUNK ? g->channels - c0 : EDGE_CHUNK;
        for (int32_t i = 0; i < count; i++) {
            const edgesdk_dw_channel *src = &rec[c0 + i];
            edgesdk_dw_channel *dst = &adjusted[i];
            *dst = *src;
            dst->z0 = dst->z2 = 0;
            for (int32_t t = 0; t < 9; t++) {
                dst->w[t] = 0;
            }
            for (int32_t fy = 0; fy < 3; fy++) {
                const int8_t *wr = &src->w[3 * fy];
                const int32_t iy = iy0 + fy;
                if (iy < 0 || iy >= in_h) {
                    dst->bias += g->zero_point * (wr[0] + wr[1] + wr[2]);
                    continue;
                }
                dst->z0 += g->zero_point * wr[0];
                dst->z2 += g->zero_point * wr[2];
                for (int32_t j = 0; j < 3; j++) {
                    dst->w[3 * (iy - base) + j] = wr[j];
                }
            }
        }
        run_channels(g, stride, adjusted, count, row0 + c0, out + c0);
    }
}

void edgesdk_depthwise_conv2d_s8_sliding(const edgesdk_depthwise_conv2d_params *p, const int8_t *input,
                                         const edgesdk_dw_channel *channels, int8_t *output)
{
    const edgesdk_depthwise_conv2d_params q = *p; /* a copy: int8 stores may alias *p as far as C knows */
    const int32_t pad_right = (q.out_w - 1) * q.stride_w - q.pad_left + 3 > q.in_w;
    const dw_geometry g = {q.in_c, q.in_w * q.in_c, q.pad_left, pad_right, (q.out_w - pad_right) * q.in_c,
                           -q.input_offset, q.act_min, q.act_max, q.act_min >= q.output_offset};
    for (int32_t b = 0; b < q.batches; b++) {
        const int8_t *in = input + b * q.in_h * g.row_bytes;
        int8_t *out_row = output + b * q.out_h * q.out_w * q.out_c;
        for (int32_t oy = 0; oy < q.out_h; oy++, out_row += q.out_w * q.out_c) {
            const int32_t iy0 = oy * q.stride_h - q.pad_top;
            const int32_t base = iy0 < 0 ? 0 : iy0 > q.in_h - 3 ? q.in_h - 3 : iy0;
            const int8_t *row0 = in + base * g.row_bytes;
            if (iy0 == base) {
                run_channels(&g, q.stride_w, channels, q.in_c, row0, out_row);
            } else {
                edge_row(&g, q.stride_w, channels, iy0, base, q.in_h, row0, out_row);
            }
        }
    }
}
