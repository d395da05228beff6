"""The C kernel library, through the C target's codegen, is bit-exact per op with both references.

Each op of a model is fed the reference interpreter's own input tensors (LiteRT BUILTIN_REF with
experimental_preserve_all_tensors, or TFLite Micro with kPreserveAllTensors) and its output must equal
that interpreter's output tensor byte for byte. Real models cover the ops they use; single-op models from
tests/modelgen.py cover the rest, with random and extreme (all -128 / all 127) inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import modelgen
from conftest import SHARED_MODELS
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.targets.c import testing

SEEDS = (0, 1, 2)
UINT8_MODELS = {"mobilenet_uint8", "mobilenet_160_uint8"}  # TFLite Micro runs no uint8 kernels
NOT_IN_TFLM = ("uint8", "relu_n1_to_1", "litert_only", "reduce_any")  # single-op models TFLite Micro cannot run
# (no uint8 kernels, no such op)
NOT_IN_LITERT = ("tflm_only",)  # single-op models LiteRT's reference op resolver has no kernel for (CEIL, ROUND, ELU)


def _describe(failures) -> str:
    return "; ".join(f"{op.location}: {count} values differ (max {diff})" for op, diff, count in failures)


@pytest.mark.parametrize("mode", ["ref", "tflm"])
@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_real_model_ops_bit_exact(models_dir, name, mode):
    if mode == "tflm" and name in UINT8_MODELS:
        pytest.skip("TFLite Micro has no uint8 kernels")
    path = models_dir / SHARED_MODELS[name]
    graph = import_tflite(path)
    library = testing.OpLibrary(graph.ops, mode)
    compared = 0
    for seed in SEEDS:
        ref = testing.reference_tensors(path, testing.random_model_inputs(path, seed), mode)
        failures = testing.compare_ops(graph, ref, mode, library)
        assert not failures, f"{name} seed {seed}: {_describe(failures)}"
        compared += 1
    assert compared == len(SEEDS)


def _extreme_inputs(inputs: list, which: str) -> list:
    result = []
    for x in inputs:
        if x.dtype == np.float32:
            result.append(np.full_like(x, -1e4 if which == "min" else 1e4))
        elif x.dtype == np.bool_:
            result.append(np.full_like(x, which == "max"))
        else:
            info = np.iinfo(x.dtype)
            result.append(np.full_like(x, info.min if which == "min" else info.max))
    return result


def _ops_differing(models, mode: str, library) -> list:
    """Each op of each (name, path, graph) on a random input, all minimum and all maximum, against the
    reference's own tensors: a line per model and input whose ops differ."""
    problems = []
    for name, path, graph in models:
        random_inputs = testing.random_model_inputs(path, seed=len(name))
        for label, inputs in (("random", random_inputs), ("all min", _extreme_inputs(random_inputs, "min")),
                              ("all max", _extreme_inputs(random_inputs, "max"))):
            ref = testing.reference_tensors(path, inputs, mode)
            failures = testing.compare_ops(graph, ref, mode, library)
            if failures:
                problems.append(f"{name} ({label}): {_describe(failures)}")
    return problems


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """(name, path, graph) of every single-op model, written once per test module."""
    root = tmp_path_factory.mktemp("single_op")
    models = []
    for name, data in modelgen.single_op_suite(seed=0) + modelgen.single_op_suite(seed=1):
        path = root / f"{name}_{len(models)}.tflite"
        path.write_bytes(data)
        models.append((name, path, import_tflite(path)))
    return models


@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_single_op_models_bit_exact(suite, mode):
    skip = NOT_IN_TFLM if mode == "tflm" else NOT_IN_LITERT
    selected = [(n, p, g) for n, p, g in suite if not any(k in n for k in skip)]
    library = testing.OpLibrary([op for _, _, g in selected for op in g.ops], mode)
    problems = _ops_differing(selected, mode, library)
    assert not problems, "\n".join(problems)


