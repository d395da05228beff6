"""ONNX Runtime's arithmetic for QDQ models (`--rounding ort`), computed at build time in numpy float32.

ONNX Runtime (CPU execution provider, x86-64) runs a QDQ model either as fused QLinear kernels (its graph
optimizer replaces `DequantizeLinear -> op -> QuantizeLinear` groups) or as the float ops between the
DequantizeLinear and QuantizeLinear nodes. Which one happens to each group is recorded by
edgesdk/importer/ort_plan.py in `op.attrs["ort"]` (an OrtExecution); the formulas of both, measured against
ONNX Runtime 1.32 (docs/rounding.md, "ONNX Runtime"), are here:

* requantization of an int32 accumulator (QLinearConv, QGemm, QLinearMatMul, QLinearGlobalAveragePool):
  `clamp(round_half_even(float32(acc) * scale) + zp)`, `scale` a float32 computed from the float32 scales;
* QuantizeLinear: `clamp(round_half_even(x / scale) + zp)` in float32 (a NaN gives the lowest value);
  DequantizeLinear: `float32(x - zp) * scale`;
* elementwise ops whose value depends on one int8 input only (activations, requantization, QLinearConcat,
  QLinearSigmoid, QLinearLeakyRelu) are 256-entry tables, built here exactly as ONNX Runtime builds or computes
  them;
* QLinearAdd, QLinearMul and QLinearAveragePool have formulas of their own (edgesdk/kernels/edgesdk_ort.c),
  computed on the uint8 values: on x86-64 every fused kernel runs on uint8 data (ONNX Runtime converts int8
  QDQ pairs to uint8 and fuses no int8 activations), and where a kernel adds the zero point in float32 the
  result depends on it. The IR's int8 value x is the uint8 value x + 128.

Float32 operations are single IEEE operations (numpy float32); `fma32` is the exactly rounded fused
multiply-add that ONNX Runtime's AVX2 kernels use.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..dataclass_cache import dataclass

f32 = np.float32
UINT8_SHIFT = 128  # uint8 value = int8 value + 128 (the domain ONNX Runtime's fused kernels compute in)


@dataclass(frozen=True)
class OrtExecution:
    """How ONNX Runtime's CPU provider runs the QDQ group an IR op came from.

    kernel: the ONNX op of the group (Conv, Add, GlobalAveragePool, ...; "QuantizeLinear" for a model input,
            "DequantizeLinear" for a requantization Q(DQ(x)))
    fused:  True when the graph optimizer replaced the group by one quantized kernel (QLinearConv, QLinearAdd,
            ..., or the integer op itself for MaxPool/Reshape/...); False when ONNX Runtime runs the float op
            between DequantizeLinear and QuantizeLinear.
    """

    kernel: str
    fused: bool
    inserted: bool = False  # an op edgesdk's importer added (a layout change): no ONNX node of its own
    node: str = ""  # the ONNX node (its name, else its output), for messages and comments
    optimized: str = ""  # not fused: the optimized graph's node computing the float value ("Conv", "domain.Op")
    attributes: tuple = ()  # the ONNX node's numeric attributes, (name, value) pairs (Gemm's transB, alpha, ...)

    def attribute(self, name: str, default=None):
        return dict(self.attributes).get(name, default)

    @property
    def text(self) -> str:
        if self.inserted:
            return f"{self.kernel} (inserted by edgesdk, exact)"
        name = f" '{self.node}'" if self.node else ""
        return f"ONNX {self.kernel}{name} ({'fused QDQ group' if self.fused else 'float32, not fused'})"


def execution(op) -> OrtExecution | None:
    """The op's ONNX Runtime execution (set by --rounding ort's plan), or None."""
    return op.attrs.get("ort")


DATA_MOVEMENT = ("MAX_POOL_2D", "RESHAPE", "TRANSPOSE", "CONCATENATION")


def requantizes(op) -> bool:
    """Under --rounding ort, whether the op's value depends on ONNX Runtime's float32 arithmetic. False for ops that
    only select or move int8 values between tensors of one quantization, whose result any exact integer engine
    reproduces (targets without float32 requantization take only those)."""
    if execution(op) is None:
        return False
    if op.type not in DATA_MOVEMENT:
        return True
    tensors = [t for t in op.inputs + op.outputs if t is not None and not t.is_const]
    quants = {(float(np.float32(t.quant.scale[0])), int(t.quant.zero_point[0])) if t.quant is not None else None
              for t in tensors}
    return len(quants) != 1


# -- exact float32 primitives --------------------------------------------------------------------------------

def fma32(a, b, c) -> np.float32:
    """fmaf(a, b, c): a * b + c rounded once to float32 (exact rational arithmetic, then round half to even)."""
    exact = Fraction(float(f32(a))) * Fraction(float(f32(b))) + Fraction(float(f32(c)))
    return _round_fraction_f32(exact)


def _round_fraction_f32(value: Fraction) -> np.float32:
    if value == 0:
        return f32(0.0)
    # float64 nearest first, then fix the rare double-rounding case by comparing exact distances.
    approx = f32(float(value))
    if not np.isfinite(approx):
        return approx
    best = approx
    for candidate in (np.nextafter(approx, f32(-np.inf)), np.nextafter(approx, f32(np.inf))):
        if not np.isfinite(candidate):
            continue
        d_best, d_cand = abs(Fraction(float(best)) - value), abs(Fraction(float(candidate)) - value)
        if d_cand < d_best or (d_cand == d_best and int(candidate.view(np.uint32)) % 2 == 0):
            best = candidate
    return f32(best)


def rne(v) -> np.ndarray:
    """Round half to even (cvtps2dq / nearbyintf in the default rounding mode)."""
    return np.rint(np.asarray(v, f32))


# -- QuantizeLinear / DequantizeLinear --------------------------------------------------------------------------

def quantize_linear(values, scale: float, zero_point: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    """MlasQuantizeLinear: x / scale in float32, clamped to [lo - zp, hi - zp] (a NaN to lo - zp: MAXPS returns its
    second operand), rounded half to even, plus the zero point. int8 result (or the lo..hi type's values)."""
    v = (np.asarray(values, f32) / f32(scale)).astype(f32)
    v = np.where(np.isnan(v), f32(lo - zero_point), v)
    v = np.clip(v, f32(lo - zero_point), f32(hi - zero_point))
    return (rne(v).astype(np.int64) + zero_point).astype(np.int64)


def dequantize_linear(q, scale: float, zero_point: int) -> np.ndarray:
    """DequantizeLinear: float32(x - zp) * scale."""
    return (np.asarray(q, np.int64) - zero_point).astype(f32) * f32(scale)


def int8_values() -> np.ndarray:
    return np.arange(-128, 128)


def lut(fn, x_scale: float, x_zp: int, y_scale: float, y_zp: int) -> np.ndarray:
    """The int8 -> int8 table of a unary op computed on dequantized values: entry (uint8)x holds
    QuantizeLinear(fn(x_scale * float32(x - x_zp))) (QlinearBuildLookupTable's order of operations; the float
    path's DequantizeLinear gives the same product). Indexed like edgesdk_lut_s8: by the input byte."""
    x = int8_values()
    dequantized = (f32(x_scale) * (x - x_zp).astype(f32)).astype(f32)
    out = quantize_linear(fn(dequantized), y_scale, y_zp)
    table = np.zeros(256, np.int8)
    table[x & 0xFF] = out.astype(np.int8)
    return table


def identity(v):
    return np.asarray(v, f32)


def relu_like(lo: float | None, hi: float | None):
    """Relu (lo 0) or Clip(lo, hi) on float32 values."""
    def fn(v):
        v = np.asarray(v, f32)
        if lo is not None:
            v = np.maximum(v, f32(lo))
        if hi is not None:
            v = np.minimum(v, f32(hi))
        return v.astype(f32)
    return fn


# -- MLAS's logistic (QLinearSigmoid's table and the float Sigmoid) ------------------------------------------------

_LOGISTIC = dict(lower=-18.0, upper=18.0, alpha_9=4.37031012579801e-11, alpha_7=1.15627324459942e-07,
                 alpha_5=6.08574864600143e-05, alpha_3=8.51377133304701e-03, alpha_1=2.48287947061529e-01,
                 beta_10=6.10247389755681e-13, beta_8=5.76102136993427e-09, beta_6=6.29106785017040e-06,
                 beta_4=1.70198817374094e-03, beta_2=1.16817656904453e-01, beta_0=9.93151921023180e-01)


def logistic(values) -> np.ndarray:
    """MlasComputeLogistic as its x86-64 FMA3 kernel computes it: Eigen's rational approximation, the Horner steps
    fused multiply-adds, then p / q + 0.5 clamped to [0, 1]."""
    c = {k: f32(v) for k, v in _LOGISTIC.items()}
    out = []
    for x in np.asarray(values, f32).reshape(-1):
        v = f32(min(max(x, c["lower"]), c["upper"])) if not np.isnan(x) else x
        v2 = f32(v * v)
        p = fma32(v2, c["alpha_9"], c["alpha_7"])
        for k in ("alpha_5", "alpha_3", "alpha_1"):
            p = fma32(p, v2, c[k])
        p = f32(p * v)
        q = fma32(v2, c["beta_10"], c["beta_8"])
        for k in ("beta_6", "beta_4", "beta_2", "beta_0"):
            q = fma32(q, v2, c[k])
        out.append(min(max(f32(f32(p / q) + f32(0.5)), f32(0.0)), f32(1.0)))
    return np.asarray(out, f32).reshape(np.shape(values))


def leaky_relu(alpha: float):
    def fn(v):
        v = np.asarray(v, f32)
        return np.where(v >= 0, v, (f32(alpha) * v).astype(f32)).astype(f32)
    return fn


# -- scales of the fused kernels -------------------------------------------------------------------------------

def conv_scale(x_scale: float, w_scale: float, y_scale: float) -> np.float32:
    """QLinearConv / QLinearMatMul / QGemm (alpha 1): X_scale * W_scale / Y_scale, in float32 left to right."""
    return f32(f32(f32(x_scale) * f32(w_scale)) / f32(y_scale))


def global_average_scale(x_scale: float, y_scale: float, count: int) -> np.float32:
    """QLinearGlobalAveragePool: ScaleInput / (ScaleOutput * float(ImageSize))."""
    return f32(f32(x_scale) / f32(f32(y_scale) * f32(count)))


@dataclass(frozen=True)
class AddConstants:
    """QLinearAdd (MlasQLinearAddKernelAvx2Helper) on uint8 values a, b:
        fixed = float(zp_c) - fma(ratio_a, zp_a, ratio_b * zp_b)          (GCC contracts the sum)
        c = round_half_even(fma(a, ratio_a, fma(b, ratio_b, fixed)))      (both operands vectors, or b a scalar)
        c = round_half_even(fma(b, ratio_b, fma(a, ratio_a, fixed)))      (a a scalar)
    saturated to uint8. `inner` is the operand of the inner fma: a table of its 256 values is precomputed."""
    ratio_a: np.float32
    ratio_b: np.float32
    fixed: np.float32


def add_constants(a_scale, a_zp_u8, b_scale, b_zp_u8, c_scale, c_zp_u8) -> AddConstants:
    ratio_a = f32(f32(a_scale) / f32(c_scale))
    ratio_b = f32(f32(b_scale) / f32(c_scale))
    fixed = f32(f32(c_zp_u8) - fma32(ratio_a, f32(a_zp_u8), f32(ratio_b * f32(b_zp_u8))))
    return AddConstants(ratio_a, ratio_b, fixed)


def add_inner_table(ratio, fixed) -> np.ndarray:
    """fma(v, ratio, fixed) for every uint8 value v, indexed by the int8 value + 128 (= v)."""
    return np.array([fma32(f32(v), ratio, fixed) for v in range(256)], f32)


def mul_ratio(a_scale, b_scale, c_scale) -> np.float32:
    """QLinearMul (SSE2): ScaleA * ScaleB / ScaleC; c = round_half_even(float(prod) * ratio + float(zp_c)) with
    prod = (a - zp_a) * (b - zp_b), saturated."""
    return f32(f32(f32(a_scale) * f32(b_scale)) / f32(c_scale))
