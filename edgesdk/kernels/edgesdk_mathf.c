/*
 * edgesdk_mathf.c - float32 EXP, LOG, SIN, COS, ELU, TANH, LOGISTIC bit-exact with glibc 2.36 on x86-64
 * (edgesdk_mathf.h explains why and how).
 *
 * The algorithms and their constants are those of glibc 2.36: expf, logf, sinf and cosf are Arm's
 * optimized routines (Szabolcs Nagy, Wilco Dijkstra; MIT licence in Arm's repository), expm1f and tanhf
 * Sun's fdlibm. Only IEEE-754 arithmetic in round-to-nearest is used (no fused operations, no x87), so
 * the RISC-V soft-float build and the host build compute the same bits; NaN results are built by hand
 * with x86's rules (edgesdk_unary.h).
 */
#include "edgesdk_mathf.h"

static inline uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline double f64_from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* x86: an operation with a NaN operand returns it quieted; (x - x) / (x - x) otherwise the default NaN. */
static inline float invalid_result(float x)
{
    return edgesdk_unary_isnan(x) ? edgesdk_unary_quiet(x) : edgesdk_unary_default_nan();
}

/* Inputs where glibc's fused-multiply-add variant rounds differently from the unfused algorithm: sorted
 * {input bits, output bits} pairs (found by tests/glibc_mathf_scan.py over all 2^32 inputs). */