def test_suite_covers_every_c_op(suite):
    from edgesdk.targets.c.supported import C_SUPPORT

    from edgesdk.targets.c.tvm_lowered import LONG_TAIL_SUPPORT

    import corpus

    covered = {op.type for _, _, g in suite for op in g.ops}
    # The converter-made corpus (tests/test_op_corpus.py) and the stateful models (tests/test_state.py) too.
    covered |= {op for e in corpus.entries() if not corpus.expected_unsupported(e) for op in e["ops"]}
    covered |= {"READ_VARIABLE", "ASSIGN_VARIABLE"}
    covered |= {"UNIDIRECTIONAL_SEQUENCE_LSTM", "SVDF"}  # tests/test_ops_recurrent.py (hand-written models)
    covered |= {"DETECTION_POSTPROCESS"}  # tests/test_ops_detection.py (hand-written models)
    hand_written = set(C_SUPPORT.ops) - set(LONG_TAIL_SUPPORT)  # TVM-lowered ops: tests/test_tvm_lowering.py
    assert hand_written <= covered, f"no model tests {sorted(hand_written - covered)}"


def test_comparison_detects_a_wrong_kernel(models_dir):
    """The harness can fail: LiteRT's FULLY_CONNECTED computed with TFLite Micro's rounding must differ."""
    path = models_dir / SHARED_MODELS["ad"]
    graph = import_tflite(path)
    library = testing.OpLibrary(graph.ops, "ref", force_rounding={"FULLY_CONNECTED": "double"})
    failures = []
    for seed in range(4):
        ref = testing.reference_tensors(path, testing.random_model_inputs(path, seed), "ref")
        failures += testing.compare_ops(graph, ref, "ref", library)
    assert failures and all(op.type == "FULLY_CONNECTED" and diff == 1 for op, diff, _ in failures)


def test_fp64_requantization_fast_path_equals_double_rounding(tmp_path):
    """edgesdk_requantize_fp64_fast (integer fast path + guard) == round(acc * scale) in IEEE double."""
    import ctypes
    import math

    from edgesdk.hostcc import load_shared_library
    from edgesdk.ir import quant

    src = tmp_path / "fp64_wrap.c"
    src.write_text('#include "edgesdk_fp64.h"\n'
                   "int32_t fast(int32_t a, double s, int32_t m, int sh)\n"
                   "{ return edgesdk_requantize_fp64_fast(a, s, m, sh); }\n")
    lib = load_shared_library("edgesdk_test_fp64", [src], [testing.KERNELS_DIR])
    lib.fast.argtypes = [ctypes.c_int32, ctypes.c_double, ctypes.c_int32, ctypes.c_int]
    lib.fast.restype = ctypes.c_int32

    def expected(a, s):  # LiteRT: static_cast<int32_t>(round(double(acc) * scale)) on x86
        r = float(a) * s
        q = math.copysign(math.floor(abs(r) + 0.5), r) if -2.0 ** 31 < r < 2.0 ** 31 else -2.0 ** 31
        return -(1 << 31) if q >= 2.0 ** 31 else int(q)

    rng = np.random.default_rng(0)
    for i in range(30000):
        if i % 3 == 0:  # power-of-two-ish scales: exact ties on the half
            s = 2.0 ** -int(rng.integers(1, 20)) * (1 + int(rng.integers(0, 8)) / 8)
        else:
            s = float(np.float32(rng.uniform(1e-3, 0.05))) * float(np.float32(rng.uniform(1e-3, 0.05))) / float(
                np.float32(rng.uniform(0.01, 0.5)))
        a = int(rng.integers(-(1 << 31), 1 << 31)) if i % 5 == 0 else int(rng.integers(-300000, 300000))
        if i % 7 == 0:  # right next to a half
            near = round((int(rng.integers(-300, 300)) + 0.5) / s) + int(rng.integers(-1, 2))
            a = int(np.clip(near, -(1 << 31), (1 << 31) - 1))
        m, sh = quant.quantize_multiplier(s)
        assert lib.fast(a, s, m, sh) == expected(a, s), (a, s)


