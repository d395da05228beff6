"""Compressed weight streams: the Python codec (edgesdk/targets/npu/hw/weight_codec.py) round trip on random and real
weights, the C model's decoder against the Python encoder (same outputs, BAD_WEIGHTS on malformed
streams), the command field, the timing model, and the NPU codegen's choice per stream."""

from __future__ import annotations

import heapq
import struct
from dataclasses import replace

import numpy as np
import pytest
from conftest import model_path
from test_npu_codegen import Ctx, run_region
from test_npu_model import FLASH, SRAM, Memory, channel_params, rand_i8

from edgesdk.board import load_board
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import registers as R
from edgesdk.targets.npu.hw import timing as T
from edgesdk.targets.npu.hw import weight_codec as W
from edgesdk.targets.npu.hw.model import run_table
from edgesdk.targets.npu.region import lower_ops

from edgesdk.board import load_board as _load_board  # noqa: E402
from edgesdk.targets.npu.hw.model import board_memory_classes as _board_memory_classes  # noqa: E402

BOARD_CLASSES = _board_memory_classes(_load_board("riscv-npu"))  # the NPU's view of riscv-npu's memories
BOARD_MEMORY = T.MemoryMap.for_board(_load_board("riscv-npu"))

CONV_TYPES = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def sample(rng, kind: str, n: int) -> bytes:
    if kind == "uniform":
        return rng.integers(-128, 128, n).astype(np.int8).tobytes()
    if kind == "laplace":
        return np.clip(np.round(rng.laplace(0, 4, n)), -128, 127).astype(np.int8).tobytes()
    if kind == "sparse":
        return ((rng.random(n) < 0.05) * rng.integers(-9, 9, n)).astype(np.int8).tobytes()
    return bytes([0x85]) * n  # constant, not zero: the run value is the commonest byte, whatever it is


def real_weights(name: str) -> list:
    graph = import_tflite(model_path(name))
    return [np.ascontiguousarray(op.inputs[1].data, dtype=np.int8).tobytes() for op in graph.ops if op.type in CONV_TYPES]


# -- Python codec -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["uniform", "laplace", "sparse", "constant"])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 33, 1000, 20011])
def test_round_trip_random(kind, n):
    data = sample(np.random.default_rng(n), kind, n)
    stream = W.encode(data)
    assert W.decode(stream, n) == data
    fmt, run_value, literals, decoded, *lanes = struct.unpack_from("<BBHI16I", stream)
    assert (fmt, decoded) == (R.WEIGHT_STREAM_FORMAT, n)
    assert len(stream) == R.WEIGHT_STREAM_HEADER_BYTES + W.stream_table_bytes(literals) + sum(lanes)
    if kind == "constant":
        assert run_value == 0x85 and len(stream) <= R.WEIGHT_STREAM_HEADER_BYTES + 8 + 2 * 16  # a run code per lane


def test_runs_longer_than_one_code_and_lane_boundaries():
    data = bytes(16 * (W.MAX_RUN + 1) + 3)  # each lane's run needs two codes (and 1-byte leftovers)
    assert W.decode(W.encode(data)) == data
    data = bytes(3) + b"\x01" + bytes(W.MAX_RUN * 20)
    assert W.decode(W.encode(data)) == data


def test_lane_bounds_split_the_stream_in_16():
    assert W.lane_bounds(33)[:4] == [(0, 3), (3, 6), (6, 9), (9, 12)] and W.lane_bounds(33)[-1] == (33, 33)
    assert sum(b - a for a, b in W.lane_bounds(1000)) == 1000


def test_code_lengths_are_limited_and_canonical():
    freqs = np.array([2 ** i for i in range(30)])  # unlimited Huffman would need 29-bit codes
    lengths = W.code_lengths(freqs)
    assert lengths.max() == W.MAX_CODE_LENGTH and sum(2.0 ** -int(x) for x in lengths) <= 1.0
    codes = W.canonical_codes(np.array([2, 1, 3, 3]))
    assert codes.tolist() == [0b10, 0b0, 0b110, 0b111]


