/*
 * edgesdk_conv2d_paired.c - the int8 CONV_2D with two output channels per multiply: same results as
 * edgesdk_conv2d_s8's reference loops, for the layers the compiler qualifies (conditions and data layout in
 * edgesdk_conv2d.h).
 *
 * Two output channels a, b share each 32-bit weight word W = w_a + 65536 * w_b, so one multiply x * W gives
 * both products in 16-bit lanes. Over two taps, R = x0 * W0 + x1 * W1 = L + 65536 * H with L the two products
 * of channel a and H those of b. Any two int8 products sum to [-32512, 32768], so V = R + EDGESDK_LANE_BIAS
 * (32767 in each lane) is L + 32767 + 65536 * (H + 32767) with both lanes in [255, 65535]: exact in uint32,
 * and V >> 16 (logical) is H + 32767 (the compiler still checks the lane bounds per chunk, paired_chunks_fit).
 * Each channel pair keeps two accumulators: `high` sums V >> 16 from the high bias minus 32767 per chunk (the
 * compiler's init), so it ends at channel b's sum; `low` sums R (mod 2^32) from bias_a + 65536 * bias_b, so
 * channel a's sum is low - 65536 * high. Per two taps, one pixel and one pair: 2 multiplies and 5 adds or
 * shifts for 4 multiply-accumulates, plus the loads: each weight word serves two pixels, each input byte up to
 * 3 pairs (3 pairs x 2 pixels = 12 accumulators: what RV32's registers hold next to the inputs, the
 * weights and the pointers).
 *
 * EDGESDK_CONV_PAIRED_QUADS: where the weights allow, one extraction serves four taps. The compiler flags each
 * four-tap chunk of a 2-pair block whose four products stay within a lane for every channel of the block and
 * any int8 input (most chunks of trained weights; a flag word ahead of the chunk's words), and counts the
 * extractions into the high bias. Per four taps, two pixels and two pairs: 17 loads, 16 multiplies, 12 adds
 * forming the sums, 4 bias adds, 4 shifts and 8 accumulator adds for 32 multiply-accumulates (a flag-0 chunk:
 * 8 more). EDGESDK_CONV_PAIRED_QUADS3: the same chunks in blocks of 3 pairs (then 2), taken tap by tap so that
 * the 12 accumulators, 6 chunk sums, 2 input bytes and a weight fit RV32's registers: 21 loads and 85
 * instructions for 48 multiply-accumulates (1.8 per MAC instead of 2.0), but a flag covers 6 channels, and a
 * flag-0 chunk costs about 26 more; the compiler picks the block size per layer (quad_blocks_choice).
 *
 * Pixels are taken two at a time along the output row. A pair whose windows lie inside the input reads them in
 * place (filter_w * in_c contiguous bytes per filter row); otherwise both windows are first copied to patches
 * with the input zero point in place of padding (which the folded bias expects). The last pixel of an odd
 * row runs alone.
 */
#include "edgesdk_conv2d.h"

#include "edgesdk_mac.h"
#include "edgesdk_requant.h"

typedef int32_t __attribute__((may_alias)) packed_word; /* the filter array is declared int8_t */

#define EDGESDK_LANE_BIAS 0x7FFF7FFFu /* 32767 in each 16-bit lane of a two-tap sum (see above) */

typedef struct {
    const packed_word *filter;
    const int32_t *init;    /* per pair: the low and high accumulators' start (the biases) */
    const int32_t *requant; /* per channel: m2, r, k (edgesdk_requant_rk) */
    int32_t out_c, blocks3, blocks2;
    int32_t filter_h, run; /* the rows of a window the kernel reads, and the taps of one */
    int32_t act_min, act_max, relu;
    int32_t quads; /* EDGESDK_CONV_PAIRED_QUADS: four-tap chunks, each after its flag word */
} conv_plan;