# -- the fast kernels (blocked CONV_2D / FULLY_CONNECTED, sliding DEPTHWISE_CONV_2D, tabulated ADD) -----------
# Shapes chosen to reach every path: channel counts that leave tails after the blocks of 8/16, odd widths (a
# pixel left over after the pairs), widths 1-7 (each phase of the unrolled sliding window), asymmetric SAME
# padding from stride 2, a 1x1 convolution flattened to one row, batches > 1, large biases.

def _fast_suite(rng) -> list:
    """[(name, .tflite bytes, expected path)] of single-op models the fast kernels must take."""
    def conv(name, shape, out_c, fhw, stride=(1, 1), padding=modelgen.SAME, bias_scale=3000, activation="NONE",
             minus128=False, q_out=None, w_scale=(0.002, 0.02), expect="paired", dead=False, reach=127,
             spikes=()):
        w = rng.integers(-reach, reach + 1, (out_c, *fhw, shape[3])).astype(np.int8)
        for channel in spikes:  # small weights but for one four-tap chunk: there the block needs two extractions
            w[channel, 0, 0, :4] = [-128, 127, -128, 127][:min(4, shape[3])]
        if minus128:  # the extremes of a paired 16-bit lane: two products of 16384 in one two-tap chunk
            w[0, 0, 0, :2] = -128  # channel a's lane
            w[1] = -128  # channel b's lane, every chunk
        scales = [float(np.float32(s)) for s in rng.uniform(*w_scale, out_c)]
        bias = rng.integers(-bias_scale, bias_scale, out_c).astype(np.int32)
        if dead:  # channels without weights (a trained model's dead ones), biases out of the fast kernels' reach
            w[[1, 2, 4]] = 0
            bias[[1, 2, 4]] = [1 << 30, -(1 << 30), 777]
        data = modelgen.conv_model(shape, w, bias, modelgen._q(rng), scales, q_out or modelgen._q(rng, 0.02, 0.3),
                                   stride=stride, padding=padding, activation=activation)
        return name, data, expect

    def depthwise(name, shape, stride=1, padding=modelgen.SAME, activation="NONE"):
        c = shape[3]
        w = rng.integers(-127, 128, (1, 3, 3, c)).astype(np.int8)
        scales = [float(np.float32(s)) for s in rng.uniform(0.002, 0.02, c)]
        bias = rng.integers(-3000, 3000, c).astype(np.int32)
        data = modelgen.depthwise_model(shape, w, bias, modelgen._q(rng), scales, modelgen._q(rng, 0.02, 0.3),
                                        stride=(stride, stride), padding=padding, activation=activation)
        return name, data, "sliding"

    def fc(name, batch, out, depth, per_channel=True, power_of_two=False, int8_blocks=False, reach=127):
        w = rng.integers(-reach, reach + 1, (out, depth)).astype(np.int8)
        if reach == 64:  # four taps of -64: the lane bound of EDGESDK_FC_PAIRED_QUADS exactly (128 * 256)
            w[:] = -64
        if int8_blocks:  # a weight of -128 rules out the paired 16-bit lanes
            w[0, 0] = -128
        bias = rng.integers(-2000, 2000, out).astype(np.int32)
        if power_of_two:  # scales whose products are exact binary fractions: ties in round(acc * scale)
            in_q, w_scale, out_q = (2.0 ** -4, 0), 2.0 ** -5, (2.0 ** -1, 0)
        else:
            in_q, out_q = modelgen._q(rng), modelgen._q(rng, 0.05, 0.5)
            w_scale = [float(np.float32(s)) for s in rng.uniform(0.002, 0.02, out)] if per_channel else 0.01
        data = modelgen.fully_connected_model(batch, w, bias, in_q, w_scale, out_q)
        return name, data, "blocked" if int8_blocks else "paired"

    return [
        conv("conv3x3_s1_tails", (2, 5, 7, 3), 19, (3, 3), activation="RELU"),
        conv("conv3x3_s2_asymmetric", (1, 8, 8, 4), 8, (3, 3), stride=(2, 2)),
        conv("conv1x1_flat_odd", (1, 5, 3, 12), 13, (1, 1)),
        conv("conv1x1_s2", (1, 7, 6, 5), 9, (1, 1), stride=(2, 2)),
        conv("conv5x3_s21_pad", (1, 9, 6, 2), 16, (5, 3), stride=(2, 1), activation="RELU6"),
        conv("conv10x4_kws_like", (1, 13, 6, 1), 8, (10, 4), stride=(2, 2)),
        conv("conv_valid_one_column", (1, 6, 3, 6), 10, (3, 3), padding=modelgen.VALID),
        conv("conv_large_bias", (1, 4, 4, 8), 8, (3, 3), bias_scale=1 << 29),
        conv("conv3x3_minus128", (2, 5, 7, 3), 19, (3, 3), activation="RELU", minus128=True),
        conv("conv1x1_minus128", (1, 5, 3, 12), 13, (1, 1), minus128=True),
        conv("conv1x1_minus128_even", (1, 3, 4, 8), 6, (1, 1), minus128=True),
        conv("conv3x3_dead_channels", (1, 4, 5, 4), 7, (3, 3), dead=True),
        conv("conv1x1_dead_channels_relu", (1, 4, 4, 16), 6, (1, 1), dead=True, activation="RELU"),
        # edgesdk_requant_rk's k out of int32 reach (zero point 127, a right shift of 24 or more): blocked kernel
        conv("conv_requant_k_blocked", (1, 5, 4, 6), 11, (3, 3), bias_scale=1 << 25, q_out=(4.0, 127),
             w_scale=(1e-6, 2e-6), minus128=True, expect="blocked"),
        conv("conv1x1_even_depth", (1, 4, 5, 16), 24, (1, 1)),
        # the four-tap layouts in blocks of 3 pairs (EDGESDK_CONV_PAIRED_QUADS3 / _QUAD3_PATCHES): small weights,
        # flag-0 chunks in some blocks, a last block of 2 pairs, an odd channel count, ReLU and none
        conv("conv3x3_quads3_odd_channels", (1, 5, 6, 32), 23, (3, 3), reach=20, spikes=(1, 10)),
        conv("conv3x3_quads3_relu_batch2", (2, 4, 5, 16), 18, (3, 3), reach=25, spikes=(5,), activation="RELU"),
        conv("conv3x3_quads3_patches", (1, 5, 5, 4), 24, (3, 3), reach=20, spikes=(0, 13)),
        conv("conv1x1_quads3_mixed_blocks", (1, 4, 5, 32), 28, (1, 1), reach=30, spikes=(3, 26),
             activation="RELU6"),
        conv("conv3x3_quads3_minus128", (1, 4, 4, 16), 12, (3, 3), reach=10, spikes=(0, 1, 2, 3, 4, 5),
             q_out=(4.0, 0)),
        *(depthwise(f"dw_s1_w{w}", (1, 3, w, 5)) for w in range(1, 8)),
        depthwise("dw_s1_batch2_relu", (2, 6, 5, 16), activation="RELU"),
        depthwise("dw_s1_valid", (1, 5, 6, 3), padding=modelgen.VALID),
        *(depthwise(f"dw_s2_w{w}", (1, 5, w, 4), stride=2) for w in (1, 2, 5, 6, 8)),
        depthwise("dw_s2_valid", (1, 7, 7, 6), stride=2, padding=modelgen.VALID),
        fc("fc_16", 1, 16, 20), fc("fc_24_batch3", 3, 24, 9), fc("fc_43_per_tensor", 1, 43, 64, per_channel=False),
        fc("fc_15_odd", 1, 15, 7), fc("fc_5_depth1", 2, 5, 1), fc("fc_ties", 1, 40, 33, power_of_two=True),
        fc("fc_int8_16", 1, 16, 20, int8_blocks=True), fc("fc_int8_29_batch2", 2, 29, 13, int8_blocks=True),
        fc("fc_int8_ties", 1, 24, 18, power_of_two=True, int8_blocks=True),
        fc("fc_quads_27_batch2", 2, 19, 27, reach=60), fc("fc_quads_18", 1, 17, 18, reach=63),
        fc("fc_quads_bound", 1, 6, 13, reach=64),
    ]


