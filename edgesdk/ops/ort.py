"""Build-time data of the ops under `--rounding ort` (ONNX Runtime's CPU execution of QDQ models).

Each op's `prepare(op, "ort")` (edgesdk/ops/<op>.py) returns one of these, computed from the op's
OrtExecution (op.attrs["ort"], edgesdk/importer/ort_plan.py) with the arithmetic of edgesdk/ir/ort.py:

  CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED   ConvData with rounding "f32" and float32 scales (conv_data)
  CONV_2D, DEPTHWISE_CONV_2D not fused          OrtFloatConvData: MLAS's float32 convolution between
                                                DequantizeLinear and QuantizeLinear (float_conv_data)
  FULLY_CONNECTED not fused                     OrtFloatFullyConnectedData: MLAS's float32 Gemm / MatMul
  MEAN (GlobalAveragePool)                      ReduceData with rounding "f32" and the float32 scale
  ADD, MUL                                      OrtAddData / OrtMulData (fused QLinearAdd / QLinearMul) or
                                                OrtFloatBinaryData (float Add / Mul between DQ and Q)
  AVERAGE_POOL_2D                               OrtAveragePoolData (QLinearAveragePool)
  CONCATENATION                                 OrtConcatData: per input a table or a plain copy
  LOGISTIC, RELU, RELU6, RELU_N1_TO_1,          OrtTableData: a 256-entry table
  QUANTIZE int8 -> int8
  QUANTIZE float32 -> int8                      OrtQuantizeData (QuantizeLinear)

Which op types and executions edgesdk reproduces at all is decided before (unsupported_reason).
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..ir import ort
from ..ir.ort import UINT8_SHIFT, execution, f32
from ..ir.rounding import ROUNDING_F32

# Long-tail ops lowered through TVM whose float32 arithmetic is exact IEEE operations, as ONNX Runtime's float
# kernels compute them (no libm, no reassociation): their values match. Transcendental ones do not.
EXACT_LONG_TAIL = ("relax.subtract", "relax.divide", "relax.maximum", "relax.minimum", "relax.abs", "relax.negative",
                   "relax.floor", "relax.ceil", "relax.sqrt", "relax.square", "relax.nn.leakyrelu",
                   "relax.permute_dims")
ACCUMULATING = {"CONV_2D": "QLinearConv", "DEPTHWISE_CONV_2D": "QLinearConv", "FULLY_CONNECTED": "QGemm/QLinearMatMul",
                "MEAN": "QLinearGlobalAveragePool", "AVERAGE_POOL_2D": "QLinearAveragePool"}
ANY_EXECUTION = ("ADD", "MUL", "MAX_POOL_2D", "CONCATENATION", "LOGISTIC", "RELU", "RELU6", "RELU_N1_TO_1",
                 "QUANTIZE", "DEQUANTIZE", "RESHAPE", "TRANSPOSE")
OP_TYPES = tuple(ACCUMULATING) + ANY_EXECUTION


def unsupported_reason(op) -> str | None:
    """Why edgesdk cannot reproduce ONNX Runtime for this op (None: it can)."""
    run = execution(op)
    where = f"{op.location}, {run.text}" if run is not None and not run.inserted else op.location
    if "relax_function" in op.attrs:
        inexact = [name for name in op.attrs.get("relax_ops", []) if name not in EXACT_LONG_TAIL]
        if inexact:
            return (f"{where}: lowered through TVM with {', '.join(inexact)}, whose float32 results (libm) differ "
                    "from ONNX Runtime's own implementation")
        return None
    if op.type in ACCUMULATING:
        if op.type == "MEAN" and run is not None and run.kernel not in ("GlobalAveragePool", "AveragePool"):
            return f"{where}: ONNX Runtime has no quantized {run.kernel} and runs it in float32"
        if run is not None and not run.fused and op.type in FLOAT_LAYER_TYPES:
            why = float_conv_unsupported(op) if op.type in FLOAT_CONV_TYPES else float_fc_unsupported(op)
            if why is None:
                return None
            return (f"{where}: ONNX Runtime runs this group as a float32 {run.kernel} (not fused into "
                    f"{ACCUMULATING[op.type]}) and {why}. " + FAN_OUT_ADVICE)
        if run is None or not run.fused:
            return (f"{where}: ONNX Runtime runs this group in float32 (not fused into {ACCUMULATING[op.type]}), "
                    "summing float32 values in the order of its MLAS kernels, which edgesdk reproduces for Conv, "
                    "Gemm and MatMul only. " + FAN_OUT_ADVICE)
        if op.type == "MEAN":
            return None
        if not full_range_activation(op):
            return f"{where}: the fused activation clips inside the output's quantized range"
        if op.type != "AVERAGE_POOL_2D" and len(set(np.asarray(op.inputs[1].quant.zero_point).reshape(-1).tolist())) != 1:
            return f"{where}: the weights' zero points differ between channels (ONNX Runtime refuses that too)"
        return None
    if op.type not in ANY_EXECUTION:
        return f"{where}: edgesdk does not reproduce ONNX Runtime's {op.type} (--rounding ort covers {', '.join(OP_TYPES)})"
    if op.type in ("ADD", "MUL"):
        a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
        if not all(t.quant is not None and t.dtype == "int8" for t in (a, b, y)):
            return f"{where}: --rounding ort reproduces int8 {op.type} only"
        n = y.num_elements
        if not (a.num_elements == b.num_elements == n or 1 in (a.num_elements, b.num_elements)):
            return (f"{where}: broadcasts {list(a.shape)} with {list(b.shape)}; --rounding ort reproduces "
                    "ONNX Runtime's broadcasting of a single element only")
        if run is not None and run.fused and not full_range_activation(op):
            return f"{where}: the fused activation clips inside the output's quantized range"
    if op.type == "MAX_POOL_2D" and not same_quantization(op.inputs[0], op.outputs[0]):
        return f"{where}: input and output are quantized differently"
    return None


FAN_OUT_ADVICE = ("On x86-64 ONNX Runtime fuses only uint8 activations, and keeps an int8 tensor (and the ops "
                  "producing and reading it) in float32 when it feeds more than one op: quantize the model with "
                  "uint8 activations (quantize_static(..., activation_type=QuantType.QUInt8); its default is QInt8). "
                  "extra_options={'DedicatedQDQPair': True} does not help: ONNX Runtime merges the duplicated "
                  "QuantizeLinear nodes again")
FLOAT_CONV_TYPES = ("CONV_2D", "DEPTHWISE_CONV_2D")
FLOAT_LAYER_TYPES = FLOAT_CONV_TYPES + ("FULLY_CONNECTED",)  # reproduced when ONNX Runtime runs them in float32
MLAS_STRIDE_K = 256  # MLAS_SGEMM_STRIDEK: longer sums are split into blocks that depend on the thread partition


def full_range_activation(op) -> bool:
    """The fused activation clamps nothing the output's int8 range would not (ONNX Runtime removed it)."""
    from .activation import activation_range

    return activation_range(op) == (-128, 127)


