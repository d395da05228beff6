"""Lossless compression of NPU-1 weight streams (docs/npu-datasheet.md, "Compressed weight streams").

A CONV2D/DWCONV2D command with the COMPRESSED_WEIGHTS flag reads its weights as a compressed stream from
flash and the NPU decodes it on the fly: fewer flash bytes move, which is what bounds most weight-heavy
layers (flash delivers 1 byte per NPU cycle). The format, in short:

* The decoded tensor (dense OHWI bytes, n of them) is split into 16 **lanes** of ceil(n / 16) bytes (the
  last lanes may be shorter or empty); each lane is an independent bit string, so 16 decoders work in
  parallel (the timing model assumes one code per lane per cycle).
* Each lane is a sequence of canonical Huffman codes (lengths 1..15, one code table per stream). A code is
  a **literal** (symbols 0..255: one byte, zig-zag coded as its difference from the stream's `run_value`)
  or a **run** (symbols 256..271: `run_value` repeated 2^(k+1) + e times, e in k+1 extra bits). MLPerf Tiny
  weights are peaked around their zero point and some layers are mostly zeros, so literals get short codes
  and zero runs cost a few bits.
* Bits are packed most significant bit first; every lane starts on a byte boundary and its padding bits
  are zero.

`encode(data)` returns the stream; `decode(stream)` inverts it (the reference the C model is tested
against); `compress_if_smaller(data)` is what the NPU codegen uses.

Two encoders make the same bytes: the C one (encoder/weight_encoder.c, built into a cached shared library by
edgesdk.hostcc on first use and called through ctypes; ~10x faster, and the weights of a large model are most
of the compile step's encoding time) and the numpy one below, the reference, which `encode` and
`compress_if_smaller` use when the C library cannot be built or loaded (no host C compiler: `native_encoder()`
is None). A missing compiler therefore costs time, never a compile; tests/test_npu_weight_codec.py checks both
give the same bytes.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import weakref
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ....errors import ToolchainError
from ....hostcc import load_shared_library
from . import registers as R

FORMAT = R.WEIGHT_STREAM_FORMAT
LANES = R.WEIGHT_DECODE_LANES
MAX_CODE_LENGTH = R.WEIGHT_MAX_CODE_LENGTH
LITERAL_SYMBOLS = 256
RUN_SYMBOLS = R.WEIGHT_RUN_SYMBOLS
HEADER_BYTES = R.WEIGHT_STREAM_HEADER_BYTES
_HEADER = struct.Struct(f"<BBHI{LANES}I")  # format, run_value, literal symbol count, decoded bytes, lane bytes
MAX_RUN = (1 << (RUN_SYMBOLS + 1)) - 1  # longest run one code expresses: 2^16 + (2^16 - 1)


class WeightStreamError(ValueError):
    """A malformed compressed weight stream (the NPU reports BAD_WEIGHTS for the same conditions)."""


# -- symbols ---------------------------------------------------------------------------------------------------
def literal_symbol(values: np.ndarray, run_value: int) -> np.ndarray:
    """Zig-zag symbol of each byte's signed difference from run_value: 0, -1, +1, -2, +2 ... -> 0, 1, 2, 3, 4."""
    delta = ((np.asarray(values).astype(np.int64) - run_value + 128) % 256) - 128
    return np.where(delta >= 0, 2 * delta, -2 * delta - 1)


# The symbol of each byte difference (mod 256) from run_value: a lookup replaces the arithmetic per byte.
_SYMBOL_OF_DIFFERENCE = literal_symbol(np.arange(256), 0)


def literal_value(symbol: int, run_value: int) -> int:
    delta = symbol // 2 if symbol % 2 == 0 else -(symbol + 1) // 2
    return (run_value + delta) & 0xFF


def run_symbol(length: int) -> tuple:
    """(symbol, extra value, extra bit count) of a run of 2..MAX_RUN repeats."""
    k = length.bit_length() - 2  # length in [2^(k+1), 2^(k+2))
    return LITERAL_SYMBOLS + k, length - (1 << (k + 1)), k + 1


