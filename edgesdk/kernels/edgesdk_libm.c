/*
 * edgesdk_libm.c - glibc's expf (x86-64 FMA variant) and tanhf, reproduced (see edgesdk_libm.h).
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off") /* every rounding below is written out; none may be fused */
#endif

#include <stdint.h>
#include <string.h>

#include "edgesdk_libm.h"

/* -- an exact fused multiply-add on doubles, in integers ---------------------------------------------------- */

typedef struct {
    uint64_t w[4]; /* little-endian limbs: a 256-bit magnitude */
} u256;

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static double double_of(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* |x| = m * 2^e with m < 2^53. */
static void unpack(double x, int *negative, uint64_t *m, int *e)
{
    const uint64_t b = bits_of(x);
    const int field = (int)((b >> 52) & 0x7ffu);
    *negative = (int)(b >> 63);
    *m = b & ((UINT64_C(1) << 52) - 1u);
    if (field == 0) {
        *e = -1074;
    } else {
        *m |= UINT64_C(1) << 52;
        *e = field - 1075;
    }
}

static void mul_64x64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *lo = (p00 & 0xffffffffu) | (mid << 32);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

static int bit_length(const uint64_t *w, int limbs)
{
    for (int i = limbs - 1; i >= 0; i--) {
        if (w[i] != 0) {
            return 64 * i + 64 - __builtin_clzll(w[i]);
        }
    }
    return 0;
}

/* Bits [k, k + 64) of x (0 beyond its ends); k may be negative. */
static uint64_t window(const u256 *x, int k)
{
    if (k <= -64 || k >= 256) {
        return 0;
    }
    if (k < 0) {
        return x->w[0] << -k;
    }
    const int limb = k / 64, offset = k % 64;
    uint64_t v = x->w[limb] >> offset;
    if (offset != 0 && limb + 1 < 4) {
        v |= x->w[limb + 1] << (64 - offset);
    }
    return v;
}

/* Whether any of bits [0, k) of x is set. */
static int any_below(const u256 *x, int k)
{
    for (int i = 0; i < 4 && 64 * i < k; i++) {
        const uint64_t mask = k - 64 * i >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << (k - 64 * i)) - 1u;
        if (x->w[i] & mask) {
            return 1;
        }
    }
    return 0;
}

/* x = (hi:lo) * 2^shift; a negative shift drops bits, ORing any dropped 1 into bit 0 (enough guard bits remain
 * for that to decide nothing but ties, which it must break the right way). */
static void place(u256 *x, uint64_t hi, uint64_t lo, int shift)
{
    u256 src = {{lo, hi, 0, 0}};
    for (int i = 0; i < 4; i++) {
        x->w[i] = window(&src, 64 * i - shift);
    }
    if (shift < 0 && any_below(&src, -shift)) {
        x->w[0] |= 1u;
    }
}

static int compare(const u256 *a, const u256 *b)
{
    for (int i = 3; i >= 0; i--) {
        if (a->w[i] != b->w[i]) {
            return a->w[i] > b->w[i] ? 1 : -1;
        }
    }
    return 0;
}

static void add_to(u256 *a, const u256 *b)
{
    uint64_t carry = 0;
    for (int i = 0; i < 4; i++) {
        const uint64_t s = a->w[i] + b->w[i];
        const uint64_t c1 = s < a->w[i];
        a->w[i] = s + carry;
        carry = c1 | (a->w[i] < s);
    }
}

static void sub_from(u256 *a, const u256 *b) /* a -= b, a >= b */
{
    uint64_t borrow = 0;
    for (int i = 0; i < 4; i++) {
        const uint64_t d = a->w[i] - b->w[i];
        const uint64_t b1 = a->w[i] < b->w[i];
        a->w[i] = d - borrow;
        borrow = b1 | (d < borrow);
    }
}

