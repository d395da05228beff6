"""DEPTHWISE_CONV_2D on the host: edgesdk_depthwise_conv2d_s8 (edgesdk_depthwise_conv2d.c, and the 3x3 sliding
kernel edgesdk_depthwise_conv2d_sliding.c when its preconditions hold); 16x8 layers: edgesdk_depthwise_conv2d_s16
(edgesdk_depthwise_conv2d_s16.c)."""

from __future__ import annotations

import numpy as np

from .. import supported as rules
from ..calls import Const, Macro
from ..emit import Emit, c_op, footprint
from ..layouts import (DW_RECORD_WORDS, bias_values, depthwise_channel_records, fast_requant_obstacle, fast_shifts,
                       fold_input_offset, requant_reach, requant_rk, unpack_depthwise_channel_records)
from ..proof import non_negative, optional, per_channel, positive, require, shift_checks
from .conv_2d import bias_const, f32_scales, float_bias, weights_const
from .layer16 import (acc64_shift_checks, bias64_const, depthwise_dtypes, fast_requant_checks, fast_requant_fields,
                      int16_shifts_in_range, sum32, symmetric_filters)


def fast_depthwise_obstacle(f: dict, rounding: str, per_channel_weights, bias, mults, shifts) -> str | None:
    """Why edgesdk_depthwise_conv2d_s8_sliding cannot run this DEPTHWISE_CONV_2D (None: it can)."""
    if (f["filter_h"], f["filter_w"]) != (3, 3):
        return f"{f['filter_h']}x{f['filter_w']} filter"
    if f["stride_h"] != f["stride_w"] or f["stride_w"] not in (1, 2):
        return f"stride {f['stride_h']}x{f['stride_w']}"
    if f["dilation_h"] != 1 or f["dilation_w"] != 1:
        return "dilation"
    if f["depth_multiplier"] != 1:
        return f"depth multiplier {f['depth_multiplier']}"
    if f["in_h"] < 3:
        return f"input height {f['in_h']}"
    if f["pad_left"] > 1 or _pad_right(f) > 1:
        return f"padding of {max(f['pad_left'], _pad_right(f))} columns"
    why_not = fast_requant_obstacle(f, rounding, per_channel_weights, bias, mults, shifts)
    if why_not is None:
        folded = fold_input_offset(bias, per_channel_weights, f["input_offset"])
        _, k = requant_rk(fast_shifts(mults, shifts), f["output_offset"], folded, per_channel_weights)
        if requant_reach(folded, per_channel_weights, k) >= 1 << 31:
            return "requantization constant too large"
    return why_not


def _pad_right(f: dict) -> int:
    """Columns past the input that the last window reaches."""
    return max(0, (f["out_w"] - 1) * f["stride_w"] - f["pad_left"] + 3 - f["in_w"])


def depthwise_geometry(op) -> dict:
    """The window fields every depthwise kernel's params begin with (int8, int16, float32), in the structs'
    order."""
    x, w, y, a = op.inputs[0], op.inputs[1], op.outputs[0], op.attrs
    return {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2], "out_c": y.shape[3], "depth_multiplier": y.shape[3] // x.shape[3],
        "filter_h": w.shape[1], "filter_w": w.shape[2],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "dilation_h": a.get("dilation_h", 1), "dilation_w": a.get("dilation_w", 1),
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
    }


@c_op("DEPTHWISE_CONV_2D", constraints=[rules.depthwise_shapes, depthwise_dtypes, symmetric_filters,
                                         rules.supported_fused_activation, int16_shifts_in_range],
      headers=("edgesdk_depthwise_conv2d.h", "edgesdk_layer16.h"),
      sources=("edgesdk_depthwise_conv2d.c", "edgesdk_depthwise_conv2d_sliding.c", "edgesdk_depthwise_conv2d_s16.c",
               "edgesdk_depthwise_conv2d_f32.c"))
