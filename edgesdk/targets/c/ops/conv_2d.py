"""CONV_2D on the host: edgesdk_conv2d_s8 (edgesdk_conv2d.c, and the register-blocked edgesdk_conv2d_blocked.c
when its preconditions hold); 16x8 layers: edgesdk_conv2d_s16 (edgesdk_conv2d_s16.c)."""

from __future__ import annotations

import numpy as np

from ....ir import quant
from .. import supported as rules
from ..calls import Const
from ..emit import Emit, c_op, footprint
from ..layouts import (CONV_BLOCK, CONV_BLOCKED, CONV_PAIRED, CONV_PAIRED_LAYOUTS, CONV_PAIRED_PATCHES,
                       CONV_PAIRED_QUAD3_PATCHES, CONV_PAIRED_QUAD_PATCHES, CONV_PAIRED_QUADS, CONV_PAIRED_QUADS3,
                       CONV_PATCHED_LAYOUTS, CONV_QUAD3_LAYOUTS, CONV_QUAD_LAYOUTS, QUADS2, QUADS3,
                       quad_blocks_choice,
                       LANE_BIAS, bias_values, pair_conv_weights_quads, quad_extractions, quad_layout_ok,
                       quad_layout_pays,
                       unpack_pair_conv_quads,
                       block_channels, constant_channels, conv_patch_max, fast_requant_obstacle, fast_shifts,
                       fold_input_offset, kernel_constant, pair_blocks, pair_chunks, pair_conv_bias,
                       pair_conv_weights, pair_requant_records, paired_chunks_fit, padded_pairs, requant_reach,
                       requant_rk, windows_inside)
from ..proof import non_negative, optional, per_channel, positive, require, shift_checks
from .layer16 import (acc64_shift_checks, accumulator_macro, bias64_const, fast_requant_checks, fast_requant_fields,
                      int16_shifts_in_range, layer_or_float_dtypes, sum32, symmetric_filters)

CONV_CONSTRAINTS = [rules.int8_quantized_activations, rules.int8_weights_int32_bias,
                    rules.per_channel_filters_symmetric, rules.supported_fused_activation]
# int8 or 16x8 (edgesdk/targets/c/ops/layer16.py)
LAYER_CONSTRAINTS = [layer_or_float_dtypes, symmetric_filters, rules.supported_fused_activation,
                     int16_shifts_in_range]


def weights_const(e: Emit, values):
    """The filter as a const int8 array (values already in the layout the chosen kernel reads)."""
    return e.const("weights", np.ascontiguousarray(values).reshape(-1), "int8_t")


def bias_const(e: Emit, b, values, folded: bool):
    if folded:
        return e.const("bias_folded", np.asarray(values, np.int32), "int32_t")
    if b is None:
        return e.null("int32_t")
    return e.const("bias", b.data.astype(np.int32), "int32_t")


def padding_narrower_than_filter(f: dict) -> bool:
    """Every window keeps a column and a row inside the image: the padding on both sides of a row (or column)
    together is narrower than the filter (always so for SAME and VALID; the window copies rely on it)."""
    right = (f["out_w"] - 1) * f["stride_w"] + f["filter_w"] - f["pad_left"] - f["in_w"]
    bottom = (f["out_h"] - 1) * f["stride_h"] + f["filter_h"] - f["pad_top"] - f["in_h"]
    return (f["pad_left"] + max(right, 0) < f["filter_w"]) and (f["pad_top"] + max(bottom, 0) < f["filter_h"])


def fast_conv_obstacle(f: dict, rounding: str, weights, bias, mults, shifts) -> str | None:
    """Why edgesdk_conv2d_s8_blocked cannot run this CONV_2D (None: it can)."""
    if f["dilation_h"] != 1 or f["dilation_w"] != 1:
        return "dilation"
    if f["filter_in_c"] != f["in_c"]:
        return "grouped convolution"
    taps = f["filter_h"] * f["filter_w"] * f["in_c"]
    if taps > conv_patch_max() and not windows_inside(f):
        return f"filter window of {taps} bytes with padding"
    if not padding_narrower_than_filter(f):
        return "padding as wide as the filter"
    return fast_requant_obstacle(f, rounding, weights.reshape(f["out_c"], -1), bias, mults, shifts)