@pytest.fixture(scope="module")
def fast_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("fast_ops")
    models = []
    for name, data, path_kind in _fast_suite(np.random.default_rng(7)):
        path = root / f"{name}.tflite"
        path.write_bytes(data)
        models.append((name, path, import_tflite(path), path_kind))
    return models


@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_fast_kernels_bit_exact_on_varied_shapes(fast_suite, mode):
    from edgesdk.targets.c import codegen

    ctx = testing.HostContext(mode)
    for name, _, graph, path_kind in fast_suite:  # the test is only meaningful if the fast path is taken
        comment = codegen.emit_layer(graph.ops[0], ctx).note
        assert comment.endswith(path_kind), f"{name} ({mode}) does not take the {path_kind} path: {comment}"
    library = testing.OpLibrary([op for _, _, g, _ in fast_suite for op in g.ops], mode)
    problems = _ops_differing([(name, path, graph) for name, path, graph, _ in fast_suite], mode, library)
    assert not problems, "\n".join(problems)


def test_three_pair_four_tap_layouts_are_taken(fast_suite):
    """The quads3 models of the fast suite run EDGESDK_CONV_PAIRED_QUADS3 (6) or _QUAD3_PATCHES (7), with at
    least one flag-0 chunk, so that test_fast_kernels_bit_exact_on_varied_shapes covers those paths."""
    from edgesdk.targets.c import codegen

    ctx = testing.HostContext("ref")
    taken = {}
    for name, _, graph, _ in fast_suite:
        if "quads3" in name:
            call = codegen.emit_layer(graph.ops[0], ctx).calls[0]
            words = np.asarray(call.args[2].values, np.int64).astype(np.uint8).view("<i4")
            taken[name] = (call.args[0].fields["blocked"], int(np.count_nonzero(words == 0)))
    assert len(taken) == 5 and {blocked for blocked, _ in taken.values()} == {6, 7}, taken
    assert all(zero_words > 0 for _, zero_words in taken.values()), taken