def same_quantization(a, b) -> bool:
    return (a.quant is not None and b.quant is not None and a.quant.scale.size == b.quant.scale.size == 1
            and np.float32(a.quant.scale[0]) == np.float32(b.quant.scale[0])
            and int(a.quant.zero_point[0]) == int(b.quant.zero_point[0]))


def _qp(t) -> tuple:
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


def float_activation_bounds(op) -> tuple:
    """(lo, hi) in int8 of a fused activation applied in float32 before QuantizeLinear: QuantizeLinear of the clip
    limits (quantization is monotonic, so clipping the float equals clipping the quantized value)."""
    y_scale, y_zp = _qp(op.outputs[0])
    limits = {"NONE": (None, None), "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}
    lo, hi = limits[op.attrs.get("activation", "NONE")]
    q = lambda v: int(ort.quantize_linear([v], y_scale, y_zp)[0])  # noqa: E731
    return (-128 if lo is None else q(lo)), (127 if hi is None else q(hi))


# -- accumulating layers ------------------------------------------------------------------------------------

def conv_scales(op) -> tuple:
    """Per output channel: X_scale * W_scale[c] / Y_scale in float32 (QLinearConv, QGemm with alpha 1,
    QLinearMatMul)."""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    channels = int(y.shape[-1])
    w_scales = np.asarray(w.quant.scale, np.float32).reshape(-1)
    if w_scales.size == 1:
        w_scales = np.repeat(w_scales, channels)
    return tuple(float(ort.conv_scale(x.quant.scale[0], s, y.quant.scale[0])) for s in w_scales)


def conv_data(op):
    """ConvData for the "f32" requantization: the float32 scales, the filter's zero point applied (a QLinearConv,
    QGemm or QLinearMatMul); OrtFloatConvData for a Conv group ONNX Runtime runs in float32."""
    if op.type in FLOAT_CONV_TYPES and not execution(op).fused:
        return float_conv_data(op)
    if op.type == "FULLY_CONNECTED" and not execution(op).fused:
        return float_fc_data(op)
    from .activation import activation_range
    from .conv_data import ConvData

    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    zps = set(np.asarray(w.quant.zero_point).reshape(-1).tolist())
    scales = conv_scales(op)
    unused = (0,) * len(scales)  # no integer multiplier: the kernels multiply by the float32 scale
    act_min, act_max = activation_range(op)
    return ConvData(-int(x.quant.zero_point[0]), -int(zps.pop()), int(y.quant.zero_point[0]),
                    scales, unused, unused, act_min, act_max, ROUNDING_F32)


# -- Conv groups ONNX Runtime runs in float32 -----------------------------------------------------------------

@dataclass(frozen=True)
class OrtFloatConvData:
    """DequantizeLinear -> float32 Conv (MLAS: im2col, then SGEMM) -> QuantizeLinear. Each output sums its products
    over k = (input channel of its group, filter row, filter column) in that order, then adds the bias:
    `fma_chain` (MLAS's SGEMM kernels, FMA3/AVX-512: acc = fma(w, x, acc) from 0) when a group has several filters,
    else MLAS's M=1 kernel (SgemmKernelM1Avx: products rounded, summed four at a time as ((p0 + p1) + p2) + p3, each
    group of four then added to the running sum). Measured bit-exact against ONNX Runtime 1.32 (docs/rounding.md)."""
    groups: int  # 1 (CONV_2D) or the input channels (DEPTHWISE_CONV_2D)
    fma_chain: bool
    dequantized: np.ndarray  # float32[256]: DequantizeLinear of each int8 input value, indexed by value + 128
    filter: np.ndarray  # float32 [out_c][in_c / groups][filter_h][filter_w]: DequantizeLinear of the weights
    bias: np.ndarray  # float32 [out_c]: DequantizeLinear of the int32 bias (zeros without one)
    output_scale: float
    output_zero_point: int
    act_min: int
    act_max: int


def float_conv_geometry(op) -> tuple:
    """(groups, input channels per group, filters per group, k = products per output) of a CONV_2D or
    DEPTHWISE_CONV_2D as ONNX Runtime's Conv sees it."""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    out_c = int(y.shape[3])
    if op.type == "DEPTHWISE_CONV_2D":
        groups, per_group = int(x.shape[3]), 1
    else:
        groups, per_group = 1, int(x.shape[3])
    return groups, per_group, out_c // groups, per_group * int(w.shape[1]) * int(w.shape[2])


def float_conv_unsupported(op) -> str | None:
    """Why edgesdk cannot reproduce ONNX Runtime's float32 Conv of this group (None: it can)."""
    x, a = op.inputs[0], op.attrs
    run = execution(op)
    if run.optimized != "Conv":
        return (f"ONNX Runtime's optimizer turned it into {run.optimized or 'another kernel'}, whose summation order "
                "edgesdk does not reproduce")
    _, per_group, filters, k = float_conv_geometry(op)
    if filters > 1 and k > MLAS_STRIDE_K:
        return (f"each output sums {k} products, which MLAS may split into blocks of a size that depends on its "
                f"thread partition (edgesdk reproduces sums of at most {MLAS_STRIDE_K})")
    pads = [a.get(key, 0) for key in ("pad_top", "pad_left", "pad_bottom", "pad_right")]
    if (per_group == 1 and a.get("stride_h", 1) == a.get("stride_w", 1) == 1 and not any(pads)
            and a.get("dilation_h", 1) == a.get("dilation_w", 1) == 1 and int(op.inputs[1].shape[2]) == int(x.shape[2])
            and k > 1):
        return "its filter spans the input's whole width, which MLAS computes with a transposed GEMM"
    return None


def float_conv_data(op) -> OrtFloatConvData:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    groups, _, filters, _ = float_conv_geometry(op)
    out_c = int(y.shape[3])
    weights = np.asarray(w.data).astype(np.int64)
    if op.type == "DEPTHWISE_CONV_2D":  # 1HW(C*M) -> (C*M)1HW: output channel o = c * M + m is in group c
        weights = weights.transpose(3, 0, 1, 2)
    else:  # OHWI -> OIHW
        weights = weights.transpose(0, 3, 1, 2)
    w_scale = np.broadcast_to(np.asarray(w.quant.scale, f32).reshape(-1), (out_c,))
    w_zp = np.broadcast_to(np.asarray(w.quant.zero_point, np.int64).reshape(-1), (out_c,))
    dequantized_w = ((weights - w_zp[:, None, None, None]).astype(f32) * w_scale[:, None, None, None]).astype(f32)
    lo, hi = float_activation_bounds(op)
    return OrtFloatConvData(groups, filters > 1, dequantize_table(x), np.ascontiguousarray(dequantized_w).reshape(-1),
                            _dequantized_bias(b, out_c), _qp(y)[0], _qp(y)[1], lo, hi)


# -- Gemm / MatMul groups ONNX Runtime runs in float32 ----------------------------------------------------------

SUM_FMA_CHAIN, SUM_M1, SUM_M1_TRANSPOSED = 0, 1, 2  # EDGESDK_ORT_SUM_* (edgesdk_ort.h)


@dataclass(frozen=True)
class OrtFloatFullyConnectedData:
    """DequantizeLinear -> float32 Gemm or MatMul (MLAS SGEMM) -> QuantizeLinear, summed in the order of the kernel
    MLAS picks: `order` SUM_FMA_CHAIN (several rows), SUM_M1 (one row, B not transposed: MatMul, Gemm transB 0;
    Gemm's bias is the sum the first run of products is added to: `bias_first`) or SUM_M1_TRANSPOSED (one row,
    Gemm transB 1). Measured bit-exact against ONNX Runtime 1.32 (docs/rounding.md)."""
    order: int
    bias_first: bool
    dequantized: np.ndarray  # float32[256]: DequantizeLinear of each int8 input value, indexed by value + 128
    weights: np.ndarray  # float32 [units][depth]: DequantizeLinear of the weights
    bias: np.ndarray  # float32 [units] (zeros without one)
    output_scale: float
    output_zero_point: int
    act_min: int
    act_max: int


def _dequantized_bias(b, units: int) -> np.ndarray:
    if b is None:
        return np.zeros(units, f32)
    scale = np.broadcast_to(np.asarray(b.quant.scale, f32).reshape(-1), (units,))
    zp = np.broadcast_to(np.asarray(b.quant.zero_point, np.int64).reshape(-1), (units,))
    return ((np.asarray(b.data).astype(np.int64) - zp).astype(f32) * scale).astype(f32)


def _dequantized_weights(w, units: int) -> np.ndarray:
    """DequantizeLinear of weights whose first axis is the output channel: float32(w - zp[c]) * scale[c]."""
    data = np.asarray(w.data).astype(np.int64)
    extra = (None,) * (data.ndim - 1)
    scale = np.broadcast_to(np.asarray(w.quant.scale, f32).reshape(-1), (units,))[(slice(None),) + extra]
    zp = np.broadcast_to(np.asarray(w.quant.zero_point, np.int64).reshape(-1), (units,))[(slice(None),) + extra]
    return ((data - zp).astype(f32) * scale).astype(f32)


def float_fc_unsupported(op) -> str | None:
    """Why edgesdk cannot reproduce ONNX Runtime's float32 Gemm / MatMul of this group (None: it can)."""
    run, x = execution(op), op.inputs[0]
    if run.kernel not in ("Gemm", "MatMul") or run.optimized != run.kernel:
        return (f"ONNX Runtime's optimizer turned it into {run.optimized or 'another kernel'}, whose summation order "
                "edgesdk does not reproduce")
    if run.kernel == "Gemm" and (run.attribute("transA", 0) != 0 or float(run.attribute("alpha", 1.0)) != 1.0
                                 or float(run.attribute("beta", 1.0)) != 1.0):
        return "it is a Gemm with transA, alpha or beta set (MLAS scales or transposes in other kernels)"
    b = op.inputs[2] if len(op.inputs) > 2 else None
    if run.kernel == "MatMul" and b is not None and np.any(np.asarray(b.data) != 0):
        return "edgesdk's graph gives this MatMul a bias, which ONNX Runtime's MatMul does not have"
    if len(x.shape) != 2:
        return f"its input is {len(x.shape)}-D (edgesdk reproduces MLAS's order for a 2-D input)"
    if int(x.shape[0]) > 1 and int(x.shape[1]) > MLAS_STRIDE_K:
        return (f"each output sums {x.shape[1]} products, which MLAS may split into blocks of a size that depends "
                f"on its thread partition (edgesdk reproduces sums of at most {MLAS_STRIDE_K})")
    return None


def float_fc_data(op) -> OrtFloatFullyConnectedData:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    run = execution(op)
    units = int(w.shape[0])
    if int(x.shape[0]) > 1:
        order, bias_first = SUM_FMA_CHAIN, False
    elif run.kernel == "Gemm" and run.attribute("transB", 0):
        order, bias_first = SUM_M1_TRANSPOSED, False
    else:
        order, bias_first = SUM_M1, run.kernel == "Gemm" and b is not None
    lo, hi = float_activation_bounds(op)
    return OrtFloatFullyConnectedData(order, bias_first, dequantize_table(x),
                                      np.ascontiguousarray(_dequantized_weights(w, units)).reshape(-1),
                                      _dequantized_bias(b, units), _qp(y)[0], _qp(y)[1], lo, hi)


# -- ADD, MUL ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OrtAddData:
    """QLinearAdd: out = rne(fma(outer_u8, outer_ratio, inner_table[inner_u8])), saturated; `inner` is input 0 or 1
    (the inner fma's operand: input 1, unless input 0 is a single element)."""
    inner: int
    inner_table: np.ndarray  # float32[256]: fma(v, inner ratio, fixed) for uint8 v, indexed by int8 value + 128
    outer_ratio: float
    act_min: int
    act_max: int


@dataclass(frozen=True)
class OrtMulData:
    """QLinearMul: out = rne(float(prod) * ratio + float(zp_c_u8)), prod = (a - zp_a) * (b - zp_b), saturated."""
    a_zero_point: int
    b_zero_point: int
    ratio: float
    output_zero_point_u8: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class OrtFloatBinaryData:
    """Add / Mul in float32 between DequantizeLinear and QuantizeLinear: QuantizeLinear(dq_a[a] op dq_b[b])."""
    a_table: np.ndarray  # float32[256]: DequantizeLinear of each int8 value, indexed by value + 128
    b_table: np.ndarray
    output_scale: float
    output_zero_point: int
    act_min: int
    act_max: int


def dequantize_table(t) -> np.ndarray:
    scale, zp = _qp(t)
    return ort.dequantize_linear(ort.int8_values(), scale, zp).astype(np.float32)


def binary_data(op):
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if not execution(op).fused:
        lo, hi = float_activation_bounds(op)
        return OrtFloatBinaryData(dequantize_table(a), dequantize_table(b), _qp(y)[0], _qp(y)[1], lo, hi)
    (sa, za), (sb, zb), (sy, zy) = _qp(a), _qp(b), _qp(y)
    if op.type == "MUL":
        return OrtMulData(za, zb, float(ort.mul_ratio(sa, sb, sy)), zy + UINT8_SHIFT, -128, 127)
    c = ort.add_constants(sa, za + UINT8_SHIFT, sb, zb + UINT8_SHIFT, sy, zy + UINT8_SHIFT)
    inner = 0 if a.num_elements == 1 and b.num_elements != 1 else 1
    inner_ratio, outer_ratio = (c.ratio_a, c.ratio_b) if inner == 0 else (c.ratio_b, c.ratio_a)
    return OrtAddData(inner, ort.add_inner_table(inner_ratio, c.fixed), float(outer_ratio), -128, 127)


# -- pooling -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OrtAveragePoolData:
    """QLinearAveragePool. A window covering the whole input without padding takes ONNX Runtime's global average
    pool (integer sum, "f32" requantization by global_scale); otherwise float32: the dequantized taps summed row by
    row, divided by float(count), then rne(sum / y_scale + float(zp_y_u8)), clamped."""
    is_global: bool
    dequantized: np.ndarray  # float32[256], indexed by int8 value + 128
    output_scale: float
    output_zero_point_u8: int
    input_zero_point: int
    global_scale: float


def average_pool_data(op) -> OrtAveragePoolData:
    x, y, a = op.inputs[0], op.outputs[0], op.attrs
    is_global = ((a["filter_h"], a["filter_w"]) == (x.shape[1], x.shape[2])
                 and not any(a.get(k, 0) for k in ("pad_top", "pad_left", "pad_bottom", "pad_right")))
    (sx, zx), (sy, zy) = _qp(x), _qp(y)
    dequantized = (f32(sx) * (ort.int8_values() - zx).astype(f32)).astype(f32)
    gap = float(ort.global_average_scale(sx, sy, a["filter_h"] * a["filter_w"]))
    return OrtAveragePoolData(is_global, dequantized, sy, zy + UINT8_SHIFT, zx, gap)


def global_average_scale(op, count: int) -> float:
    (sx, _), (sy, _) = _qp(op.inputs[0]), _qp(op.outputs[0])
    return float(ort.global_average_scale(sx, sy, count))


# -- tables and copies -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OrtTableData:
    """A 256-entry int8 table (edgesdk_lut_s8), built as ONNX Runtime computes the op."""
    table: np.ndarray
    what: str


@dataclass(frozen=True)
class OrtConcatData:
    """QLinearConcat: per input, None (same quantization as the output: copied) or its requantization table."""
    tables: tuple


@dataclass(frozen=True)
class OrtQuantizeData:
    """QuantizeLinear of a float32 input."""
    scale: float
    zero_point: int


RELU_LIMITS = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


def table_data(op) -> OrtTableData:
    x, y = op.inputs[0], op.outputs[0]
    (sx, zx), (sy, zy) = _qp(x), _qp(y)
    if op.type == "LOGISTIC":
        fn, what = ort.logistic, "MLAS logistic"
    elif op.type in RELU_LIMITS:
        fn, what = ort.relu_like(*RELU_LIMITS[op.type]), "float clip"
    else:
        fn, what = ort.identity, "DequantizeLinear -> QuantizeLinear"
    return OrtTableData(ort.lut(fn, sx, zx, sy, zy), what)


def concat_data(op) -> OrtConcatData:
    y = op.outputs[0]
    sy, zy = _qp(y)
    tables = tuple(None if same_quantization(t, y) else ort.lut(ort.identity, *_qp(t), sy, zy) for t in op.inputs)
    return OrtConcatData(tables)


def quantize_data(op) -> OrtQuantizeData:
    scale, zp = _qp(op.outputs[0])
    return OrtQuantizeData(scale, zp)
