"""FULLY_CONNECTED on the host: edgesdk_fully_connected_s8 (edgesdk_fully_connected.c, and the register-blocked
kernels of edgesdk_fully_connected_blocked.c in the int8-block or paired-lane layout when their preconditions
hold). LiteRT requantizes in double precision (rounding "fp64"); the kernel's exact integer fast path gets it
right too. 16x8 layers (edgesdk_fully_connected_s16.c): the row-block kernels edgesdk_fully_connected_s16_fp64 /
_mbqm64 when the sums fit int32 and the requantization has an integer form, else edgesdk_fully_connected_s16."""

from __future__ import annotations

import numpy as np

from .. import supported as rules
from ..calls import Macro
from ..emit import Emit, c_op, footprint
from ..layouts import (FC_BLOCKED, FC_LAYOUT_C, FC_PAIRED, FC_PAIRED_QUADS, FC_PAIRED_WEIGHTS, accumulator_bound,
                       bias_values, block_fully_connected, fast_requant_obstacle, fold_input_offset, fp64_window,
                       pair_fully_connected, quad_lanes_fit)
from ..proof import optional, per_channel, positive, require, shift_checks
from .conv_2d import bias_const, f32_scales, weights_const
from .layer16 import (acc64_shift_checks, accumulator, accumulator_macro, bias64_const, fast_requant,
                      int16_shifts_in_range, layer_or_float_dtypes, sum32, symmetric_filters)


def fast_fully_connected_obstacle(fields: dict, rounding: str, weights, bias, mults, shifts) -> str | None:
    """Why edgesdk_fully_connected_s8_blocked cannot run this FULLY_CONNECTED (None: it can)."""
    return fast_requant_obstacle(fields, rounding, weights, bias, mults, shifts, fp64_ok=True)


def double_const(e: Emit, what: str, values):
    return e.const(what, np.asarray(values, np.float64), "double")


@c_op("FULLY_CONNECTED", constraints=[rules.fully_connected_shapes, layer_or_float_dtypes, symmetric_filters,
                                       rules.supported_fused_activation, int16_shifts_in_range],
      headers=("edgesdk_fully_connected.h", "edgesdk_layer16.h"),
      sources=("edgesdk_fully_connected.c", "edgesdk_fully_connected_blocked.c", "edgesdk_fully_connected_s16.c",
               "edgesdk_fully_connected_f32.c"))
def emit_fully_connected(e: Emit):
    op, d = e.op, e.data
    if op.inputs[0].dtype == "int16":
        return emit_fully_connected_s16(e)
    if op.inputs[0].dtype == "float32":
        return emit_fully_connected_f32(e)
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_depth, in_depth = w.shape
    rounding = d.rounding
    fields = {
        "batches": x.num_elements // in_depth, "in_depth": in_depth, "out_depth": out_depth,
        "input_offset": d.input_offset, "filter_offset": d.filter_offset, "output_offset": d.output_offset,
        "act_min": d.act_min, "act_max": d.act_max,
    }
    mults, shifts, scales = list(d.multipliers), list(d.shifts), list(d.scales)
    weights, bias = w.data.astype(np.int8), bias_values(b, out_depth)
    why_not = fast_fully_connected_obstacle(fields, rounding, weights, bias, mults, shifts)
    layout = None
    if why_not is None:
        bias = fold_input_offset(bias, weights, fields["input_offset"])
        paired = e.ctx.layer_choice(op, "fc_paired", FC_PAIRED_WEIGHTS)  # a tuning schedule may switch it per layer
        layout = FC_PAIRED if paired and int(weights.min(initial=0)) >= -127 else FC_BLOCKED
        if layout == FC_PAIRED and quad_lanes_fit(weights):
            layout = FC_PAIRED_QUADS
        weights = block_fully_connected(weights) if layout == FC_BLOCKED else pair_fully_connected(weights)
    fields.update(multiplier=e.int32s("multiplier", mults), shift=e.int32s("shift", shifts))
    fields["scale"] = double_const(e, "scale", scales) if rounding == "fp64" else e.null("double")
    if rounding == "f32":  # --rounding ort: ONNX Runtime's float32 requantization scales
        fields["scale_f32"] = e.float32s("scale_f32", scales)
    fields["rounding"] = e.rounding(rounding)
    fields["blocked"] = Macro(FC_LAYOUT_C[layout]) if layout else 0
    fields["per_tensor"] = int(len(set(zip(mults, shifts, scales))) == 1)
    fields["fp64_window"] = fp64_window(accumulator_bound(bias, w.data.reshape(out_depth, -1))) if (
        layout and rounding == "fp64") else 0
    params = e.params("edgesdk_fully_connected_params", fields)
    bias_c = bias_const(e, b, bias, layout is not None)
    e.call("edgesdk_fully_connected_s8", params, e.tensor(x), weights_const(e, weights), bias_c, e.arena(y))
    kind = {FC_BLOCKED: "blocked", FC_PAIRED: "paired", FC_PAIRED_QUADS: "paired"}.get(
        layout, f"reference loops: {why_not}")
    e.layer.note = f"{in_depth}->{out_depth}, {kind}"
    return e.layer