def lane_bounds(n: int) -> list:
    """[start, end) of each lane's segment of the decoded bytes."""
    seg = -(-n // LANES)
    return [(min(n, i * seg), min(n, (i + 1) * seg)) for i in range(LANES)]


# -- runs and tokens --------------------------------------------------------------------------------------------
def _run_pieces(raw: np.ndarray, run_value: int, seg: int, is_run: np.ndarray | None = None) -> tuple:
    """Start and length (int64) of every run code, in stream order (vectorised): runs of run_value of length >= 2,
    which never cross a lane boundary (every `seg` bytes) and are split every MAX_RUN bytes. Every other byte
    is a literal code. (`is_run`: raw == run_value, when the caller has it.)"""
    n = len(raw)
    is_run = raw == run_value if is_run is None else is_run
    padded = np.zeros(n + 2, bool)
    padded[1:-1] = is_run
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # alternately the start and the end of a run
    starts, ends = edges[0::2], edges[1::2]
    cuts = np.arange(seg, n, seg)
    cuts = cuts[is_run[cuts] & is_run[cuts - 1]]  # lane boundaries inside a run: it ends and starts again there
    if len(cuts):  # (a stable sort: a merge of sorted runs, ~15x faster here than the default quicksort)
        starts = np.sort(np.concatenate((starts, cuts)), kind="stable")
        ends = np.sort(np.concatenate((ends, cuts)), kind="stable")
    lengths = ends - starts
    long_runs = lengths >= 2
    return _split_runs(starts[long_runs], lengths[long_runs])


def _tokens(raw: np.ndarray, run_value: int, seg: int, run_pos: np.ndarray, run_len: np.ndarray,
            is_run: np.ndarray | None = None) -> tuple:
    """The codes of whole lanes `raw` (lanes of `seg` bytes) given their run pieces (_run_pieces, positions
    relative to raw): (the byte of each code in stream order, a uint8 array in which a run's code holds its
    first byte; the index of each run's code).

    Codes start at every byte but a run_value byte that follows one in its lane (those a run covers), and at
    every run piece. A run covers its bytes, so the codes before the one at byte p are p bytes, less the bytes
    the earlier runs cover, plus one code per earlier run."""
    if not len(run_pos):
        return raw, run_pos
    is_run = raw == run_value if is_run is None else is_run
    starts = np.empty(len(raw), bool)
    starts[0] = True
    np.logical_not(is_run[1:], out=starts[1:])
    starts[1:] |= ~is_run[:-1]
    starts[seg::seg] = True
    starts[run_pos] = True
    return raw[starts], _codes_before(run_pos, run_pos, run_len)


def _codes_before(at: np.ndarray, run_pos: np.ndarray, run_len: np.ndarray) -> np.ndarray:
    """The number of codes before each byte position `at` (sorted; never inside a run but at its start)."""
    covered = np.concatenate(([0], np.cumsum(run_len - 1)))  # bytes the runs before add beyond their one code
    return at - covered[np.searchsorted(run_pos, at)]


@functools.lru_cache(maxsize=256)
def _symbol_table(run_value: int) -> np.ndarray:
    """The literal symbol of each byte value (int64), for one run_value."""
    table = _SYMBOL_OF_DIFFERENCE[(np.arange(256) - run_value) % 256]
    table.flags.writeable = False
    return table


def _split_runs(starts: np.ndarray, lengths: np.ndarray) -> tuple:
    """Runs longer than MAX_RUN cut into MAX_RUN pieces; a last piece of 1 byte borrows one from the piece before."""
    if len(lengths) == 0 or lengths.max() <= MAX_RUN:
        return starts.astype(np.int64), lengths.astype(np.int64)
    pos, out = [], []
    for start, length in zip(starts.tolist(), lengths.tolist()):
        while length > MAX_RUN:
            piece = MAX_RUN if length - MAX_RUN != 1 else MAX_RUN - 1
            pos.append(start); out.append(piece)
            start, length = start + piece, length - piece
        pos.append(start); out.append(length)
    return np.asarray(pos, np.int64), np.asarray(out, np.int64)


def _bit_length(values: np.ndarray) -> np.ndarray:
    return np.floor(np.log2(np.maximum(values, 1))).astype(np.int64) + 1


# -- canonical Huffman -------------------------------------------------------------------------------------------
def code_lengths(freqs: np.ndarray, max_length: int = MAX_CODE_LENGTH) -> np.ndarray:
    """Optimal code lengths limited to max_length bits (package-merge); 0 for unused symbols.

    A single used symbol gets length 1 (code '0')."""
    lengths = np.zeros(len(freqs), np.int64)
    used = np.flatnonzero(freqs).tolist()
    if len(used) == 1:
        lengths[used[0]] = 1
    if len(used) <= 1:
        return lengths
    huffman = _huffman_lengths(freqs, used)
    if max(huffman.values()) <= max_length:
        lengths[used] = list(huffman.values())  # (in `used` order)
        return lengths
    symbols = np.asarray(used, np.int64)
    lengths[symbols] = _package_merge(np.asarray(freqs, np.int64)[symbols], max_length)
    return lengths


def _package_merge(weights: np.ndarray, max_length: int) -> np.ndarray:
    """Length-limited code lengths of n >= 2 symbols (weights in symbol order), in numpy.

    Package-merge: the leaves sorted by weight (ties: lower symbol first); each of max_length - 1 rounds pairs
    the previous level's items into packages and merges them with the leaves by weight (a stable sort: leaves
    first on ties). A symbol's length is how often it occurs in the first 2n - 2 items of the last level,
    counted by walking the chosen packages back down, level by level, to the leaves they hold."""
    n = len(weights)
    leaf_order = np.argsort(weights, kind="stable")
    leaf_weights = weights[leaf_order]
    level_weights = leaf_weights
    sizes, levels = [n], []  # per round: for each item of its level, (is a leaf, leaf index or package index)
    for _ in range(max_length - 1):
        pairs = len(level_weights) // 2
        merged = np.concatenate((leaf_weights, level_weights[0:2 * pairs:2] + level_weights[1:2 * pairs:2]))
        order = np.argsort(merged, kind="stable")
        levels.append((order < n, np.where(order < n, order, order - n)))
        level_weights = merged[order]
        sizes.append(len(merged))
    counts = np.zeros(n, np.int64)
    chosen = np.zeros(sizes[-1], bool)
    chosen[:2 * n - 2] = True
    for (is_leaf, ref), size_below in zip(reversed(levels), reversed(sizes[:-1])):
        counts += np.bincount(ref[chosen & is_leaf], minlength=n)
        packages = ref[chosen & ~is_leaf]
        chosen = np.zeros(size_below, bool)
        chosen[2 * packages] = chosen[2 * packages + 1] = True  # a package holds items 2p and 2p + 1 below
    counts += chosen.astype(np.int64)  # the leaf level: item k is leaf k
    lengths = np.zeros(n, np.int64)
    lengths[leaf_order] = counts
    return lengths


def _huffman_lengths(freqs: np.ndarray, used: list) -> dict:
    """Unlimited Huffman code lengths; ties broken by node number (leaves 0.. in `used` order, then the merged
    nodes in the order they are made), so deterministic.

    The two-queue form of the heap merge: the leaves sorted by (weight, node) and the merged nodes, which are
    made in (weight, node) order, are the heap's contents in two sorted queues; each step takes the smaller
    front (a leaf on equal weights: its node number is lower), as the heap would."""
    weight = np.asarray(freqs).tolist()  # Python ints: numpy scalars are slow to index and compare one by one
    n = len(used)
    leaf_weight = [weight[s] for s in used]
    leaves = sorted(range(n), key=leaf_weight.__getitem__)  # stable: equal weights in node order
    queue = [leaf_weight[i] for i in leaves] + [_NEVER]  # the leaves' weights in that order, then a sentinel
    merged = [_NEVER] * n  # weight of merged node n + m once made (a node not yet made is never the smaller)
    parent = [0] * (2 * n - 1)  # the merged node m (node n + m) that holds leaf i / merged node n + m
    next_leaf = next_merged = 0
    for m in range(n - 1):
        if queue[next_leaf] <= merged[next_merged]:
            first = queue[next_leaf]
            parent[leaves[next_leaf]] = m
            next_leaf += 1
        else:
            first = merged[next_merged]
            parent[n + next_merged] = m
            next_merged += 1
        if queue[next_leaf] <= merged[next_merged]:
            merged[m] = first + queue[next_leaf]
            parent[leaves[next_leaf]] = m
            next_leaf += 1
        else:
            merged[m] = first + merged[next_merged]
            parent[n + next_merged] = m
            next_merged += 1
    depth = [0] * (n - 1)  # of merged node n + m; parents are made later: root first
    for m in range(n - 3, -1, -1):
        depth[m] = depth[parent[n + m]] + 1
    return dict(zip(used, [depth[parent[i]] + 1 for i in range(n)]))


_NEVER = 1 << 62  # a weight above any sum of symbol counts


def canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """Code value of each symbol: codes of one length are consecutive in symbol order (as DEFLATE).

    In that order (by length, then symbol) each code is the one before plus one, shifted left by the
    difference of their lengths: the first `length` bits of the sum of 2^-length over the codes before it."""
    lengths = np.asarray(lengths, np.int64)
    codes = np.zeros(len(lengths), np.int64)
    used = np.flatnonzero(lengths)
    if len(used):
        order = used[np.argsort(lengths[used], kind="stable")]
        room = int(lengths.max()) - lengths[order]  # a code of length L takes 2^(longest - L) of the longest's codes
        weights = np.left_shift(1, room)
        codes[order] = np.right_shift(np.cumsum(weights) - weights, room)
    return codes


# -- encoder ----------------------------------------------------------------------------------------------------
def most_frequent_byte(data: np.ndarray) -> int:
    counts = np.bincount(data, minlength=256)
    return int(np.argmax(counts))


def encode(data, run_value: int | None = None) -> bytes:
    """The compressed stream of `data` (bytes or int8/uint8 array); run_value defaults to its commonest byte.
    The C encoder's when it is available, else numpy_encode's (the same bytes)."""
    if native_encoder() is not None:
        return native_encode(data, run_value)
    return numpy_encode(data, run_value)


def numpy_encode(data, run_value: int | None = None) -> bytes:
    """encode() in numpy: the reference of the C encoder, and its fallback."""
    return _emit(_plan(data, run_value))


def _plan(data, run_value: int | None, smaller_than: int | None = None) -> dict | None:
    """Pass 1: the codes (_tokens: a uint8 array, one byte a code), the symbol counts of each lane and from them
    the code and the exact size of every lane; the codes in groups of EMIT_BYTES of whole lanes (_group_codes),
    which the emit packs one at a time (its working arrays, 4 bytes a code, stay small). None when
    `smaller_than` is given and the counts prove the stream cannot be smaller than that (_size_lower_bound):
    the code is not built."""
    raw = _operand_bytes(data)
    n = len(raw)
    seg = max(1, -(-n // LANES))
    lane_starts = np.minimum(np.arange(LANES + 1) * seg, n)
    # a large tensor's bytes counted lane by lane once, which gives both its byte counts and (less the runs)
    # its codes' (a small one's counts first: they often show no stream can be smaller, _literal_lower_bound)
    lane_bytes = _lane_histograms(raw, zip(lane_starts[:-1].tolist(), lane_starts[1:].tolist())) \
        if n >= LANE_COUNTS_FIRST else None
    byte_counts = (lane_bytes.sum(axis=0) if lane_bytes is not None else np.bincount(raw, minlength=256)) if n else None
    run_value = int(np.argmax(byte_counts)) if run_value is None and n else (run_value or 0)
    if smaller_than is not None and n and _literal_lower_bound(raw, run_value, byte_counts) >= smaller_than:
        return None  # not even worth tokenising
    is_run = raw == run_value
    run_pos, run_len = _run_pieces(raw, run_value, seg, is_run)
    byte, runs = _tokens(raw, run_value, seg, run_pos, run_len, is_run)
    lane_codes = _codes_before(lane_starts, run_pos, run_len)
    counts = _lane_counts(byte, lane_codes, run_value, seg, run_pos, run_len, lane_bytes)
    groups = [_group_codes(lanes, byte, runs, run_len, lane_codes) for lanes in _lane_groups(n)]
    extra_bits = counts[:, LITERAL_SYMBOLS:] @ _RUN_EXTRA_BITS
    if smaller_than is not None and _size_lower_bound(counts.sum(axis=0), int(extra_bits.sum())) >= smaller_than:
        return None
    lengths = code_lengths(counts.sum(axis=0))
    literals = np.flatnonzero(lengths[:LITERAL_SYMBOLS])
    literal_count = int(literals[-1]) + 1 if len(literals) else 0
    lane_bits = counts @ lengths + extra_bits
    lane_bytes = (lane_bits + 7) // 8
    table = np.concatenate((lengths[:literal_count], lengths[LITERAL_SYMBOLS:]))
    size = HEADER_BYTES + len(_pack_nibbles(table)) + int(lane_bytes.sum())
    return dict(raw=raw, run_value=run_value, lengths=lengths, literal_count=literal_count, table=table,
                lane_bits=lane_bits, lane_bytes=lane_bytes, size=size, decoded_bytes=n, codes=groups)


LANE_COUNTS_FIRST = 1 << 15  # decoded bytes from which _plan counts the bytes lane by lane first
_RUN_EXTRA_BITS = np.arange(1, RUN_SYMBOLS + 1)  # run symbol LITERAL_SYMBOLS + k carries k + 1 extra bits
EMIT_BYTES = 1 << 14  # decoded bytes tokenised and packed at once: small arrays, which malloc reuses


class _Codes(NamedTuple):
    """The codes of a group of whole lanes, in stream order."""

    lanes: range
    byte: np.ndarray  # uint8, the byte each code starts at (a run's: run_value)
    runs: np.ndarray  # the index of each run's code
    run_len: np.ndarray  # and the run's length
    lane_codes: np.ndarray  # the index of each lane's first code, then the number of codes


def _lane_groups(n: int) -> list:
    """The lanes (ranges) tokenised and packed at once: EMIT_BYTES of whole lanes (at least one) that are not
    all empty."""
    seg = max(1, -(-n // LANES))
    per_group = max(1, EMIT_BYTES // seg)
    return [range(first, min(LANES, first + per_group)) for first in range(0, LANES, per_group) if first * seg < n]


def _group_codes(lanes: range, byte: np.ndarray, runs: np.ndarray, run_len: np.ndarray,
                 lane_codes: np.ndarray) -> _Codes:
    """The codes of `lanes` (views of the whole stream's: `byte`, the code index of each run, the runs' lengths,
    the index of each lane's first code and then the number of codes), indexed from the group's first code."""
    first, stop = int(lane_codes[lanes.start]), int(lane_codes[lanes.stop])
    r0, r1 = np.searchsorted(runs, (first, stop)).tolist()
    return _Codes(lanes, byte[first:stop], runs[r0:r1] - first, run_len[r0:r1],
                  lane_codes[lanes.start:lanes.stop + 1] - first)


def _lane_histograms(data: np.ndarray, bounds) -> np.ndarray:
    """The byte counts (LANES x 256) of each lane's part data[a:b] of `data`, (a, b) in `bounds`."""
    byte_counts = np.zeros((LANES, 256), np.int64)
    for lane, (a, b) in enumerate(bounds):
        if a < b:
            byte_counts[lane] = np.bincount(data[a:b], minlength=256)
    return byte_counts


def _lane_counts(byte: np.ndarray, lane_codes: np.ndarray, run_value: int, seg: int, run_pos: np.ndarray,
                 run_len: np.ndarray, lane_bytes: np.ndarray | None = None) -> np.ndarray:
    """The symbol counts of each lane (LANES x symbols): each code's byte counted as a literal (a run's code
    holds run_value, literal symbol 0), then each run moved from symbol 0 to its run symbol. `lane_bytes`: the
    byte counts of each lane's decoded bytes when the caller has them; the codes' are those less the bytes each
    run covers beyond its one code (a run never crosses a lane)."""
    if lane_bytes is None:
        bounds = lane_codes.tolist()
        byte_counts = _lane_histograms(byte, zip(bounds[:-1], bounds[1:]))
    else:
        byte_counts = lane_bytes.copy()
        if len(run_pos):  # (float sums of integers below 2^53: exact)
            covered = np.bincount(run_pos // seg, weights=run_len - 1, minlength=LANES)
            byte_counts[:, run_value] -= covered.astype(np.int64)
    counts = np.zeros((LANES, LITERAL_SYMBOLS + RUN_SYMBOLS), np.int64)
    counts[:, _symbol_table(run_value)] = byte_counts  # byte value v: literal symbol _symbol_table(run_value)[v]
    if len(run_pos):
        lane = run_pos // seg
        counts[:, 0] -= np.bincount(lane, minlength=LANES)
        k = _bit_length(run_len) - 2  # run of length in [2^(k+1), 2^(k+2)): symbol LITERAL_SYMBOLS + k
        counts[:, LITERAL_SYMBOLS:] += np.bincount(lane * RUN_SYMBOLS + k, minlength=LANES * RUN_SYMBOLS).reshape(
            LANES, RUN_SYMBOLS)
    return counts


def _literal_lower_bound(raw: np.ndarray, run_value: int, byte_counts: np.ndarray | None = None) -> float:
    """A weaker _size_lower_bound from the byte counts alone, before tokenising: every byte other than
    run_value is a literal (only run_value bytes form runs), so those literals' symbols are in the code table
    and their codes cost at least their entropy (Kraft's inequality holds on any subset of the symbols)."""
    counts = np.bincount(raw, minlength=256) if byte_counts is None else byte_counts.copy()
    counts[run_value] = 0
    values = np.flatnonzero(counts)
    if not len(values):
        return 0.0
    symbols = _SYMBOL_OF_DIFFERENCE[(values - run_value) % 256]
    table_bytes = -(-(int(symbols.max()) + 1 + RUN_SYMBOLS) // 2)
    total = counts[values].astype(np.float64)
    code_bits = float(np.sum(total * np.log2(total.sum() / total)))
    return (HEADER_BYTES + table_bytes + code_bits / 8) * (1 - 1e-9)


def _size_lower_bound(counts: np.ndarray, extra_bits: int) -> float:
    """Bytes below which no stream of these symbol counts can be: the header, the code table (its length
    follows from which literals occur: every used symbol gets a code, no unused one does) and the codes at
    the counts' entropy (Shannon: the counts times any code lengths that satisfy Kraft's inequality, length
    limited or not, are at least that) plus the extra bits, without the lanes' padding. Slightly lowered, so
    that float rounding can only weaken it."""
    used = np.flatnonzero(counts)
    literals = used[used < LITERAL_SYMBOLS]
    literal_count = int(literals[-1]) + 1 if len(literals) else 0
    table_bytes = -(-(literal_count + RUN_SYMBOLS) // 2)
    total = counts[used].astype(np.float64)
    code_bits = float(np.sum(total * np.log2(total.sum() / total))) if len(used) else 0.0
    return (HEADER_BYTES + table_bytes + (code_bits + extra_bits) / 8) * (1 - 1e-9)


def _emit(plan: dict) -> bytes:
    """Pass 2, a group of lanes at a time: the lanes' bits (each lane starts on a byte). One lookup per code gives
    a literal's code already at the top of a 32-bit word (`_pack_top`) and its length in the low 5 bits, which a
    code of at most MAX_CODE_LENGTH bits leaves free."""
    lengths, lane_bits, lane_bytes = plan["lengths"], plan["lane_bits"], plan["lane_bytes"]
    codes = canonical_codes(lengths)
    symbol = _symbol_table(plan["run_value"])
    code_of_byte = (np.left_shift(codes[symbol], 32 - lengths[symbol]) | lengths[symbol]).astype(np.uint32)
    pieces = []
    for group in plan["codes"]:
        top = code_of_byte.take(group.byte.astype(np.intp))
        widths = np.bitwise_and(top, _LENGTH_BITS)
        top &= ~_LENGTH_BITS
        if len(group.runs):
            k = _bit_length(group.run_len) - 2
            run_widths = lengths[LITERAL_SYMBOLS + k] + k + 1
            run_values = (codes[LITERAL_SYMBOLS + k] << (k + 1)) | (group.run_len - (1 << (k + 1)))
            top[group.runs] = run_values << (32 - run_widths)
            widths[group.runs] = run_widths
        lanes = slice(group.lanes.start, group.lanes.stop)
        pieces.append(_pack_lanes(top, widths, group.lane_codes, lane_bits[lanes], lane_bytes[lanes]))
    header = _HEADER.pack(FORMAT, plan["run_value"], plan["literal_count"], plan["decoded_bytes"], *lane_bytes.tolist())
    return header + _pack_nibbles(plan["table"]) + b"".join(pieces)


_LENGTH_BITS = np.uint32(31)  # (32 - MAX_CODE_LENGTH >= 5: a literal's code at the top leaves 5 bits for its length)


def _pack_lanes(top: np.ndarray, widths: np.ndarray, lane_codes: np.ndarray, lane_bits: np.ndarray,
                lane_bytes: np.ndarray) -> bytes:
    """Consecutive lanes, each its codes' bits (codes lane_codes[i]..lane_codes[i + 1] - 1, at the top of `top`)
    zero padded to lane_bytes[i] bytes. The plan worked out each lane's bits from the symbol counts: the last
    code of a lane counts its padding too while the offsets are summed, and where each lane then starts is
    checked against the plan's sizes."""
    pads = 8 * lane_bytes - lane_bits
    last_codes = lane_codes[1:] - 1
    filled = lane_codes[1:] > lane_codes[:-1]  # (an empty lane has no bits and no padding)
    last_codes, pads = last_codes[filled], pads[filled].astype(np.uint32)
    widths[last_codes] += pads
    offsets = np.cumsum(widths, dtype=np.uint32)  # the bit after each code, its lane's padding included ...
    offsets -= widths  # ... and where it starts
    widths[last_codes] -= pads
    lane_starts = np.concatenate(([0], 8 * np.cumsum(lane_bytes)))
    firsts = lane_codes[:-1][filled]
    total_bits = int(lane_starts[-1])
    assert (len(top) == 0 or int(offsets[-1]) + int(widths[-1]) + int(pads[-1]) == total_bits) and \
        np.array_equal(offsets[firsts], lane_starts[:-1][filled]) and ((pads >= 0) & (pads < 8)).all(), \
        "lane sizes differ from the plan's"
    return _pack_top(top, widths, offsets, total_bits // 8)


def _pack_top(top: np.ndarray, widths: np.ndarray, offsets: np.ndarray, total_bytes: int) -> bytes:
    """Write each field of `width` bits (1 <= width <= 32; uint32 arrays), given at the top of a 32-bit word
    (`top`: value << (32 - width)), at bit `offset`, most significant bit first; the offsets increase and fields
    never share a bit.

    In 32-bit words: each field is shifted down to its place in the word its first bit falls in; the fields
    that start in one word are consecutive and share no bit, so the word is their sum; the bits a field spills
    past its word's end are added to the next word. (The shift counts are named arrays: numpy may write a
    result over a temporary operand, and a shift whose result overwrites its counts goes without its vector
    loop, ~20x slower.)"""
    words = np.zeros(total_bytes // 4 + 2, np.uint32)
    if len(top):
        within = np.bitwise_and(offsets, np.uint32(31))
        word = np.right_shift(offsets, np.uint32(5))
        lasts = np.flatnonzero(word[1:] != word[:-1])  # the last field of each word but the last word's
        firsts = np.concatenate(([0], lasts + 1))
        words[word[firsts]] = np.add.reduceat(np.right_shift(top, within), firsts)
        lasts = np.append(lasts, len(top) - 1)
        spills = lasts[within[lasts] + widths[lasts] > np.uint32(32)]  # (only a word's last field can spill)
        back = np.uint32(32) - within[spills]
        words[word[spills] + np.uint32(1)] += np.left_shift(top[spills], back)
    return words.astype(">u4").tobytes()[:total_bytes]


def _pack_nibbles(values: np.ndarray) -> bytes:
    """Two 4-bit values per byte, the first in the low nibble; an odd count leaves a zero high nibble."""
    padded = np.concatenate((values, [0] * (len(values) % 2))).astype(np.uint8)
    return (padded[0::2] | (padded[1::2] << 4)).tobytes()


def compress_if_smaller(data: bytes, owner=None) -> bytes | None:
    """The compressed stream when it is smaller than the raw bytes, else None (the codegen keeps them raw).

    `owner` (e.g. the weight tensor) remembers the answer for as long as it lives: a build lowers a layer
    several times (scratch sizes, cascade costs, the real codegen) and each asks again for the same bytes."""
    if owner is not None:
        known = _STREAMS.get(owner)
        if known is not None and known[0] == data:
            return known[1]
    stream = _compress_if_smaller(data)
    if owner is not None:
        _STREAMS[owner] = (data, stream)
    return stream


# owner -> (raw bytes, stream or None); let go of with the owner (a graph's tensors), so nothing outlives a build
_STREAMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _compress_if_smaller(data: bytes) -> bytes | None:
    if len(data) <= HEADER_BYTES + RUN_SYMBOLS // 2:  # the header alone is as large
        return None
    if native_encoder() is not None:
        return native_encode(data, smaller_than=len(data))
    return _numpy_compress_if_smaller(data)


def _numpy_compress_if_smaller(data: bytes) -> bytes | None:
    # The exact size first (and not even that when the symbol counts alone rule a smaller stream out, as for
    # most small tensors, whose code table alone takes ~140 bytes): the bits are packed only if it is smaller.
    plan = _plan(data, None, smaller_than=len(data))
    return _emit(plan) if plan is not None and plan["size"] < len(data) else None


# -- the C encoder ---------------------------------------------------------------------------------------------
ENCODER_SOURCE = Path(__file__).resolve().parent / "encoder" / "weight_encoder.c"
_NATIVE_ERRORS = {-1: "the output buffer is too small", -2: "out of memory",
                  -3: "the lanes' sizes differ from the counted ones"}


@functools.lru_cache(maxsize=None)
def native_encoder() -> ctypes.CDLL | None:
    """The C encoder's library, built on first use and cached across processes (edgesdk.hostcc); None when it
    cannot be built or loaded (no host C compiler, a compiler that fails): the callers then use numpy's."""
    try:
        lib = load_shared_library("npu_weight_encoder", [ENCODER_SOURCE])
    except (ToolchainError, OSError):
        return None
    lib.wc_encode.restype = ctypes.c_int64
    lib.wc_encode.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_int64, ctypes.c_char_p,
                              ctypes.c_uint64]
    lib.wc_code_lengths.restype = ctypes.c_int
    lib.wc_code_lengths.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_int32)]
    return lib


def native_encode(data, run_value: int | None = None, smaller_than: int | None = None) -> bytes | None:
    """encode() by the C encoder (which must be available: native_encoder()); with `smaller_than`, the stream
    only when it is smaller than that many bytes, else None (as _compress_if_smaller)."""
    raw = _operand_bytes(data).tobytes()
    n = len(raw)
    if smaller_than is not None and smaller_than <= HEADER_BYTES:
        return None  # no stream is that small
    # a stream codes each byte in at most 15 bits (a run's code and extra bits: at most 31 for 2 or more bytes)
    capacity = smaller_than or HEADER_BYTES + stream_table_bytes(LITERAL_SYMBOLS) + 2 * n + LANES
    out = ctypes.create_string_buffer(capacity)
    size = native_encoder().wc_encode(raw, n, -1 if run_value is None else (run_value or 0), smaller_than or 0, out,
                                      capacity)
    if size < 0:
        raise RuntimeError(f"the C weight encoder failed: {_NATIVE_ERRORS.get(size, size)}")
    return ctypes.string_at(out, size) if size else None


def native_code_lengths(freqs, max_length: int = MAX_CODE_LENGTH) -> np.ndarray:
    """code_lengths() by the C encoder (for the tests that compare the two)."""
    counts = np.ascontiguousarray(freqs, np.uint64)
    lengths = np.zeros(len(counts), np.int32)
    status = native_encoder().wc_code_lengths(counts.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), len(counts),
                                              max_length, lengths.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
    if status:
        raise RuntimeError(f"the C weight encoder failed: {_NATIVE_ERRORS.get(status, status)}")
    return lengths.astype(np.int64)


def _operand_bytes(data) -> np.ndarray:
    """The bytes of `data` (bytes-like, or an int8/uint8 array) as a flat uint8 array, both encoders' input;
    WeightStreamError past the NPU's operand limit."""
    raw = data.reshape(-1).view(np.uint8) if isinstance(data, np.ndarray) else np.frombuffer(bytes(data), np.uint8)
    if len(raw) > R.MAX_OPERAND_BYTES:
        raise WeightStreamError(f"{len(raw)} bytes exceed the NPU's operand limit of {R.MAX_OPERAND_BYTES}")
    return raw


def stream_table_bytes(literal_count: int) -> int:
    return (literal_count + RUN_SYMBOLS + 1) // 2


# -- decoder (reference; the NPU's is edgesdk/targets/npu/hw/model/npu_model.c) ------------------------------------------------
def _lookup_table(lengths: np.ndarray) -> tuple:
    """(symbol, length) for every 15-bit window: a code of length L owns 2^(15-L) consecutive windows.

    Rejects over-subscribed lengths (Kraft sum > 1) and a code without symbols; windows that start with
    no code have length 0."""
    if int(np.sum(np.where(lengths > 0, 1 << (MAX_CODE_LENGTH - lengths), 0))) > 1 << MAX_CODE_LENGTH:
        raise WeightStreamError("the code lengths are over-subscribed")
    if not lengths.any():
        raise WeightStreamError("the code has no symbols")
    symbols = np.zeros(1 << MAX_CODE_LENGTH, np.int64)
    sizes = np.zeros(1 << MAX_CODE_LENGTH, np.int64)
    codes = canonical_codes(lengths)
    for s in np.flatnonzero(lengths).tolist():
        shift = MAX_CODE_LENGTH - int(lengths[s])
        first = int(codes[s]) << shift
        symbols[first:first + (1 << shift)] = s
        sizes[first:first + (1 << shift)] = lengths[s]
    return symbols, sizes


def decode(stream: bytes, expected_bytes: int | None = None) -> bytes:
    """The decoded bytes of a stream; WeightStreamError on anything the NPU would reject."""
    stream = bytes(stream)
    if len(stream) < HEADER_BYTES:
        raise WeightStreamError("stream shorter than its header")
    fmt, run_value, literal_count, n, *lane_bytes = _HEADER.unpack_from(stream, 0)
    if fmt != FORMAT or literal_count > LITERAL_SYMBOLS:
        raise WeightStreamError(f"format {fmt} / {literal_count} literal symbols")
    if expected_bytes is not None and n != expected_bytes:
        raise WeightStreamError(f"stream decodes to {n} bytes, the descriptor holds {expected_bytes}")
    table_end = HEADER_BYTES + stream_table_bytes(literal_count)
    if table_end + sum(lane_bytes) != len(stream):
        raise WeightStreamError("header sizes do not add up to the stream size")
    nibbles = np.frombuffer(stream[HEADER_BYTES:table_end], np.uint8)
    table = np.stack((nibbles & 15, nibbles >> 4), axis=1).reshape(-1)[:literal_count + RUN_SYMBOLS]
    lengths = np.zeros(LITERAL_SYMBOLS + RUN_SYMBOLS, np.int64)
    lengths[:literal_count], lengths[LITERAL_SYMBOLS:] = table[:literal_count], table[literal_count:]
    symbols, sizes = (t.tolist() for t in _lookup_table(lengths))
    value_of = [literal_value(s, run_value) for s in range(LITERAL_SYMBOLS)]
    out, pos = bytearray(), table_end
    for (start, end), size in zip(lane_bounds(n), lane_bytes):
        out += _decode_lane(stream[pos:pos + size], end - start, symbols, sizes, value_of, run_value)
        pos += size
    return bytes(out)


def _decode_lane(data: bytes, count: int, symbols: list, sizes: list, value_of: list, run_value: int) -> bytearray:
    """One lane, code by code: peek 15 bits (zero past the end), look the code up, read a run's extra bits."""
    padded = data + bytes(4)
    total_bits, pos, out = 8 * len(data), 0, bytearray()
    while len(out) < count:
        b = pos >> 3
        window = ((padded[b] << 16 | padded[b + 1] << 8 | padded[b + 2]) >> (9 - (pos & 7))) & 0x7FFF
        size = sizes[window]
        if size == 0:
            raise WeightStreamError("a bit pattern matches no code")
        symbol = symbols[window]
        pos += size
        if symbol < LITERAL_SYMBOLS:
            out.append(value_of[symbol])
        else:
            k = symbol - LITERAL_SYMBOLS
            b = pos >> 3
            window = (padded[b] << 24 | padded[b + 1] << 16 | padded[b + 2] << 8 | padded[b + 3])
            run = (1 << (k + 1)) + ((window >> (32 - (k + 1) - (pos & 7))) & ((1 << (k + 1)) - 1))
            pos += k + 1
            if len(out) + run > count:
                raise WeightStreamError("a run crosses the end of its lane")
            out += bytes([run_value]) * run
        if pos > total_bits:
            raise WeightStreamError("a lane ends in the middle of a code")
    if (pos + 7) // 8 != len(data):
        raise WeightStreamError("a lane has bytes after its last code")
    if pos % 8 and data[-1] & ((1 << (8 - pos % 8)) - 1):
        raise WeightStreamError("a lane has nonzero padding bits")
    return out