/* Two taps of NP pairs for P pixels (x[p][0..1]); words w[0..NP) for the first tap, w[NP..2NP) for the second. */
#define PAIR_TAPS(P, NP, low, high, x, w)                                                                \
    do {                                                                                                \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                     \
            const int32_t w0_ = (w)[j_], w1_ = (w)[(NP) + j_];                                          \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                                  \
                const uint32_t r_ = (uint32_t)x[p_][0] * (uint32_t)w0_ + (uint32_t)x[p_][1] * (uint32_t)w1_; \
                high[p_][j_] += (r_ + EDGESDK_LANE_BIAS) >> 16;                                         \
                low[p_][j_] += r_;                                                                      \
            }                                                                                           \
            EDGESDK_MAC_ORDER(w, high[(P) - 1][j_]);                                                    \
        }                                                                                               \
    } while (0)

/* Load the next two taps of each pixel (at offset `at` from xs[p]), after the previous taps' last update (see
 * EDGESDK_MAC_ORDER: without it GCC loads every tap of an iteration first and runs out of registers). */
#define PAIR_LOAD(P, x, xs, at, last)                                                                   \
    do {                                                                                                \
        _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                                      \
            EDGESDK_MAC_ORDER(xs[p_], last);                                                            \
            x[p_][0] = xs[p_][(at)];                                                                    \
            x[p_][1] = xs[p_][(at) + 1];                                                                \
        }                                                                                               \
    } while (0)

/* One filter row: `run` taps from xs[p] for P pixels, NP pairs; advances w past the row's words. Two taps per
 * iteration (unrolling further makes GCC reassociate the sums across iterations and spill), then the row's odd
 * last tap alone. */
#define PAIR_RUN(P, NP, low, high, xs, w, run)                                                          \
    do {                                                                                                \
        const int8_t *const end_ = xs[0] + ((run) & ~1);                                                \
        int32_t x_[P][2];                                                                               \
        while (xs[0] != end_) {                                                                         \
            PAIR_LOAD(P, x_, xs, 0, high[(P) - 1][(NP) - 1]);                                           \
            PAIR_TAPS(P, NP, low, high, x_, w);                                                         \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) { xs[p_] += 2; }                  \
            (w) += 2 * (NP);                                                                            \
        }                                                                                               \
        if ((run) & 1) {                                                                                \
            _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                 \
                _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                              \
                    const uint32_t r_ = (uint32_t)xs[p_][0] * (uint32_t)(w)[j_];                        \
                    high[p_][j_] += (r_ + EDGESDK_LANE_BIAS) >> 16;                                     \
                    low[p_][j_] += r_;                                                                  \
                }                                                                                       \
            }                                                                                           \
            (w) += (NP);                                                                                \
        }                                                                                               \
    } while (0)

/* Four taps of NP pairs for P pixels (x[p][0..3]), words w[off..off + 4 NP) tap by tap. ONE: the chunk's four
 * products of every channel of the block fit a lane (its flag word), so one lane extraction serves the four
 * taps; otherwise each two-tap half is extracted as in PAIR_TAPS. */
#define QUAD_TAPS(P, NP, low, high, x, w, off, ONE)                                                     \
    do {                                                                                                \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                     \
            const int32_t w0_ = (w)[(off) + j_], w1_ = (w)[(off) + (NP) + j_];                          \
            const int32_t w2_ = (w)[(off) + 2 * (NP) + j_], w3_ = (w)[(off) + 3 * (NP) + j_];           \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                                  \
                const uint32_t ra_ = (uint32_t)x[p_][0] * (uint32_t)w0_ + (uint32_t)x[p_][1] * (uint32_t)w1_; \
                const uint32_t rb_ = (uint32_t)x[p_][2] * (uint32_t)w2_ + (uint32_t)x[p_][3] * (uint32_t)w3_; \
                if (ONE) {                                                                              \
                    const uint32_t r_ = ra_ + rb_;                                                      \
                    high[p_][j_] += (r_ + EDGESDK_LANE_BIAS) >> 16;                                     \
                    low[p_][j_] += r_;                                                                  \
                } else {                                                                                \
                    high[p_][j_] += ((ra_ + EDGESDK_LANE_BIAS) >> 16) + ((rb_ + EDGESDK_LANE_BIAS) >> 16); \
                    low[p_][j_] += ra_ + rb_;                                                           \
                }                                                                                       \
            }                                                                                           \
            EDGESDK_MAC_ORDER(w, high[(P) - 1][j_]);                                                    \
        }                                                                                               \
    } while (0)