static float with_exceptions(float x, float y, const uint32_t (*table)[2], int32_t count)
{
    const uint32_t key = edgesdk_unary_bits(x);
    int32_t lo = 0, hi = count - 1;
    while (lo <= hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (table[mid][0] == key) {
            return edgesdk_unary_from_bits(table[mid][1]);
        }
        if (table[mid][0] < key) {
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return y;
}

/* -- expf: exp(x) = 2^(k/N) * 2^(r/N), N = 32, a cubic for 2^(r/N) ---------------------------------------- */

#define EXPF_N 32
/* bits(2^(i/32)) - (i << 47): 2^(k/32) = double(tab[k % 32] + (k << 47)); each 2^(i/32) correctly rounded */
static const uint64_t expf_tab[EXPF_N] = {
    0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
    0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
    0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
    0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
    0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
    0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
    0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
    0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u,
};
static const double expf_invln2_n = 0x1.71547652b82fep+0 * EXPF_N;
static const double expf_shift = 0x1.8p+52;
static const double expf_c0 = 0x1.c6af84b912394p-5 / EXPF_N / EXPF_N / EXPF_N;
static const double expf_c1 = 0x1.ebfce50fac4f3p-3 / EXPF_N / EXPF_N;
static const double expf_c2 = 0x1.62e42ff0c52d6p-1 / EXPF_N;

float edgesdk_expf_unfused(float x)
{
    const uint32_t ix = edgesdk_unary_bits(x);
    const uint32_t abstop = (ix >> 20) & 0x7ffu;
    if (abstop >= 0x42bu) { /* |x| >= 88 or NaN */
        if (ix == 0xff800000u) {
            return 0.0f;
        }
        if (abstop >= 0x7f8u) {
            return edgesdk_unary_isnan(x) ? edgesdk_unary_quiet(x) : x; /* x + x */
        }
        if (x > 0x1.62e42ep6f) {
            return edgesdk_unary_from_bits(0x7f800000u); /* overflow */
        }
        if (x < -0x1.9fe368p6f) {
            return 0.0f; /* underflow */
        }
        if (x < -0x1.9d1d9ep6f) {
            return edgesdk_unary_from_bits(1u); /* glibc's __math_may_uflowf: 0x1.4p-75f squared */
        }
    }
    const double z = expf_invln2_n * (double)x;
    double kd = z + expf_shift;
    const uint64_t ki = f64_bits(kd);
    kd -= expf_shift;
    const double r = z - kd;
    const double s = f64_from_bits(expf_tab[ki % EXPF_N] + (ki << (52 - 5)));
    const double p = expf_c0 * r + expf_c1;
    const double r2 = r * r;
    double y = expf_c2 * r + 1.0;
    y = p * r2 + y;
    y = y * s;
    return (float)y;
}

/* -- logf: log(x) = k ln2 + log(c) + log1p(z/c - 1), 16 subintervals, a quartic ---------------------------- */

static const double logf_invc[16] = {
    0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
    0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
    0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
    0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1,
};
static const double logf_logc[16] = {
    -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
    -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,   -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
    -0x1.252f438e10c1ep-5, 0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
    0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,  0x1.4043057b6ee09p-2,
};
static const double logf_ln2 = 0x1.62e42fefa39efp-1;
static const double logf_a0 = -0x1.00ea348b88334p-2, logf_a1 = 0x1.5575b0be00b6ap-2, logf_a2 = -0x1.ffffef20a4123p-2;

float edgesdk_logf_unfused(float x)
{
    uint32_t ix = edgesdk_unary_bits(x);
    if (ix == 0x3f800000u) {
        return 0.0f;
    }
    if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) { /* subnormal, zero, negative, inf, NaN */
        if (ix * 2 == 0) {
            return edgesdk_unary_from_bits(0xff800000u); /* -inf */
        }
        if (ix == 0x7f800000u) {
            return x;
        }
        if ((ix & 0x80000000u) || ix * 2 >= 0xff000000u) {
            return invalid_result(x);
        }
        ix = edgesdk_unary_bits(x * 0x1p23f) - (23u << 23); /* normalize a subnormal */
    }
    const uint32_t tmp = ix - 0x3f330000u;
    const int32_t i = (int32_t)((tmp >> (23 - 4)) % 16u);
    const int32_t k = (int32_t)tmp >> 23; /* arithmetic shift */
    const uint32_t iz = ix - (tmp & (0x1ffu << 23));
    const double z = (double)edgesdk_unary_from_bits(iz);
    const double r = z * logf_invc[i] - 1.0;
    const double y0 = logf_logc[i] + (double)k * logf_ln2;
    const double r2 = r * r;
    double y = logf_a1 * r + logf_a2;
    y = logf_a0 * r2 + y;
    y = y * r2 + (y0 + r);
    return (float)y;
}

/* -- sinf, cosf: reduction to [-pi/4, pi/4] (one multiply-subtract below 120, 4/pi to 192 bits above), ------
 * then the sine or cosine polynomial of the quadrant. */

typedef struct {
    double sign[4];
    double hpi_inv; /* 2/pi * 2^24 */
    double hpi;
    double c0, c1, c2, c3, c4;
    double s1, s2, s3;
} sincos_poly;

static const sincos_poly sincos_table[2] = {
    {{1.0, -1.0, -1.0, 1.0}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0, 0x1p0, -0x1.ffffffd0c621cp-2,
     0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16, -0x1.555545995a603p-3,
     0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
    /* the cosine polynomial negated (quadrants 2 and 3) */
    {{1.0, -1.0, -1.0, 1.0}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0, -0x1p0, 0x1.ffffffd0c621cp-2,
     -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16, -0x1.555545995a603p-3,
     0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
};

/* 4/pi to 192 bits; entry k holds bits 8k .. 8k + 31 (so that any 32-bit window is one aligned load) */
static const uint32_t inv_pio4[24] = {
    0xa2u,       0xa2f9u,     0xa2f983u,   0xa2f9836eu, 0xf9836e4eu, 0x836e4e44u, 0x6e4e4415u, 0x4e441529u,
    0x441529fcu, 0x1529fc27u, 0x29fc2757u, 0xfc2757d1u, 0x2757d1f5u, 0x57d1f534u, 0xd1f534ddu, 0xf534ddc0u,
    0x34ddc0dbu, 0xddc0db62u, 0xc0db6295u, 0xdb629599u, 0x6295993cu, 0x95993c43u, 0x993c4390u, 0x3c439041u,
};
static const double pi63 = 0x1.921FB54442D18p-62; /* 2 pi * 2^-64 */

static inline uint32_t abstop12(float x)
{
    return (edgesdk_unary_bits(x) >> 20) & 0x7ffu;
}

static inline double sinf_poly(double x, double x2, const sincos_poly *p, int n)
{
    if ((n & 1) == 0) {
        const double x3 = x * x2;
        const double s1 = p->s2 + x2 * p->s3;
        const double x7 = x3 * x2;
        const double s = x + x3 * p->s1;
        return s + x7 * s1;
    }
    const double x4 = x2 * x2;
    const double c2 = p->c3 + x2 * p->c4;
    const double c1 = p->c0 + x2 * p->c1;
    const double x6 = x4 * x2;
    const double c = c1 + x4 * p->c2;
    return c + x6 * c2;
}

static inline double reduce_fast(double x, const sincos_poly *p, int *np)
{
    const double r = x * p->hpi_inv;
    const int n = (int)(((int32_t)r + 0x800000) >> 24); /* arithmetic shift */
    *np = n;
    return x - n * p->hpi;
}

static inline double reduce_large(uint32_t xi, int *np)
{
    const uint32_t *arr = &inv_pio4[(xi >> 26) & 15u];
    const int shift = (int)((xi >> 23) & 7u);
    xi = ((xi & 0xffffffu) | 0x800000u) << shift;
    uint64_t res0 = (uint32_t)(xi * arr[0]); /* a 32-bit product in glibc */
    const uint64_t res1 = (uint64_t)xi * arr[4];
    const uint64_t res2 = (uint64_t)xi * arr[8];
    res0 = (res2 >> 32) | (res0 << 32);
    res0 += res1;
    const uint64_t n = (res0 + (1ull << 61)) >> 62;
    res0 -= n << 62;
    *np = (int)n;
    return (double)(int64_t)res0 * pi63;
}

static float sin_or_cos(float y, int cosine)
{
    double x = y;
    int n;
    const sincos_poly *p = &sincos_table[0];
    if (abstop12(y) < abstop12(0x1.921FB6p-1f)) { /* |y| < pi/4 */
        if (abstop12(y) < abstop12(0x1p-12f)) {
            return cosine ? 1.0f : y;
        }
        return (float)sinf_poly(x, x * x, p, cosine);
    }
    if (abstop12(y) < abstop12(120.0f)) {
        x = reduce_fast(x, p, &n);
        const double s = p->sign[n & 3];
        if (n & 2) {
            p = &sincos_table[1];
        }
        return (float)sinf_poly(x * s, x * x, p, n ^ cosine);
    }
    if (abstop12(y) < abstop12(edgesdk_unary_from_bits(0x7f800000u))) {
        const uint32_t xi = edgesdk_unary_bits(y);
        const int sign = (int)(xi >> 31);
        x = reduce_large(xi, &n);
        const double s = p->sign[(n + sign) & 3];
        if ((n + sign) & 2) {
            p = &sincos_table[1];
        }
        return (float)sinf_poly(x * s, x * x, p, n ^ cosine);
    }
    return invalid_result(y);
}

float edgesdk_sinf_unfused(float x)
{
    return sin_or_cos(x, 0);
}

float edgesdk_cosf_unfused(float x)
{
    return sin_or_cos(x, 1);
}

/* -- expm1f (fdlibm, float arithmetic) ------------------------------------------------------------------- */

float edgesdk_expm1f(float x)
{
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, invln2 = 1.4426950216e+00f;
    const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f;
    const float q4 = 4.0082177293e-06f, q5 = -2.0109921195e-07f;
    uint32_t hx = edgesdk_unary_bits(x);
    const int negative = (hx & 0x80000000u) != 0;
    hx &= 0x7fffffffu;
    float hi, lo, c = 0.0f;
    int32_t k;
    if (hx >= 0x4195b844u) { /* |x| >= 27 ln2 */
        if (hx >= 0x42b17218u) { /* |x| >= 88.72 */
            if (hx > 0x7f800000u) {
                return edgesdk_unary_quiet(x); /* NaN: x + x */
            }
            if (hx == 0x7f800000u) {
                return negative ? -1.0f : x;
            }
            if (x > 8.8721679688e+01f) {
                return edgesdk_unary_from_bits(0x7f800000u); /* overflow */
            }
        }
        if (negative) {
            return -1.0f; /* tiny - 1 */
        }
    }
    if (hx > 0x3eb17218u) { /* |x| > ln2 / 2: reduce */
        if (hx < 0x3F851592u) { /* |x| < 1.5 ln2 */
            if (!negative) {
                hi = x - ln2_hi;
                lo = ln2_lo;
                k = 1;
            } else {
                hi = x + ln2_hi;
                lo = -ln2_lo;
                k = -1;
            }
        } else {
            k = (int32_t)(invln2 * x + (negative ? -0.5f : 0.5f));
            const float t = (float)k;
            hi = x - t * ln2_hi; /* exact */
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) { /* |x| < 2^-25 */
        return x;
    } else {
        k = 0;
    }
    const float hfx = 0.5f * x;
    const float hxs = x * hfx;
    const float r1 = 1.0f + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))));
    float t = 3.0f - r1 * hfx;
    float e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0) {
        return x - (x * e - hxs);
    }
    e = (x * (e - c) - c);
    e -= hxs;
    if (k == -1) {
        return 0.5f * (x - e) - 0.5f;
    }
    if (k == 1) {
        return x < -0.25f ? -2.0f * (e - (x + 0.5f)) : 1.0f + 2.0f * (x - e);
    }
    float y;
    if (k <= -2 || k > 56) { /* exp(x) - 1 */
        y = 1.0f - (e - x);
        y = edgesdk_unary_from_bits(edgesdk_unary_bits(y) + ((uint32_t)k << 23)); /* scale by 2^k */
        return y - 1.0f;
    }
    if (k < 23) {
        t = edgesdk_unary_from_bits(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
        y = t - (e - x);
    } else {
        t = edgesdk_unary_from_bits((uint32_t)(0x7f - k) << 23); /* 2^-k */
        y = x - (e + t);
        y += 1.0f;
    }
    return edgesdk_unary_from_bits(edgesdk_unary_bits(y) + ((uint32_t)k << 23));
}