KIND_NAMES = {CONV_BLOCKED: "blocked", **{layout: "paired" for layout in CONV_PAIRED_LAYOUTS}}
QUAD_LAYOUT_CODES = {(QUADS2, False): CONV_PAIRED_QUADS, (QUADS2, True): CONV_PAIRED_QUAD_PATCHES,
                     (QUADS3, False): CONV_PAIRED_QUADS3, (QUADS3, True): CONV_PAIRED_QUAD3_PATCHES}
PATCHED_RUN_BELOW = 16  # even filter rows shorter than this run as one row over copied windows


def paired_rows(f: dict) -> tuple:
    """(rows, taps per row) of the paired kernel's windows: the filter's rows, read in place; or, when a filter
    row is short and even (a small in_c) and a window fits the patch buffer, the whole window as one row, each
    pixel reading a copy of its window (EDGESDK_CONV_PAIRED_PATCHES: fewer row starts, pixels paired across
    rows). Odd rows read in place: copying the window costs more than their odd last taps (VWW's and IC's first
    3x3x3 layers: 5.3 and 4.1 instructions per MAC over copies, 3.9 and 3.6 in place; KWS's 10x4x1 layer, rows of
    4 taps: 3.1 over copies, 4.1 in place)."""
    run = f["filter_w"] * f["in_c"]
    taps = f["filter_h"] * run
    if f["filter_h"] > 1 and run % 2 == 0 and run < PATCHED_RUN_BELOW and taps <= conv_patch_max():
        return 1, taps
    return f["filter_h"], run


def paired_conv_ok(weights_2d, bias_folded, shifts, output_offset: int, rows: int, run: int) -> bool:
    """edgesdk_conv2d_s8_paired's extra conditions: two taps of a chunk stay within a 16-bit lane
    (paired_chunks_fit) and edgesdk_requant_rk's k is within reach."""
    if not paired_chunks_fit(weights_2d, rows, run):
        return False
    _, k = requant_rk(shifts, output_offset, bias_folded, weights_2d)
    return requant_reach(bias_folded, weights_2d, k) < 1 << 31


def reference_output(d, channel: int, acc: int) -> int:
    """The layer's output for accumulator `acc` (bias included) of `channel`, as TFLite's kernels compute it."""
    scaled = quant.multiply_by_quantized_multiplier(acc, int(d.multipliers[channel]), int(d.shifts[channel]),
                                                    d.rounding)
    return int(np.clip(scaled + d.output_offset, d.act_min, d.act_max))


def flat_pointwise(f: dict) -> dict:
    """A 1x1, stride-1, unpadded convolution is the same over 1 x (H*W) pixels: one long row pairs up pixels
    across image rows (no odd pixel per row)."""
    if (f["filter_h"], f["filter_w"], f["stride_h"], f["stride_w"]) != (1, 1, 1, 1) or not windows_inside(f):
        return {}
    if (f["in_h"], f["in_w"]) != (f["out_h"], f["out_w"]):
        return {}
    pixels = f["in_h"] * f["in_w"]
    return {"in_h": 1, "in_w": pixels, "out_h": 1, "out_w": pixels}


# Bytes of flash per int8 weight of a paired conv layer: two channels per 32-bit word, one flag word per eight
# words, padding to pairs and four-tap rows, the requantization records (SSD MobileNetV3: 2.39 measured); the
# compact blocked layout takes about one. Beside the constants the firmware needs room for its code.
PAIRED_BYTES_PER_WEIGHT = 2.5
CODE_RESERVE_BYTES = 64 * 1024
COMPACT_LAYERS = "c.compact-conv"  # ctx.data key: the layers compact_conv_layers chose (CTarget.generate)


