"""Preconditions and weight layouts of the fast (register-blocked) kernels (edgesdk_conv2d.h, edgesdk_mac.h).

The emitters of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED choose a fast kernel when its preconditions hold
(`*_obstacle` return None) and then store the weights in its layout, with the input offset folded into the bias;
the footprint rules compute the same sizes."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...ir.rounding import ROUNDING_FP64

KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"  # the host kernel library (also __init__.py)
CONV_BLOCK = 8  # output channels per register block of edgesdk_conv2d_blocked.c
CONV_BLOCKED, CONV_PAIRED, CONV_PAIRED_PATCHES = 1, 2, 3  # edgesdk_conv2d_params.blocked
CONV_PAIRED_QUADS, CONV_PAIRED_QUAD_PATCHES = 4, 5  # the paired layouts in four-tap chunks (edgesdk_conv2d.h)
CONV_PAIRED_QUADS3, CONV_PAIRED_QUAD3_PATCHES = 6, 7  # the same in blocks of 3 pairs, then of 2
CONV_PAIRED_LAYOUTS = (CONV_PAIRED, CONV_PAIRED_PATCHES, CONV_PAIRED_QUADS, CONV_PAIRED_QUAD_PATCHES,
                       CONV_PAIRED_QUADS3, CONV_PAIRED_QUAD3_PATCHES)
CONV_PATCHED_LAYOUTS = (CONV_PAIRED_PATCHES, CONV_PAIRED_QUAD_PATCHES, CONV_PAIRED_QUAD3_PATCHES)
CONV_QUAD_LAYOUTS = (CONV_PAIRED_QUADS, CONV_PAIRED_QUAD_PATCHES, CONV_PAIRED_QUADS3, CONV_PAIRED_QUAD3_PATCHES)
CONV_QUAD3_LAYOUTS = (CONV_PAIRED_QUADS3, CONV_PAIRED_QUAD3_PATCHES)
QUADS2, QUADS3 = 1, 2  # the `quads` of the layout helpers below: four-tap chunks in blocks of 2 pairs, of 3 and 2
FAST_ACC_LIMIT = 1 << 31  # the fast kernels accumulate in int32 from the folded bias: no sum may overflow
FC_BLOCKED, FC_PAIRED, FC_PAIRED_QUADS = 1, 2, 3
FC_LAYOUT_C = {FC_BLOCKED: "EDGESDK_FC_BLOCKED", FC_PAIRED: "EDGESDK_FC_PAIRED",
               FC_PAIRED_QUADS: "EDGESDK_FC_PAIRED_QUADS"}
# The paired layout stores two weights per 32-bit word: FULLY_CONNECTED weights take twice the flash, and the
# layer ~2.4 instead of ~3.1 instructions per MAC (edgesdk_fully_connected_blocked.c). False: int8 blocks only.
FC_PAIRED_WEIGHTS = True
FC_PAIR_BLOCK = 8  # unit pairs per register block (PAIRS in the kernel)


@lru_cache(maxsize=None)
def kernel_constant(header: str, name: str) -> int:
    """A #define of the kernel library (one source for the kernel, its emitter and its footprint rule)."""
    text = (KERNELS_DIR / header).read_text()
    return int(re.search(rf"#define {name} (\d+)", text).group(1))


def conv_patch_max() -> int:
    return kernel_constant("edgesdk_conv2d.h", "EDGESDK_CONV_PATCH_MAX")


def bias_values(b, channels: int) -> np.ndarray:
    return np.zeros(channels, np.int64) if b is None else b.data.astype(np.int64).reshape(-1)


def fold_input_offset(bias, weights_2d, input_offset: int) -> np.ndarray:
    """bias[o] + input_offset * sum_k w[o][k]: the input offset taken out of the inner loop (exact)."""
    return np.asarray(bias, np.int64) + int(input_offset) * weights_2d.astype(np.int64).sum(axis=1)


def accumulator_bound(bias_folded, weights_2d) -> int:
    """Largest |bias' + sum_k w[o][k] * x[k]| over int8 inputs x, over all output channels o."""
    reach = 128 * np.abs(weights_2d.astype(np.int64)).sum(axis=1)
    return int(np.max(np.abs(np.asarray(bias_folded, np.int64)) + reach, initial=0))


