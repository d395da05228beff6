/*
 * edgesdk_mac.h - register-blocked int8 multiply-accumulate loops for the fast convolution and
 * fully-connected kernels (RV32IM: no SIMD, no multiply-accumulate instruction).
 *
 * Each loop adds sum_k x_p[k] * w[k * NB + n] to acc[p][n] for P input vectors (pixels) and NB output
 * channels, over `len` taps. The filter is stored "channel-blocked" by the compiler: for each block of NB
 * output channels, tap k's NB weights are adjacent, so one pointer with immediate offsets walks them. Per tap
 * that costs P + NB loads and 2 * P * NB multiply/add instructions; unrolled by 4 taps (8 in the 16-channel
 * loop), the pointer updates and the loop branch are spread over the unrolled taps. Inputs are used as stored (int8): the input offset is folded
 * into the bias by the compiler (sum_k w[k] * (x[k] + offset) = sum_k w[k] * x[k] + offset * sum_k w[k]).
 *
 * The empty asm statements tie each weight load to the previous channel's update. They generate no code;
 * without them GCC's pre-allocation scheduler hoists all weight loads of the unrolled loop to its top, which
 * needs more registers than RV32 has and spills accumulators to the stack inside the loop (+28% instructions
 * in the 2 x 8 loop, measured with riscv64-unknown-elf-gcc 12.2 -O2; -fno-schedule-insns would do the same).
 *
 * The accumulator arrays are meant to live in registers: call these only from functions where `acc` is a
 * local array indexed with constants (GCC then replaces it by scalars).
 */
#ifndef EDGESDK_MAC_H
#define EDGESDK_MAC_H

#include <stdint.h>

#define EDGESDK_ALWAYS_INLINE inline __attribute__((always_inline))

/* Order the next weight load after this update (see above); emits nothing. */
#define EDGESDK_MAC_ORDER(ptr, acc) __asm__("" : "+r"(ptr) : "r"(acc))

/* One tap k of P pixels x NB channels. */
#define EDGESDK_MAC_TAP(P, NB, acc, xs, w, k)                                                        \
    do {                                                                                            \
        int32_t x_[P];                                                                              \
        _Pragma("GCC unroll 16") for (int p_ = 0; p_ < (P); p_++) {                                 \
            EDGESDK_MAC_ORDER(xs[p_], acc[(P) - 1][(NB) - 1]);                                      \
            x_[p_] = xs[p_][k];                                                                     \
        }                                                                                           \
        _Pragma("GCC unroll 16") for (int n_ = 0; n_ < (NB); n_++) {                                \
            const int32_t w_ = (w)[(k) * (NB) + n_];                                                \
            _Pragma("GCC unroll 16") for (int p_ = 0; p_ < (P); p_++) {                             \
                acc[p_][n_] += x_[p_] * w_;                                                         \
            }                                                                                       \
            EDGESDK_MAC_ORDER(w, acc[0][n_]);                                                       \
        }                                                                                           \
    } while (0)

/* The whole loop over `len` taps: 4 taps per iteration, then the remainder one by one. */
#define EDGESDK_MAC_LOOP(P, NB, acc, xs, w, len) EDGESDK_MAC_LOOP_BY(4, P, NB, acc, xs, w, len)

/* The same with UNROLL (4 or 8) taps per iteration. */
#define EDGESDK_MAC_LOOP_BY(UNROLL, P, NB, acc, xs, w, len)                                          \
    do {                                                                                            \
        const int8_t *const end_unrolled_ = xs[0] + ((len) & ~((UNROLL) - 1));                      \
        const int8_t *const end_ = xs[0] + (len);                                                   \
        while (xs[0] != end_unrolled_) {                                                            \
            _Pragma("GCC unroll 8") for (int k_ = 0; k_ < (UNROLL); k_++) {                         \
                EDGESDK_MAC_TAP(P, NB, acc, xs, w, k_);                                             \
            }                                                                                       \
            _Pragma("GCC unroll 16") for (int p_ = 0; p_ < (P); p_++) { xs[p_] += (UNROLL); }       \
            (w) += (UNROLL) * (NB);                                                                 \
        }                                                                                           \
        while (xs[0] != end_) {                                                                     \
            EDGESDK_MAC_TAP(P, NB, acc, xs, w, 0);                                                  \
            _Pragma("GCC unroll 16") for (int p_ = 0; p_ < (P); p_++) { xs[p_] += 1; }              \
            (w) += (NB);                                                                            \
        }                                                                                           \
    } while (0)

/* Two pixels (x0, x1) by 8 channels; returns the weight pointer after the run. */
static EDGESDK_ALWAYS_INLINE const int8_t *edgesdk_mac_p2n8(int32_t acc[2][8], const int8_t *x0, const int8_t *x1,
                                                            const int8_t *w, int32_t len)
{
    const int8_t *xs[2] = {x0, x1};
    EDGESDK_MAC_LOOP(2, 8, acc, xs, w, len);
    return w;
}

/* One pixel by 8 channels. */
static EDGESDK_ALWAYS_INLINE const int8_t *edgesdk_mac_p1n8(int32_t acc[1][8], const int8_t *x, const int8_t *w,
                                                            int32_t len)
{
    const int8_t *xs[1] = {x};
    EDGESDK_MAC_LOOP(1, 8, acc, xs, w, len);
    return w;
}

/* One input vector by 16 channels (fully connected: every weight is used once, so the more channels share
 * an input load the better; 16 accumulators is what RV32 holds without spilling). 8 taps per iteration:
 * the loop overhead is then 3 instructions per 128 multiply-accumulates. */
static EDGESDK_ALWAYS_INLINE const int8_t *edgesdk_mac_p1n16(int32_t acc[1][16], const int8_t *x, const int8_t *w,
                                                             int32_t len)
{
    const int8_t *xs[1] = {x};
    EDGESDK_MAC_LOOP_BY(8, 1, 16, acc, xs, w, len);
    return w;
}

/* Two pixels by one channel (output channels left over after the blocks of 8). */
static EDGESDK_ALWAYS_INLINE const int8_t *edgesdk_mac_p2n1(int32_t acc[2][1], const int8_t *x0, const int8_t *x1,
                                                            const int8_t *w, int32_t len)
{
    const int8_t *xs[2] = {x0, x1};
    EDGESDK_MAC_LOOP(2, 1, acc, xs, w, len);
    return w;
}

/* One pixel by one channel. */
static EDGESDK_ALWAYS_INLINE const int8_t *edgesdk_mac_p1n1(int32_t acc[1][1], const int8_t *x, const int8_t *w,
                                                            int32_t len)
{
    const int8_t *xs[1] = {x};
    EDGESDK_MAC_LOOP(1, 1, acc, xs, w, len);
    return w;
}

#endif /* EDGESDK_MAC_H */