def emit_depthwise_conv2d(e: Emit, sliding: bool = True):
    """`sliding=False`: the reference loops even where the sliding kernel could run (a cascade's stripe of
    fewer than three input rows, edgesdk/targets/c/stripes.py)."""
    op, d = e.op, e.data
    if op.inputs[0].dtype == "int16":
        return emit_depthwise_conv2d_s16(e)
    if op.inputs[0].dtype == "float32":
        return emit_depthwise_conv2d_f32(e)
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_c = y.shape[3]
    mults, shifts = list(d.multipliers), list(d.shifts)
    fields = {
        **depthwise_geometry(op),
        "input_offset": d.input_offset, "filter_offset": d.filter_offset, "output_offset": d.output_offset,
        "act_min": d.act_min, "act_max": d.act_max,
        "multiplier": None, "shift": None,
        "rounding": e.rounding(d.rounding),
        "sliding": 0,
    }
    weights, bias = w.data.astype(np.int8), bias_values(b, out_c)
    per_channel_weights = weights.reshape(-1, out_c).T  # [channel][fy * filter_w + fx]
    why_not = fast_depthwise_obstacle(fields, d.rounding, per_channel_weights, bias, mults, shifts) if sliding else \
        "a stripe of fewer than three rows"
    if why_not is None:  # per-channel records instead of filter, bias, multiplier and shift
        fields.update(sliding=1, multiplier=e.null("int32_t"), shift=e.null("int32_t"))
        bias = fold_input_offset(bias, per_channel_weights, fields["input_offset"])
        records = depthwise_channel_records(per_channel_weights, bias, mults, fast_shifts(mults, shifts),
                                            fields["output_offset"], -fields["input_offset"])
        params = e.params("edgesdk_depthwise_conv2d_params", fields)
        e.call("edgesdk_depthwise_conv2d_s8", params, e.tensor(x), e.null("int8_t"), e.const("channels", records,
                                                                                            "int32_t"), e.arena(y))
    else:
        fields["multiplier"] = e.int32s("multiplier", mults)
        fields["shift"] = e.int32s("shift", shifts)
        if d.rounding == "f32":  # --rounding ort: ONNX Runtime's float32 requantization scales
            fields["scale_f32"] = e.float32s("scale_f32", d.scales)
        params = e.params("edgesdk_depthwise_conv2d_params", fields)
        e.call("edgesdk_depthwise_conv2d_s8", params, e.tensor(x), weights_const(e, weights),
               bias_const(e, b, bias, False), e.arena(y))
    kind = "sliding" if fields["sliding"] else f"reference loops: {why_not}"
    e.layer.note = f"{w.shape[1]}x{w.shape[2]} depthwise, {out_c} channels, {kind}"
    return e.layer


def _shape_checks(p) -> tuple:
    """(checks, out_c) of the shape fields the depthwise kernels share (int8, int16, float32); out_c None when a
    size is not positive or a padding negative (nothing further can be checked)."""
    checks = positive(p, "batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "depth_multiplier",
                      "filter_h", "filter_w", "stride_h", "stride_w", "dilation_h", "dilation_w")
    checks += non_negative(p, "pad_top", "pad_left")
    if checks:
        return checks, None
    out_c = p["in_c"] * p["depth_multiplier"]
    return require(out_c == p["out_c"], f"out_c {p['out_c']} != in_c {p['in_c']} x depth multiplier"), out_c


