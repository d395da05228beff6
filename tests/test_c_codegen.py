"""Host C codegen: the constants it computes, the code it emits, the C target's op table."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import modelgen as mg
from conftest import SHARED_MODELS
from edgesdk.errors import UnsupportedOpError
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.ir.graph import Op, QuantParams, Tensor
from edgesdk.partition.target import constraint_rule
from edgesdk.ops import tables as lut
from edgesdk.ops.broadcast import broadcast_geometry
from edgesdk.ops.hard_swish import hard_swish_constants
from edgesdk.ops.mean import mean_multiplier
from edgesdk.ops.relu import relu_range
from edgesdk.ops.softmax import softmax_constants
from edgesdk.targets.c import codegen, testing
from edgesdk.targets.c.calls import render_layer
from edgesdk.targets.c.supported import C_SUPPORT

RISCV_GCC = "riscv64-unknown-elf-gcc"


def _tensor(i, shape, scale=0.1, zp=0, dtype="int8", data=None):
    return Tensor(i, f"t{i}", tuple(shape), dtype, QuantParams(np.array([scale], np.float32), np.array([zp])), data)


class Step(NamedTuple):
    code: str
    comment: str


def emit(op, ctx) -> Step:
    """The rendered C of one layer and its note."""
    layer = codegen.emit_layer(op, ctx)
    return Step(render_layer(layer), layer.note)


def _model(tmp_path, data: bytes):
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return import_tflite(path)


# -- constants computed exactly as TFLite's Prepare() ----------------------------------------------------

def test_softmax_constants_match_hand_computed_values():
    # beta * scale * 2^26 = 2^22 -> M = 2^30, left shift 23; radius = floor(31 * 2^26 / 2^23) = 248
    assert softmax_constants(1 / 16, 1.0, "double") == (1 << 30, 23, -248)
    # the cap differs with single rounding: 2^31 - 1 vs 2^30 - 1
    assert softmax_constants(1e6, 1.0, "double")[:2] == (2147483647, 31)
    assert softmax_constants(1e6, 1.0, "single")[:2] == (2147483646, 30)


def test_mean_multiplier_folds_the_count_like_tflite():
    x, y = _tensor(0, (1, 2, 2, 1), 0.5), _tensor(1, (1, 1, 1, 1), 0.5)
    # real 1.0 -> (2^30, 1); count 4 -> shift by 2 -> (2^30 << 2) / 4 = 2^30, shift 1 - 2 = -1
    assert mean_multiplier(x, y, 4) == (1 << 30, -1)
    # count 3: floor(log2 3) = 1 -> (2^31 // 3, 0)
    assert mean_multiplier(x, y, 3) == ((1 << 31) // 3, 0)


def test_hard_swish_constants_for_a_typical_quantization():
    c = hard_swish_constants(0.02, 0.01)
    # hires scale 0.02/128; output multiplier 0.015625 = 2^-6 -> Q15 16384, exponent -5
    assert (c["output_multiplier_fixedpoint_int16"], c["output_multiplier_exponent"]) == (16384, -5)
    # reluish multiplier (0.02/128) / (3/32768) = 1.7067 = 0.8533 * 2 -> Q15 27962, exponent 1
    assert (c["reluish_multiplier_fixedpoint_int16"], c["reluish_multiplier_exponent"]) == (27962, 1)


def test_relu_range_uses_float32_rounding_half_away():
    assert relu_range("RELU6", 0.05, -10) == (-10, 110)
    assert relu_range("RELU", 0.05, -128) == (-128, 127)
    assert relu_range("RELU_N1_TO_1", 0.5, 0) == (-2, 2)


def test_broadcast_strides_zero_on_broadcast_dims():
    a, b, y = _tensor(0, (2, 1, 3)), _tensor(1, (4, 1)), _tensor(2, (2, 4, 3))
    shape = broadcast_geometry(a, b, y)
    assert shape["broadcast"] == 1 and shape["out_shape"] == [1, 1, 1, 2, 4, 3]
    assert shape["in1_strides"][3:] == [3, 0, 1]
    assert shape["in2_strides"][3:] == [0, 1, 0]
    same = broadcast_geometry(_tensor(0, (5, 6)), _tensor(1, (5, 6)), _tensor(2, (5, 6)))
    assert same["broadcast"] == 0 and same["size"] == 30


def test_logistic_table_is_in_tflite_lut_order():
    table = lut.tflite_lut("LOGISTIC", 0.1, 0, 1 / 256, -128)
    assert table[0] == 0  # x = 0 -> 0.5 -> 128 - 128
    assert table[127] == 127 and table[128] == -128  # saturated ends: index 128 is x = -128
    assert np.all(np.diff(table[128:].astype(int)) >= 0) and np.all(np.diff(table[:128].astype(int)) >= 0)


# -- emitted code ---------------------------------------------------------------------------------------------

def test_conv_emits_params_struct_and_one_call(tmp_path):
    w = np.ones((4, 3, 3, 2), np.int8)
    graph = _model(tmp_path, mg.conv_model((1, 5, 5, 2), w, np.zeros(4, np.int32), (0.1, 3), [0.01] * 4, (0.2, -5),
                                           stride=(2, 2), activation="RELU6"))
    ctx = testing.HostContext("ref")
    step = emit(graph.ops[0], ctx)
    # the paired fast path is called directly (the dispatcher and the other conv kernels stay out of the link)
    assert step.code.startswith("edgesdk_conv2d_s8_paired(&conv_2d_0_params, ")
    assert step.code.count(";") == 1
    params = next(d for d in ctx.declarations if "edgesdk_conv2d_params conv_2d_0_params" in d)
    assert ".input_offset = -3" in params and ".output_offset = -5" in params
    assert ".rounding = EDGESDK_ROUNDING_DOUBLE" in params and ".pad_top = 1" in params


def test_fully_connected_rounding_follows_the_mode(tmp_path):
    graph = _model(tmp_path, mg.fully_connected_model(1, np.ones((3, 4), np.int8), None, (0.1, 0), 0.01, (0.05, 0)))
    ref_ctx, tflm_ctx = testing.HostContext("ref"), testing.HostContext("tflm")
    emit(graph.ops[0], ref_ctx)
    emit(graph.ops[0], tflm_ctx)
    ref_text, tflm_text = "\n".join(ref_ctx.declarations), "\n".join(tflm_ctx.declarations)
    assert "EDGESDK_ROUNDING_FP64" in ref_text and "static const double" in ref_text
    assert "EDGESDK_ROUNDING_DOUBLE" in tflm_text and "static const double" not in tflm_text


def _params_text(ctx, struct_type: str) -> str:
    return next(d for d in ctx.declarations if struct_type in d)


def _const(ctx, symbol_part: str) -> list:
    """Values of the const array whose symbol contains `symbol_part` (HostContext declarations)."""
    text = next(d for d in ctx.declarations if d.startswith("static const") and symbol_part in d.split("=")[0])
    return [int(v) for v in text.split("{", 1)[1].rsplit("}", 1)[0].split(",")]


def test_pointwise_conv_takes_the_paired_path_flattened(tmp_path, monkeypatch):
    """A 1x1 stride-1 CONV_2D: paired layout (two output channels per 32-bit word, 3-pair then 2-pair blocks),
    input offset folded into the bias, one long row of pixels. (Rows of 4 taps would take the four-tap layout:
    the two-tap one is forced here.)"""
    from edgesdk.targets.c.ops import conv_2d

    monkeypatch.setattr(conv_2d, "quad_layout_pays", lambda *args: False)
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (10, 1, 1, 4)).astype(np.int8)
    bias = rng.integers(-100, 100, 10).astype(np.int32)
    graph = _model(tmp_path, mg.conv_model((1, 3, 5, 4), w, bias, (0.1, 3), [0.01] * 10, (0.2, -5)))
    ctx = testing.HostContext("ref")
    step = emit(graph.ops[0], ctx)
    assert step.comment.endswith("paired") and "conv_2d_0_bias_folded" in step.code
    params = _params_text(ctx, "edgesdk_conv2d_params")
    assert ".blocked = 2" in params and ".in_h = 1" in params and ".in_w = 15" in params and ".out_w = 15" in params
    folded = np.array([int(b) - 3 * int(row.sum(dtype=np.int64)) for b, row in zip(bias, w.reshape(10, -1))])
    words = np.array(_const(ctx, "conv_2d_0_bias_folded"), np.int64)
    # per pair: bias[a] + 65536 * bias[a + 1], and bias[a + 1] less 32767 per two-tap chunk (4 taps: 2 chunks)
    assert list(words[0::2]) == list(folded[0::2] + 65536 * folded[1::2])
    assert list(words[1::2]) == list(folded[1::2] - 32767 * 2)
    packed = np.array(_const(ctx, "conv_2d_0_weights"), np.int8).view("<i4")
    w64 = w[:, 0, 0, :].astype(np.int64)
    pair_words = w64[0::2] + 65536 * w64[1::2]  # [pair][tap]
    blocks = (pair_words[0:3], pair_words[3:5])  # per block, tap by tap: the block's words
    assert list(packed) == [int(v) for block in blocks for tap in range(4) for v in block[:, tap]]
    assert len(_const(ctx, "conv_2d_0_requant")) == 3 * 10  # {2 * multiplier, r, k} per channel


def test_depthwise_takes_the_sliding_path_with_channel_records(tmp_path):
    """One record per channel: folded bias, 2 * multiplier, right shift, k, the padded-column taps, 9 weights."""
    from edgesdk.targets.c.layouts import unpack_depthwise_channel_records

    rng = np.random.default_rng(1)
    w = rng.integers(-127, 128, (1, 3, 3, 5)).astype(np.int8)
    graph = _model(tmp_path, mg.depthwise_model((1, 4, 4, 5), w, np.zeros(5, np.int32), (0.1, -7), [0.01] * 5,
                                                (0.2, 1), stride=(2, 2)))
    ctx = testing.HostContext("ref")
    assert emit(graph.ops[0], ctx).comment.endswith("sliding")
    params = _params_text(ctx, "edgesdk_depthwise_conv2d_params")
    assert ".sliding = 1" in params and "multiplier = (const int32_t *)0" in params
    fields = unpack_depthwise_channel_records(_const(ctx, "depthwise_conv_2d_0_channels"), 5)
    assert fields["weights"].tolist() == [list(w[0, :, :, c].reshape(-1)) for c in range(5)]
    assert fields["bias"].tolist() == [7 * int(w[..., c].sum(dtype=np.int64)) for c in range(5)]
    assert fields["z0"].tolist() == [-7 * int(w[0, :, 0, c].sum(dtype=np.int64)) for c in range(5)]
    assert fields["z2"].tolist() == [-7 * int(w[0, :, 2, c].sum(dtype=np.int64)) for c in range(5)]
    assert all(1 <= r <= 31 for r in fields["r"]) and not fields["padding"].any()
    assert fields["k"].tolist() == [3 << (int(r) - 1) for r in fields["r"]]  # (1 + 2 * output zero point 1)


def test_depthwise_outside_the_fast_domain_keeps_the_reference_loops(tmp_path):
    w = np.ones((1, 5, 5, 4), np.int8)
    graph = _model(tmp_path, mg.depthwise_model((1, 6, 6, 4), w, np.zeros(4, np.int32), (0.1, 0), [0.01] * 4,
                                                (0.2, 0)))
    ctx = testing.HostContext("ref")
    step = emit(graph.ops[0], ctx)
    assert step.comment.endswith("reference loops: 5x5 filter") and "bias_folded" not in step.code
    assert ".sliding = 0" in _params_text(ctx, "edgesdk_depthwise_conv2d_params")


def test_fully_connected_reads_lanes_every_four_taps_when_the_weights_allow(tmp_path):
    """EDGESDK_FC_PAIRED_QUADS: the paired layout, taken when every unit's four taps keep a lane within
    [-32767, 32768]: weights of at most 64 in magnitude always do, one chunk of four 127s does not."""
    rng = np.random.default_rng(1)
    for weights, layout in ((rng.integers(-64, 65, (6, 12)), "EDGESDK_FC_PAIRED_QUADS"),
                            (np.concatenate([np.full((6, 4), 127), rng.integers(-3, 4, (6, 8))], axis=1),
                             "EDGESDK_FC_PAIRED")):
        graph = _model(tmp_path, mg.fully_connected_model(1, weights.astype(np.int8), np.zeros(6, np.int32),
                                                          (0.1, 2), 0.01, (0.2, -3)))
        ctx = testing.HostContext("ref")
        assert emit(graph.ops[0], ctx).comment.endswith("paired")
        params = _params_text(ctx, "edgesdk_fully_connected_params")
        assert params.split(".blocked = ")[1].split(",")[0].split("}")[0].strip() == layout


def test_pointwise_conv_takes_the_four_tap_paired_layout(tmp_path, monkeypatch):
    """Rows of 4k taps whose four-tap chunks mostly keep their products within one 16-bit lane: the paired
    layout in four-tap chunks (EDGESDK_CONV_PAIRED_QUADS), blocks of 2 pairs (6 channels padded to 8), per chunk
    a flag word (1: one lane extraction) then the four taps' words; the high bias word pays 32767 back per
    extraction (a flag-0 chunk: two). (The cost model would take one block of 3 pairs here: forced to 2.)"""
    from edgesdk.targets.c import layouts
    from edgesdk.targets.c.ops import conv_2d

    monkeypatch.setattr(conv_2d, "quad_blocks_choice", lambda *args: layouts.QUADS2)
    rng = np.random.default_rng(1)
    w = rng.integers(-20, 21, (6, 1, 1, 8)).astype(np.int8)
    w[4, 0, 0, 4:8] = 127  # channel 4, taps 4..7: 4 * 127 * 128 leaves the lane, so block 1's second chunk is 0
    bias = rng.integers(-100, 100, 6).astype(np.int32)
    graph = _model(tmp_path, mg.conv_model((1, 2, 3, 8), w, bias, (0.1, 3), [0.01] * 6, (0.2, -5)))
    ctx = testing.HostContext("ref")
    step = emit(graph.ops[0], ctx)
    assert step.code.startswith("edgesdk_conv2d_s8_paired(") and step.comment.endswith("paired")
    assert ".blocked = 4" in _params_text(ctx, "edgesdk_conv2d_params")
    w64 = np.concatenate([w[:, 0, 0, :].astype(np.int64), np.zeros((2, 8), np.int64)])  # padded to 4 pairs
    pair_words = w64[0::2] + 65536 * w64[1::2]  # [pair][tap]
    flags = {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 0}  # (block, chunk)
    expected = [v for block in range(2) for chunk in range(2)
                for v in [flags[block, chunk]] + [int(pair_words[2 * block + j, 4 * chunk + t])
                                                   for t in range(4) for j in range(2)]]
    assert list(np.array(_const(ctx, "conv_2d_0_weights"), np.int8).view("<i4")) == expected
    folded = np.array([int(b) - 3 * int(row.sum(dtype=np.int64)) for b, row in zip(bias, w.reshape(6, -1))] + [0, 0])
    words = np.array(_const(ctx, "conv_2d_0_bias_folded"), np.int64)
    extractions = np.array([2, 2, 3, 3])  # per pair: its block's flag-1 chunks once, flag-0 chunks twice
    assert list(words[1::2]) == list(folded[1::2] - 32767 * extractions)
    assert len(_const(ctx, "conv_2d_0_requant")) == 3 * 8


def test_conv_takes_the_four_tap_layout_in_blocks_of_three_pairs(tmp_path):
    """EDGESDK_CONV_PAIRED_QUADS3: the four-tap chunks in the two-tap layout's blocks (3 pairs, then 2: 10
    channels are one block of 3 pairs and one of 2), per block and chunk a flag word then the four taps' words
    [tap][pair]; a flag covers the block's 6 channels. The cost model takes it for long rows and small weights."""
    from edgesdk.targets.c.layouts import QUADS2, QUADS3, quad_blocks_choice

    rng = np.random.default_rng(4)
    w = rng.integers(-20, 21, (10, 1, 1, 32)).astype(np.int8)
    w[5, 0, 0, 8:12] = 127  # channel 5 (block 0), taps 8..11: that chunk of block 0 needs two extractions
    bias = rng.integers(-100, 100, 10).astype(np.int32)
    graph = _model(tmp_path, mg.conv_model((1, 2, 3, 32), w, bias, (0.1, 3), [0.01] * 10, (0.2, -5)))
    assert quad_blocks_choice(w.reshape(10, -1), 1, 32) == QUADS3 != QUADS2
    ctx = testing.HostContext("ref")
    step = emit(graph.ops[0], ctx)
    assert step.code.startswith("edgesdk_conv2d_s8_paired(") and step.comment.endswith("paired")
    assert ".blocked = 6" in _params_text(ctx, "edgesdk_conv2d_params")
    w64 = w[:, 0, 0, :].astype(np.int64)
    pair_words = w64[0::2] + 65536 * w64[1::2]  # [pair][tap], 5 pairs: blocks of 3 and 2
    expected = []
    for first, size in ((0, 3), (3, 2)):
        for chunk in range(8):
            flag = 0 if (first, chunk) == (0, 2) else 1
            expected += [flag] + [int(pair_words[first + j, 4 * chunk + t]) for t in range(4) for j in range(size)]
    assert list(np.array(_const(ctx, "conv_2d_0_weights"), np.int8).view("<i4")) == expected
    folded = np.array([int(b) - 3 * int(row.sum(dtype=np.int64)) for b, row in zip(bias, w.reshape(10, -1))])
    words = np.array(_const(ctx, "conv_2d_0_bias_folded"), np.int64)
    extractions = np.array([9, 9, 9, 8, 8])  # per pair: its block's flag-1 chunks once, flag-0 chunks twice
    assert list(words[1::2]) == list(folded[1::2] - 32767 * extractions)
    assert len(_const(ctx, "conv_2d_0_requant")) == 3 * 10


