"""Preconditions and weight layouts of the fast (register-blocked) kernels (edgesdk_conv2d.h, edgesdk_mac.h).

The emitters of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED choose a fast kernel when its preconditions hold
(`*_obstacle` return None) and then store the weights in its layout, with the input offset folded into the bias;
the footprint rules compute the same sizes."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from ...ir.rounding import ROUNDING_FP64
from . import KERNELS_DIR

CONV_BLOCK = 8  # output channels per register block of edgesdk_conv2d_blocked.c
CONV_BLOCKED, CONV_PAIRED = 1, 2  # edgesdk_conv2d_params.blocked
FAST_ACC_LIMIT = 1 << 31  # the fast kernels accumulate in int32 from the folded bias: no sum may overflow
FC_BLOCKED, FC_PAIRED = 1, 2
FC_LAYOUT_C = {FC_BLOCKED: "EDGESDK_FC_BLOCKED", FC_PAIRED: "EDGESDK_FC_PAIRED"}
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


def block_fully_connected(weights) -> np.ndarray:
    """[out][in] -> blocks of 16 units [in][16], one block of 8 if 8 or more remain, then the rest [unit][in]."""
    out = weights.shape[0]
    sixteen = out // 16 * 16
    eight = sixteen + (8 if out - sixteen >= 8 else 0)
    parts = [block_channels(weights[:sixteen], 16), block_channels(weights[sixteen:eight], 8),
             weights[eight:].reshape(-1)]
    return np.concatenate(parts).astype(np.int8)


DW_RECORD_WORDS = 9  # edgesdk_dw_channel


def depthwise_requant_k(shifts, output_offset: int) -> np.ndarray:
    """edgesdk_requant_rk's k per channel: (1 + 2 * output_offset) * 2^(r - 1), r = -shift."""
    r = -np.asarray(shifts, np.int64)
    return (1 + 2 * int(output_offset)) * (np.int64(1) << (r - 1))


def depthwise_channel_records(weights_9, bias_folded, mults, shifts, output_offset: int, zero_point: int) -> np.ndarray:
    """The sliding depthwise kernel's per-channel records (edgesdk_dw_channel in edgesdk_depthwise_conv2d.h), as
    int32 words: folded bias, 2 * multiplier (uint32 bits), -shift, k, z0, z2, then the 9 weights and 3 zero
    bytes."""
    channels = len(bias_folded)
    w9 = np.asarray(weights_9, np.int8).reshape(channels, 3, 3)
    weights = np.zeros((channels, 12), np.int8)
    weights[:, :9] = w9.reshape(channels, 9)
    columns = w9.astype(np.int64).sum(axis=1)  # [channel][fx]
    head = np.stack([np.asarray(bias_folded, np.int64), 2 * np.asarray(mults, np.int64),
                     -np.asarray(shifts, np.int64), depthwise_requant_k(shifts, output_offset),
                     zero_point * columns[:, 0], zero_point * columns[:, 2]], axis=1)
    head = (head & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return np.concatenate([head, weights.view("<i4")], axis=1).reshape(-1)


def unpack_depthwise_channel_records(words, channels: int) -> dict:
    """The fields of depthwise_channel_records (for the proof and tests); signed fields as int64."""
    rows = np.asarray(words, np.int64).reshape(channels, DW_RECORD_WORDS)
    weights = (rows[:, 6:] & 0xFFFFFFFF).astype("<u4").view(np.int8).reshape(channels, 12)
    return {"bias": rows[:, 0], "m2": rows[:, 1] & 0xFFFFFFFF, "r": rows[:, 2], "k": rows[:, 3], "z0": rows[:, 4],
            "z2": rows[:, 5], "weights": weights[:, :9], "padding": weights[:, 9:]}


def requant_records(mults, shifts, output_offset: int) -> np.ndarray:
    """Per channel {2 * multiplier (uint32 bits), r = -shift, k} for edgesdk_requant_rk, as int32 words."""
    k = depthwise_requant_k(shifts, output_offset)
    rows = np.stack([2 * np.asarray(mults, np.int64), -np.asarray(shifts, np.int64), k], axis=1)
    return (rows & 0xFFFFFFFF).astype(np.uint32).view(np.int32).reshape(-1)


def requant_reach(bias_folded, weights_2d, k) -> int:
    """Largest |accumulator| + |k| + 2 over the channels (int8 inputs): edgesdk_requant_rk adds k to a value of at
    most |accumulator| + 1 in magnitude, which must not overflow int32."""
    reach = np.abs(np.asarray(bias_folded, np.int64)) + 128 * np.abs(np.asarray(weights_2d, np.int64)).sum(axis=1)
    return int(np.max(reach + np.abs(np.asarray(k, np.int64)) + 2, initial=0))


def conv_pairs() -> int:
    return kernel_constant("edgesdk_conv2d.h", "EDGESDK_CONV_PAIRS")


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


def pair_conv_weights(weights_2d, filter_h: int, run: int) -> np.ndarray:
    """[out][filter_h * run] int8 -> the bytes of EDGESDK_CONV_PAIRED's int32 words (edgesdk_conv2d.h)."""
    w = np.asarray(weights_2d, np.int64).reshape(len(weights_2d), filter_h, run)
    if len(w) % 2:
        w = np.concatenate([w, np.zeros((1, filter_h, run), np.int64)])
    words = w[0::2] + 65536 * w[1::2]  # [pair][fy][tap]
    block = conv_pairs()
    full = len(words) // block * block
    parts = [_pair_rows(words[i:i + block], filter_h, run) for i in range(0, full, block)]
    parts += [_pair_rows(words[i:i + 1], filter_h, run) for i in range(full, len(words))]
    return np.concatenate(parts).astype("<i4").view(np.int8)


def pair_conv_bias(bias_folded) -> np.ndarray:
    """Per channel pair: bias[a] + 65536 * bias[b] (mod 2^32) and bias[b], as int32 words."""
    b = np.asarray(bias_folded, np.int64)
    if len(b) % 2:
        b = np.concatenate([b, [0]])
    low = (b[0::2] + 65536 * b[1::2]) & 0xFFFFFFFF
    words = np.stack([low, b[1::2] & 0xFFFFFFFF], axis=1)
    return words.astype(np.uint32).view(np.int32).reshape(-1)