def _assert_no_mismatches_at_right_shifts(lib, rng, edges: list, random_multipliers: int) -> None:
    """lib.count_mismatches(acc, n, multiplier, shift) is 0 at every right shift (-31..-1) and multiplier 0,
    2^30, 2^31 - 1 and `random_multipliers` random ones, over the `edges`, every accumulator in
    [-70000, 70000] and 20,000 random ones."""
    import ctypes

    lib.count_mismatches.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
    near = np.arange(-70000, 70001)
    for shift in range(-31, 0):
        for m in (0, 1 << 30, (1 << 31) - 1, *rng.integers(1 << 30, 1 << 31, random_multipliers)):
            acc = np.concatenate([np.array(edges), near, rng.integers(-(1 << 31), 1 << 31, 20000)]).astype(np.int32)
            assert lib.count_mismatches(acc.ctypes.data, len(acc), int(m), shift) == 0, (int(m), shift)


def test_fast_requantization_equals_gemmlowp_double_rounding(tmp_path):
    """edgesdk_requant_right (mul/mulhsu, 11 instructions) == edgesdk_mbqm_double for right shifts."""
    from edgesdk.hostcc import load_shared_library

    src = tmp_path / "requant_wrap.c"
    src.write_text('#include "edgesdk_arith.h"\n#include "edgesdk_requant.h"\n'
                   "int32_t count_mismatches(const int32_t *acc, int32_t n, int32_t m, int32_t shift)\n"
                   "{ int32_t bad = 0; for (int32_t i = 0; i < n; i++)\n"
                   "  bad += edgesdk_requant_right(acc[i], m, shift) != edgesdk_mbqm_double(acc[i], m, shift);\n"
                   "  return bad; }\n")
    lib = load_shared_library("edgesdk_test_requant", [src], [testing.KERNELS_DIR])
    edges = [-(1 << 31), -(1 << 31) + 1, (1 << 31) - 1, (1 << 31) - 2, -1, 0, 1, (1 << 30), -(1 << 30)]
    _assert_no_mismatches_at_right_shifts(lib, np.random.default_rng(1), edges, random_multipliers=4)