def test_fully_connected_pairs_weights_in_16_bit_lanes(tmp_path):
    """Paired layout: words w[a] + 65536 * w[a + 1]; per-tensor constants flagged; fp64 window a power of two."""
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (3, 5)).astype(np.int8)
    graph = _model(tmp_path, mg.fully_connected_model(1, w, np.zeros(3, np.int32), (0.1, 0), 0.01, (0.05, 0)))
    ctx = testing.HostContext("ref")
    assert emit(graph.ops[0], ctx).comment.endswith("paired")
    params = _params_text(ctx, "edgesdk_fully_connected_params")
    assert ".blocked = EDGESDK_FC_PAIRED" in params and ".per_tensor = 1" in params
    window = int(params.split(".fp64_window = ")[1].split(",")[0].split("\n")[0])
    assert window & (window - 1) == 0 and window >= 128 * np.abs(w.astype(int)).sum(axis=1).max() // 2
    words = np.array(_const(ctx, "fully_connected_0_weights"), np.int8).view("<i4")
    # 2 pairs (units 0-1, unit 2 with a zero partner), each one by one, tap by tap
    expected = [int(w[0, k]) + 65536 * int(w[1, k]) for k in range(5)] + [int(w[2, k]) for k in range(5)]
    assert list(words) == expected
    with_min = w.copy()
    with_min[0, 0] = -128  # outside the 16-bit lanes' bound: int8 blocks instead
    graph = _model(tmp_path, mg.fully_connected_model(1, with_min, None, (0.1, 0), 0.01, (0.05, 0)))
    assert emit(graph.ops[0], testing.HostContext("tflm")).comment.endswith("blocked")