/* Extract the lanes of the chunk sums r[p][j] into the accumulators. */
#define QUAD_EXTRACT(P, NP, low, high, r)                                                               \
    do {                                                                                                \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                     \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                                  \
                high[p_][j_] += (r[p_][j_] + EDGESDK_LANE_BIAS) >> 16;                                  \
                low[p_][j_] += r[p_][j_];                                                               \
            }                                                                                           \
        }                                                                                               \
    } while (0)

/* QUAD_TAPS tap by tap: per tap the P input bytes, then per pair its word and its P products into the chunk
 * sums r[p][j] (P * NP registers instead of 4 P inputs: room for blocks of 3 pairs). */
#define QUAD_TAPS_BY_TAP(P, NP, low, high, xs, at, w, off, ONE)                                         \
    do {                                                                                                \
        uint32_t r_[P][NP];                                                                             \
        _Pragma("GCC unroll 4") for (int t_ = 0; t_ < 4; t_++) {                                        \
            int32_t x_[P];                                                                              \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) { /* after the previous tap */      \
                if (t_ == 0) {                                                                          \
                    EDGESDK_MAC_ORDER(xs[p_], high[(P) - 1][(NP) - 1]);                                 \
                } else {                                                                                \
                    EDGESDK_MAC_ORDER(xs[p_], r_[(P) - 1][(NP) - 1]);                                   \
                }                                                                                       \
                x_[p_] = xs[p_][(at) + t_];                                                             \
            }                                                                                           \
            _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                 \
                const uint32_t w_ = (uint32_t)(w)[(off) + t_ * (NP) + j_];                              \
                _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                              \
                    const uint32_t m_ = (uint32_t)x_[p_] * w_;                                          \
                    r_[p_][j_] = (t_ == 0 || (!(ONE) && t_ == 2)) ? m_ : r_[p_][j_] + m_;               \
                }                                                                                       \
                EDGESDK_MAC_ORDER(w, r_[(P) - 1][j_]);                                                  \
            }                                                                                           \
            if (!(ONE) && t_ == 1) { /* a flag-0 chunk: the first two taps' lanes now */                \
                QUAD_EXTRACT(P, NP, low, high, r_);                                                     \
                _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) { /* done here, not merged */  \
                    _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                          \
                        __asm__("" : "+r"(high[p_][j_]), "+r"(low[p_][j_]));                            \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
        QUAD_EXTRACT(P, NP, low, high, r_);                                                             \
    } while (0)

/* The four-tap chunk whose flag word is w[off], inputs xs[p][at..at + 3]: blocks of 3 pairs tap by tap, blocks
 * of 2 with the four taps' inputs loaded first. */
#define QUAD_CHUNK(P, NP, low, high, xs, w, at, off)                                                    \
    do {                                                                                                \
        if ((NP) == 3) {                                                                                \
            if (__builtin_expect((w)[off], 1)) {                                                        \
                QUAD_TAPS_BY_TAP(P, NP, low, high, xs, at, w, (off) + 1, 1);                            \
            } else {                                                                                    \
                QUAD_TAPS_BY_TAP(P, NP, low, high, xs, at, w, (off) + 1, 0);                            \
            }                                                                                           \
        } else {                                                                                        \
            QUAD_CHUNK_LOADED(P, NP, low, high, xs, w, at, off);                                        \
        }                                                                                               \
    } while (0)

