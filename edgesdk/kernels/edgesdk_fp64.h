/*
 * edgesdk_fp64.h - requantization in IEEE double, as LiteRT's reference FULLY_CONNECTED does it:
 *   out = (int32_t)round((double)acc * effective_scale)
 * with effective_scale = double(input_scale) * double(filter_scale) / double(output_scale) computed by
 * the compiler. round() is emulated without libm: for |r| < 2^31, r - trunc(r) is exact in double.
 * Out-of-range products give INT32_MIN, as the x86 conversion LiteRT runs on does.
 */
#ifndef EDGESDK_FP64_H
#define EDGESDK_FP64_H

#include <stdint.h>

static inline int32_t edgesdk_round_fp64(double r)
{
    if (!(r > -2147483648.0 && r < 2147483648.0)) {
        return INT32_MIN; /* also NaN: cvttsd2si's "integer indefinite" */
    }
    int64_t q = (int32_t)r; /* truncates toward zero */
    double frac = r - (double)q;
    if (frac >= 0.5) {
        q += 1;
    } else if (frac <= -0.5) {
        q -= 1;
    }
    return q > INT32_MAX ? INT32_MIN : (int32_t)q;
}

static inline int32_t edgesdk_requantize_fp64(int32_t acc, double scale)
{
    return edgesdk_round_fp64((double)acc * scale);
}

/*
 * The same result, mostly without soft-float: `multiplier`/`shift` is TFLite's QuantizeMultiplier of the
 * same `scale` (scale = (multiplier + e) * 2^(shift - 31), |e| <= 1/2). With n = 31 - shift and
 * t = acc * multiplier, the exact product is (t + acc*e) / 2^n and the double product adds at most
 * |t| * 2^-53 more, so when t's remainder below 2^n is farther than that bound from the half point the
 * rounding is decided by t alone. Otherwise (ties, near-ties, extreme shifts) it falls back to fp64.
 */
static inline int32_t edgesdk_requantize_fp64_fast(int32_t acc, double scale, int32_t multiplier, int shift)
{
    const int n = 31 - shift;
    if (multiplier > 0 && n >= 2 && n <= 62) {
        const int64_t t = (int64_t)acc * multiplier;
        const int64_t k = t >> n; /* floor(t / 2^n): arithmetic shift */
        const int64_t r = (int64_t)((uint64_t)t & (((uint64_t)1 << n) - 1u));
        const uint64_t abs_t = t < 0 ? (uint64_t)0 - (uint64_t)t : (uint64_t)t;
        const int64_t abs_acc = acc < 0 ? -(int64_t)acc : (int64_t)acc;
        const int64_t bound = abs_acc / 2 + (int64_t)(abs_t >> 53) + 2;
        const int64_t half = (int64_t)1 << (n - 1);
        if (bound < half && k > INT32_MIN && k < INT32_MAX) {
            if (r < half - bound) {
                return (int32_t)k;
            }
            if (r > half + bound) {
                return (int32_t)(k + 1);
            }
        }
    }
    return edgesdk_requantize_fp64(acc, scale);
}

/*
 * The same result again, in fewer 32-bit steps, for the fast FULLY_CONNECTED: shift <= -2 (n = 31 - shift
 * >= 33), multiplier > 0, and `window` >= |acc| / 2 + |acc| * 2^-22 + 2 for every acc the caller can pass
 * (the compiler derives it from the layer's largest possible accumulator), window <= 2^30. That window
 * bounds the distance between t = acc * multiplier and 2^n * (double(acc) * scale) as in the function above,
 * so with u = t + 2^(n-1) + window:
 *   result = floor((t + 2^(n-1)) / 2^n) = floor(u / 2^n)   unless u mod 2^n <= 2 * window (near a tie),
 * and those few go to the double multiply. With s = n - 32, floor(u / 2^n) is u's high word >> s.
 */
static inline int32_t edgesdk_requantize_fp64_window(int32_t acc, double scale, int32_t multiplier, int shift,
                                                     uint32_t window)
{
    const int s = ~shift; /* n - 32, in [1, 29] */
    const int64_t t = (int64_t)acc * multiplier;
    const uint32_t u_low = (uint32_t)t + window;
    const uint32_t carry = u_low < window;
    const int32_t u_high = (int32_t)(t >> 32) + (int32_t)(1u << (s - 1)) + (int32_t)carry;
    if (((uint32_t)u_high & ((1u << s) - 1u)) == 0 && u_low <= 2 * window) {
        return edgesdk_requantize_fp64(acc, scale);
    }
    return u_high >> s;
}

#endif /* EDGESDK_FP64_H */