@pytest.mark.parametrize("name,min_ratio", [("vww", 4.5), ("ad", 1.45), ("ic", 1.03)])
def test_real_weights_round_trip_and_ratio(name, min_ratio):
    raw = compressed = 0
    for data in real_weights(name):
        stream = W.compress_if_smaller(data)
        if stream is not None:
            assert W.decode(stream, len(data)) == data
        raw, compressed = raw + len(data), compressed + (len(stream) if stream is not None else len(data))
    assert raw / compressed >= min_ratio, f"{name}: {raw} -> {compressed} bytes"


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad"])
def test_size_bound_skips_only_streams_that_cannot_be_smaller(name, monkeypatch):
    """compress_if_smaller builds no code when the symbol counts (or, before tokenising, the byte counts) rule a
    smaller stream out; its answer is the one the full plan gives, and both bounds are below every stream's
    exact size."""
    built = []
    code_lengths = W.code_lengths
    monkeypatch.setattr(W, "code_lengths", lambda *a, **k: built.append(1) or code_lengths(*a, **k))
    rng = np.random.default_rng(1)
    tensors = real_weights(name) + [sample(rng, kind, n) for kind in ("uniform", "laplace", "sparse") for n in (300, 5000)]
    skipped = 0
    for data in tensors:
        before = len(built)
        answer = W._numpy_compress_if_smaller(data)
        skipped += len(built) == before
        full = W._plan(data, None)
        assert answer == (W._emit(full) if full["size"] < len(data) else None)
        raw, run_value = full["raw"], full["run_value"]
        codes = stream_codes(raw, run_value, -(-len(raw) // 16))
        counts = np.bincount([sym for _, sym, _, _ in codes], minlength=W.LITERAL_SYMBOLS + W.RUN_SYMBOLS)
        extra = sum(bits for _, _, _, bits in codes)
        assert W._literal_lower_bound(raw, run_value) <= W._size_lower_bound(counts, extra) <= full["size"]
    assert skipped >= {"kws": 11, "vww": 19, "ic": 8, "ad": 2}[name]  # most small layers: no code built


# -- the fast routines against plain reference ones ------------------------------------------------------------
def reference_huffman_lengths(freqs, used) -> dict:
    """Huffman code lengths by a heap merge, ties broken by node number (what _huffman_lengths must equal)."""
    heap = [(int(freqs[s]), node) for node, s in enumerate(used)]
    parent = [0] * (2 * len(used) - 1)
    heapq.heapify(heap)
    node = len(used)
    while len(heap) > 1:
        (w1, n1), (w2, n2) = heapq.heappop(heap), heapq.heappop(heap)
        parent[n1] = parent[n2] = node
        heapq.heappush(heap, (w1 + w2, node))
        node += 1
    depth = [0] * len(parent)
    for n in range(len(parent) - 2, -1, -1):
        depth[n] = depth[parent[n]] + 1
    return {s: depth[i] for i, s in enumerate(used)}


def reference_tokens(raw: np.ndarray, run_value: int, seg: int) -> list:
    """(lane, symbol, extra value, extra bits) of each code, byte by byte (what _tokens must equal)."""
    out, i, n = [], 0, len(raw)
    while i < n:
        lane_end = min(n, (i // seg + 1) * seg)
        j = i
        while j < lane_end and raw[j] == run_value:
            j += 1
        if j - i < 2:
            out.append((i // seg, int(W._SYMBOL_OF_DIFFERENCE[(int(raw[i]) - run_value) % 256]), 0, 0))
            i += 1
            continue
        length = j - i
        while length:
            piece = min(length, W.MAX_RUN if length - W.MAX_RUN != 1 else W.MAX_RUN - 1)
            out.append((i // seg, *W.run_symbol(piece)))
            i, length = i + piece, length - piece
    return out


def stream_codes(raw: np.ndarray, run_value: int, seg: int) -> list:
    """(lane, symbol, extra value, extra bits) of each code as the encoder finds them (_run_pieces, _tokens)."""
    run_pos, run_len = W._run_pieces(raw, run_value, seg)
    tokens, runs = W._tokens(raw, run_value, seg, run_pos, run_len)
    run_at = dict(zip(runs.tolist(), zip(run_pos.tolist(), run_len.tolist())))
    out, pos = [], 0
    for index, byte in enumerate(tokens.tolist()):
        if index in run_at:
            assert run_at[index][0] == pos and byte == run_value
            out.append((pos // seg, *W.run_symbol(run_at[index][1])))
            pos += run_at[index][1]
        else:
            out.append((pos // seg, int(W._SYMBOL_OF_DIFFERENCE[(byte - run_value) % 256]), 0, 0))
            pos += 1
    assert pos == len(raw)
    return out


def reference_pack_bits(values, widths, offsets, total_bytes: int) -> bytes:
    bits = 0
    for value, width, offset in zip(values.tolist(), widths.tolist(), offsets.tolist()):
        bits |= value << (8 * total_bytes - offset - width)
    return bits.to_bytes(total_bytes, "big")


def test_huffman_lengths_and_canonical_codes_match_the_reference_on_random_histograms():
    rng = np.random.default_rng(13)
    for trial in range(600):
        used = np.sort(rng.choice(272, int(rng.integers(2, 272)), replace=False))
        freqs = np.zeros(272, np.int64)
        freqs[used] = (rng.integers(1, 4, len(used)) if trial % 3 == 0 else  # many equal weights: the tie rule
                       2 ** rng.integers(0, 24, len(used)) if trial % 3 == 1 else rng.integers(1, 100_000, len(used)))
        assert W._huffman_lengths(freqs, used.tolist()) == reference_huffman_lengths(freqs, used.tolist())
        lengths = W.code_lengths(freqs)
        codes, order = W.canonical_codes(lengths), np.lexsort((np.arange(272), lengths))
        expected, code, previous = {}, 0, 0
        for s in order[lengths[order] > 0].tolist():  # DEFLATE's rule, written out
            code <<= int(lengths[s]) - previous
            expected[s], code, previous = code, code + 1, int(lengths[s])
        assert {s: int(codes[s]) for s in expected} == expected and not codes[lengths == 0].any()


@pytest.mark.parametrize("kind", ["laplace", "sparse", "constant", "uniform"])
def test_tokens_match_the_byte_by_byte_reference(kind):
    rng = np.random.default_rng(17)
    for n in (1, 2, 3, 16, 17, 31, 33, 250, 4001):
        raw = np.frombuffer(sample(rng, kind, n), np.uint8)
        run_value = W.most_frequent_byte(raw)
        for seg in {max(1, -(-n // 16)), 1, 5}:
            assert stream_codes(raw, run_value, seg) == reference_tokens(raw, run_value, seg), (kind, n, seg)
    raw = np.frombuffer(bytes(3) + b"\x01" + bytes(2 * W.MAX_RUN + 2) + b"\x02" + bytes(W.MAX_RUN + 1), np.uint8)
    assert stream_codes(raw, 0, len(raw)) == reference_tokens(raw, 0, len(raw))  # runs cut at MAX_RUN, no 1-byte piece


def test_pack_bits_matches_the_reference():
    rng = np.random.default_rng(19)
    for n in (1, 2, 7, 64, 500):
        widths = rng.integers(1, 33, n).astype(np.uint32)
        values = (rng.integers(0, 1 << 32, n) & ((1 << widths.astype(np.int64)) - 1)).astype(np.uint32)
        offsets = (np.cumsum(widths + rng.integers(0, 3, n)) - widths).astype(np.uint32)  # gaps: lane padding
        total = int(offsets[-1] + widths[-1] + 7) // 8 + int(rng.integers(0, 3))
        top = np.left_shift(values, np.uint32(32) - widths, dtype=np.uint32)  # each value at its word's top
        assert W._pack_top(top, widths, offsets, total) == reference_pack_bits(values, widths, offsets, total)


def reference_stream(data: bytes) -> bytes:
    """The stream written code by code with Python integers (reference_tokens, the plan's code lengths and
    canonical codes, each lane zero padded to a byte): what the vectorised emit must equal bit for bit."""
    plan = W._plan(data, None)
    raw, run_value, lengths = plan["raw"], plan["run_value"], plan["lengths"]
    codes, n = W.canonical_codes(lengths), len(raw)
    lanes = [(0, 0)] * 16  # per lane: (bits, count of bits)
    for lane, symbol, extra, extra_bits in reference_tokens(raw, run_value, max(1, -(-n // 16))):
        bits, count = lanes[lane]
        bits = (bits << int(lengths[symbol])) | int(codes[symbol])
        lanes[lane] = ((bits << extra_bits) | extra, count + int(lengths[symbol]) + extra_bits)
    body = b"".join((bits << (-count % 8)).to_bytes((count + 7) // 8, "big") for bits, count in lanes)
    sizes = [(count + 7) // 8 for _, count in lanes]
    header = struct.pack("<BBHI16I", R.WEIGHT_STREAM_FORMAT, run_value, plan["literal_count"], n, *sizes)
    return header + W._pack_nibbles(plan["table"]) + body


def codec_samples() -> list:
    """Every conv/FC weight tensor of KWS and AD (AD's largest: 80 KiB, runs across lanes), random tensors around
    the sizes where the plan counts lane by lane first (LANE_COUNTS_FIRST) and packs in several groups
    (EMIT_BYTES), and long runs cut at MAX_RUN and at lane boundaries."""
    rng = np.random.default_rng(23)
    sizes = (W.LANE_COUNTS_FIRST - 1, W.LANE_COUNTS_FIRST, 3 * W.EMIT_BYTES + 5)
    return real_weights("kws") + real_weights("ad") + [sample(rng, kind, n) for kind in ("laplace", "sparse")
                                                       for n in sizes] + \
        [bytes(3) + b"\x05" + bytes(2 * W.MAX_RUN + 40) + bytes([1, 2]) * 900]


def test_emit_matches_a_code_by_code_writer_on_real_weights():
    for data in codec_samples():
        assert W.numpy_encode(data) == reference_stream(data), len(data)


# -- the C encoder against the numpy one ------------------------------------------------------------------------
def edge_case_samples() -> list:
    """(data, run_value) pairs the two encoders must agree on: all zeros, one value, every byte value (the
    widest literal table), incompressible bytes, sizes around multiples of the 16 lanes, runs of run_value
    longer than one code and across lanes, and a given run value that is not the commonest byte."""
    rng = np.random.default_rng(29)
    samples = []
    for n in (0, 1, 2, 15, 16, 17, 31, 33, 95, 1000, 4097, 20011):
        samples += [(bytes(n), None), (bytes([0x85]) * n, None), (bytes(range(256)) * (n // 256) + bytes(n % 256), None),
                    (sample(rng, "uniform", n), None), (sample(rng, "laplace", n), None), (sample(rng, "sparse", n), 3)]
    samples += [(bytes([0x80, 0x7F]) * 3000, None),  # the largest zig-zag differences
                (bytes(16 * (W.MAX_RUN + 1) + 3), None), (bytes(3) + b"\x01" + bytes(W.MAX_RUN * 20), None),
                (bytes(3) + b"\x05" + bytes(2 * W.MAX_RUN + 40) + bytes([1, 2]) * 900, 0)]
    return samples


def test_c_encoder_gives_the_numpy_encoders_bytes():
    assert W.native_encoder() is not None, "the C weight encoder does not build (a host C compiler is needed)"
    for data, run_value in edge_case_samples() + [(data, None) for data in codec_samples()]:
        assert W.native_encode(data, run_value) == W.numpy_encode(data, run_value), (len(data), run_value)


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad"])
def test_c_encoder_compresses_real_weights_as_numpy_does(name):
    """compress_if_smaller's answer (the stream, or None when it is not smaller) is the same from both encoders,
    and the C encoder returns only streams smaller than the bytes."""
    for data in real_weights(name) + [data for data, _ in edge_case_samples()]:
        expected = W._numpy_compress_if_smaller(data) if len(data) > W.HEADER_BYTES + W.RUN_SYMBOLS // 2 else None
        assert W._compress_if_smaller(data) == expected, len(data)
        assert W.native_encode(data, smaller_than=len(data)) == expected, len(data)


def test_c_code_lengths_equal_numpy_ones_with_and_without_the_length_limit():
    rng = np.random.default_rng(31)
    fibonacci = [1, 1]
    while len(fibonacci) < 40:
        fibonacci.append(fibonacci[-1] + fibonacci[-2])
    histograms = [np.array([2 ** i for i in range(30)]), np.array(fibonacci), np.array(fibonacci[:16]),
                  np.array([5]), np.array([0, 0, 7]), np.zeros(272, np.int64)]
    for trial in range(300):
        used = np.sort(rng.choice(272, int(rng.integers(1, 273)), replace=False))
        freqs = np.zeros(272, np.int64)
        freqs[used] = (rng.integers(1, 4, len(used)) if trial % 3 == 0 else  # many equal weights: the tie rules
                       2 ** rng.integers(0, 40, len(used)) if trial % 3 == 1 else rng.integers(1, 100_000, len(used)))
        histograms.append(freqs)
    limited = 0
    for freqs in histograms:
        expected = W.code_lengths(freqs)
        assert np.array_equal(W.native_code_lengths(freqs), expected), freqs.tolist()
        limited += int(expected.max(initial=0)) == W.MAX_CODE_LENGTH
    assert limited >= 60  # package-merge's ties too, not only Huffman's


def test_without_the_c_encoder_numpy_encodes(monkeypatch):
    """No host C compiler (the library cannot be built): native_encoder() is None, and encode and
    compress_if_smaller give the same bytes through numpy, no error."""
    from edgesdk.errors import ToolchainError

    def no_compiler(*args, **kwargs):
        raise ToolchainError("No host C compiler found")

    data = real_weights("ad")[0]
    expected = (W.encode(data), W._compress_if_smaller(data))
    monkeypatch.setattr(W, "load_shared_library", no_compiler)
    W.native_encoder.cache_clear()
    try:
        assert W.native_encoder() is None
        assert (W.encode(data), W._compress_if_smaller(data)) == expected
    finally:
        monkeypatch.undo()
        W.native_encoder.cache_clear()
    assert W.native_encoder() is not None


def test_lane_counts_from_the_decoded_bytes_equal_the_codes_counts():
    """A large tensor's symbol counts come from each lane's byte counts less its runs (_lane_counts with
    lane_bytes); they equal the counts of its codes, one by one (reference_tokens)."""
    for data in codec_samples():
        raw = np.frombuffer(data, np.uint8)
        n, run_value = len(raw), W.most_frequent_byte(raw)
        seg = max(1, -(-n // 16))
        starts = np.minimum(np.arange(17) * seg, n)
        run_pos, run_len = W._run_pieces(raw, run_value, seg)
        byte, _ = W._tokens(raw, run_value, seg, run_pos, run_len)
        lane_codes = W._codes_before(starts, run_pos, run_len)
        lane_bytes = W._lane_histograms(raw, zip(starts[:-1].tolist(), starts[1:].tolist()))
        expected = np.zeros((16, W.LITERAL_SYMBOLS + W.RUN_SYMBOLS), np.int64)
        for lane, symbol, _, _ in reference_tokens(raw, run_value, seg):
            expected[lane, symbol] += 1
        for given in (None, lane_bytes):
            counts = W._lane_counts(byte, lane_codes, run_value, seg, run_pos, run_len, given)
            assert np.array_equal(counts, expected), (n, given is None)


def test_incompressible_data_stays_raw():
    assert W.compress_if_smaller(sample(np.random.default_rng(0), "uniform", 4096)) is None
    assert W.compress_if_smaller(bytes(80)) is None  # not even the header fits


MALFORMED_DATA = bytes([0, 1, 2]) * 360  # literals only: lane 15 holds 45 bytes, 15 of each value
CORRUPTIONS = ["format", "decoded_size", "lane_size", "oversubscribed", "padding", "trailing_byte", "truncated"]


def test_malformed_data_leaves_padding_in_the_last_lane():
    stream = W.encode(MALFORMED_DATA)
    table = stream[R.WEIGHT_STREAM_HEADER_BYTES]  # nibbles of symbols 0 (value 0) and 1 (value -1)
    lengths = {0: table & 15, 4: stream[R.WEIGHT_STREAM_HEADER_BYTES + 2] & 15}  # value 2 -> symbol 4
    lengths[2] = stream[R.WEIGHT_STREAM_HEADER_BYTES + 1] & 15  # value 1 -> symbol 2
    assert (15 * sum(lengths.values())) % 8 != 0


@pytest.mark.parametrize("corrupt", CORRUPTIONS)
def test_python_decoder_rejects_malformed_streams(corrupt):
    stream = corrupted(W.encode(MALFORMED_DATA), corrupt)
    with pytest.raises(W.WeightStreamError):
        W.decode(stream, len(MALFORMED_DATA))


def corrupted(stream: bytes, how: str) -> bytes:
    s = bytearray(stream)
    if how == "format":
        s[0] = 2
    elif how == "decoded_size":
        struct.pack_into("<I", s, 4, 998)
    elif how == "lane_size":
        lane0 = struct.unpack_from("<I", s, 8)[0]
        struct.pack_into("<II", s, 8, lane0 + 1, struct.unpack_from("<I", s, 12)[0] - 1)
    elif how == "oversubscribed":
        s[R.WEIGHT_STREAM_HEADER_BYTES] = 0x11  # two literal symbols of length 1 plus the others
    elif how == "padding":
        s[-1] |= 1  # the last lane's last padding bit (MALFORMED_DATA leaves padding there)
    elif how == "trailing_byte":
        s += b"\0"
        struct.pack_into("<I", s, 8 + 4 * 15, struct.unpack_from("<I", s, 8 + 4 * 15)[0] + 1)
    elif how == "truncated":
        s = s[:-1]
    return bytes(s)


# -- C model decoder --------------------------------------------------------------------------------------------
def conv_pair(m: Memory, rng, w: np.ndarray, depthwise: bool = False, stream: bytes | None = None):
    """The same convolution twice: dense weights, and the compressed stream of the same weights."""
    oc = w.shape[3] if depthwise else w.shape[0]
    ic = oc if depthwise else w.shape[3]
    x = rand_i8(rng, (1, 5, 5, ic))
    bias, mult, shift = channel_params(rng, oc)
    params = C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift)))
    dense = C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape)
    stream = W.encode(w.tobytes()) if stream is None else stream
    packed = C.TensorDesc.dense(0, m.const(stream), w.shape)
    cls = C.DepthwiseConv2D if depthwise else C.Conv2D
    src = C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape)
    out_shape = (1, 5 - w.shape[1] + 1, 5 - w.shape[2] + 1, oc)
    out = [C.TensorDesc.dense(1, m.arena(int(np.prod(out_shape))), out_shape) for _ in range(2)]
    a = cls(src, out[0], dense, params, input_offset=3, note="dense")
    b = cls(src, out[1], packed, params, input_offset=3, weight_stream_bytes=len(stream), note="compressed")
    return a, b, len(stream)


@pytest.mark.parametrize("kind", ["laplace", "sparse", "uniform"])
@pytest.mark.parametrize("depthwise", [False, True])
def test_c_decoder_matches_dense_weights(kind, depthwise):
    rng = np.random.default_rng(7)
    shape = (1, 3, 3, 40) if depthwise else (24, 3, 3, 20)
    w = np.frombuffer(sample(rng, kind, int(np.prod(shape))), np.int8).reshape(shape)
    m = Memory()
    a, b, stream_bytes = conv_pair(m, rng, w, depthwise)
    result = m.run([a, b, C.End()])
    assert result.ok, result
    assert m.read(a.output.offset, a.output.shape).tobytes() == m.read(b.output.offset, b.output.shape).tobytes()
    dense_cost, packed_cost = (T.command_cost(c, T.MemoryMap.for_board(load_board("riscv-npu"))) for c in (a, b))
    assert packed_cost.flash_read_bytes - dense_cost.flash_read_bytes == stream_bytes - w.size
    assert T.table_cost([a, b, C.End()], BOARD_MEMORY).cycles == result.cycles
    assert result.flash_read_bytes == dense_cost.flash_read_bytes + packed_cost.flash_read_bytes


def test_c_decoder_on_the_largest_real_layers():
    """The biggest weight tensors of VWW and AD (65,536 and 81,920 bytes) as fully connected layers."""
    rng = np.random.default_rng(3)
    for name in ("vww", "ad"):
        data = max(real_weights(name), key=len)
        k = 256 if name == "vww" else 640
        w = np.frombuffer(data, np.int8).reshape(len(data) // k, 1, 1, k)
        m = Memory(sram_bytes=1 << 14)
        x = C.TensorDesc.dense(1, m.arena(rand_i8(rng, (1, 1, 1, k)).tobytes()), (1, 1, 1, k))
        params = C.ParamRef(0, m.const(C.pack_channel_params(*channel_params(rng, w.shape[0]))))
        outs = [C.TensorDesc.dense(1, m.arena(w.shape[0]), (1, 1, 1, w.shape[0])) for _ in range(2)]
        stream = W.encode(data)
        dense = C.Conv2D(x, outs[0], C.TensorDesc.dense(0, m.const(data), w.shape), params)
        packed = C.Conv2D(x, outs[1], C.TensorDesc.dense(0, m.const(stream), w.shape), params,
                          weight_stream_bytes=len(stream))
        result = m.run([dense, packed, C.End()])
        assert result.ok, result
        assert m.read(outs[0].offset, outs[0].shape).tobytes() == m.read(outs[1].offset, outs[1].shape).tobytes()
        assert T.table_cost([dense, packed, C.End()], BOARD_MEMORY).cycles == result.cycles


@pytest.mark.parametrize("corrupt", CORRUPTIONS[:-1])
def test_c_decoder_rejects_malformed_streams(corrupt):
    rng = np.random.default_rng(5)
    w = np.frombuffer(MALFORMED_DATA, np.int8).reshape(24, 3, 3, 5)
    stream = corrupted(W.encode(w.tobytes()), corrupt)
    m = Memory()
    a, b, _ = conv_pair(m, rng, w, stream=stream)
    result = m.run([a, b, C.End()])
    assert (result.error_name, result.error_command, result.commands) == ("BAD_WEIGHTS", 1, 1)


def test_c_decoder_survives_random_corruption():
    rng = np.random.default_rng(11)
    w = np.frombuffer(sample(rng, "sparse", 24 * 9 * 20), np.int8).reshape(24, 3, 3, 20)
    stream = W.encode(w.tobytes())
    outcomes = set()
    for trial in range(300):
        s = bytearray(stream)
        for _ in range(int(rng.integers(1, 4))):
            s[int(rng.integers(0, len(s)))] ^= 1 << int(rng.integers(0, 8))
        m = Memory()
        _, b, _ = conv_pair(m, rng, w, stream=bytes(s))
        result = m.run([b, C.End()])
        assert result.ok or (result.error_name, result.error_command) == ("BAD_WEIGHTS", 0), result
        outcomes.add(result.error_name)
    assert "BAD_WEIGHTS" in outcomes


def test_static_checks_of_the_compressed_weights_fields():
    rng = np.random.default_rng(2)
    w = rand_i8(rng, (8, 1, 1, 16))
    m = Memory()
    _, b, n = conv_pair(m, rng, w)
    table = bytearray(C.encode([b, C.End()]))
    weights_strides = R.TABLE_HEADER_BYTES + 72 + 16
    for offset, value, error in ((0, 40, "BAD_PARAM"), (4, 1, "BAD_PARAM"), (0, R.MAX_OPERAND_BYTES + 1, "TOO_LARGE")):
        t = bytearray(table)
        struct.pack_into("<I", t, weights_strides + offset, value)
        result = run_table(bytes(t), {FLASH: m.flash + bytes(16), SRAM: m.sram}, [FLASH, SRAM], read_only=[FLASH], memory_classes=BOARD_CLASSES)
        assert (result.error_name, result.error_command) == (error, 0), (offset, value)
    pool = C.MaxPool2D(b.input, b.input)
    t = bytearray(C.encode([pool, C.End()]))
    struct.pack_into("<H", t, R.TABLE_HEADER_BYTES + 4, R.FLAG_COMPRESSED_WEIGHTS)
    result = run_table(bytes(t), {FLASH: m.flash, SRAM: m.sram}, [FLASH, SRAM], read_only=[FLASH], memory_classes=BOARD_CLASSES)
    assert result.error_name == "BAD_PARAM"


# -- command field and timing -------------------------------------------------------------------------------------
def test_command_field_round_trip():
    m = Memory()
    _, b, n = conv_pair(m, np.random.default_rng(0), rand_i8(np.random.default_rng(0), (8, 1, 1, 16)))
    data = C.encode([b, C.End()])
    flags, = struct.unpack_from("<H", data, R.TABLE_HEADER_BYTES + 4)
    assert flags == R.FLAG_COMPRESSED_WEIGHTS
    assert struct.unpack_from("<4I", data, R.TABLE_HEADER_BYTES + 72 + 16) == (n, 0, 0, 0)
    assert C.decode(data)[0] == b and C.decode(data)[0].weights.strides == (16, 16, 16, 1)


def test_timing_is_the_slower_of_fetch_and_decode():
    flash = T.MemoryMap.for_board(load_board("riscv-npu"))
    w = C.TensorDesc.dense(0, 0, (64, 3, 3, 64))  # 36,864 weights: decode takes 2,304 cycles at 16/cycle
    x = C.TensorDesc.dense(1, 0, (1, 3, 3, 64))
    y = C.TensorDesc.dense(1, 1024, (1, 1, 1, 64))
    base = C.Conv2D(x, y, w, C.ParamRef(0, 0))
    dense = T.command_cost(base, flash)
    for stream_bytes, weights_cycles in ((10_000, 10_000), (1_000, 2_304)):
        cost = T.command_cost(replace(base, weight_stream_bytes=stream_bytes), flash)
        assert cost.memory_cycles == dense.memory_cycles - w.num_elements + weights_cycles
        assert cost.flash_read_bytes == dense.flash_read_bytes - w.num_elements + stream_bytes
    assert T.weight_decode_cycles(36_864) == 2_304


# -- codegen ------------------------------------------------------------------------------------------------------
def test_codegen_compresses_each_stream_only_when_smaller():
    graph = import_tflite(model_path("vww"))
    ops = [op for op in graph.ops if op.type in CONV_TYPES]
    commands = [c for c in lower_ops(ops, Ctx()) if isinstance(c, C.Conv2D)]
    packed = [c for c in commands if c.weight_stream_bytes]
    assert 0 < len(packed) < len(commands)  # the small, dense early layers stay raw
    for c in packed:
        assert c.weight_stream_bytes < c.weights.num_elements
    ctx = Ctx()
    ctx.compress_weights = False
    assert not any(c.weight_stream_bytes for c in lower_ops(ops, ctx) if isinstance(c, C.Conv2D))
    cycles = [T.table_cost(lower_ops(ops, ctx_), BOARD_MEMORY).cycles for ctx_ in (Ctx(), ctx)]
    assert cycles[0] < 0.7 * cycles[1], cycles


def test_compressed_layers_of_ad_run_bit_exact_like_dense_ones():
    """Every AD layer lowered with and without compression: same outputs on the C model, fewer flash bytes."""
    graph = import_tflite(model_path("ad"))
    rng = np.random.default_rng(0)
    x = graph.ops[0].inputs[0]
    values = {x: rng.integers(-128, 128, x.shape).astype(np.int8)}
    packed_out, packed_run, packed_cmds, _ = run_region(graph.ops, values)
    dense_ctx_outputs = _run_dense(graph.ops, values)
    y = graph.ops[-1].outputs[0]
    assert packed_run.ok and np.array_equal(packed_out[y], dense_ctx_outputs[0][y])
    assert sum(1 for c in packed_cmds if getattr(c, "weight_stream_bytes", 0)) == 10
    assert packed_run.flash_read_bytes < 0.7 * dense_ctx_outputs[1].flash_read_bytes
    assert packed_run.cycles < dense_ctx_outputs[1].cycles


def _run_dense(ops, values):
    import test_npu_codegen

    original = test_npu_codegen.Ctx

    class DenseCtx(original):
        compress_weights = False

    test_npu_codegen.Ctx = DenseCtx
    try:
        outputs, result, _, _ = run_region(ops, values)
    finally:
        test_npu_codegen.Ctx = original
    return outputs, result