#define QUAD_CHUNK_LOADED(P, NP, low, high, xs, w, at, off)                                             \
    do {                                                                                                \
        int32_t x_[P][4];                                                                               \
        const int32_t one_ = (w)[off];                                                                  \
        _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                                      \
            EDGESDK_MAC_ORDER(xs[p_], high[(P) - 1][(NP) - 1]);                                         \
            x_[p_][0] = xs[p_][(at)];                                                                   \
            x_[p_][1] = xs[p_][(at) + 1];                                                               \
            x_[p_][2] = xs[p_][(at) + 2];                                                               \
            x_[p_][3] = xs[p_][(at) + 3];                                                               \
        }                                                                                               \
        if (__builtin_expect(one_, 1)) { /* the usual case: fall through, no jump */                 \
            QUAD_TAPS(P, NP, low, high, x_, w, (off) + 1, 1);                                           \
        } else {                                                                                        \
            QUAD_TAPS(P, NP, low, high, x_, w, (off) + 1, 0);                                           \
        }                                                                                               \
    } while (0)

/* One filter row of EDGESDK_CONV_PAIRED_QUADS: `run` (a multiple of 4) taps from xs[p] for P pixels, NP pairs,
 * per four taps a flag word then the words of the four taps; advances w past the row. Two chunks per
 * iteration (one pointer update and loop test for both), then a last odd chunk. */
#define QUAD_RUN(P, NP, low, high, xs, w, run)                                                          \
    do {                                                                                                \
        const int8_t *const end_ = xs[0] + ((run) & ~7);                                                \
        while (xs[0] != end_) {                                                                         \
            QUAD_CHUNK(P, NP, low, high, xs, w, 0, 0);                                                  \
            QUAD_CHUNK(P, NP, low, high, xs, w, 4, 1 + 4 * (NP));                                       \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) { xs[p_] += 8; }                  \
            (w) += 2 + 8 * (NP);                                                                        \
        }                                                                                               \
        if ((run) & 4) {                                                                                \
            QUAD_CHUNK(P, NP, low, high, xs, w, 0, 0);                                                  \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) { xs[p_] += 4; }                  \
            (w) += 1 + 4 * (NP);                                                                        \
        }                                                                                               \
    } while (0)

/* Start the NP pairs' accumulators (pair0 on) of P pixels from the biases. */
#define PAIR_INIT(P, NP, low, high, init, pair0)                                                        \
    do {                                                                                                \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                     \
            const uint32_t l_ = (uint32_t)(init)[2 * ((pair0) + j_)];                                   \
            const uint32_t h_ = (uint32_t)(init)[2 * ((pair0) + j_) + 1];                              \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < (P); p_++) {                                  \
                low[p_][j_] = l_;                                                                       \
                high[p_][j_] = h_;                                                                      \
            }                                                                                           \
        }                                                                                               \
    } while (0)

/* The activation clamp of a value that is usually inside [act_min, act_min + span]: one unsigned compare and
 * a branch not taken (2 instructions) instead of two compares and selects (5). For layers without ReLU; after
 * a ReLU about half the values fall below act_min, where edgesdk_clamp_i32's first compare is the cheap one. */
static inline int32_t clamp_mostly_inside(int32_t v, int32_t act_min, uint32_t span)
{
    if (__builtin_expect((uint32_t)(v - act_min) > span, 0)) {
        v = v < act_min ? act_min : act_min + (int32_t)span;
    }
    return v;
}

/* One output: requantize (the negative-accumulator correction only when the clamp does not absorb it). */
#define OUTPUT(acc, m2, r, k, relu)                                                                     \
    ((relu) ? edgesdk_clamp_i32(edgesdk_requant_rk_relu((acc), (m2), (r), (k)), act_min, act_max)        \
            : clamp_mostly_inside(edgesdk_requant_rk((acc), (m2), (r), (k)), act_min,                   \
                                  (uint32_t)(act_max - act_min)))

/* Requantize and store the sums of NP pairs (pair0 on) of the two pixels at outs[p]; `last`: the layer's last
 * block, whose last pairs may hold channels past out_c (their records exist). Every value is computed before
 * the first store: an int8 store may alias the records as far as C knows. */
