/*
 * edgesdk_fully_connected_blocked.c - the fast int8 FULLY_CONNECTED: same results as the reference loops in
 * edgesdk_fully_connected.c, for the layers the compiler qualifies (conditions and filter layout in
 * edgesdk_fully_connected.h).
 *
 * Every weight is used once per input row, so with int8 weights the floor is a load, a multiply and an add
 * per weight: EDGESDK_FC_BLOCKED lets 16 output units share each input load (16 accumulators in registers)
 * and gets within 3% of it. EDGESDK_FC_PAIRED goes below it by multiplying two units' weights at once
 * (16-bit lanes of a 32-bit word, see paired_blocks), at twice the flash for the weights.
 * Requantization: TFLite Micro's integer "double" rounding (edgesdk_requant_right) or LiteRT's
 * round(acc * scale) in IEEE double, decided in integers except on near-ties (edgesdk_requantize_fp64_window).
 */
#pragma GCC optimize("sched-pressure")
#include "edgesdk_fully_connected.h"

#include "edgesdk_arith.h"
#include "edgesdk_fp64.h"
#include "edgesdk_mac.h"
#include "edgesdk_requant.h"

/* The output stage's constants, copied out of the params (stores to int8 outputs may alias them). */
typedef struct {
    int32_t fp64, offset, act_min, act_max;
    uint32_t window;
} output_stage;

static EDGESDK_ALWAYS_INLINE int8_t output_value(output_stage o, int32_t sum, const double *scale, int32_t multiplier,
                                                 int32_t shift)
{
    const int32_t v = o.fp64 ? edgesdk_requantize_fp64_window(sum, *scale, multiplier, shift, o.window)
                             : edgesdk_requant_right(sum, multiplier, shift);
    return edgesdk_requant_output(v, o.offset, o.act_min, o.act_max);
}

/* Requantize `count` sums of units o.. and store them. Not inlined: it runs once per 16 units, and its loops
 * (with the double-precision fallback) would otherwise be copied into every call site. */
static void store_units(const edgesdk_fully_connected_params *p, const int32_t *sums, int32_t count, int32_t o,
                        int8_t *out)
{
    const output_stage stage = {p->rounding == EDGESDK_ROUNDING_FP64, p->output_offset, p->act_min, p->act_max,
                                p->fp64_window};
    const int32_t *multiplier = p->multiplier + o, *shift = p->shift + o;
    const double *scale = stage.fp64 ? p->scale + o : p->scale; /* read only with FP64 (NULL otherwise) */
    out += o;
    if (p->per_tensor) { /* the same constants for every unit: kept in registers */
        const int32_t m = *multiplier, s = *shift;
        for (int32_t i = 0; i < count; i++) {
            out[i] = output_value(stage, sums[i], scale, m, s);
        }
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        out[i] = output_value(stage, sums[i], stage.fp64 ? scale + i : scale, multiplier[i], shift[i]);
    }
}

/* EDGESDK_FC_BLOCKED, one input row: int8 weights, units in blocks of 16, then 8, then one by one. */
static void int8_blocks(const edgesdk_fully_connected_params *c, const int8_t *input, const int8_t *w,
                        const int32_t *bias, int8_t *output)
{
    const int32_t depth = c->in_depth;
    int32_t o = 0;
    for (; o + 16 <= c->out_depth; o += 16) {
        int32_t acc[1][16];
#pragma GCC unroll 16
        for (int n = 0; n < 16; n++) {
            acc[0][n] = bias[o + n];
        }
        w = edgesdk_mac_p1n16(acc, input, w, depth);
        store_units(c, acc[0], 16, o, output);
    }
    if (o + 8 <= c->out_depth) {
        int32_t acc[1][8];
#pragma GCC unroll 8
        for (int n = 0; n < 8; n++) {
            acc[0][n] = bias[o + n];
        }
        w = edgesdk_mac_p1n8(acc, input, w, depth);
        store_units(c, acc[0], 8, o, output);
        o += 8;
    }
    for (; o < c->out_depth; o++) {
        int32_t acc[1][1] = {{bias[o]}};
        w = edgesdk_mac_p1n1(acc, input, w, depth);
        store_units(c, acc[0], 1, o, output);
    }
}

/*
 * EDGESDK_FC_PAIRED: two output units a, b share each 32-bit weight word W = w_a + 65536 * w_b, so one
 * multiply serves two multiply-accumulates. Over two taps, R = x0 * W0 + x1 * W1 = L + 65536 * H with
 * L = x0 * w_a0 + x1 * w_a1 and H likewise for b; |L|, |H| <= 2 * 128 * 127 = 32512 (the compiler checks
 * |w| <= 127), so R is exact in int32 and H = (R + 32768) >> 16 (L cannot carry past half a lane). Sum R
 * (mod 2^32) and H separately: at the end, sum L = sum R - 65536 * sum H exactly.
 * Per two taps and two units: 2 loads, 2 multiplies, 5 adds/shifts -- 2.25 instructions per MAC.
 *
 * EDGESDK_FC_PAIRED_QUADS: the same over four taps where the compiler has checked that every unit's four
 * products of a chunk sum to [-32767, 32768] for any int8 input: V = R + 32767 in each lane is then exact as
 * uint32 and V >> 16 = H + 32767 (paid back once per block). Per four taps and two units: 4 loads, 4
 * multiplies, 7 adds/shifts -- 1.9 instructions per MAC.
 */
typedef int32_t __attribute__((may_alias)) packed_word; /* the filter array is declared int8_t */

#define PAIRS 8 /* unit pairs per register block: 16 accumulators */