/* -- tanhf (fdlibm, float arithmetic) -------------------------------------------------------------------- */

float edgesdk_tanhf(float x)
{
    const uint32_t jx = edgesdk_unary_bits(x);
    const uint32_t ix = jx & 0x7fffffffu;
    const int negative = (jx >> 31) != 0;
    float z;
    if (ix >= 0x7f800000u) { /* 1/x + 1 or 1/x - 1 */
        if (ix > 0x7f800000u) {
            return edgesdk_unary_quiet(x);
        }
        return negative ? -1.0f : 1.0f;
    }
    if (ix < 0x41b00000u) { /* |x| < 22 */
        if (ix == 0) {
            return x;
        }
        if (ix < 0x24000000u) { /* |x| < 2^-55 */
            return x * (1.0f + x);
        }
        const float ax = edgesdk_unary_from_bits(ix);
        if (ix >= 0x3f800000u) { /* |x| >= 1 */
            const float t = edgesdk_expm1f(2.0f * ax);
            z = 1.0f - 2.0f / (t + 2.0f);
        } else {
            const float t = edgesdk_expm1f(-2.0f * ax);
            z = -t / (t + 2.0f);
        }
    } else {
        z = 1.0f; /* 1 - tiny */
    }
    return negative ? -z : z;
}