def paired_flash_need(ops, ctx) -> tuple[int, dict]:
    """(the flash `ops` need with every int8 CONV_2D paired: the constants made so far, the ops' constants,
    the paired layouts' growth and room for code; the growth per conv)."""
    consts = {t for op in ops for t in op.inputs if t is not None and t.is_const}
    convs = sorted((op for op in ops if op.type == "CONV_2D" and op.inputs[0].dtype == "int8"
                    and op.inputs[1].is_const), key=lambda op: -op.inputs[1].nbytes)
    growth = {op: int((PAIRED_BYTES_PER_WEIGHT - 1) * op.inputs[1].nbytes) for op in convs}
    return ctx.flash_bytes + sum(t.nbytes for t in consts) + sum(growth.values()) + CODE_RESERVE_BYTES, growth


def flash_room_beside_paired_convs(ops, ctx) -> int | None:
    """The flash left once every int8 CONV_2D of `ops` is paired (options.flash_limit minus paired_flash_need;
    None without a limit), for optional tables such as the ADD output tables."""
    limit = ctx.options.flash_limit
    return None if limit is None else limit - paired_flash_need(ops, ctx)[0]


def compact_conv_layers(ops, ctx) -> set:
    """The int8 CONV_2D layers of `ops` that keep the compact layout so that the model fits the board's flash:
    when every layer paired would take more than options.flash_limit (with the constants made so far and
    room for code), the layers with the most weights give up the paired kernel first."""
    limit = ctx.options.flash_limit
    if limit is None:
        return set()
    need, growth = paired_flash_need(ops, ctx)
    convs = list(growth)
    compact = set()
    for op in convs:
        if need <= limit:
            break
        compact.add(op)
        need -= growth[op]
    return compact


def conv_geometry(op) -> dict:
    """The window fields every conv kernel's params begin with (int8, int16, float32), in the structs' order."""
    x, w, y, a = op.inputs[0], op.inputs[1], op.outputs[0], op.attrs
    return {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2], "out_c": y.shape[3],
        "filter_h": w.shape[1], "filter_w": w.shape[2], "filter_in_c": w.shape[3],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "dilation_h": a.get("dilation_h", 1), "dilation_w": a.get("dilation_w", 1),
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
    }


@c_op("CONV_2D", constraints=[rules.conv_shapes, *LAYER_CONSTRAINTS],
      headers=("edgesdk_conv2d.h", "edgesdk_layer16.h"),
      sources=("edgesdk_conv2d.c", "edgesdk_conv2d_blocked.c", "edgesdk_conv2d_paired.c", "edgesdk_conv2d_s16.c",
               "edgesdk_conv2d_f32.c"))