def test_relu_requantization_equals_double_rounding_above_zero(tmp_path):
    """edgesdk_requant_right_relu (no negative-sum correction) equals edgesdk_mbqm_double wherever a clamp at or
    above the output offset can tell them apart: max(value, 0) is the same."""
    from edgesdk.hostcc import load_shared_library

    src = tmp_path / "requant_relu_wrap.c"
    src.write_text('#include "edgesdk_arith.h"\n#include "edgesdk_requant.h"\n'
                   "static int32_t relu(int32_t v) { return v < 0 ? 0 : v; }\n"
                   "int32_t count_mismatches(const int32_t *acc, int32_t n, int32_t m, int32_t shift)\n"
                   "{ int32_t bad = 0; for (int32_t i = 0; i < n; i++)\n"
                   "  bad += relu(edgesdk_requant_right_relu(acc[i], m, shift))\n"
                   "         != relu(edgesdk_mbqm_double(acc[i], m, shift));\n"
                   "  return bad; }\n")
    lib = load_shared_library("edgesdk_test_requant_relu", [src], [testing.KERNELS_DIR])
    edges = [-(1 << 31), -(1 << 31) + 1, (1 << 31) - 1, -1, 0, 1, (1 << 30), -(1 << 30)]
    _assert_no_mismatches_at_right_shifts(lib, np.random.default_rng(2), edges, random_multipliers=3)


def test_fp64_window_requantization_equals_double_rounding(tmp_path):
    """edgesdk_requantize_fp64_window == round(acc * scale) in IEEE double, with the compiler's window."""
    import ctypes
    import math

    from edgesdk.hostcc import load_shared_library
    from edgesdk.ir import quant
    from edgesdk.targets.c.layouts import fp64_window

    src = tmp_path / "fp64_window_wrap.c"
    src.write_text('#include "edgesdk_fp64.h"\n'
                   "int32_t fast(int32_t a, double s, int32_t m, int sh, uint32_t w)\n"
                   "{ return edgesdk_requantize_fp64_window(a, s, m, sh, w); }\n"
                   "int32_t slow(int32_t a, double s) { return edgesdk_requantize_fp64(a, s); }\n")
    lib = load_shared_library("edgesdk_test_fp64_window", [src], [testing.KERNELS_DIR])
    lib.fast.argtypes = [ctypes.c_int32, ctypes.c_double, ctypes.c_int32, ctypes.c_int, ctypes.c_uint32]
    lib.slow.argtypes = [ctypes.c_int32, ctypes.c_double]
    rng = np.random.default_rng(2)
    checked = 0
    for i in range(40000):
        if i % 3 == 0:  # binary fractions: exact ties
            s = 2.0 ** -int(rng.integers(2, 26)) * (1 + int(rng.integers(0, 8)) / 8)
        else:
            s = math.ldexp(float(rng.uniform(0.5, 1.0)), -int(rng.integers(1, 28)))
        m, sh = quant.quantize_multiplier(s)
        if sh > -2 or m <= 0:
            continue
        bound = int(rng.integers(1, 1 << 31))
        a = int(rng.integers(-bound, bound + 1))
        if i % 5 == 0:  # right next to a half
            a = int(np.clip(round((int(rng.integers(-300, 300)) + 0.5) / s) + int(rng.integers(-1, 2)), -bound, bound))
        window = fp64_window(bound)
        if window > 1 << 30:
            continue
        assert lib.fast(a, s, m, sh, window) == lib.slow(a, s), (a, s, bound)
        checked += 1
    assert checked > 20000


