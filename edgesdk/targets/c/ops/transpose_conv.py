"""TRANSPOSE_CONV on the host: edgesdk_transpose_conv_s8 / _s16 (edgesdk_transpose_conv.c), a gather that needs
no scratch memory (TFLite's reference kernels scatter into an int32/int64 copy of the output)."""

from __future__ import annotations

import numpy as np

from .. import supported as rules
from ..calls import Macro
from ..emit import Emit, c_op, footprint
from ..proof import non_negative, optional, per_channel, positive, require, shift_checks
from .conv_2d import weights_const
from .layer16 import (TENSOR_TYPE_INT32, _int8_activations, _int16_activations, acc64_shift_checks, bias64_const,
                      fast_requant_checks, fast_requant_fields, quantized_bias_type, sum32)


def _bias(op):
    return op.inputs[3] if len(op.inputs) > 3 else None


def transpose_conv_dtypes(op):
    """Per-tensor int8 activations with symmetric int8 weights and int32 bias, or 16x8: int16 activations with zero point 0, symmetric int8 weights and int64 bias; the output shape is a constant"""
    shape, w, x = op.inputs[0], op.inputs[1], op.inputs[2]
    b = _bias(op)
    if not shape.is_const:
        return False, f"output shape {shape.name} is not constant"
    if op.uint8_semantics:
        return False, "a uint8 TRANSPOSE_CONV (its filter zero point)"
    if w.dtype != "int8" or w.quant is None or any(int(z) != 0 for z in w.quant.zero_point):
        return False, f"weights {w.name} are not symmetric int8"
    if x.dtype == "int16":
        problem = _int16_activations(op)
        if not problem and b is not None and b.dtype != "int64":
            problem = f"bias {b.name} is {b.dtype}, not int64 (TFLite Micro reads 16x8 biases as int64)"
        return not problem, problem
    problem = _int8_activations(op)
    if not problem and b is not None and b.dtype != "int32":
        problem = f"bias {b.name} is {b.dtype}, not int32"
    return not problem, problem


def transpose_conv_accumulator(op, mode: str) -> str:
    """16x8: int64, except LiteRT without a bias when quantized_bias_type is INT32 (TFLite Micro: always int64)."""
    if op.inputs[2].dtype == "int8":
        return "int32"
    if mode == "ref" and _bias(op) is None and quantized_bias_type(op) == TENSOR_TYPE_INT32:
        return "int32"
    return "int64"


def transpose_conv_shifts(op):
    """16x8 TRANSPOSE_CONV: every requantization shift is at most 14 (TFLite's 64-bit MultiplyByQuantizedMultiplier)"""
    from ....ops import prepared

    if op.inputs[2].dtype != "int16":
        return True, ""
    data = prepared(op, "tflm")
    bad = [s for m, s in zip(data.multipliers, data.shifts) if m != 0 and s > 14]
    return not bad, f"shift {bad[0]}" if bad else ""


@c_op("TRANSPOSE_CONV", constraints=[transpose_conv_dtypes, rules.supported_fused_activation, transpose_conv_shifts],
      headers=("edgesdk_transpose_conv.h",), sources=("edgesdk_transpose_conv.c",))
def emit_transpose_conv(e: Emit):
    op, d = e.op, e.data
    w, x, y, a = op.inputs[1], op.inputs[2], op.outputs[0], op.attrs
    b = _bias(op)
    out_c = y.shape[3]
    weights = w.data.astype(np.int8)
    accumulator = transpose_conv_accumulator(op, e.mode)
    reach = 255 if x.dtype == "int8" else 32768  # |x + input offset|
    fields = {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2], "out_c": out_c,
        "filter_h": w.shape[1], "filter_w": w.shape[2],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
        "input_offset": d.input_offset, "output_offset": d.output_offset,
        "act_min": d.act_min, "act_max": d.act_max,
        "multiplier": e.int32s("multiplier", d.multipliers), "shift": e.int32s("shift", d.shifts),
        "rounding": e.rounding("single" if d.rounding == "single" else "double"),
        "accumulator": Macro("EDGESDK_ACC64" if accumulator == "int64" else "EDGESDK_ACC32"),
        "sum32": sum32(weights.reshape(out_c, -1), reach,
                       bias=None if b is None else b.data.astype(np.int64).reshape(-1)),
    }
    fields.update(fast_requant_fields(e, d, x.dtype == "int16" and bool(fields["sum32"]) and accumulator == "int64"))
    params = e.params("edgesdk_transpose_conv_params", fields)
    if x.dtype == "int8":
        bias = e.null("int32_t") if b is None else e.const("bias", b.data.astype(np.int32).reshape(-1), "int32_t")
        e.call("edgesdk_transpose_conv_s8", params, e.tensor(x), weights_const(e, weights), bias, e.arena(y))
    else:
        e.call("edgesdk_transpose_conv_s16", params, e.tensor(x), weights_const(e, weights), bias64_const(e, b),
               e.arena(y))
    e.layer.note = (f"{w.shape[1]}x{w.shape[2]} transpose conv stride {a['stride_h']}x{a['stride_w']}, "
                    f"{x.shape[3]}->{out_c} channels, {x.dtype}")
    return e.layer


@footprint("edgesdk_transpose_conv_s8", "edgesdk_transpose_conv_s16")
def transpose_conv_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks = positive(p, "batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "filter_h", "filter_w",
                      "stride_h", "stride_w")
    checks += non_negative(p, "pad_top", "pad_left")
    if checks:
        return checks
    wide = call.kernel.endswith("_s16")
    size = 2 if wide else 1
    out_c = p["out_c"]
    checks += require(p["sum32"] in (0, 1), "sum32 is a flag")
    if p["sum32"] and hasattr(w, "values"):
        checks += require(sum32(np.asarray(w.values).reshape(out_c, -1), 32768 if wide else 255,
                                bias=getattr(b, "values", None)) == 1,
                          "sum32 is set but the filter's partial sums can leave int32")
    if wide:
        checks += acc64_shift_checks(p["accumulator"], p["shift"], out_c)
    else:
        checks += require(p["accumulator"].name == "EDGESDK_ACC32" and p["fast_requant"] == 0,
                          "the int8 kernel accumulates in int32")
    checks += fast_requant_checks(p, out_c)
    return checks + shift_checks(p, out_c) + per_channel(p, out_c, "multiplier", "shift") + [
        (x, size * p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
        (w, out_c * p["filter_h"] * p["filter_w"] * p["in_c"], "filter"),
        (b, optional(b, (8 if wide else 4) * out_c), "bias"),
        (y, size * p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]