def block_channels(weights_2d, block: int) -> np.ndarray:
    """[out][taps] -> blocks of `block` outputs stored [tap][block], then the remaining outputs as they were."""
    out, taps = weights_2d.shape
    full = out // block * block
    head = weights_2d[:full].reshape(out // block, block, taps).transpose(0, 2, 1).reshape(-1)
    return np.concatenate([head, weights_2d[full:].reshape(-1)]).astype(np.int8)


def fast_shifts(mults, shifts) -> list:
    """Channels with a zero multiplier (zero scale) give 0 for any shift; use -1 so all shifts are right shifts."""
    return [-1 if m == 0 else s for m, s in zip(mults, shifts)]


def fp64_window(acc_bound: int) -> int:
    """edgesdk_requantize_fp64_window's window: a power of two >= B/2 + B * 2^-22 + 2 for accumulators |acc| <= B."""
    need = acc_bound // 2 + (acc_bound >> 22) + 2
    return 1 << max(need - 1, 0).bit_length()


def fast_requant_obstacle(f: dict, rounding: str, weights_2d, bias, mults, shifts, fp64_ok: bool = False) -> str | None:
    """The conditions every fast kernel shares: a requantization it implements (edgesdk_requant_right:
    "double" with right shifts; edgesdk_requantize_fp64_window, FULLY_CONNECTED only: "fp64" with shifts <= -2
    and a window <= 2^30), no filter zero point, and no int32 overflow when accumulating from the folded bias."""
    folded = fold_input_offset(bias, weights_2d, f["input_offset"])
    bound = accumulator_bound(folded, weights_2d)
    if rounding == "double":
        if any(m != 0 and not -31 <= s <= -1 for m, s in zip(mults, shifts)):
            return "left shift in the requantization"
    elif rounding == ROUNDING_FP64 and fp64_ok:
        if any(m <= 0 or not -31 <= s <= -2 for m, s in zip(mults, shifts)):
            return "requantization scale outside the integer fast path"
        if fp64_window(bound) > 1 << 30:
            return "accumulator too large for the integer fast path"
    else:
        return f"rounding {rounding}"
    if f["filter_offset"] != 0:
        return "filter zero point"
    if bound >= FAST_ACC_LIMIT:
        return "accumulator may overflow int32"
    return None


def windows_inside(f: dict) -> bool:
    """Every filter window of the convolution lies inside the input (no padding is ever read)."""
    last_y = (f["out_h"] - 1) * f["stride_h"] - f["pad_top"] + f["filter_h"]
    last_x = (f["out_w"] - 1) * f["stride_w"] - f["pad_left"] + f["filter_w"]
    return f["pad_top"] == 0 and f["pad_left"] == 0 and last_y <= f["in_h"] and last_x <= f["in_w"]


def pair_fully_connected(weights) -> np.ndarray:
    """[out][in] int8 -> the bytes of EDGESDK_FC_PAIRED's int32 words w[a] + 65536 * w[a + 1] (see the header)."""
    out, depth = weights.shape
    w = weights.astype(np.int64)
    if out % 2:
        w = np.concatenate([w, np.zeros((1, depth), np.int64)])
    words = (w[0::2] + 65536 * w[1::2]).T  # [tap][pair]
    pairs = words.shape[1]
    parts = []
    for start in range(0, pairs, FC_PAIR_BLOCK):
        block = words[:, start:start + FC_PAIR_BLOCK]
        if block.shape[1] < FC_PAIR_BLOCK:  # the remaining pairs, one by one
            parts += [words[:, j:j + 1] for j in range(start, pairs)]
            break
        parts.append(block)
    return np.concatenate([part.reshape(-1) for part in parts]).astype("<i4").view(np.int8)


def quad_lanes_fit(weights) -> bool:
    """EDGESDK_FC_PAIRED_QUADS's condition: every unit's taps 4q..4q + 3 sum to [-32767, 32768] for any int8
    input, so that 32767 added to each 16-bit lane of their paired sum keeps both lanes in [0, 65535]."""
    w = np.asarray(weights, np.int64)
    quads = w.shape[1] // 4
    if quads == 0:
        return False
    chunks = w[:, :4 * quads].reshape(len(w), quads, 4)
    high = np.maximum(127 * chunks, -128 * chunks).sum(axis=-1)
    low = np.minimum(127 * chunks, -128 * chunks).sum(axis=-1)
    return bool(high.max() <= 32768 and low.min() >= -32767)


def block_fully_connected(weights) -> np.ndarray:
    """[out][in] -> blocks of 16 units [in][16], one block of 8 if 8 or more remain, then the rest [unit][in]."""
    out = weights.shape[0]
    sixteen = out // 16 * 16
    eight = sixteen + (8 if out - sixteen >= 8 else 0)
    parts = [block_channels(weights[:sixteen], 16), block_channels(weights[sixteen:eight], 8),
             weights[eight:].reshape(-1)]
    return np.concatenate(parts).astype(np.int8)


DW_RECORD_WORDS = 9  # edgesdk_dw_channel


def accumulator_reach(bias_folded, weights_2d) -> np.ndarray:
    """Per channel, the largest |bias' + sum_k w[k] * x[k]| over int8 inputs x."""
    return np.abs(np.asarray(bias_folded, np.int64)) + 128 * np.abs(np.asarray(weights_2d, np.int64)).sum(axis=1)


def requant_rk(shifts, output_offset: int, bias_folded, weights_2d) -> tuple:
    """edgesdk_requant_rk's (r, k) per channel: r = -shift and k = (1 + 2 * output_offset) * 2^(r - 1), except that
    r is lowered to bit_length(B + 1) + 1 for a channel whose accumulators |acc| <= B cannot reach 2^(r - 1): its
    output is the output offset for every input with either shift (|t| < 2^(r - 1) rounds to 0), and the smaller
    r keeps k within int32."""
    r = -np.asarray(shifts, np.int64)
    reach = accumulator_reach(bias_folded, weights_2d) + 1
    cap = np.array([int(b).bit_length() + 1 for b in reach], np.int64).reshape(r.shape)
    r = np.minimum(r, cap)
    return r, (1 + 2 * int(output_offset)) * (np.int64(1) << (r - 1))


def depthwise_channel_records(weights_9, bias_folded, mults, shifts, output_offset: int, zero_point: int) -> np.ndarray:
    """The sliding depthwise kernel's per-channel records (edgesdk_dw_channel in edgesdk_depthwise_conv2d.h), as
    int32 words: folded bias, 2 * multiplier (uint32 bits), -shift, k, z0, z2, then the 9 weights and 3 zero
    bytes."""
    channels = len(bias_folded)
    w9 = np.asarray(weights_9, np.int8).reshape(channels, 3, 3)
    weights = np.zeros((channels, 12), np.int8)
    weights[:, :9] = w9.reshape(channels, 9)
    columns = w9.astype(np.int64).sum(axis=1)  # [channel][fx]
    r, k = requant_rk(shifts, output_offset, bias_folded, w9.reshape(channels, 9))
    head = np.stack([np.asarray(bias_folded, np.int64), 2 * np.asarray(mults, np.int64), r, k,
                     zero_point * columns[:, 0], zero_point * columns[:, 2]], axis=1)
    head = (head & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return np.concatenate([head, weights.view("<i4")], axis=1).reshape(-1)


def unpack_depthwise_channel_records(words, channels: int) -> dict:
    """The fields of depthwise_channel_records (for the proof and tests); signed fields as int64."""
    rows = np.asarray(words, np.int64).reshape(channels, DW_RECORD_WORDS)
    weights = (rows[:, 6:] & 0xFFFFFFFF).astype("<u4").view(np.int8).reshape(channels, 12)
    return {"bias": rows[:, 0], "m2": rows[:, 1] & 0xFFFFFFFF, "r": rows[:, 2], "k": rows[:, 3], "z0": rows[:, 4],
            "z2": rows[:, 5], "weights": weights[:, :9], "padding": weights[:, 9:]}


def requant_records(mults, shifts, output_offset: int, bias_folded, weights_2d) -> np.ndarray:
    """Per channel {2 * multiplier (uint32 bits), r, k} for edgesdk_requant_rk (requant_rk), as int32 words."""
    r, k = requant_rk(shifts, output_offset, bias_folded, weights_2d)
    rows = np.stack([2 * np.asarray(mults, np.int64), r, k], axis=1)
    return (rows & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(-1)


def requant_reach(bias_folded, weights_2d, k) -> int:
    """Largest |accumulator| + |k| + 2 over the channels (int8 inputs): edgesdk_requant_rk adds k to a value of at
    most |accumulator| + 1 in magnitude, which must not overflow int32."""
    reach = accumulator_reach(bias_folded, weights_2d)
    return int(np.max(reach + np.abs(np.asarray(k, np.int64)) + 2, initial=0))


def pair_blocks(pairs: int, quads: int = 0) -> list:
    """The paired conv kernel's block sizes (edgesdk_conv_pair_blocks): blocks of 3 pairs, then of 2; fewer than
    2 pairs count as 2. The four-tap layouts in blocks of 2 (quads == QUADS2, or True): blocks of 2 only, an odd
    last pair padded; in blocks of 3 (QUADS3): as the two-tap layout."""
    pairs = max(pairs, 2)
    if quads == QUADS2:
        return [2] * ((pairs + 1) // 2)
    rest = pairs % 3
    return [3] * (pairs // 3 - (rest == 1)) + [2] * {0: 0, 1: 2, 2: 1}[rest]


def padded_pairs(out_c: int, quads: int = 0) -> int:
    return sum(pair_blocks((out_c + 1) // 2, quads))


def _pair_rows(words, filter_h: int, run: int) -> np.ndarray:
    """[pairs][filter_h][run] words of one block in the kernel's order: per filter row, per two taps [tap][pair]
    twice, the odd last tap [pair] alone."""
    parts = []
    even = run // 2 * 2
    for fy in range(filter_h):
        row = words[:, fy, :]
        parts.append(row[:, :even].reshape(len(words), even // 2, 2).transpose(1, 2, 0).reshape(-1))
        if run % 2:
            parts.append(row[:, even])
    return np.concatenate(parts)


def _pad_channels(values, channels: int) -> np.ndarray:
    """values[out][...] with zero rows appended up to `channels` rows."""
    values = np.asarray(values, np.int64)
    pad = np.zeros((channels - len(values), *values.shape[1:]), np.int64)
    return np.concatenate([values, pad])


def pair_conv_weights(weights_2d, filter_h: int, run: int) -> np.ndarray:
    """[out][filter_h * run] int8 -> the bytes of EDGESDK_CONV_PAIRED's int32 words (edgesdk_conv2d.h)."""
    out = len(weights_2d)
    w = _pad_channels(np.asarray(weights_2d).reshape(out, filter_h, run), 2 * padded_pairs(out))
    words = w[0::2] + 65536 * w[1::2]  # [pair][fy][tap]
    parts, start = [], 0
    for size in pair_blocks((out + 1) // 2):
        parts.append(_pair_rows(words[start:start + size], filter_h, run))
        start += size
    return np.concatenate(parts).astype("<i4").view(np.int8)


LANE_BIAS = 32767  # edgesdk_conv2d_paired.c: added to each 16-bit lane of a two-tap sum


def pair_conv_bias(bias_folded, chunks, quads: int = 0) -> np.ndarray:
    """Per channel pair (padded_pairs): bias[a] + 65536 * bias[a + 1] and bias[a + 1] - LANE_BIAS * chunks (the
    high accumulator gains LANE_BIAS per lane extraction; `chunks`: one count for every pair, or one per pair),
    mod 2^32, as int32 words."""
    b = _pad_channels(bias_folded, 2 * padded_pairs(len(bias_folded), quads))
    chunks = np.broadcast_to(np.asarray(chunks, np.int64), (len(b) // 2,))
    low = (b[0::2] + 65536 * b[1::2]) & 0xFFFFFFFF
    high = (b[1::2] - LANE_BIAS * chunks) & 0xFFFFFFFF
    words = np.stack([low, high], axis=1)
    return words.astype(np.uint32).view(np.int32).reshape(-1)


def pair_chunks(filter_h: int, run: int) -> int:
    """Two-tap chunks (and odd last taps) of a window of filter_h rows of `run` taps."""
    return filter_h * ((run + 1) // 2)


def pair_requant_records(mults, shifts, output_offset: int, bias_folded, weights_2d, constants=None,
                         quads: int = 0) -> np.ndarray:
    """requant_records for every channel of the padded pairs (a missing channel: multiplier 0, r 1, k 0).
    constants {channel: output}: channels whose accumulator is 0 (no weights, bias 0) get {0, 1, 2 * output},
    which edgesdk_requant_rk turns into that output."""
    channels = 2 * padded_pairs(len(mults), quads)
    rows = requant_records(mults, shifts, output_offset, bias_folded, weights_2d).reshape(-1, 3).astype(np.int64)
    for channel, value in (constants or {}).items():
        rows[channel] = [0, 1, 2 * value]
    pad = np.tile(np.array([[0, 1, 0]], np.int64), (channels - len(rows), 1))
    return np.concatenate([rows, pad]).astype(np.int32).reshape(-1)


def constant_channels(weights_2d, bias_folded, output_of) -> tuple:
    """Channels without a weight compute output_of(bias) for every input: (the folded bias with 0 for them,
    {channel: output}). Their bias may be far out of a fast kernel's reach (dead channels of a trained model
    carry biases like 2^30); with 0 in its place and the output in the requantization record it costs nothing."""
    bias = np.asarray(bias_folded, np.int64).copy()
    dead = np.flatnonzero(~np.asarray(weights_2d).any(axis=1))
    constants = {int(c): int(output_of(int(c), int(bias[c]))) for c in dead}
    bias[dead] = 0
    return bias, constants


def paired_chunks_fit(weights_2d, filter_h: int, run: int) -> bool:
    """Every two-tap chunk of the paired layout (per filter row, pairs of taps; an odd last tap alone) keeps a
    channel's sum plus LANE_BIAS within an unsigned 16-bit lane for any int8 input: sum of min(127 w, -128 w)
    >= -32767 and sum of max(127 w, -128 w) <= 32768 (true of any int8 weights)."""
    w = np.asarray(weights_2d, np.int64).reshape(len(weights_2d), filter_h, run)
    even = run // 2 * 2
    if not even:
        return True
    chunks = w[:, :, :even].reshape(len(w), filter_h, even // 2, 2)
    high = np.maximum(127 * chunks, -128 * chunks).sum(axis=-1)
    low = np.minimum(127 * chunks, -128 * chunks).sum(axis=-1)
    return bool(high.max() <= 65535 - LANE_BIAS and low.min() >= -LANE_BIAS)


def _quad_fit(chunks) -> np.ndarray:
    """[..., 4] int64 weights -> whether the four products' sum plus LANE_BIAS stays within an unsigned 16-bit
    lane for any int8 input."""
    high = np.maximum(127 * chunks, -128 * chunks).sum(axis=-1)
    low = np.minimum(127 * chunks, -128 * chunks).sum(axis=-1)
    return (high <= 65535 - LANE_BIAS) & (low >= -LANE_BIAS)


def quad_flags(weights_2d, filter_h: int, run: int, quads: int = QUADS2) -> np.ndarray:
    """[block][filter_h][run / 4] of EDGESDK_CONV_PAIRED_QUADS: 1 where every channel of the block (padded pairs
    of blocks of pair_blocks) keeps its four products of that chunk within one lane."""
    out = len(weights_2d)
    w = _pad_channels(np.asarray(weights_2d).reshape(out, filter_h, run), 2 * padded_pairs(out, quads))
    fit = _quad_fit(w.reshape(len(w), filter_h, run // 4, 4))  # [channel][fy][chunk]
    flags, start = [], 0
    for size in pair_blocks((out + 1) // 2, quads):
        flags.append(fit[2 * start:2 * (start + size)].all(axis=0))
        start += size
    return np.array(flags, np.int64)


def pair_conv_weights_quads(weights_2d, filter_h: int, run: int, quads: int = QUADS2) -> np.ndarray:
    """[out][filter_h * run] int8, run % 4 == 0 -> the bytes of EDGESDK_CONV_PAIRED_QUADS's int32 words
    (edgesdk_conv2d.h): per block, per filter row, per four taps a flag word (quad_flags) and the four taps'
    words [tap][pair]."""
    out = len(weights_2d)
    w = _pad_channels(np.asarray(weights_2d).reshape(out, filter_h, run), 2 * padded_pairs(out, quads))
    words = w[0::2] + 65536 * w[1::2]  # [pair][fy][tap]
    flags = quad_flags(weights_2d, filter_h, run, quads)
    parts, start = [], 0
    for b, size in enumerate(pair_blocks((out + 1) // 2, quads)):
        block = words[start:start + size].reshape(size, filter_h, run // 4, 4).transpose(1, 2, 3, 0)
        block = block.reshape(filter_h, run // 4, 4 * size)  # [fy][chunk][tap * pair]
        parts.append(np.concatenate([flags[b][:, :, None], block], axis=2).reshape(-1))
        start += size
    return np.concatenate(parts).astype("<i4").view(np.int8)


def quad_extractions(weights_2d, filter_h: int, run: int, quads: int = QUADS2) -> np.ndarray:
    """Per padded pair: its lane extractions per window in EDGESDK_CONV_PAIRED_QUADS (a flag-1 chunk once, a
    flag-0 chunk twice), the `chunks` of pair_conv_bias."""
    flags = quad_flags(weights_2d, filter_h, run, quads)
    per_block = (2 * flags.size // len(flags) - flags.reshape(len(flags), -1).sum(axis=1))
    return np.repeat(per_block, pair_blocks((len(weights_2d) + 1) // 2, quads))


def quad_layout_ok(run: int) -> bool:
    """EDGESDK_CONV_PAIRED_QUADS needs whole four-tap chunks in every row."""
    return run % 4 == 0


# Instructions of the paired kernels (edgesdk_conv2d_paired.c), measured per chunk and per block with a block
# profile of IC's layers (benchmarks/kernels.py, then per-instruction counts of the emulator): a four-tap chunk
# of a 2-pair block 64 and 8 more when flagged 0; of a 3-pair block 85 and 22 more; a two-tap step of a 3-pair
# block 56, of a 2-pair block 40; per block and window (accumulators, rows, requantization, stores) about 150
# for 2 pairs and 190 for 3.
QUAD_CHUNK_COST = {2: (64.0, 8.0), 3: (85.0, 22.0)}
PAIR_STEP_COST = {2: 40.0, 3: 56.0}
BLOCK_COST = {2: 150.0, 3: 190.0}


def quad_window_cost(weights_2d, filter_h: int, run: int, quads: int) -> float:
    """The four-tap kernel's estimated instructions per pixel window in blocks of 2 (QUADS2) or 3 (QUADS3)."""
    flags = quad_flags(weights_2d, filter_h, run, quads).reshape(-1, filter_h * (run // 4))
    cost = 0.0
    for size, block_flags in zip(pair_blocks((len(weights_2d) + 1) // 2, quads), flags):
        chunk, flag0 = QUAD_CHUNK_COST[size]
        cost += BLOCK_COST[size] + len(block_flags) * chunk + flag0 * float((block_flags == 0).sum())
    return cost


def pair_window_cost(out_c: int, filter_h: int, run: int) -> float:
    """The two-tap kernel's estimated instructions per pixel window."""
    steps = filter_h * ((run + 1) // 2)
    return sum(BLOCK_COST[size] + steps * PAIR_STEP_COST[size] for size in pair_blocks((out_c + 1) // 2))


def quad_blocks_choice(weights_2d, filter_h: int, run: int) -> int:
    """QUADS3 (blocks of 3 pairs: 85 instructions per 48 MACs against 64 per 32, but a flag covers 6 channels,
    so more chunks need two extractions) where quad_window_cost says it is cheaper, else QUADS2."""
    three = quad_window_cost(weights_2d, filter_h, run, QUADS3)
    return QUADS3 if three < quad_window_cost(weights_2d, filter_h, run, QUADS2) else QUADS2


def quad_layout_pays(weights_2d, filter_h: int, run: int) -> bool:
    """Whether the four-tap layouts beat the two-tap one: whole four-tap chunks, and the cheaper of their block
    shapes costs less than the two-tap kernel by the estimates above (measured: IC's 1x1 skip path, 44 % of its
    chunks flagged 1 in blocks of 3, 501,113 instructions in two-tap steps, 482,940 in four-tap chunks)."""
    if not quad_layout_ok(run):
        return False
    best = min(quad_window_cost(weights_2d, filter_h, run, quads) for quads in (QUADS2, QUADS3))
    return best < pair_window_cost(len(weights_2d), filter_h, run)


def unpack_pair_conv_quads(words, pairs: int, filter_h: int, run: int, quads: int = QUADS2) -> tuple:
    """EDGESDK_CONV_PAIRED_QUADS's int32 words (pair_conv_weights_quads) -> (the weight words in the two-tap
    layout's block order, [tap][pair] per block; whether every flag-1 chunk fits one lane for every channel of its
    block; per pair its lane extractions). For the compiler's checks of the emitted constants."""
    words = np.asarray(words, np.int64)
    plain, fits, extractions, at = [], True, [], 0
    chunks = filter_h * (run // 4)
    for size in pair_blocks(pairs, quads):
        block = words[at:at + chunks * (1 + 4 * size)].reshape(chunks, 1 + 4 * size)
        at += len(block.reshape(-1))
        flags, taps = block[:, 0], block[:, 1:].reshape(chunks, 4, size)  # [chunk][tap][pair]
        low = (taps + 32768) % 65536 - 32768
        lanes = np.concatenate([low, (taps - low) // 65536], axis=2)  # [chunk][tap][channel]
        fits &= bool(np.all(_quad_fit(lanes.transpose(0, 2, 1))[flags == 1].reshape(-1)))
        fits &= bool(np.all((flags == 0) | (flags == 1)))
        plain.append(taps.reshape(-1))
        extractions += [int(2 * chunks - (flags == 1).sum())] * size
    return np.concatenate(plain), fits, np.array(extractions, np.int64)