def test_add_tabulates_each_input_rescale(tmp_path):
    from edgesdk.ir import quant

    graph = _model(tmp_path, mg.binary_model("ADD", (1, 4), (1, 4), (1, 4), (0.1, 3), (0.05, -2), (0.2, 0)))
    ctx = testing.HostContext("ref")
    emit(graph.ops[0], ctx)
    assert ".fast_output = 1" in _params_text(ctx, "edgesdk_add_params")
    table = _const(ctx, "input1_table")
    m, s = quant.quantize_multiplier(0.1 / (2 * 0.1))
    assert len(table) == 256 and table[128 + 5] == quant.multiply_by_quantized_multiplier((5 - 3) << 20, m, s,
                                                                                         "double")


def test_aliased_reshape_emits_no_code():
    class SamePointer(testing.HostContext):
        def arena_offset(self, tensor):
            return 64

    x, y = _tensor(0, (1, 2, 2, 1)), _tensor(1, (1, 4))
    step = emit(Op(3, "RESHAPE", [x], [y]), SamePointer("ref"))
    assert step.code == ""
    copy = emit(Op(3, "RESHAPE", [x], [y]), testing.HostContext("ref"))
    assert copy.code.startswith("edgesdk_reshape(4, ")


def test_unknown_op_is_an_unsupported_op_error():
    with pytest.raises(UnsupportedOpError, match="EMBEDDING_LOOKUP_SPARSE"):
        emit(Op(0, "EMBEDDING_LOOKUP_SPARSE", [_tensor(0, (1,))], [_tensor(1, (1,))]), testing.HostContext("ref"))


