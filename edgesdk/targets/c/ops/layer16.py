"""The layer ops' shared rules and helpers on the host (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
TRANSPOSE_CONV): which dtype combinations the kernels run, and the 16x8 (int16 activations, int8 weights)
accumulator choices of edgesdk_layer16.h. No op is registered here."""

from __future__ import annotations

import numpy as np

from ..calls import Macro

# TensorType values of the options' quantized_bias_type (the TFLite schema)
TENSOR_TYPE_INT32, TENSOR_TYPE_INT64 = 2, 4
SUM32_LIMIT = 1 << 31  # an int32 partial sum of products is exact while 2^15 * sum|w| stays below this
ACC64_MAX_SHIFT = 14  # MultiplyByQuantizedMultiplier(int64_t, ...) shifts by 15 - shift: needs shift <= 14


def _bias(op):
    return op.inputs[2] if len(op.inputs) > 2 else None


def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def _activations(op):
    return [t for t in op.inputs + op.outputs if t is not None and not t.is_const]


def _int8_weights(op, w) -> str:
    if w is None or not w.is_const or w.dtype != "int8" or w.quant is None:
        return "weights are not quantized int8 constants"
    return ""


def _int16_activations(op) -> str:
    bad = [f"{t.name} ({t.dtype})" for t in _activations(op)
           if t.dtype != "int16" or not _per_tensor(t) or int(t.quant.zero_point[0]) != 0]
    return f"not per-tensor int16 with zero point 0: {', '.join(bad)}" if bad else ""


def _int8_activations(op) -> str:
    bad = [f"{t.name} ({t.dtype})" for t in _activations(op) if t.dtype != "int8" or not _per_tensor(t)]
    return f"not per-tensor int8: {', '.join(bad)}" if bad else ""


def quantized_bias_type(op) -> int:
    return int(op.attrs.get("quantized_bias_type", 0) or 0)


def int16_bias_problem(op, b, int32_allowed: bool = True) -> str:
    """Why a 16x8 layer's bias is not one the references read as it is stored ("" when it is)."""
    if any(int(z) != 0 for z in op.inputs[1].quant.zero_point):
        return f"{op.inputs[1].name} has nonzero zero points (16x8 weights are symmetric)"
    if b is None:
        return ""
    if not b.is_const:
        return f"bias {b.name} is not constant"
    if b.dtype == "int64":
        return ""
    if b.dtype == "int32" and int32_allowed and quantized_bias_type(op) == TENSOR_TYPE_INT32:
        return ""
    if b.dtype == "int32" and int32_allowed:
        return (f"int32 bias {b.name} without quantized_bias_type INT32 (LiteRT then reads it as int64); "
                "re-export with the converter's default int64 bias")
    return f"bias {b.name} is {b.dtype}, not int64"


def layer_dtypes(op):
    """Per-tensor int8 activations with int8 weights and int32 bias, or 16x8: int16 activations with zero point 0, symmetric int8 weights and int64 bias (int32 when quantized_bias_type is INT32)"""
    x, w, b = op.inputs[0], op.inputs[1], _bias(op)
    if x.dtype == "int16":
        problem = _int16_activations(op) or _int8_weights(op, w) or int16_bias_problem(op, b)
        return not problem, problem
    problem = _int8_activations(op) or _int8_weights(op, w)
    if not problem and b is not None and (not b.is_const or b.dtype != "int32"):
        problem = f"bias {b.name} is {b.dtype}{'' if b.is_const else ', not constant'}"
    return not problem, problem


def _float_problem(op) -> str:
    bad = [f"{t.name} ({t.dtype})" for t in (*op.inputs, *op.outputs) if t is not None and t.dtype != "float32"]
    if not bad and not op.inputs[1].is_const:
        return f"{op.inputs[1].name} is not constant"
    return f"not float32: {', '.join(bad)}" if bad else ""


def layer_or_float_dtypes(op):
    """Per-tensor int8 activations with int8 weights and int32 bias; 16x8 (int16 activations with zero point 0, symmetric int8 weights, int64 bias or int32 when quantized_bias_type is INT32); or float32 activations, weights and bias"""
    if op.inputs[0].dtype == "float32":
        problem = _float_problem(op)
        return not problem, problem
    return layer_dtypes(op)



def symmetric_filters(op):
    """Per-channel quantized weights have zero point 0 (a per-tensor zero point is allowed)"""
    from .. import supported as rules

    if op.inputs[1].dtype == "float32":
        return True, ""
    return rules.per_channel_filters_symmetric(op)


def depthwise_dtypes(op):
    """Per-tensor int8 activations with int8 weights and int32 bias; 16x8 (int16 activations with zero point 0, symmetric int8 weights, int64 bias); or float32 activations, weights and bias"""
    x, w, b = op.inputs[0], op.inputs[1], _bias(op)
    if x.dtype == "float32":
        problem = _float_problem(op)
        return not problem, problem
    if x.dtype == "int16":
        problem = _int16_activations(op) or _int8_weights(op, w) or int16_bias_problem(op, b, int32_allowed=False)
        return not problem, problem
    return layer_dtypes(op)


def accumulator(op) -> str:
    """The 16x8 accumulator the references use: "int32" for an int32 bias (or none with quantized_bias_type
    INT32), else "int64" (LiteRT and TFLite Micro: Conv/FullyConnected Eval pick the bias type)."""
    b = _bias(op)
    if op.type != "DEPTHWISE_CONV_2D" and (
            (b is not None and b.dtype == "int32") or (b is None and quantized_bias_type(op) == TENSOR_TYPE_INT32)):
        return "int32"
    return "int64"