/* a * b + c rounded once to the nearest double (ties to even), for finite a, b, c. */
double edgesdk_fma(double a, double b, double c)
{
    int na, nb, nc, ea, eb, ec;
    uint64_t ma, mb, mc, ph, pl;
    unpack(a, &na, &ma, &ea);
    unpack(b, &nb, &mb, &eb);
    unpack(c, &nc, &mc, &ec);
    if (ma == 0 || mb == 0) {
        return a * b + c; /* the product is an exact signed zero */
    }
    mul_64x64(ma, mb, &ph, &pl);
    const int np = na ^ nb, ep = ea + eb;
    const uint64_t pw[2] = {pl, ph}, cw[2] = {mc, 0};
    const int top_p = ep + bit_length(pw, 2);
    const int top_c = mc ? ec + bit_length(cw, 1) : top_p;
    const int base = (top_p > top_c ? top_p : top_c) - 230;
    u256 p, q;
    place(&p, ph, pl, ep - base);
    place(&q, 0, mc, ec - base);
    int negative;
    if (mc == 0 || np == nc) {
        add_to(&p, &q);
        negative = np;
    } else if (compare(&p, &q) >= 0) {
        sub_from(&p, &q);
        negative = np;
    } else {
        sub_from(&q, &p);
        p = q;
        negative = nc;
    }
    const int length = bit_length(p.w, 4);
    if (length == 0) {
        return 0.0; /* an exact zero sum is +0 when rounding to nearest */
    }
    int ulp = base + length - 53;
    if (ulp < -1074) {
        ulp = -1074;
    }
    const int shift = ulp - base;
    uint64_t m;
    if (shift <= 0) {
        m = p.w[0] << -shift; /* fewer than 53 significant bits: exact */
    } else {
        m = window(&p, shift) & ((UINT64_C(1) << 54) - 1u);
        const int guard = (int)(window(&p, shift - 1) & 1u);
        if (guard && (any_below(&p, shift - 1) || (m & 1u))) {
            m++;
        }
    }
    if (m == UINT64_C(1) << 53) {
        m >>= 1;
        ulp++;
    }
    uint64_t result;
    if (m >= UINT64_C(1) << 52) {
        const int biased = ulp + 1075;
        result = biased >= 2047 ? UINT64_C(0x7ff) << 52 : ((uint64_t)biased << 52) | (m & ((UINT64_C(1) << 52) - 1u));
    } else {
        result = m; /* subnormal */
    }
    return double_of(result | ((uint64_t)negative << 63));
}

/* -- expf: 2^(k/32) * 2^(r/32), k = round(x * 32 / ln 2) ----------------------------------------------------- */

#define EXP_TABLE_BITS 5
#define EXP_N (1 << EXP_TABLE_BITS)

/* 2^(i/32) as IEEE double bits, minus i << 47 (the exponent of 2^(k/32) is added back from k). */
static const uint64_t exp_table[EXP_N] = {
    0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
    0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
    0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
    0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
    0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
    0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
    0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
    0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u,
};

float edgesdk_expf(float x)
{
    uint32_t ux;
    memcpy(&ux, &x, sizeof ux);
    const uint32_t abstop = (ux >> 20) & 0x7ffu;
    if (abstop >= 0x42bu) { /* |x| >= 88, inf or nan */
        if (ux == 0xff800000u) {
            return 0.0f;
        }
        if (abstop >= 0x7f8u) {
            return x + x;
        }
        if (x > 0x1.62e42ep6f) { /* overflow */
            const float huge = 0x1p97f;
            return huge * huge;
        }
        if (x < -0x1.9fe368p6f) { /* underflow to 0 */
            const float tiny = 0x1p-95f;
            return tiny * tiny;
        }
        if (x < -0x1.9d1d9ep6f) { /* underflow to the smallest subnormal */
            const float tiny = 0x1.4p-75f;
            return tiny * tiny;
        }
    }
    const double inv_ln2_n = 0x1.71547652b82fep+0 * EXP_N;
    const double shift = 0x1.8p+52;
    const double xd = (double)x;
    double kd = edgesdk_fma(inv_ln2_n, xd, shift); /* round(x * N / ln2) in the low bits */
    const uint64_t ki = bits_of(kd);
    kd -= shift;
    const double r = edgesdk_fma(inv_ln2_n, xd, -kd);
    const uint64_t t = exp_table[ki % EXP_N] + (ki << (52 - EXP_TABLE_BITS));
    const double s = double_of(t);
    const double z = edgesdk_fma(r, 0x1.c6af84b912394p-5 / EXP_N / EXP_N / EXP_N, 0x1.ebfce50fac4f3p-3 / EXP_N / EXP_N);
    const double r2 = r * r;
    double y = edgesdk_fma(r, 0x1.62e42ff0c52d6p-1 / EXP_N, 1.0);
    y = edgesdk_fma(z, r2, y);
    y = y * s;
    return (float)y;
}

