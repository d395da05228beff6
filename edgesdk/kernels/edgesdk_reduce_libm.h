/*
 * edgesdk_reduce_libm.h - expf and logf exactly as the references get them (float32 SOFTMAX, LOG_SOFTMAX).
 *
 * LiteRT and TFLite Micro call the host C library (glibc 2.36 on x86-64) for std::exp(float) and
 * std::log(float); the firmware's picolibc has other implementations (fdlibm's float code) that round
 * differently. These functions evaluate the same algorithm as glibc (the table-driven expf/logf of ARM's
 * optimized-routines: a 2^(k/32) table and a cubic polynomial in double for exp, a 16-entry 1/c, log(c)
 * table and a cubic polynomial for log), in IEEE double, so they give glibc's float for every input:
 * tests/test_ops_reduce.py compares them with the host's expf/logf on all 2^32 (expf) and 2^31 (logf,
 * non-negative) inputs.
 *
 * One detail follows the build of glibc a reference runs on: on x86-64 CPUs with FMA, glibc's expf computes
 * r = InvLn2N * x - k with a fused multiply-add, on older CPUs with a separate multiply; the two differ for
 * x = 0x1.04845ep+5 and x = -0x1.f8cbb2p+5 only. This is the FMA variant, computed exactly without an FMA
 * instruction (docs/rounding.md). logf gives the same results either way.
 */
#ifndef EDGESDK_REDUCE_LIBM_H
#define EDGESDK_REDUCE_LIBM_H

#include <stdint.h>
#include <string.h>

static inline uint64_t edgesdk_libm_bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static inline double edgesdk_libm_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static inline uint32_t edgesdk_libm_bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float edgesdk_libm_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* exp(x) = 2^(k/32) * 2^(r/32), k = round(x * 32/ln2), r = x * 32/ln2 - k in [-1/2, 1/2]. */
static inline float edgesdk_expf(float x)
{
    /* bits of 2^(i/32) minus i << 47, so that adding k << 47 puts k/32 into the exponent */
    static const uint64_t table[32] = {
        0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
        0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
        0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
        0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
        0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
        0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
        0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
        0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u,
    };
    static const double inv_ln2_n = 0x1.71547652b82fep+5;  /* 32 / ln 2 */
    static const double inv_ln2_n_hi = 0x1.7154765p+5;    /* its top 29 bits: hi * x is exact */
    static const double inv_ln2_n_lo = 0x1.5c17fp-26;      /* the rest, 24 bits: lo * x is exact */
    static const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
    static const double c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
    static const double c2 = 0x1.62e42ff0c52d6p-1 / 32;
    static const double shift = 0x1.8p+52;

    const uint32_t abstop = (edgesdk_libm_bits32(x) >> 20) & 0x7ffu;
    if (abstop >= 0x42bu) { /* |x| >= 88, or x is inf or NaN */
        if (edgesdk_libm_bits32(x) == 0xff800000u) {
            return 0.0f; /* exp(-inf) */
        }
        if (abstop >= 0x7f8u) {
            return x + x; /* +inf, NaN */
        }
        if (x > 0x1.62e42ep6f) {
            return edgesdk_libm_float(0x7f800000u); /* overflow */
        }
        if (x < -0x1.9fe368p6f) {
            return 0.0f; /* underflow */
        }
    }
    const double xd = (double)x;
    const double z = inv_ln2_n * xd;
    double kd = z + shift; /* round to nearest integer */
    const uint64_t ki = edgesdk_libm_bits64(kd);
    kd -= shift;
    /* r = fma(inv_ln2_n, xd, -kd): hi * xd - kd is exact (kd is the integer nearest to hi * xd), so one
     * rounding remains, as in a fused multiply-add. */
    const double r = (inv_ln2_n_hi * xd - kd) + inv_ln2_n_lo * xd;
    const uint64_t t = table[ki % 32u] + (ki << 47);
    const double s = edgesdk_libm_double(t);
    const double p = c0 * r + c1;
    const double r2 = r * r;
    double y = c2 * r + 1.0;
    y = p * r2 + y;
    y = y * s;
    return (float)y;
}

/* log(x) = k ln2 + log(c) + log1p(z/c - 1), x = 2^k z, z in [0x1.6p-1, 0x1.6p0), c the center of z's
 * sixteenth of that interval. */
static inline float edgesdk_logf(float x)
{
    static const double invc[16] = {
        0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
        0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
        0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
        0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1,
    };
    static const double logc[16] = {
        -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
        -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,   -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
        -0x1.252f438e10c1ep-5, 0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
        0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,  0x1.4043057b6ee09p-2,
    };
    static const double ln2 = 0x1.62e42fefa39efp-1;
    static const double a0 = -0x1.00ea348b88334p-2, a1 = 0x1.5575b0be00b6ap-2, a2 = -0x1.ffffef20a4123p-2;

    uint32_t ix = edgesdk_libm_bits32(x);
    if (ix == 0x3f800000u) {
        return 0.0f;
    }
    if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) { /* x < 0x1p-126, or inf, or NaN */
        if (ix * 2u == 0u) {
            return edgesdk_libm_float(0xff800000u); /* log(+-0) = -inf */
        }
        if (ix == 0x7f800000u) {
            return x; /* log(inf) = inf */
        }
        if ((ix & 0x80000000u) || ix * 2u >= 0xff000000u) {
            return (x - x) / (x - x); /* negative or NaN: NaN */
        }
        ix = edgesdk_libm_bits32(x * 0x1p23f); /* subnormal: normalize */
        ix -= 23u << 23;
    }
    const uint32_t tmp = ix - 0x3f330000u;
    const int i = (int)((tmp >> 19) % 16u);
    const int32_t k = (int32_t)tmp >> 23; /* arithmetic shift */
    const uint32_t iz = ix - (tmp & 0xff800000u);
    const double z = (double)edgesdk_libm_float(iz);
    const double r = z * invc[i] - 1.0;
    const double y0 = logc[i] + (double)k * ln2;
    const double r2 = r * r;
    double y = a1 * r + a2;
    y = a0 * r2 + y;
    y = y * r2 + (y0 + r);
    return (float)y;
}

#endif /* EDGESDK_REDUCE_LIBM_H */