ACCUMULATOR_C = {"int64": "EDGESDK_ACC64", "int32": "EDGESDK_ACC32"}


def accumulator_macro(op) -> Macro:
    return Macro(ACCUMULATOR_C[accumulator(op)])


def int16_shifts_in_range(op):
    """16x8 layers: every requantization shift is at most 14 (TFLite's 64-bit MultiplyByQuantizedMultiplier shifts right by 15 - shift)"""
    if op.inputs[0].dtype != "int16" or accumulator(op) != "int64":
        return True, ""
    from ....ops import prepared

    data = prepared(op, "tflm")
    bad = [s for m, s in zip(data.multipliers, data.shifts) if m != 0 and s > ACC64_MAX_SHIFT]
    return not bad, f"shift {bad[0]} (scales too large for the 16x8 requantization)" if bad else ""


def sum32(weights_2d, input_reach: int = 32768, bias=None) -> int:
    """1 when no partial sum of products of any output row, nor that sum plus the row's bias, can leave int32
    (edgesdk_layer16.h): the inputs (after their offset) are at most `input_reach` in magnitude (int16: 2^15)."""
    w = np.abs(np.asarray(weights_2d, np.int64))
    reach = input_reach * w.sum(axis=1) if w.size else np.zeros(1, np.int64)
    if bias is not None:
        reach = reach + np.abs(np.asarray(bias, np.int64).reshape(-1))
    return int(int(reach.max(initial=0)) < SUM32_LIMIT)


def bias64_const(e, b):
    """A 16x8 layer's bias as int64 constants (an int32 bias has the same values), or a null pointer."""
    if b is None:
        return e.null("int64_t")
    return e.const("bias", b.data.astype(np.int64).reshape(-1), "int64_t")


def acc64_shift_checks(accumulator, shift, channels: int) -> list:
    """Footprint preconditions: EDGESDK_ACC64 requantizes with MultiplyByQuantizedMultiplier(int64_t, ...),
    which needs shifts in [-31, 14]; the accumulator is one of the two modes."""
    name = getattr(accumulator, "name", None)
    if name == "EDGESDK_ACC32":
        return []
    if name != "EDGESDK_ACC64":
        return [f"unknown accumulator {accumulator!r}"]
    values = getattr(shift, "values", None)
    if values is None:
        return ["the shifts of a 64-bit requantization must be a constant array"]
    bad = [int(v) for v in values[:channels] if int(v) > ACC64_MAX_SHIFT]
    return [f"shift {bad[0]} is above {ACC64_MAX_SHIFT} (64-bit requantization)"] if bad else []


def fast_requant(multipliers, shifts):
    """edgesdk_mbqm64_fast's per-channel (m, s) for MultiplyByQuantizedMultiplier(int64_t, ...) of an int32
    accumulator, or None when a channel's total shift 15 - shift is below 16 (a left or zero shift)."""
    ms, ss = [], []
    for multiplier, shift in zip(multipliers, shifts):
        if multiplier == 0:
            ms.append(0)
            ss.append(0)
            continue
        reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
        total = 15 - shift
        if total < 16:
            return None
        m, s = (reduced << (33 - total), 0) if total <= 33 else (reduced, total - 33)
        ms.append(m - (1 << 32) if m >= 1 << 31 else m)  # the uint32 bit pattern, stored as int32
        ss.append(s)
    return ms, ss


def fast_requant_fields(e, d, enabled: bool) -> dict:
    """The params fields of the fast 64-bit requantization (null arrays when the layer does not use it)."""
    form = fast_requant(d.multipliers, d.shifts) if enabled else None
    if form is None:
        return {"fast_requant": 0, "fast_multiplier": e.null("int32_t"), "fast_shift": e.null("int32_t")}
    return {"fast_requant": 1, "fast_multiplier": e.int32s("fast_multiplier", form[0]),
            "fast_shift": e.int32s("fast_shift", form[1])}


def fast_requant_checks(p, channels: int) -> list:
    """Footprint: the fast requantization's arrays match the layer's multipliers and shifts (edgesdk_mbqm64_fast
    computes MultiplyByQuantizedMultiplier(int64_t, ...) only for that form), and it runs on int32 sums."""
    if p["fast_requant"] == 0:
        return []
    if p["fast_requant"] != 1 or not p["sum32"] or getattr(p.get("accumulator"), "name", "EDGESDK_ACC64") != "EDGESDK_ACC64":
        return ["the fast 64-bit requantization needs int32 sums and the int64 accumulator mode"]
    values = [getattr(p[k], "values", None) for k in ("multiplier", "shift", "fast_multiplier", "fast_shift")]
    if any(v is None or len(v) < channels for v in values):
        return [f"the fast requantization needs {channels} multipliers, shifts and their fast form"]
    form = fast_requant([int(v) for v in values[0][:channels]], [int(v) for v in values[1][:channels]])
    if form is None or list(form[0]) != [int(v) for v in values[2][:channels]] or list(form[1]) != [
            int(v) for v in values[3][:channels]]:
        return ["the fast requantization's arrays are not the form of the layer's multipliers and shifts"]
    return [(p["fast_multiplier"], 4 * channels, f"fast_multiplier[{channels}]"),
            (p["fast_shift"], 4 * channels, f"fast_shift[{channels}]")]