@pytest.mark.skipif(shutil.which(RISCV_GCC) is None, reason="RISC-V toolchain not installed")
def test_generated_code_cross_compiles_without_warnings(tmp_path, models_dir):
    """Every op of the shared models and the single-op suite, generated under each rounding mode, and the kernel
    sources (once for both modes), cross-compiled at -Wall -Wextra -Werror. Each constant array holds its
    distinct values only (HostContext's distinct_constants; repeated constants were 31 of the files' 32 MB and
    half the test's time): every literal is still compiled, with the array's declared type and size, and as the
    generated code only passes the arrays' addresses on (checked here), their order and repeats cannot change
    a warning."""
    shared = {name: import_tflite(models_dir / rel).ops for name, rel in sorted(SHARED_MODELS.items())}
    single = []
    for i, (name, data) in enumerate(mg.single_op_suite(seed=3)):
        path = tmp_path / f"{i}.tflite"
        path.write_bytes(data)
        single.append((name, import_tflite(path).ops))
    generated = []
    for mode in ("ref", "tflm"):
        ops = []  # TFLite Micro runs no uint8 kernels
        for name, model_ops in [*shared.items(), *single]:
            if not (mode == "tflm" and "uint8" in name):
                ops += model_ops
        source, _ = testing.generate_source(ops, mode, distinct_constants=True)
        assert not _constant_arrays_read(source), f"{mode}: {_constant_arrays_read(source)}"
        c_file = tmp_path / f"generated_{mode}.c"
        c_file.write_text(source)
        generated.append(str(c_file))
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for file in [*testing.KERNELS_DIR.glob("*.c"), *testing.KERNELS_DIR.glob("*.h")]:
        shutil.copyfile(file, kernels / file.name)
    sources = [*(Path(g).name for g in generated), *(f"kernels/{s.name}" for s in testing.kernel_sources())]
    failures = _cross_compile(sources, tmp_path, ["-I", "kernels"])
    assert not failures, "\n".join(failures)


