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