def emit_conv2d(e: Emit):
    op, d = e.op, e.data
    if op.inputs[0].dtype == "int16":
        return emit_conv2d_s16(e)
    if op.inputs[0].dtype == "float32":
        return emit_conv2d_f32(e)
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_c = y.shape[3]
    mults, shifts = list(d.multipliers), list(d.shifts)
    fields = {
        **conv_geometry(op),
        "input_offset": d.input_offset, "filter_offset": d.filter_offset, "output_offset": d.output_offset,
        "act_min": d.act_min, "act_max": d.act_max,
        "multiplier": None, "shift": None,
        "rounding": e.rounding(d.rounding),
        "blocked": 0,
    }
    weights, bias = w.data.astype(np.int8), bias_values(b, out_c)
    flat = weights.reshape(out_c, -1)
    why_not = fast_conv_obstacle(fields, d.rounding, weights, bias, mults, shifts)
    requant = e.null("int32_t")
    if why_not is None:
        shifts = fast_shifts(mults, shifts)
        fields.update(flat_pointwise(fields))
        bias = fold_input_offset(bias, flat, fields["input_offset"])
        rows, run = paired_rows(fields)
        live_bias, constants = constant_channels(flat, bias, lambda c, acc: reference_output(d, c, acc))
        compact = op in e.ctx.data(COMPACT_LAYERS, set)  # CTarget.generate: the flash would not hold it paired
        if not compact and paired_conv_ok(flat, live_bias, shifts, fields["output_offset"], rows, run):
            patched, quads = rows == 1 < fields["filter_h"], quad_layout_pays(flat, rows, run)
            if quads:
                quads = quad_blocks_choice(flat, rows, run)
            requant = e.int32s("requant", pair_requant_records(mults, shifts, fields["output_offset"], live_bias,
                                                               flat, constants, quads))
            if quads:
                fields["blocked"] = QUAD_LAYOUT_CODES[quads, patched]
                weights = pair_conv_weights_quads(flat, rows, run, quads)
                bias = pair_conv_bias(live_bias, quad_extractions(flat, rows, run, quads), quads=quads)
            else:
                fields["blocked"] = CONV_PAIRED_PATCHES if patched else CONV_PAIRED
                weights = pair_conv_weights(flat, rows, run)
                bias = pair_conv_bias(live_bias, pair_chunks(rows, run))
        else:
            fields["blocked"] = CONV_BLOCKED
            weights = block_channels(flat, CONV_BLOCK)
    if fields["blocked"] in CONV_PAIRED_LAYOUTS:
        fields.update(multiplier=e.null("int32_t"), shift=e.null("int32_t"), requant=requant)
    else:
        fields.update(multiplier=e.int32s("multiplier", mults), shift=e.int32s("shift", shifts), requant=requant)
    if d.rounding == "f32":  # --rounding ort: ONNX Runtime's float32 requantization scales
        fields["scale_f32"] = e.float32s("scale_f32", d.scales)
    params = e.params("edgesdk_conv2d_params", fields)
    bias_c = bias_const(e, b, bias, bool(fields["blocked"]))
    # The paired layouts call their kernel directly: the firmware then links neither the dispatcher's reference
    # loops nor the blocked kernel unless another layer needs them (about 7 KB of .text).
    kernel = "edgesdk_conv2d_s8_paired" if fields["blocked"] in CONV_PAIRED_LAYOUTS else "edgesdk_conv2d_s8"
    e.call(kernel, params, e.tensor(x), weights_const(e, weights), bias_c, e.arena(y))
    kind = KIND_NAMES.get(fields["blocked"]) or f"reference loops: {why_not}"
    if why_not is None and compact:
        kind += " (compact weights: the paired layout would not fit the flash)"
    e.layer.note = f"{w.shape[1]}x{w.shape[2]} conv, {x.shape[3]}->{out_c} channels, {kind}"
    return e.layer


def _geometry_checks(p) -> tuple:
    """(checks, groups) of the window fields every conv kernel shares (conv_geometry's: int8, int16, float32);
    groups None when a size is not positive or a padding negative (nothing further can be checked)."""
    checks = positive(p, "batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "filter_h", "filter_w",
                      "filter_in_c", "stride_h", "stride_w", "dilation_h", "dilation_w")
    checks += non_negative(p, "pad_top", "pad_left")
    if checks:
        return checks, None
    groups = p["in_c"] // p["filter_in_c"]
    return require(p["in_c"] % p["filter_in_c"] == 0 and p["out_c"] % groups == 0,
                   f"{p['in_c']} input channels do not split into groups of {p['filter_in_c']} for {p['out_c']} "
                   "outputs"), groups