_CONSTANT_ARRAY = re.compile(r"^static const \w+ (\w+)\[\d+\] = \{.*\};$", re.MULTILINE)  # HostContext.const_array


def _constant_arrays_read(source: str) -> list:
    """The constant arrays that the generated code uses otherwise than by passing their address on (an argument,
    or a member of a parameter struct): code that reads their values, which a warning could depend on (a
    compiler folds reads of constants). With such code the check needs the arrays' full data."""
    symbols = set(_CONSTANT_ARRAY.findall(source))
    code = _CONSTANT_ARRAY.sub("", source)
    read = set()
    for use in re.finditer(r"\b\w+\b", code):
        if use.group() in symbols:
            after = code[use.end():use.end() + 80].lstrip()[:1]
            if code[use.start() - 1] not in " \t\n(),=" or after not in (",", ")", "}"):
                read.add(use.group())
    return sorted(read)


def _cross_compile(sources: list, directory: Path, flags: list) -> list:
    """Compile each source (a path relative to `directory`) into an object with the firmware's warnings as errors;
    return the compiler's messages of the sources that fail. Through ccache when it is installed, as firmware
    builds are (edgesdk/firmware_build/build.py, EDGESDK_NO_CCACHE=1 turns it off): the command holds relative
    paths only, so a source compiled before with the same content and flags (ccache keeps successful compiles
    only) is not compiled again, in any checkout."""
    from edgesdk.resources import cache_path

    launcher, env = [], None
    ccache = shutil.which("ccache")
    if ccache and not os.environ.get("EDGESDK_NO_CCACHE"):
        launcher = [ccache]
        env = {**os.environ, "CCACHE_DIR": os.environ.get("CCACHE_DIR", str(cache_path("ccache"))),
               "CCACHE_BASEDIR": str(directory), "CCACHE_NOHASHDIR": "1", "CCACHE_COMPILERCHECK": "content"}
    failures = []
    for source in sources:
        cmd = [*launcher, RISCV_GCC, "-march=rv32imac_zicsr", "-mabi=ilp32", "--specs=picolibc.specs", "-O2", "-Wall",
               "-Wextra", "-Werror", "-std=c11", *flags, "-c", source, "-o", f"{source}.o"]
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=directory, env=env)
        if result.returncode != 0:
            failures.append(f"{source}:\n{result.stderr}")
    return failures