#define PAIR_STORE(NP, low, high, c, pair0, outs, relu, last)                                           \
    do {                                                                                                \
        const int32_t act_min = (c).act_min, act_max = (c).act_max;                                     \
        int32_t v_[2][2 * (NP)];                                                                        \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                                     \
            const int32_t *const q_ = (c).requant + 6 * ((pair0) + j_);                                 \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < 2; p_++) {                                    \
                const int32_t sum_a_ = (int32_t)(low[p_][j_] - (high[p_][j_] << 16));                   \
                v_[p_][2 * j_] = OUTPUT(sum_a_, (uint32_t)q_[0], q_[1], q_[2], relu);                   \
            }                                                                                           \
            _Pragma("GCC unroll 2") for (int p_ = 0; p_ < 2; p_++) {                                    \
                v_[p_][2 * j_ + 1] = OUTPUT((int32_t)high[p_][j_], (uint32_t)q_[3], q_[4], q_[5], relu); \
            }                                                                                           \
        }                                                                                               \
        int8_t *const o0_ = outs[0] + 2 * (pair0), *const o1_ = outs[1] + 2 * (pair0);                  \
        if (!(last)) {                                                                                  \
            _Pragma("GCC unroll 8") for (int i_ = 0; i_ < 2 * (NP); i_++) {                             \
                o0_[i_] = (int8_t)v_[0][i_];                                                            \
                o1_[i_] = (int8_t)v_[1][i_];                                                            \
            }                                                                                           \
        } else {                                                                                        \
            const int32_t valid_ = (c).out_c - 2 * (pair0);                                             \
            _Pragma("GCC unroll 8") for (int i_ = 0; i_ < 2 * (NP); i_++) {                             \
                if (i_ < valid_) {                                                                      \
                    o0_[i_] = (int8_t)v_[0][i_];                                                        \
                    o1_[i_] = (int8_t)v_[1][i_];                                                        \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    } while (0)

/* One block of NP pairs (pair `pair` on) for two pixels; advances w past the block's words. */
#define PAIR_BLOCK(NP, c, w, pair, x0, step, row_bytes, outs, RELU, last, QUADS)                        \
    do {                                                                                                \
        uint32_t low[2][NP];                                                                            \
        uint32_t high[2][NP];                                                                           \
        PAIR_INIT(2, NP, low, high, (c).init, pair);                                                    \
        const int8_t *row_ = (x0);                                                                      \
        for (int32_t fy_ = 0; fy_ < (c).filter_h; fy_++, row_ += (row_bytes)) {                         \
            const int8_t *xs[2] = {row_, row_ + (step)};                                                \
            if (QUADS) {                                                                                \
                QUAD_RUN(2, NP, low, high, xs, w, (c).run);                                             \
            } else {                                                                                    \
                PAIR_RUN(2, NP, low, high, xs, w, (c).run);                                             \
            }                                                                                           \
        }                                                                                               \
        if ((RELU) < 0 ? (c).relu : (RELU)) { /* RELU < 0: the layer's, at run time */                  \
            PAIR_STORE(NP, low, high, c, pair, outs, 1, last);                                          \
        } else {                                                                                        \
            PAIR_STORE(NP, low, high, c, pair, outs, 0, last);                                          \
        }                                                                                               \
    } while (0)

/* Every channel of two output pixels whose windows start at x0 and x0 + step, filter rows `row_bytes` apart
 * (step 0 and out1 == out0: one pixel, computed twice). Blocks of 3 pairs, then of 2 (edgesdk_conv2d.h); the
 * last block stores only the channels below out_c. */
#define PIXELS(c, x0, step, row_bytes, outs, relu)                                                      \
    do {                                                                                                \
        const packed_word *w = (c).filter;                                                              \
        int32_t pair = 0;                                                                               \
        const int32_t full3_ = (c).blocks3 - ((c).blocks2 == 0);                                        \
        for (int32_t b_ = 0; b_ < full3_; b_++, pair += 3) {                                            \
            PAIR_BLOCK(3, c, w, pair, x0, step, row_bytes, outs, relu, 0, 0);                           \
        }                                                                                               \
        if ((c).blocks2 == 0) {                                                                         \
            PAIR_BLOCK(3, c, w, pair, x0, step, row_bytes, outs, relu, 1, 0);                           \
        } else {                                                                                        \
            if ((c).blocks2 == 2) {                                                                     \
                PAIR_BLOCK(2, c, w, pair, x0, step, row_bytes, outs, relu, 0, 0);                       \
                pair += 2;                                                                              \
            }                                                                                           \
            PAIR_BLOCK(2, c, w, pair, x0, step, row_bytes, outs, relu, 1, 0);                           \
        }                                                                                               \
    } while (0)

/* PIXELS for the four-tap layouts: blocks3 blocks of 3 pairs (EDGESDK_CONV_PAIRED_QUADS3 only), then blocks2
 * of 2, four taps at a time; `relu` -1: the store asks c.relu at run time (one copy of the loops: .text). */
#define QUAD_PIXELS(c, x0, step, row_bytes, outs, relu)                                                 \
    do {                                                                                                \
        const packed_word *w = (c).filter;                                                              \
        int32_t pair = 0;                                                                               \
        for (int32_t b_ = 1; b_ <= (c).blocks3; b_++, pair += 3) { /* one copy of the loop: last at run time */ \
            PAIR_BLOCK(3, c, w, pair, x0, step, row_bytes, outs, relu, b_ == (c).blocks3 && (c).blocks2 == 0, 1); \
        }                                                                                               \
        for (int32_t b_ = 1; b_ <= (c).blocks2; b_++, pair += 2) {                                      \
            PAIR_BLOCK(2, c, w, pair, x0, step, row_bytes, outs, relu, b_ == (c).blocks2, 1);           \
        }                                                                                               \
    } while (0)

/* -fsched-pressure: GCC's first scheduling pass otherwise hoists the loads of a four-tap step and spills
 * accumulators (IC: 32.9 M instructions without it, 31.1 M with it; measured with benchmarks/kernels.py).
 * -fno-tree-pre: partial redundancy elimination keeps values live across the block and row loops, which then
 * spill (IC op by op 27.68 M with it, 27.56 M without; KWS 7.44 M, 7.39 M). */
__attribute__((optimize("sched-pressure", "no-tree-pre"))) static void pixel_pair(const conv_plan *plan, const int8_t *x0,
                                                                   int32_t step, int32_t row_bytes, int8_t *out0,
                                                                   int8_t *out1)
{
    const conv_plan c = *plan; /* a copy: int8 stores may alias *plan as far as C knows */
    int8_t *const outs[2] = {out0, out1};
    if (c.quads) { /* one copy of the four-tap loops; the store asks c.relu */
        QUAD_PIXELS(c, x0, step, row_bytes, outs, -1);
    } else if (c.relu) {
        PIXELS(c, x0, step, row_bytes, outs, 1);
    } else {
        PIXELS(c, x0, step, row_bytes, outs, 0);
    }
}

/* `count` bytes from src to dst; WORDS: both and count are word-aligned, copied four words at a time. */
static inline void copy_bytes(int8_t *dst, const int8_t *src, int32_t count, int words)
{
    if (words) {
        packed_word *d = (packed_word *)(void *)dst;
        const packed_word *s = (const packed_word *)(const void *)src;
        const packed_word *const end = s + count / 4;
        if ((count / 4) & 1) {
            *d++ = *s++;
        }
        if ((count / 4) & 2) {
            d[0] = s[0];
            d[1] = s[1];
            s += 2;
            d += 2;
        }
        for (; s != end; s += 4, d += 4) {
            d[0] = s[0];
            d[1] = s[1];
            d[2] = s[2];
            d[3] = s[3];
        }
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        dst[i] = src[i];
    }
}

/* `count` bytes of `value` at dst (WORDS: dst and count word-aligned, `value4` the value in every byte). An
 * inline loop: a memset call costs more for the few bytes of a window's padding. */
static inline void fill_bytes(int8_t *dst, int8_t value, uint32_t value4, int32_t count, int words)
{
    if (words) {
        packed_word *const d = (packed_word *)(void *)dst;
        for (int32_t i = 0; i < count / 4; i++) {
            d[i] = (int32_t)value4;
        }
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        __asm__("" : "+r"(i)); /* a byte loop, not a memset call */
        dst[i] = value;
    }
}

/* Copy the window at input (y0, x0) into patch (filter_h rows of filter_w * in_c bytes, word-aligned), the input
 * zero point outside the image. The columns of a filter row inside the image are one contiguous copy (no test
 * per tap), by words when the input and in_c are word-aligned; the columns outside it one fill each side. */
static void fill_patch(const edgesdk_conv2d_params *p, const int8_t *in, int32_t y0, int32_t x0, int8_t *patch)
{
    const int8_t zero_point = (int8_t)-p->input_offset;
    const uint32_t zero4 = (uint8_t)zero_point * 0x01010101u;
    const int32_t channels = p->in_c, row_taps = p->filter_w * channels;
    const int words = (((uintptr_t)in | (uintptr_t)channels) & 3) == 0;
    /* the window's columns left of the image, right of it, and the bytes of those inside: at least one column,
     * since the left and right padding together are narrower than the filter (the compiler checks it) */
    const int32_t left = x0 < 0 ? -x0 : 0;
    const int32_t right = x0 + p->filter_w > p->in_w ? x0 + p->filter_w - p->in_w : 0;
    const int32_t inside = (p->filter_w - left - right) * channels;
    for (int32_t fy = 0; fy < p->filter_h; fy++, patch += row_taps) {
        const int32_t iy = y0 + fy;
        if (iy < 0 || iy >= p->in_h) {
            fill_bytes(patch, zero_point, zero4, row_taps, words);
            continue;
        }
        fill_bytes(patch, zero_point, zero4, left * channels, words);
        copy_bytes(patch + left * channels, in + (iy * p->in_w + x0 + left) * channels, inside, words);
        fill_bytes(patch + row_taps - right * channels, zero_point, zero4, right * channels, words);
    }
}

/* Input (y0, x0) of output pixel `pixel` (raster order over batches, rows and columns), and its batch's input. */
static const int8_t *window_of(const edgesdk_conv2d_params *p, const int8_t *input, int32_t pixel, int32_t *y0,
                               int32_t *x0)
{
    const int32_t per_image = p->out_h * p->out_w;
    const int32_t b = pixel / per_image, at = pixel - b * per_image;
    const int32_t oy = at / p->out_w;
    *y0 = oy * p->stride_h - p->pad_top;
    *x0 = (at - oy * p->out_w) * p->stride_w - p->pad_left;
    return input + b * p->in_h * p->in_w * p->in_c;
}

/* Window copies live on the stack, two of at most EDGESDK_CONV_PATCH_MAX bytes each (the compiler refuses a
 * layer whose windows are larger); what they add to the kernel's frame, for stack measurements:
 * edgesdk-stack-bound edgesdk_conv2d_s8_paired: 2048 bytes */

/* EDGESDK_CONV_PAIRED_PATCHES: every window copied to a patch of `taps` bytes (one filter row), pixels paired in
 * raster order across rows and images. */
static void run_patched(const edgesdk_conv2d_params *q, conv_plan *c, const int8_t *input, int8_t *output)
{
    const int32_t taps = c->run, pixels = q->batches * q->out_h * q->out_w;
    int8_t patches[2 * taps] __attribute__((aligned(4))); /* word copies (copy_bytes) */
    for (int32_t pixel = 0; pixel < pixels; pixel += 2) {
        const int32_t count = pixels - pixel < 2 ? 1 : 2;
        for (int32_t i = 0; i < count; i++) {
            int32_t y0, x0;
            const int8_t *in = window_of(q, input, pixel + i, &y0, &x0);
            fill_patch(q, in, y0, x0, patches + i * taps);
        }
        int8_t *out = output + pixel * q->out_c;
        pixel_pair(c, patches, count == 2 ? taps : 0, taps, out, count == 2 ? out + q->out_c : out);
    }
}

/* EDGESDK_CONV_PAIRED: pixel pairs along each row, read in place when both windows are inside the input. */
static void run_in_place(const edgesdk_conv2d_params *q, conv_plan *c, const int8_t *input, int8_t *output)
{
    const int32_t row_bytes = q->in_w * q->in_c;
    const int32_t taps = q->filter_h * c->run;
    const int32_t pixel_step = q->stride_w * q->in_c; /* between horizontally adjacent windows */
    /* Two windows' copies for pixels that read padding, sized for this layer (the compiler checks taps <=
     * EDGESDK_CONV_PATCH_MAX; a small stack matters on boards like the HiFive1). */
    const int inside = q->pad_top == 0 && q->pad_left == 0 && (q->out_h - 1) * q->stride_h + q->filter_h <= q->in_h &&
                       (q->out_w - 1) * q->stride_w + q->filter_w <= q->in_w;
    int8_t patches[inside ? 1 : 2 * taps] __attribute__((aligned(4)));
    for (int32_t b = 0; b < q->batches; b++) {
        const int8_t *in = input + b * q->in_h * row_bytes;
        for (int32_t oy = 0; oy < q->out_h; oy++) {
            const int32_t y0 = oy * q->stride_h - q->pad_top;
            const int rows_inside = y0 >= 0 && y0 + q->filter_h <= q->in_h;
            int8_t *out = output + (b * q->out_h + oy) * q->out_w * q->out_c;
            for (int32_t ox = 0; ox < q->out_w; ox += 2, out += 2 * q->out_c) {
                const int32_t x0 = ox * q->stride_w - q->pad_left;
                const int two = ox + 1 < q->out_w;
                const int32_t x1 = two ? x0 + q->stride_w : x0; /* the second pixel's window */
                int8_t *const out1 = two ? out + q->out_c : out;
                if (rows_inside && x0 >= 0 && x1 + q->filter_w <= q->in_w) {
                    pixel_pair(c, in + y0 * row_bytes + x0 * q->in_c, two ? pixel_step : 0, row_bytes, out, out1);
                } else {
                    fill_patch(q, in, y0, x0, patches);
                    fill_patch(q, in, y0, x1, patches + taps);
                    pixel_pair(c, patches, taps, c->run, out, out1);
                }
            }
        }
    }
}

void edgesdk_conv2d_s8_paired(const edgesdk_conv2d_params *p, const int8_t *input, const int8_t *filter,
                              const int32_t *init, int8_t *output)
{
    const edgesdk_conv2d_params q = *p; /* a copy: int8 stores may alias *p as far as C knows */
    const int patched = q.blocked == EDGESDK_CONV_PAIRED_PATCHES || q.blocked == EDGESDK_CONV_PAIRED_QUAD_PATCHES ||
                        q.blocked == EDGESDK_CONV_PAIRED_QUAD3_PATCHES;
    const int triples = q.blocked == EDGESDK_CONV_PAIRED_QUADS3 || q.blocked == EDGESDK_CONV_PAIRED_QUAD3_PATCHES;
    conv_plan c;
    c.filter = (const packed_word *)(const void *)filter;
    c.init = init;
    c.requant = q.requant;
    c.out_c = q.out_c;
    edgesdk_conv_pair_blocks((q.out_c + 1) / 2, &c.blocks3, &c.blocks2);
    c.filter_h = patched ? 1 : q.filter_h;
    c.run = (patched ? q.filter_h : 1) * q.filter_w * q.in_c;
    c.act_min = q.act_min;
    c.act_max = q.act_max;
    c.relu = q.act_min >= q.output_offset;
    c.quads = triples || q.blocked == EDGESDK_CONV_PAIRED_QUADS || q.blocked == EDGESDK_CONV_PAIRED_QUAD_PATCHES;
    if (c.quads && !triples) { /* blocks of 2 pairs only */
        c.blocks3 = 0;
        c.blocks2 = ((q.out_c + 1) / 2 + 1) / 2;
        c.blocks2 = c.blocks2 < 1 ? 1 : c.blocks2;
    }

    if (patched) {
        run_patched(&q, &c, input, output);
    } else {
        run_in_place(&q, &c, input, output);
    }
}