/* Two taps (x0, x1) of NP pairs: words w[0..NP) for tap 0, w[NP..2NP) for tap 1. */
#define PAIR_TAPS(NP, low, high, x0, x1, w)                                                        \
    do {                                                                                          \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                               \
            const int32_t r_ = (x0) * (w)[j_] + (x1) * (w)[(NP) + j_];                            \
            high[j_] += (r_ + 32768) >> 16;                                                       \
            low[j_] += (uint32_t)r_;                                                              \
            EDGESDK_MAC_ORDER(w, high[j_]);                                                       \
        }                                                                                         \
    } while (0)

/* Four taps (x0..x3) of NP pairs: words w[k * NP + j] for tap k, pair j. */
#define PAIR_QUAD(NP, low, high, x0, x1, x2, x3, w)                                                \
    do {                                                                                          \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                               \
            const uint32_t r_ = (uint32_t)(x0) * (uint32_t)(w)[j_] +                              \
                                (uint32_t)(x1) * (uint32_t)(w)[(NP) + j_] +                       \
                                (uint32_t)(x2) * (uint32_t)(w)[2 * (NP) + j_] +                   \
                                (uint32_t)(x3) * (uint32_t)(w)[3 * (NP) + j_];                    \
            high[j_] += (r_ + 0x7FFF7FFFu) >> 16;                                                 \
            low[j_] += r_;                                                                        \
            EDGESDK_MAC_ORDER(w, high[j_]);                                                       \
        }                                                                                         \
    } while (0)

/* All taps of the NP pairs from unit o on, then their requantization; advances w past their words. */
#define PAIR_BLOCK(NP, c, input, w, bias, o, units, output)                                         \
    do {                                                                                          \
        uint32_t low[NP];                                                                         \
        uint32_t high[NP]; /* modular: channel b's sum plus the lane biases of the quads */       \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                               \
            const int32_t bias_b_ = (o) + 2 * j_ + 1 < (units) ? (bias)[(o) + 2 * j_ + 1] : 0;    \
            high[j_] = (uint32_t)bias_b_;                                                         \
            low[j_] = (uint32_t)(bias)[(o) + 2 * j_] + ((uint32_t)bias_b_ << 16);                 \
        }                                                                                         \
        const int8_t *x_ = (input);                                                               \
        if ((c)->blocked == EDGESDK_FC_PAIRED_QUADS) {                                            \
            const int8_t *const quads_end_ = x_ + ((c)->in_depth & ~3);                           \
            while (x_ != quads_end_) {                                                            \
                EDGESDK_MAC_ORDER(x_, high[(NP) - 1]);                                            \
                const int32_t x0_ = x_[0], x1_ = x_[1], x2_ = x_[2], x3_ = x_[3];                 \
                PAIR_QUAD(NP, low, high, x0_, x1_, x2_, x3_, w);                                  \
                x_ += 4;                                                                          \
                (w) += 4 * (NP);                                                                  \
            }                                                                                     \
            const uint32_t lane_bias_ = 32767u * (uint32_t)((c)->in_depth >> 2);                  \
            _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) { high[j_] -= lane_bias_; } \
        }                                                                                         \
        const int8_t *const end_ = (input) + ((c)->in_depth & ~1);                                \
        while (x_ != end_) {                                                                      \
            EDGESDK_MAC_ORDER(x_, high[(NP) - 1]);                                                \
            const int32_t x0_ = x_[0], x1_ = x_[1];                                               \
            PAIR_TAPS(NP, low, high, x0_, x1_, w);                                                \
            x_ += 2;                                                                              \
            (w) += 2 * (NP);                                                                      \
        }                                                                                         \
        if ((c)->in_depth & 1) { /* the last tap alone */                                         \
            const int32_t x0_ = x_[0], x1_ = 0;                                                   \
            PAIR_TAPS(NP, low, high, x0_, x1_, w);                                                \
            (w) += (NP);                                                                          \
        }                                                                                         \
        int32_t sums_[2 * (NP)];                                                                  \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NP); j_++) {                               \
            sums_[2 * j_] = (int32_t)(low[j_] - ((uint32_t)high[j_] << 16));                      \
            sums_[2 * j_ + 1] = (int32_t)high[j_];                                                \
        }                                                                                         \
        const int32_t count_ = (units) - (o) < 2 * (NP) ? (units) - (o) : 2 * (NP);               \
        store_units((c), sums_, count_, (o), (output));                                           \
    } while (0)

static void paired_blocks(const edgesdk_fully_connected_params *c, const int8_t *input, const int8_t *filter,
                          const int32_t *bias, int8_t *output)
{
    const packed_word *w = (const packed_word *)(const void *)filter;
    const int32_t units = c->out_depth;
    const int32_t pairs = (units + 1) / 2; /* an odd last unit has a zero partner */
    int32_t pair = 0;
    for (; pair + PAIRS <= pairs; pair += PAIRS) {
        PAIR_BLOCK(PAIRS, c, input, w, bias, 2 * pair, units, output);
    }
    for (; pair < pairs; pair++) { /* the remaining pairs one by one */
        PAIR_BLOCK(1, c, input, w, bias, 2 * pair, units, output);
    }
}

void edgesdk_fully_connected_s8_blocked(const edgesdk_fully_connected_params *p, const int8_t *input,
                                        const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const edgesdk_fully_connected_params c = *p; /* a copy: int8 stores may alias *p as far as C knows */
    for (int32_t b = 0; b < c.batches; b++, input += c.in_depth, output += c.out_depth) {
        if (c.blocked == EDGESDK_FC_PAIRED || c.blocked == EDGESDK_FC_PAIRED_QUADS) {
            paired_blocks(&c, input, filter, bias, output);
        } else {
            int8_blocks(&c, input, filter, bias, output);
        }
    }
}