# -- the C target's op table ------------------------------------------------------------------------------------

def test_every_constraint_states_its_rule():
    for op_type, rules in C_SUPPORT.rules().items():
        for name, rule in rules:
            assert rule and rule != name, f"{op_type}.{name} has no one-line rule"
    for fns in C_SUPPORT.ops.values():
        for fn in fns:
            assert constraint_rule(fn) == fn.__doc__.strip().splitlines()[0]


def test_all_shared_model_ops_are_supported(models_dir):
    for rel in SHARED_MODELS.values():
        for op in import_tflite(models_dir / rel).ops:
            ok, why = C_SUPPORT.check(op)
            assert ok, f"{rel} {op.location}: {why}"


def test_constraints_reject_what_tflite_rejects(tmp_path):
    q = (0.1, 0)
    softmax = _model(tmp_path, mg.unary_model("SOFTMAX", (1, 10), q, (1 / 128, 0), options="SoftmaxOptions", Beta=1.0))
    ok, why = C_SUPPORT.check(softmax.ops[0])
    assert not ok and why.startswith("softmax_output_quantization")
    concat = _model(tmp_path, mg.concatenation_model([(1, 2), (1, 3)], 1, [q, (0.2, 0)], q))
    ok, why = C_SUPPORT.check(concat.ops[0])
    assert not ok and "concatenation_quantization" in why
    int64_add = Op(0, "ADD", [Tensor(0, "a", (2,), "int64"), Tensor(1, "b", (2,), "int64")],
                   [Tensor(2, "c", (2,), "int64")], {"activation": "NONE"})
    ok, why = C_SUPPORT.check(int64_add)
    assert not ok and "arithmetic_types" in why
    assert not C_SUPPORT.check(Op(0, "EMBEDDING_LOOKUP_SPARSE", [], []))[0]


