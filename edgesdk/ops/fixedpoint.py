"""gemmlowp's fixed-point exp, logistic and tanh on raw int32 values, as TFLite Micro's integer kernels use them
(the Python twin of edgesdk/kernels/edgesdk_fixedpoint.h; tests/test_ops_fixedpoint.py compares the two on
every int8 input). `Qm` means gemmlowp's FixedPoint<int32_t, m>: m integer bits, 31 - m fractional bits.

Python integers do not overflow; every step below stays inside int32 for the inputs these functions accept,
as it does in C, so no wrap-around is modelled beyond the one left shift that can leave the range."""

from __future__ import annotations

from ..ir.quant import INT32_MAX, INT32_MIN, rounding_divide_by_pot, saturating_rounding_doubling_high_mul

ONE_Q0 = INT32_MAX  # Q0 cannot hold 1.0: gemmlowp uses the largest value


def mul(a: int, b: int) -> int:
    return saturating_rounding_doubling_high_mul(a, b)


def rounding_half_sum(a: int, b: int) -> int:
    """(a + b) / 2 rounded to nearest, halves away from zero (gemmlowp RoundingHalfSum)."""
    total = a + b
    total += 1 if total >= 0 else -1
    return total // 2 if total >= 0 else -((-total) // 2)  # C division truncates toward zero


def mul_pot(x: int, exponent: int) -> int:
    """x * 2^exponent: saturating for exponent > 0, rounding to nearest for exponent < 0."""
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    if exponent == 0:
        return x
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return INT32_MAX
    if x < -threshold:
        return INT32_MIN
    return x << exponent


def rescale(x: int, src_integer_bits: int, dst_integer_bits: int) -> int:
    return mul_pot(x, src_integer_bits - dst_integer_bits)


def exp_on_interval_neg_quarter(a: int) -> int:
    """exp(a) for a in [-1/4, 0), Q0 -> Q0: Taylor expansion around -1/8."""
    exp_minus_one_eighth = 1895147668
    one_third = 715827883
    x = a + (1 << 28)  # a + 1/8
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4_over_4 = mul_pot(mul(x2, x2), -2)
    poly = mul_pot(mul(x4_over_4 + x3, one_third) + x2, -1)
    return exp_minus_one_eighth + mul(exp_minus_one_eighth, x + poly)


# exp(-2^k) for k = -2..4, Q0: applied for each set bit of the integer part of -a.
_BARREL_MULTIPLIERS = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """exp(a) for a <= 0 given in Q(integer_bits), result Q0 (gemmlowp exp_on_negative_values)."""
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = exp_on_interval_neg_quarter(rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = a_mod_quarter_minus_one_quarter - a
    for exponent in range(-2, 5):
        if integer_bits > exponent and remainder & (1 << (fractional_bits + exponent)):
            result = mul(result, _BARREL_MULTIPLIERS[exponent + 2])
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):  # below -32: exp underflows
        result = 0
    return ONE_Q0 if a == 0 else result


def _newton_reciprocal_q2(a: int) -> int:
    """2 / (1 + a) in Q2 for a in [0, 1) Q0: three Newton-Raphson steps from 48/17 - 32/17 * d (gemmlowp)."""
    half_denominator = rounding_half_sum(a, ONE_Q0)
    one_q2 = 1 << 29
    x = 1515870810 + mul(half_denominator, -1010580540)  # 48/17 and -32/17 in Q2
    for _ in range(3):
        x = x + rescale(mul(x, one_q2 - mul(half_denominator, x)), 4, 2)
    return x


def one_over_one_plus_x(a: int) -> int:
    """1 / (1 + a) for a in [0, 1), Q0 -> Q0."""
    return rescale(_newton_reciprocal_q2(a), 1, 0)  # x / 2, read as Q1, back to Q0


def one_minus_x_over_one_plus_x(a: int) -> int:
    """(1 - a) / (1 + a) for a in [0, 1), Q0 -> Q0."""
    return rescale(_newton_reciprocal_q2(a) - (1 << 29), 2, 0)


def logistic(a: int, integer_bits: int) -> int:
    """logistic(a) for a in Q(integer_bits), result Q0 (gemmlowp logistic)."""
    if a == 0:
        return 1 << 30  # 0.5
    positive = one_over_one_plus_x(exp_on_negative_values(-abs(a), integer_bits))
    return positive if a > 0 else ONE_Q0 - positive


def tanh(a: int, integer_bits: int) -> int:
    """tanh(a) for a in Q(integer_bits), result Q0 (gemmlowp tanh)."""
    if a == 0:
        return 0
    # -tanh(n) for n < 0 = (1 - exp(2n)) / (1 + exp(2n)); 2n is n read with one more integer bit.
    t = one_minus_x_over_one_plus_x(exp_on_negative_values(-abs(a), integer_bits + 1))
    return -t if a < 0 else t