/* -- glibc's fused-multiply-add variants: the inputs where they differ ------------------------------------- */

#include "edgesdk_mathf_exceptions.h"

float edgesdk_expf(float x)
{
    return with_exceptions(x, edgesdk_expf_unfused(x), expf_exceptions, EXPF_EXCEPTIONS);
}

float edgesdk_logf(float x)
{
    return with_exceptions(x, edgesdk_logf_unfused(x), logf_exceptions, LOGF_EXCEPTIONS);
}

float edgesdk_sinf(float x)
{
    return with_exceptions(x, edgesdk_sinf_unfused(x), sinf_exceptions, SINF_EXCEPTIONS);
}

float edgesdk_cosf(float x)
{
    return with_exceptions(x, edgesdk_cosf_unfused(x), cosf_exceptions, COSF_EXCEPTIONS);
}

/* -- kernels ----------------------------------------------------------------------------------------------- */

void edgesdk_exp_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_expf(input[i]);
    }
}

void edgesdk_log_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_logf(input[i]);
    }
}

void edgesdk_sin_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_sinf(input[i]);
    }
}

void edgesdk_cos_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_cosf(input[i]);
    }
}

/* TFLite's reference Elu: x < 0 ? expm1(x) : x (a NaN fails the comparison and passes as is) */
void edgesdk_elu_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        output[i] = x < 0.0f ? edgesdk_expm1f(x) : x;
    }
}

void edgesdk_tanh_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = edgesdk_tanhf(input[i]);
    }
}

/* TFLite's reference Logistic<float>: 1 above 16.619..., exp(x) below -9, else 1 / (1 + exp(-x)). */
void edgesdk_logistic_f32(const edgesdk_unary_params *p, const float *input, float *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = input[i];
        float y;
        if (x > 16.619047164916992188f) {
            y = 1.0f;
        } else if (x < -9.0f) {
            y = edgesdk_expf(x);
        } else {
            const float e = edgesdk_expf(edgesdk_unary_from_bits(edgesdk_unary_bits(x) ^ 0x80000000u));
            y = edgesdk_unary_isnan(e) ? e : 1.0f / (1.0f + e);
        }
        output[i] = y;
    }
}