def test_conv_layers_keep_the_compact_layout_only_when_paired_weights_would_not_fit_the_flash():
    """compact_conv_layers: none with room to spare; as the flash shrinks, the layers with the most weights
    first, until the estimate fits."""
    from types import SimpleNamespace

    from conftest import model_path
    from edgesdk.compiler import BuildOptions, compile_model
    from edgesdk.targets.c.ops.conv_2d import CODE_RESERVE_BYTES, PAIRED_BYTES_PER_WEIGHT, compact_conv_layers

    ops = compile_model(model_path("vww"), BuildOptions(target="c", compile_firmware=False)).graph.ops
    convs = sorted((op for op in ops if op.type == "CONV_2D"), key=lambda op: -op.inputs[1].nbytes)
    consts = sum(t.nbytes for t in {t for op in ops for t in op.inputs if t is not None and t.is_const})
    paired = consts + sum(int((PAIRED_BYTES_PER_WEIGHT - 1) * op.inputs[1].nbytes) for op in convs) \
        + CODE_RESERVE_BYTES

    def compact(limit):
        return compact_conv_layers(ops, SimpleNamespace(options=SimpleNamespace(flash_limit=limit), flash_bytes=0))

    assert compact(None) == set() and compact(paired) == set()
    assert compact(paired - 1) == {convs[0]}
    assert compact(consts + CODE_RESERVE_BYTES) == set(convs)  # no room for any growth


def test_fast_conv_kernels_refuse_padding_as_wide_as_the_filter():
    """The window copies of the fast kernels keep at least one column and row of the image in every window
    (edgesdk_conv2d_paired.c fill_patch): explicit paddings as wide as the filter (ONNX pads) take the reference
    loops; SAME padding never is."""
    from edgesdk.targets.c.ops.conv_2d import padding_narrower_than_filter

    same = {"in_h": 5, "in_w": 5, "out_h": 5, "out_w": 5, "filter_h": 3, "filter_w": 3, "stride_h": 1,
            "stride_w": 1, "pad_top": 1, "pad_left": 1}
    assert padding_narrower_than_filter(same)
    assert not padding_narrower_than_filter(dict(same, pad_left=3, out_w=7))  # 3 columns of padding, 3 taps
    assert not padding_narrower_than_filter(dict(same, pad_left=2, out_w=6))  # 2 left + 1 right
    assert not padding_narrower_than_filter(dict(same, pad_top=2, out_h=6))