LAYOUTS = {0: "plain", "EDGESDK_FC_BLOCKED": "blocked", "EDGESDK_FC_PAIRED": "paired",
           "EDGESDK_FC_PAIRED_QUADS": "paired"}


@footprint("edgesdk_fully_connected_s8")
def fully_connected_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks = positive(p, "batches", "in_depth", "out_depth")
    if checks:
        return checks
    n = p["out_depth"]
    blocked = p["blocked"]
    layout = LAYOUTS.get(blocked.name if isinstance(blocked, Macro) else blocked)
    if layout is None:
        return [f"unknown fully connected layout {blocked!r}"]
    # EDGESDK_FC_PAIRED stores units in pairs as 32-bit words: 4 bytes per pair and tap.
    filter_bytes = 4 * ((n + 1) // 2) * p["in_depth"] if layout == "paired" else n * p["in_depth"]
    checks = require(layout == "plain" or optional(b, 1) == 1, "the blocked fully connected kernel needs its folded bias")
    scale = [] if optional(p["scale"], 1) == 0 else [(p["scale"], 8 * n, f"scale[{n}]")]
    return checks + shift_checks(p, n) + per_channel(p, n, "multiplier", "shift") + scale + f32_scales(p, n) + [
        (x, p["batches"] * p["in_depth"], "input"),
        (w, filter_bytes, "filter"),
        (b, optional(b, 4 * n), "bias"),
        (y, p["batches"] * n, "output")]


def emit_fully_connected_s16(e: Emit):
    """16x8 FULLY_CONNECTED: accumulator of the bias type; LiteRT requantizes in double (fp64), TFLite Micro
    with MultiplyByQuantizedMultiplier of the accumulator type (edgesdk_layer16.h)."""
    op, d = e.op, e.data
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_depth, in_depth = w.shape
    weights = w.data.astype(np.int8)
    sums32 = sum32(weights, bias=None if b is None else b.data.astype(np.int64).reshape(-1))
    window = s16_fp64_window(weights, b, d) if sums32 else 0
    if window:
        return emit_fully_connected_s16_rows(e, S16_ROWS_FP64, weights, b, window=window)
    fast = fast_requant(d.multipliers, d.shifts) if (
        sums32 and d.rounding != "fp64" and accumulator(op) == "int64") else None
    if fast is not None:
        return emit_fully_connected_s16_rows(e, S16_ROWS_MBQM64, weights, b, fast=fast)
    fields = {
        "batches": x.num_elements // in_depth, "in_depth": in_depth, "out_depth": out_depth,
        "act_min": d.act_min, "act_max": d.act_max,
        "multiplier": e.int32s("multiplier", d.multipliers), "shift": e.int32s("shift", d.shifts),
        "scale": double_const(e, "scale", d.scales) if d.rounding == "fp64" else e.null("double"),
        "rounding": e.rounding(d.rounding),
        "accumulator": accumulator_macro(op),
        "sum32": sums32,
    }
    params = e.params("edgesdk_fully_connected_s16_params", fields)
    e.call("edgesdk_fully_connected_s16", params, e.tensor(x), weights_const(e, weights), bias64_const(e, b),
           e.arena(y))
    e.layer.note = f"{in_depth}->{out_depth} 16x8, {accumulator(op)} accumulator"
    return e.layer


S16_ROWS_FP64, S16_ROWS_MBQM64 = "edgesdk_fully_connected_s16_fp64", "edgesdk_fully_connected_s16_mbqm64"
S16_RECORD_WORDS = {S16_ROWS_FP64: 4, S16_ROWS_MBQM64: 3}  # FC16_RECORD_FP64, FC16_RECORD_MBQM64


def s16_row_blocks(out_depth: int) -> list:
    """The row-block kernels' blocks: of 8 rows, then one each of 4, 2 and 1 as the bits of out_depth ask."""
    return [8] * (out_depth // 8) + [size for size in (4, 2, 1) if out_depth & size]


def s16_block_rows(weights_2d) -> np.ndarray:
    """[out][in] int8 -> the row-block kernels' filter: each block of s16_row_blocks tap-major ([tap][row])."""
    parts, start = [], 0
    for size in s16_row_blocks(len(weights_2d)):
        parts.append(np.asarray(weights_2d[start:start + size]).T.reshape(-1))
        start += size
    return np.concatenate(parts).astype(np.int8)


def s16_unblock_rows(filter_bytes, out_depth: int, in_depth: int) -> np.ndarray:
    """s16_block_rows inverted: [out][in] int64 (for the footprint check)."""
    values = np.asarray(filter_bytes, np.int64)[:out_depth * in_depth]
    rows, start = [], 0
    for size in s16_row_blocks(out_depth):
        rows.append(values[start * in_depth:(start + size) * in_depth].reshape(in_depth, size).T)
        start += size
    return np.concatenate(rows)


def s16_records(kernel: str, bias, d, fast=None) -> np.ndarray:
    """Per output, the row-block kernels' requantization record as int32 words: _fp64 {bias, multiplier,
    2^(s - 1), s} with s = ~shift (edgesdk_requantize_fp64_window), _mbqm64 {bias, fast multiplier, fast shift}
    (`fast`: layer16.fast_requant's form)."""
    if kernel == S16_ROWS_FP64:
        s = -np.asarray(d.shifts, np.int64) - 1
        rows = np.stack([bias, np.asarray(d.multipliers, np.int64), np.left_shift(1, s - 1), s], axis=1)
    else:
        rows = np.stack([bias, np.asarray(fast[0], np.int64), np.asarray(fast[1], np.int64)], axis=1)
    return rows.reshape(-1)


def emit_fully_connected_s16_rows(e: Emit, kernel: str, weights, b, window: int = 0, fast=None):
    """A 16x8 FULLY_CONNECTED whose sums plus bias fit int32 and whose requantization has an integer form
    (fp64 through the window, or TFLite Micro's 64-bit one through edgesdk_mbqm64_fast): the row-block kernel,
    with the constants of each output's requantization precomputed in one record."""
    op, d = e.op, e.data
    x, y = op.inputs[0], op.outputs[0]
    out_depth, in_depth = weights.shape
    bias = np.zeros(out_depth, np.int64) if b is None else b.data.astype(np.int64).reshape(-1)
    rows = {
        "batches": x.num_elements // in_depth, "in_depth": in_depth, "out_depth": out_depth,
        "act_min": d.act_min, "act_max": d.act_max,
        "filter": weights_const(e, s16_block_rows(weights)),
        "records": e.int32s("records", s16_records(kernel, bias, d, fast)),
        "scale": double_const(e, "scale", d.scales) if kernel == S16_ROWS_FP64 else e.null("double"),
        "window": window,
    }
    params = e.params("edgesdk_fully_connected_s16_rows_params", rows)
    e.call(kernel, params, e.tensor(x), e.arena(y))
    blocks = "+".join(str(size) for size in s16_row_blocks(out_depth))
    e.layer.note = f"{in_depth}->{out_depth} 16x8, row blocks {blocks}, {accumulator(op)} accumulator"
    return e.layer


def s16_rows_checks(kernel: str, p) -> list:
    """Footprint preconditions of the row-block kernels: constant filter and records whose sums plus bias fit
    int32 for any int16 input (sum32), shifts each form defines, and for _fp64 a window that covers the largest
    accumulator (edgesdk_requantize_fp64_window) and the scales of the outputs near a tie."""
    n, depth = p["out_depth"], p["in_depth"]
    words = S16_RECORD_WORDS[kernel]
    w, r = p["filter"], p["records"]
    if not hasattr(w, "values") or not hasattr(r, "values"):
        return ["the row-block kernel needs a constant filter and records"]
    if len(w.values) < n * depth or len(r.values) < words * n:
        return [f"the row-block kernel needs {n * depth} filter bytes and {words * n} record words"]
    weights = s16_unblock_rows(w.values, n, depth)
    rows = np.asarray(r.values, np.int64)[:words * n].reshape(n, words)
    bias = rows[:, 0]
    checks = require(sum32(weights, bias=bias) == 1, "the row-block kernel's sums plus bias can leave int32")
    if kernel == S16_ROWS_MBQM64:
        return checks + require(bool(np.all((rows[:, 2] >= 0) & (rows[:, 2] <= 31))),
                                "a record's fast shift is outside [0, 31]")
    s = rows[:, 3]
    checks += require(bool(np.all((rows[:, 1] > 0) & (s >= 1) & (s <= 30))),
                      "fp64 records need multipliers > 0 and s = ~shift in [1, 30]")
    if checks:
        return checks
    checks += require(bool(np.all(rows[:, 2] == np.left_shift(1, s - 1))), "a record's rounding term is not 2^(s - 1)")
    bound = int(np.max(np.abs(bias) + 32768 * np.abs(weights).sum(axis=1), initial=0))
    checks += require(fp64_window(bound) <= p["window"] <= 1 << 30, "window does not cover the accumulators")
    return checks + [(p["scale"], 8 * n, f"scale[{n}]")]


@footprint(S16_ROWS_FP64, S16_ROWS_MBQM64)
def fully_connected_s16_rows_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "batches", "in_depth", "out_depth")
    if checks:
        return checks
    checks = s16_rows_checks(call.kernel, p)
    n = p["out_depth"]
    return checks + [(x, 2 * p["batches"] * p["in_depth"], "input"),
                     (p["filter"], n * p["in_depth"], "filter"),
                     (p["records"], 4 * S16_RECORD_WORDS[call.kernel] * n, "records"),
                     (y, 2 * p["batches"] * n, "output")]


def s16_fp64_window(weights_2d, b, d) -> int:
    """edgesdk_requantize_fp64_window's window for a 16x8 layer whose sums fit int32 and whose LiteRT
    requantization is in double: a power of two >= B/2 + B * 2^-22 + 2, B the largest |sum + bias| over int16
    inputs; 0 (the general double path) when a scale is outside the window's form (shift in [-31, -2],
    multiplier > 0) or the window would pass 2^30."""
    if d.rounding != "fp64" or any(m <= 0 or not -31 <= s <= -2 for m, s in zip(d.multipliers, d.shifts)):
        return 0
    bias = np.zeros(weights_2d.shape[0], np.int64) if b is None else b.data.astype(np.int64).reshape(-1)
    bound = int(np.max(np.abs(bias) + 32768 * np.abs(weights_2d.astype(np.int64)).sum(axis=1), initial=0))
    window = fp64_window(bound)
    return window if window <= 1 << 30 else 0


@footprint("edgesdk_fully_connected_s16")
def fully_connected_s16_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks = positive(p, "batches", "in_depth", "out_depth")
    if checks:
        return checks
    n = p["out_depth"]
    checks += require(p["sum32"] in (0, 1), "sum32 is a flag")
    if p["sum32"] and hasattr(w, "values"):
        checks += require(sum32(np.asarray(w.values).reshape(n, -1), bias=getattr(b, "values", None)) == 1,
                          "sum32 is set but the weights' partial sums can leave int32")
    fp64 = p["rounding"].name == "EDGESDK_ROUNDING_FP64"
    checks += require(not fp64 or optional(p["scale"], 1) == 1, "fp64 rounding needs the scales")
    scale = [(p["scale"], 8 * n, f"scale[{n}]")] if fp64 else []
    if not fp64:
        checks += acc64_shift_checks(p["accumulator"], p["shift"], n)
    return checks + shift_checks(p, n) + per_channel(p, n, "multiplier", "shift") + scale + [
        (x, 2 * p["batches"] * p["in_depth"], "input"),
        (w, n * p["in_depth"], "filter"),
        (b, optional(b, 8 * n), "bias"),
        (y, 2 * p["batches"] * n, "output")]


def emit_fully_connected_f32(e: Emit):
    """float32 FULLY_CONNECTED: TFLite's reference_ops::FullyConnected."""
    op, d = e.op, e.data
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_depth, in_depth = w.shape
    fields = {"batches": x.num_elements // in_depth, "in_depth": in_depth, "out_depth": out_depth,
              "act_min": float(d.act_min), "act_max": float(d.act_max)}
    params = e.params("edgesdk_fully_connected_f32_params", fields)
    bias = e.null("float") if b is None else e.tensor(b)
    e.call("edgesdk_fully_connected_f32", params, e.tensor(x), e.tensor(w), bias, e.arena(y))
    e.layer.note = f"{in_depth}->{out_depth} float32"
    return e.layer


@footprint("edgesdk_fully_connected_f32")
def fully_connected_f32_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks = positive(p, "batches", "in_depth", "out_depth")
    n = p["out_depth"]
    return checks or [(x, 4 * p["batches"] * p["in_depth"], "input"), (w, 4 * n * p["in_depth"], "filter"),
                      (b, optional(b, 4 * n), "bias"), (y, 4 * p["batches"] * n, "output")]