@footprint("edgesdk_conv2d_s8", "edgesdk_conv2d_s8_paired")
def conv2d_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks, groups = _geometry_checks(p)
    if groups is None:
        return checks
    if p["blocked"]:
        checks += _blocked_preconditions(p, b)
    out_c = p["out_c"]
    io = [(x, p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
          (y, p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]
    if p["blocked"] in CONV_PAIRED_LAYOUTS:
        quads = quad_kind(p["blocked"])
        pairs, taps = padded_pairs(out_c, quads), p["filter_h"] * p["filter_w"] * p["in_c"]
        rows, run = (1, taps) if p["blocked"] in CONV_PATCHED_LAYOUTS else (p["filter_h"], p["filter_w"] * p["in_c"])
        flags = 0
        if quads:
            checks += require(quad_layout_ok(run), f"the four-tap paired layout needs rows of 4k taps, not {run}")
            flags = len(pair_blocks(pairs, quads)) * rows * (run // 4)
        checks += require(isinstance(p["requant"], Const), "the paired conv kernel needs its requantization records")
        if not checks:
            checks += requant_record_checks(p["requant"], 2 * pairs)
        if not checks:
            checks += paired_sum_checks(p, w, b, pairs, taps, rows, run)
        return checks + [(w, 4 * (pairs * taps + flags), "paired filter"), (b, 8 * pairs, "paired bias"),
                         (p["requant"], 24 * pairs, f"requantization records[{2 * pairs}]")] + io
    return checks + shift_checks(p, out_c) + per_channel(p, out_c, "multiplier", "shift") + f32_scales(p, out_c) + [
        (w, out_c * p["filter_h"] * p["filter_w"] * p["filter_in_c"], "filter"),
        (b, optional(b, 4 * out_c), "bias")] + io


def quad_kind(blocked: int) -> int:
    """0 (two-tap), QUADS2 or QUADS3: the block shape of a paired layout code."""
    if blocked not in CONV_QUAD_LAYOUTS:
        return 0
    return QUADS3 if blocked in CONV_QUAD3_LAYOUTS else QUADS2


def paired_sum_checks(p, w, b, pairs: int, taps: int, rows: int, run: int) -> list:
    """No channel's sum, nor edgesdk_requant_rk's sum plus k, can overflow int32 for any int8 input: the
    weights and biases decoded from the paired layout (edgesdk_conv2d.h), the k of the records. In the
    four-tap layouts, every flag-1 chunk keeps each channel's four products within one lane (the kernel
    extracts the lanes once for them)."""
    if not (isinstance(w, Const) and isinstance(b, Const)):
        return ["the paired conv kernel needs constant weights and bias"]
    quads = quad_kind(p["blocked"])
    flag_words = len(pair_blocks(pairs, quads)) * rows * (run // 4) if quads else 0
    size = 4 * (pairs * taps + flag_words)
    words = np.asarray(w.values, np.int64)[:size].astype(np.uint8)
    init = np.asarray(b.values, np.int64)[:2 * pairs]
    if len(words) < size or len(init) < 2 * pairs:
        return []  # the footprint's length checks report it
    words = words.view("<i4").astype(np.int64)
    extractions = pair_chunks(rows, run)
    if quads:
        words, flags_ok, extractions = unpack_pair_conv_quads(words, pairs, rows, run, quads)
        if not flags_ok:
            return ["a four-tap chunk flagged as one lane extraction can leave its 16-bit lane"]
    low = (words + 32768) % 65536 - 32768  # channel a's weight: the word's low 16 bits, signed
    magnitude = np.zeros(2 * pairs, np.int64)
    start = 0
    for size in pair_blocks(pairs, quads):
        block = words[start * taps:(start + size) * taps].reshape(taps, size)
        block_low = low[start * taps:(start + size) * taps].reshape(taps, size)
        magnitude[2 * start:2 * (start + size):2] = np.abs(block_low).sum(axis=0)
        magnitude[2 * start + 1:2 * (start + size):2] = np.abs((block - block_low) // 65536).sum(axis=0)
        start += size
    wrap = lambda v: (np.asarray(v, np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)  # noqa: E731
    bias_b = wrap(init[1::2] + LANE_BIAS * np.asarray(extractions, np.int64))
    bias_a = wrap(init[0::2] - 65536 * bias_b)
    bias = np.stack([bias_a, bias_b], axis=1).reshape(-1)
    k = np.asarray(p["requant"].values, np.int64)[:6 * pairs].reshape(-1, 3)[:, 2]
    reach = np.abs(bias) + 128 * magnitude + np.abs(k) + 2
    return require(bool(np.all(reach < 1 << 31)), "a channel's sums or requantization can overflow int32")


def requant_record_checks(records, channels: int) -> list:
    """edgesdk_requant_rk's constants are ones it defines: 2 * a multiplier in [0, 2^31) and a right shift of
    1..31 (that no sum or k overflows int32: paired_sum_checks)."""
    values = np.asarray(records.values, np.int64)[:3 * channels]
    if values.size < 3 * channels:
        return [f"the requantization records hold {values.size} words, {3 * channels} needed"]
    rows = values.reshape(channels, 3)
    checks = require(bool(np.all((rows[:, 0] & 0xFFFFFFFF) % 2 == 0)), "a record's m2 is not twice a multiplier")
    return checks + require(bool(np.all((rows[:, 1] >= 1) & (rows[:, 1] <= 31))),
                            "a record's shift is not a right shift of 1..31")


def f32_scales(p, channels: int) -> list:
    """EDGESDK_ROUNDING_F32 reads one float scale per channel (--rounding ort)."""
    rounding = p["rounding"]
    if getattr(rounding, "name", rounding) != "EDGESDK_ROUNDING_F32":
        return []
    return [(p.get("scale_f32"), 4 * channels, f"scale_f32[{channels}]")]


def _blocked_preconditions(p, bias) -> list:
    """The fast conv kernels (edgesdk_conv2d_blocked.c, edgesdk_conv2d_paired.c): no groups or dilation, a
    folded bias, and the windows they copy to the stack fit EDGESDK_CONV_PATCH_MAX bytes each. The blocked
    kernel copies a window reaching into padding, or the odd last pixel of a row when the filter has more than
    one row, into one buffer; the paired one copies two windows reaching into padding (EDGESDK_CONV_PAIRED) or
    every window (EDGESDK_CONV_PAIRED_PATCHES) into a buffer of two windows."""
    checks = require(p["blocked"] in (CONV_BLOCKED, *CONV_PAIRED_LAYOUTS),
                     f"unknown conv layout {p['blocked']}")
    checks += require(p["filter_in_c"] == p["in_c"] and p["dilation_h"] == p["dilation_w"] == 1,
                      "the blocked conv kernel needs no groups and no dilation")
    checks += require(optional(bias, 1) == 1, "the blocked conv kernel needs its folded bias")
    patch_max = conv_patch_max()
    taps = p["filter_h"] * p["filter_w"] * p["in_c"]
    inside = windows_inside(p)
    if p["blocked"] in CONV_PATCHED_LAYOUTS:
        copies, which = True, "every window"
    elif p["blocked"] in CONV_PAIRED_LAYOUTS:
        copies, which = not inside, "windows in padding"
    else:
        copies = not inside or (p["filter_h"] > 1 and p["out_w"] % 2 == 1)
        which = "windows in padding" if not inside else "windows of the odd last column"
    kernel = "blocked" if p["blocked"] == CONV_BLOCKED else "paired"
    checks += require(padding_narrower_than_filter(p), "the fast conv kernels need padding narrower than the "
                                                        "filter (every window copy keeps a column inside)")
    return checks + require(not copies or taps <= patch_max,
                            f"the {kernel} conv kernel would copy a {taps}-byte filter window into its "
                            f"{patch_max}-byte stack buffer ({which})")


def emit_conv2d_s16(e: Emit):
    """16x8 CONV_2D: TFLite's int16 ConvPerChannel, accumulator of the bias type (edgesdk_layer16.h)."""
    op, d = e.op, e.data
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_c = y.shape[3]
    weights = w.data.astype(np.int8)
    flat = weights.reshape(out_c, -1)
    fields = conv_geometry(op)
    bias = None if b is None else b.data.astype(np.int64).reshape(-1)
    fast = sum32(flat, bias=bias) == 1 and w.shape[3] == x.shape[3]
    fields.update({
        "act_min": d.act_min, "act_max": d.act_max,
        "multiplier": e.int32s("multiplier", d.multipliers), "shift": e.int32s("shift", d.shifts),
        "rounding": e.rounding("single" if d.rounding == "single" else "double"),
        "accumulator": accumulator_macro(op),
        "sum32": sum32(flat, bias=bias),
        "blocked": int(fast),
    })
    fields.update(fast_requant_fields(e, d, bool(fields["sum32"]) and fields["accumulator"].name == "EDGESDK_ACC64"))
    if fast:
        weights = block_channels16(flat)
    params = e.params("edgesdk_conv2d_s16_params", fields)
    e.call("edgesdk_conv2d_s16", params, e.tensor(x), weights_const(e, weights), bias64_const(e, b), e.arena(y))
    e.layer.note = (f"{w.shape[1]}x{w.shape[2]} conv 16x8, {x.shape[3]}->{out_c} channels, "
                    f"{'blocked' if fast else 'reference loops'}")
    return e.layer


def unblock_channels16(flat, out_c: int) -> np.ndarray:
    """The [out_c][taps] rows of a filter in the blocked layout."""
    block = kernel_constant("edgesdk_conv2d.h", "EDGESDK_CONV16_BLOCK")
    taps = flat.size // out_c
    full = out_c // block * block
    head = flat[:full * taps].reshape(out_c // block, taps, block).transpose(0, 2, 1).reshape(full, taps)
    return np.concatenate([head, flat[full * taps:].reshape(out_c - full, taps)])


def block_channels16(weights_2d) -> np.ndarray:
    """edgesdk_conv2d_s16's blocked layout: full blocks of EDGESDK_CONV16_BLOCK channels [tap][block], then the
    remaining channels as they were."""
    return block_channels(weights_2d, kernel_constant("edgesdk_conv2d.h", "EDGESDK_CONV16_BLOCK"))


@footprint("edgesdk_conv2d_s16")
def conv2d_s16_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks, groups = _geometry_checks(p)
    if groups is None:
        return checks
    out_c = p["out_c"]
    checks += require(p["sum32"] in (0, 1), "sum32 is a flag")
    if p["sum32"] and hasattr(w, "values"):
        rows = np.asarray(w.values).reshape(out_c, -1)
        if p["blocked"]:
            rows = unblock_channels16(rows.reshape(-1), out_c)
        checks += require(sum32(rows, bias=getattr(b, "values", None)) == 1,
                          "sum32 is set but the filter's partial sums (with the bias) can leave int32")
    checks += require(p["blocked"] in (0, 1) and (not p["blocked"] or (p["sum32"] and groups == 1)),
                      "the blocked 16x8 conv needs int32 partial sums and no groups")
    checks += shift_checks(p, out_c) + acc64_shift_checks(p["accumulator"], p["shift"], out_c)
    checks += fast_requant_checks(p, out_c)
    return checks + per_channel(p, out_c, "multiplier", "shift") + [
        (x, 2 * p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
        (w, out_c * p["filter_h"] * p["filter_w"] * p["filter_in_c"], "filter"),
        (b, optional(b, 8 * out_c), "bias"),
        (y, 2 * p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]


def float_bias(e: Emit, b):
    return e.null("float") if b is None else e.tensor(b)


def emit_conv2d_f32(e: Emit):
    """float32 CONV_2D: TFLite's reference_ops::Conv."""
    op, d = e.op, e.data
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    fields = conv_geometry(op)
    fields.update(act_min=float(d.act_min), act_max=float(d.act_max))
    params = e.params("edgesdk_conv2d_f32_params", fields)
    e.call("edgesdk_conv2d_f32", params, e.tensor(x), e.tensor(w), float_bias(e, b), e.arena(y))
    e.layer.note = f"{w.shape[1]}x{w.shape[2]} conv float32, {x.shape[3]}->{y.shape[3]} channels"
    return e.layer


@footprint("edgesdk_conv2d_f32")
def conv2d_f32_footprint(call, op) -> list:
    p, x, w, b, y = call.args
    checks, groups = _geometry_checks(p)
    if groups is None:
        return checks
    out_c = p["out_c"]
    return checks + [(x, 4 * p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
                     (w, 4 * out_c * p["filter_h"] * p["filter_w"] * p["filter_in_c"], "filter"),
                     (b, optional(b, 4 * out_c), "bias"),
                     (y, 4 * p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]