def _window_taps(origin: int, dilation: int, taps: int, size: int) -> tuple:
    """Taps t in [0, taps) with 0 <= origin + t * dilation < size, in Python integers: (first, last)."""
    first = 0 if origin >= 0 else min(-(origin // dilation), taps)  # ceil(-origin / dilation)
    last = 0 if size - 1 - origin < 0 else min((size - 1 - origin) // dilation + 1, taps)
    return first, max(last, first)


def test_window_taps_equal_their_definition(tmp_path):
    """edgesdk_window_taps and edgesdk_window_taps_u32 (its quotients in uint32) against the definition, at the
    int32 ends of origin, dilation, size and taps as well as over small ranges."""
    import ctypes

    from edgesdk.hostcc import load_shared_library

    src = tmp_path / "window_wrap.c"
    src.write_text('#include "edgesdk_window.h"\n'
                   "void taps(int32_t o, int32_t d, int32_t t, int32_t s, int32_t *out)\n"
                   "{ edgesdk_window w = edgesdk_window_taps(o, d, t, s); out[0] = w.first; out[1] = w.last;\n"
                   "  w = edgesdk_window_taps_u32(o, d, t, s); out[2] = w.first; out[3] = w.last; }\n")
    lib = load_shared_library("edgesdk_test_window_taps", [src], [testing.KERNELS_DIR])
    lib.taps.argtypes = [ctypes.c_int32] * 4 + [ctypes.c_void_p]
    out = np.zeros(4, np.int32)
    big = (1 << 31) - 1
    cases = [(o, d, t, s) for o in range(-9, 10) for d in range(1, 5) for t in range(0, 6) for s in range(1, 8)]
    ends = (-(1 << 31), -(1 << 31) + 1, -big // 2, -1, 0, 1, big // 2, big - 1, big)
    cases += [(o, d, t, s) for o in ends for d in (1, 2, 3, big - 1, big) for t in (1, 3, big) for s in (1, 2, big)]
    for case in cases:
        lib.taps(*case, out.ctypes.data)
        want = _window_taps(*case)
        assert tuple(int(v) for v in out[:2]) == want and tuple(int(v) for v in out[2:]) == want, case


def test_fast_kernel_preconditions_are_checked():
    """The compiler keeps layers outside a fast kernel's domain on the reference loops, and says why."""
    from edgesdk.targets.c import layouts
    from edgesdk.targets.c.ops import conv_2d as codegen

    fields = {"filter_offset": 0, "input_offset": 5, "dilation_h": 1, "dilation_w": 1, "filter_in_c": 4, "in_c": 4,
              "filter_h": 3, "filter_w": 3, "out_c": 2, "out_h": 4, "out_w": 4, "in_h": 4, "in_w": 4,
              "stride_h": 1, "stride_w": 1, "pad_top": 1, "pad_left": 1}
    w = np.ones((2, 3, 3, 4), np.int8)
    bias = np.zeros(2, np.int64)
    ok = codegen.fast_conv_obstacle(fields, "double", w, bias, [1 << 30] * 2, [-3, -4])
    assert ok is None
    assert "rounding" in codegen.fast_conv_obstacle(fields, "single", w, bias, [1 << 30] * 2, [-3, -4])
    assert "left shift" in codegen.fast_conv_obstacle(fields, "double", w, bias, [1 << 30] * 2, [-3, 0])
    assert "overflow" in codegen.fast_conv_obstacle(fields, "double", w, np.array([(1 << 31) - 100, 0]),
                                                    [1 << 30] * 2, [-3, -4])
    assert "dilation" in codegen.fast_conv_obstacle({**fields, "dilation_w": 2}, "double", w, bias, [1 << 30] * 2,
                                                    [-3, -4])
    # folding the input offset is exact: bias + offset * sum(w)
    assert list(layouts.fold_input_offset([1, 2], w.reshape(2, -1), 5)) == [1 + 5 * 36, 2 + 5 * 36]
    # the blocked layout: blocks of 8 channels [tap][8], then the rest channel by channel
    w2 = np.arange(10 * 3).reshape(10, 3)
    packed = layouts.block_channels(w2, 8)
    assert list(packed[:8]) == list(w2[:8, 0]) and list(packed[24:]) == list(w2[8:].reshape(-1))


@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_add_output_table_bit_exact_for_every_input_pair(tmp_path, mode):
    """The ADD output table (64 KiB, edgesdk_add.c) on one 256 x 256 tensor pair holding every (a, b) int8 pair
    (all-min and all-max included), and an odd size for the kernel's tail loop, with and without a clamp."""
    from edgesdk.targets.c import codegen
    from edgesdk.targets.c.ops.add import OUTPUT_TABLE_MIN_ELEMENTS

    rng = np.random.default_rng(13)
    u8 = dict(dtype="uint8")
    cases = [("every_pair", (1, 256, 256, 1), "NONE", {}), ("every_pair_relu", (1, 256, 256, 1), "RELU", {}),
             ("every_pair_relu6", (1, 256, 16, 16), "RELU6", {}), ("every_pair_uint8", (1, 256, 256, 1), "NONE", u8),
             ("odd_tail", (1, 17, 17, 15), "RELU", {})]
    ctx = testing.HostContext(mode)
    problems = []
    for name, shape, activation, kind in cases:
        if mode == "tflm" and kind:
            continue  # TFLite Micro has no uint8 kernels
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(modelgen.binary_model("ADD", shape, shape, shape, modelgen._q(rng, **kind),
                                               modelgen._q(rng, **kind), modelgen._q(rng, **kind), activation,
                                               **kind))
        graph = import_tflite(path)
        assert graph.ops[0].outputs[0].num_elements >= OUTPUT_TABLE_MIN_ELEMENTS
        assert "output table" in testing.generate_source(graph.ops, mode)[0]  # the path under test is taken
        assert codegen.emit_layer(graph.ops[0], ctx).note != "output table"  # only where chosen
        library = testing.OpLibrary(graph.ops, mode)
        random_inputs = testing.random_model_inputs(path, seed=len(name))
        if shape[1] == 256:
            values = np.arange(256, dtype=np.int64) - (0 if kind else 128)
            a, b = np.meshgrid(values, values, indexing="ij")
            dtype = random_inputs[0].dtype
            inputs = [a.reshape(shape).astype(dtype), b.reshape(shape).astype(dtype)]
        else:
            inputs = random_inputs
        ref = testing.reference_tensors(path, inputs, mode)
        failures = testing.compare_ops(graph, ref, mode, library)
        if failures:
            problems.append(f"{name}: {_describe(failures)}")
    assert not problems, "\n".join(problems)


def test_add_output_tables_follow_the_flash_room(models_dir):
    """Largest ADDs first while the flash holds another 64 KiB; none below the size that pays."""
    from edgesdk.targets.c.ops.add import OUTPUT_TABLE_BYTES, output_table_adds

    graph = import_tflite(models_dir / SHARED_MODELS["ic"])
    adds = sorted((op for op in graph.ops if op.type == "ADD"), key=lambda op: -op.outputs[0].num_elements)
    assert len(adds) == 3
    assert output_table_adds(graph.ops, None) == set(adds)
    assert output_table_adds(graph.ops, 2 * OUTPUT_TABLE_BYTES + 100) == set(adds[:2])
    assert output_table_adds(graph.ops, OUTPUT_TABLE_BYTES - 1) == set()