@footprint("edgesdk_depthwise_conv2d_s8")
def depthwise_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks, out_c = _shape_checks(p)
    if out_c is None:
        return checks
    io = [(x, p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
          (y, p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]
    if p["sliding"]:  # edgesdk_depthwise_conv2d_s8_sliding: a fixed 3x3 window, its preconditions, its records
        checks += require(p["sliding"] == 1 and p["filter_h"] == p["filter_w"] == 3 and p["stride_h"] == p["stride_w"]
                          and p["stride_h"] in (1, 2) and p["dilation_h"] == p["dilation_w"] == 1
                          and p["depth_multiplier"] == 1 and p["in_h"] >= 3 and p["pad_left"] <= 1
                          and _pad_right(p) <= 1,
                          "the sliding depthwise kernel needs 3x3, equal strides 1 or 2, no dilation, depth "
                          "multiplier 1, an input at least 3 rows high and at most one padded column per side")
        checks += require(isinstance(b, Const), "the sliding depthwise kernel needs its channel records")
        if checks:
            return checks
        checks += _record_checks(b, out_c)
        return checks + [(b, 4 * DW_RECORD_WORDS * out_c, f"channel records[{out_c}]")] + io
    return checks + shift_checks(p, out_c) + per_channel(p, out_c, "multiplier", "shift") + f32_scales(p, out_c) + [
        (w, p["filter_h"] * p["filter_w"] * p["out_c"], "filter"), (b, optional(b, 4 * out_c), "bias")] + io


def _record_checks(records, channels: int) -> list:
    """The records' arithmetic is defined: 2 * a multiplier in [0, 2^31), a right shift of 1..31, no int32
    overflow in the sums and edgesdk_requant_rk (int8 inputs), padding bytes zero."""
    if len(records.values) < DW_RECORD_WORDS * channels:
        return [f"the channel records hold {len(records.values)} words, {DW_RECORD_WORDS * channels} needed"]
    fields = unpack_depthwise_channel_records(records.values[:DW_RECORD_WORDS * channels], channels)
    checks = require(bool(np.all(fields["m2"] % 2 == 0)), "a record's m2 is not twice a multiplier")
    checks += require(bool(np.all((fields["r"] >= 1) & (fields["r"] <= 31))),
                      "a record's shift is not a right shift of 1..31")
    reach = requant_reach(fields["bias"], fields["weights"], fields["k"])
    checks += require(reach < 1 << 31, "a channel's sums or requantization can overflow int32")
    return checks + require(not np.any(fields["padding"]), "a record's padding bytes are not zero")


def emit_depthwise_conv2d_s16(e: Emit):
    """16x8 DEPTHWISE_CONV_2D: TFLite's int16 DepthwiseConvPerChannel (int64 accumulator and bias)."""
    op, d = e.op, e.data
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_c = y.shape[3]
    weights = w.data.astype(np.int8)
    fields = {
        **depthwise_geometry(op),
        "act_min": d.act_min, "act_max": d.act_max,
        "multiplier": e.int32s("multiplier", d.multipliers), "shift": e.int32s("shift", d.shifts),
        "sum32": sum32(weights.reshape(-1, out_c).T, bias=None if b is None else b.data.astype(np.int64).reshape(-1)),
    }
    fields.update(fast_requant_fields(e, d, bool(fields["sum32"])))
    params = e.params("edgesdk_depthwise_conv2d_s16_params", fields)
    e.call("edgesdk_depthwise_conv2d_s16", params, e.tensor(x), weights_const(e, weights), bias64_const(e, b),
           e.arena(y))
    e.layer.note = f"{w.shape[1]}x{w.shape[2]} depthwise 16x8, {out_c} channels"
    return e.layer


@footprint("edgesdk_depthwise_conv2d_s16")
def depthwise_s16_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks, out_c = _shape_checks(p)
    if out_c is None:
        return checks
    checks += require(p["sum32"] in (0, 1), "sum32 is a flag")
    if p["sum32"] and hasattr(w, "values"):
        checks += require(sum32(np.asarray(w.values).reshape(-1, out_c).T, bias=getattr(b, "values", None)) == 1,
                          "sum32 is set but the filter's partial sums can leave int32")
    checks += fast_requant_checks(p, out_c)
    return checks + shift_checks(p, out_c) + acc64_shift_checks(Macro("EDGESDK_ACC64"), p["shift"], out_c) + per_channel(
        p, out_c, "multiplier", "shift") + [
        (x, 2 * p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
        (w, p["filter_h"] * p["filter_w"] * p["out_c"], "filter"),
        (b, optional(b, 8 * out_c), "bias"),
        (y, 2 * p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]


def emit_depthwise_conv2d_f32(e: Emit):
    """float32 DEPTHWISE_CONV_2D: TFLite's reference_ops::DepthwiseConv."""
    op, d = e.op, e.data
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_c = y.shape[3]
    fields = {
        **depthwise_geometry(op),
        "act_min": float(d.act_min), "act_max": float(d.act_max),
    }
    params = e.params("edgesdk_depthwise_conv2d_f32_params", fields)
    e.call("edgesdk_depthwise_conv2d_f32", params, e.tensor(x), e.tensor(w), float_bias(e, b), e.arena(y))
    e.layer.note = f"{w.shape[1]}x{w.shape[2]} depthwise float32, {out_c} channels"
    return e.layer


@footprint("edgesdk_depthwise_conv2d_f32")
def depthwise_f32_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks, out_c = _shape_checks(p)
    if out_c is None:
        return checks
    return checks + [(x, 4 * p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
                     (w, 4 * p["filter_h"] * p["filter_w"] * out_c, "filter"),
                     (b, optional(b, 4 * out_c), "bias"),
                     (y, 4 * p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]