/* -- expm1f and tanhf: fdlibm's float versions ------------------------------------------------------------ */

static uint32_t float_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static float float_of(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

float edgesdk_expm1f(float x)
{
    const float one = 1.0f, huge = 1.0e+30f, tiny = 1.0e-30f;
    const float o_threshold = 8.8721679688e+01f, ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f;
    const float invln2 = 1.4426950216e+00f;
    const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f, q4 = 4.0082177293e-06f,
                q5 = -2.0109921195e-07f;
    float hi, lo, c = 0.0f, t, e, hxs, hfx, r1;
    int32_t k;
    uint32_t hx = float_bits(x);
    const uint32_t xsb = hx & 0x80000000u;
    hx &= 0x7fffffffu;
    if (hx >= 0x4195b844u) { /* |x| >= 27 ln2 */
        if (hx >= 0x42b17218u) { /* |x| >= 88.72 */
            if (hx > 0x7f800000u) {
                return x + x; /* nan */
            }
            if (hx == 0x7f800000u) {
                return xsb == 0 ? x : -1.0f;
            }
            if (x > o_threshold) {
                return huge * huge;
            }
        }
        if (xsb != 0) {
            return tiny - one; /* -1 */
        }
    }
    if (hx > 0x3eb17218u) { /* |x| > ln2 / 2: argument reduction */
        if (hx < 0x3F851592u) { /* and |x| < 1.5 ln2 */
            if (xsb == 0) {
                hi = x - ln2_hi;
                lo = ln2_lo;
                k = 1;
            } else {
                hi = x + ln2_hi;
                lo = -ln2_lo;
                k = -1;
            }
        } else {
            k = (int32_t)(invln2 * x + (xsb == 0 ? 0.5f : -0.5f));
            t = (float)k;
            hi = x - t * ln2_hi;
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) { /* |x| < 2^-25 */
        t = huge + x;
        return x - (t - (huge + x));
    } else {
        k = 0;
    }
    hfx = 0.5f * x;
    hxs = x * hfx;
    r1 = one + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))));
    t = 3.0f - r1 * hfx;
    e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0) {
        return x - (x * e - hxs);
    }
    e = (x * (e - c) - c);
    e -= hxs;
    if (k == -1) {
        return 0.5f * (x - e) - 0.5f;
    }
    if (k == 1) {
        if (x < -0.25f) {
            return -2.0f * (e - (x + 0.5f));
        }
        return one + 2.0f * (x - e);
    }
    if (k <= -2 || k > 56) { /* exp(x) - 1 */
        float y = one - (e - x);
        y = float_of(float_bits(y) + ((uint32_t)k << 23));
        return y - one;
    }
    float y;
    if (k < 23) {
        t = float_of(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
        y = t - (e - x);
        y = float_of(float_bits(y) + ((uint32_t)k << 23));
    } else {
        t = float_of((uint32_t)(0x7f - k) << 23); /* 2^-k */
        y = x - (e + t);
        y += one;
        y = float_of(float_bits(y) + ((uint32_t)k << 23));
    }
    return y;
}

float edgesdk_tanhf(float x)
{
    const float one = 1.0f, two = 2.0f, tiny = 1.0e-30f;
    float t, z;
    const uint32_t jx = float_bits(x);
    const uint32_t ix = jx & 0x7fffffffu;
    if (ix >= 0x7f800000u) { /* inf or nan */
        return (jx >> 31) == 0 ? one / x + one : one / x - one;
    }
    if (ix < 0x41b00000u) { /* |x| < 22 */
        if (ix == 0) {
            return x;
        }
        if (ix < 0x24000000u) { /* |x| < 2^-55 */
            return x * (one + x);
        }
        const float ax = float_of(ix);
        if (ix >= 0x3f800000u) { /* |x| >= 1 */
            t = edgesdk_expm1f(two * ax);
            z = one - two / (t + two);
        } else {
            t = edgesdk_expm1f(-two * ax);
            z = -t / (t + two);
        }
    } else {
        z = one - tiny;
    }
    return (jx >> 31) == 0 ? z : -z;
}
