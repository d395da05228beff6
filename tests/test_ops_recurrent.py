"""Recurrent ops (issue 10): UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF, whose state lives in TFLite variable tensors.

Every model runs as a sequence of inferences in one interpreter (the state carried from step to step) and must be
bit-exact at every step, and in the state after every step, with LiteRT's reference kernels (--rounding ref) and
TFLite Micro (--rounding tflm):

* host level: the C target's calls on the host kernels (edgesdk.targets.c.testing.compare_ops_sequence), on the
  converter-made corpus LSTMs and on hand-written models (tests/recurrent_models.py) in many shapes -- the converter
  makes no SVDF and only the corpus's LSTM shapes;
* firmware (slow): built for the emulator and run in one boot over a sequence, from state memory the reset must
  clear (it holds garbage before boot), compared with the reference interpreter run on the same sequence.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

import corpus
import recurrent_models as rm
from conftest import REPO
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.ir.graph import Graph
from edgesdk.partition.partitioner import partition
from edgesdk.targets.c import testing
from modelgen import ModelBuilder

needs_toolchain = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                     reason="RISC-V cross compiler not installed")
BOTH = ("ref", "tflm")
LSTM_CORPUS = [e for e in corpus.entries()
               if e["op"] == "UNIDIRECTIONAL_SEQUENCE_LSTM" and e["mode"] in ("int8", "float32")]


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    return path


def _steps(graph, seed: int, count: int = 6) -> list:
    """Random full-range inputs, with an all-min and an all-max step among them (saturated gates)."""
    rng = np.random.default_rng(seed)
    steps = []
    for k in range(count):
        inputs = []
        for t in graph.inputs:
            dtype = testing.NUMPY_TYPES[t.dtype]
            if t.dtype == "float32":
                value = {1: -4.0, 2: 4.0}.get(k)
                inputs.append(np.full(t.shape, value, np.float32) if value is not None else
                              rng.uniform(-1.5, 1.5, t.shape).astype(np.float32))
            else:
                info = np.iinfo(dtype)
                value = {1: info.min, 2: info.max}.get(k)
                inputs.append(np.full(t.shape, value, dtype) if value is not None else
                              rng.integers(info.min, info.max + 1, t.shape).astype(dtype))
        steps.append(inputs)
    return steps


def host_mismatches(path, mode: str, graph=None, seed: int = 0, count: int = 6) -> list:
    """The ops' (and the state's) mismatches over a sequence of `count` inferences, on the host kernels."""
    graph = graph or import_tflite(path)
    refs = testing.reference_tensor_sequence(path, _steps(import_tflite(path), seed, count), mode)
    failures = testing.compare_ops_sequence(graph, refs, mode)
    return [f"{op.location}: {n} values differ (max {diff})" for op, diff, n in failures]


# -- LSTM --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", BOTH)
@pytest.mark.parametrize("entry", LSTM_CORPUS, ids=lambda e: e["file"])
def test_corpus_lstm_ops_bit_exact_over_a_sequence(entry, mode):
    """The converter-made LSTMs, their LSTM ops only (the corpus models also need STRIDED_SLICE, which the C target
    gets in another branch): the corpus cases as one sequence, state carried. Float32: TFLite Micro only."""
    if entry["mode"] == "float32" and mode == "ref":
        pytest.skip("float32 LSTM: --rounding tflm only (docs/rounding.md)")
    path = corpus.CORPUS / entry["file"]
    graph = import_tflite(path)
    lstm = Graph(graph.name, graph.tensors, [op for op in graph.ops if op.type == "UNIDIRECTIONAL_SEQUENCE_LSTM"],
                 graph.inputs, graph.outputs)
    steps = [corpus.case_inputs(entry, case, 0) for case in corpus.CASES]
    refs = testing.reference_tensor_sequence(path, steps, mode)
    failures = testing.compare_ops_sequence(lstm, refs, mode)
    assert not failures, [(op.location, diff, n) for op, diff, n in failures]


LSTM_VARIANTS = {
    "keras_like": dict(seed=1),
    "batch2_wide": dict(seed=2, batches=2, steps=3, n_input=5, n_cell=7),
    "time_major_batch3": dict(seed=3, batches=3, steps=4, time_major=True),
    "cell_2^-15_no_clip": dict(seed=4, cell_scale_power=-15, cell_clip=0.0),
    "cell_2^-14": dict(seed=5, cell_scale_power=-14),
    "cell_2^-11": dict(seed=6, cell_scale_power=-11),
    "cell_2^-9_no_clip": dict(seed=7, cell_scale_power=-9, cell_clip=0.0),
    "small_cell_clip": dict(seed=8, cell_clip=0.3),
    "large_weights": dict(seed=9, weight_scale=(0.02, 0.2)),
    "one_cell_one_step": dict(seed=10, steps=1, n_input=1, n_cell=1),
}


@pytest.mark.parametrize("mode", BOTH)
@pytest.mark.parametrize("variant", sorted(LSTM_VARIANTS))
def test_lstm_int8_bit_exact_over_a_sequence(tmp_path, variant, mode):
    path = _write(tmp_path, variant, rm.lstm_model(**LSTM_VARIANTS[variant]))
    assert not host_mismatches(path, mode)


FLOAT_LSTM_VARIANTS = {
    "keras_like": dict(seed=31, dtype="float32"),
    "batch2_clip": dict(seed=32, dtype="float32", batches=2, steps=4, n_input=5, n_cell=7, cell_clip=0.5),
    "time_major_no_clip": dict(seed=33, dtype="float32", time_major=True, batches=3, cell_clip=0.0),
}


@pytest.mark.parametrize("variant", sorted(FLOAT_LSTM_VARIANTS))
def test_lstm_float32_bit_exact_with_tflite_micro(tmp_path, variant):
    path = _write(tmp_path, variant, rm.lstm_model(**FLOAT_LSTM_VARIANTS[variant]))
    assert not host_mismatches(path, "tflm")


def test_lstm_float32_under_rounding_ref_is_refused_with_the_reason(tmp_path):
    from edgesdk.compiler import BuildOptions, compile_model

    path = _write(tmp_path, "float_ref", rm.lstm_model(31, dtype="float32"))
    with pytest.raises(UnsupportedOpError, match="--rounding tflm"):
        compile_model(path, BuildOptions(target="c", rounding="ref"))
    compile_model(path, BuildOptions(target="c", rounding="tflm"))


LSTM_16X8_VARIANTS = {
    "keras_like": dict(seed=41, dtype="int16"),
    "batch2_wide": dict(seed=42, dtype="int16", batches=2, steps=3, n_input=5, n_cell=7),
    "time_major_batch3": dict(seed=43, dtype="int16", batches=3, steps=4, time_major=True),
    "cell_2^-15_no_clip": dict(seed=44, dtype="int16", cell_scale_power=-15, cell_clip=0.0),
    "cell_2^-11": dict(seed=45, dtype="int16", cell_scale_power=-11),
    "cell_2^-9_small_clip": dict(seed=46, dtype="int16", cell_scale_power=-9, cell_clip=0.3),
    "large_weights": dict(seed=47, dtype="int16", weight_scale=(0.02, 0.2), steps=8),
    "one_cell_one_step": dict(seed=48, dtype="int16", steps=1, n_input=1, n_cell=1),
}


@pytest.mark.parametrize("variant", sorted(LSTM_16X8_VARIANTS))
def test_lstm_16x8_bit_exact_with_tflite_micro(tmp_path, variant):
    """The 16x8 LSTM (int16 activations, int8 weights, int64 biases, int16 cell state), which only TFLite Micro runs
    (EvalLstm<int16_t, int8_t, int16_t, int64_t>); LiteRT refuses every such file."""
    path = _write(tmp_path, variant, rm.lstm_model(**LSTM_16X8_VARIANTS[variant]))
    assert not host_mismatches(path, "tflm")


def _stacked_16x8(tmp_path):
    return _write(tmp_path, "stacked_16x8", rm.lstm_16x8_from_int8(corpus.CORPUS / "lstm_stacked_seq_int8.tflite"))


def test_lstm_16x8_derived_from_the_corpus_model(tmp_path):
    """The converter-made stacked LSTM (two LSTMs and a STRIDED_SLICE) re-quantized to 16x8: bit-exact with TFLite
    Micro over a sequence, and the same function as the int8 model (dequantized outputs within its int8 step)."""
    path = _stacked_16x8(tmp_path)
    assert not host_mismatches(path, "tflm")
    int8_path = corpus.CORPUS / "lstm_stacked_seq_int8.tflite"
    g8, g16 = import_tflite(int8_path), import_tflite(path)
    real = np.random.default_rng(5).uniform(-1, 1, g8.inputs[0].shape)
    (x8q, y8q), (x16q, y16q) = [(g.inputs[0].quant, g.outputs[0].quant) for g in (g8, g16)]
    x8 = np.clip(np.round(real / x8q.scale[0]) + x8q.zero_point[0], -128, 127).astype(np.int8)
    x16 = np.clip(np.round(real / x16q.scale[0]), -32768, 32767).astype(np.int16)
    y8 = testing.reference_tensor_sequence(int8_path, [[x8]], "tflm")[0][g8.outputs[0].id]
    y16 = testing.reference_tensor_sequence(path, [[x16]], "tflm")[0][g16.outputs[0].id]
    diff = (y8.astype(np.float64) - y8q.zero_point[0]) * y8q.scale[0] - y16.astype(np.float64) * y16q.scale[0]
    assert np.abs(diff).max() < 2 * y8q.scale[0]
    with pytest.raises(RuntimeError, match="INT64 != FLOAT32"):  # LiteRT: no 16x8 LSTM kernel
        testing.reference_tensor_sequence(path, [[x16]], "ref")


def test_lstm_16x8_under_rounding_ref_is_refused_with_the_reason(tmp_path):
    from edgesdk.compiler import BuildOptions, compile_model

    path = _write(tmp_path, "l16_ref", rm.lstm_model(41, dtype="int16"))
    with pytest.raises(UnsupportedOpError, match="16x8 LSTM.*--rounding tflm"):
        compile_model(path, BuildOptions(target="c", rounding="ref"))
    compile_model(path, BuildOptions(target="c", rounding="tflm"))


def _host_has_glibc_fma_expf() -> bool:
    import platform

    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc" and " fma " in flags.replace("\n", " ")


@pytest.mark.skipif(not _host_has_glibc_fma_expf(), reason="the reference is glibc's x86-64 expf on an FMA CPU")
def test_libm_equals_the_host_glibc_that_tflite_micro_calls():
    """edgesdk_expf/edgesdk_tanhf equal the host's expf/tanhf (what TFLite Micro's float kernels call) on a spread of
    every float's bit patterns and around the special ranges (the LSTM kernel calls edgesdk_mathf.c's functions)."""
    import ctypes

    lib = testing.kernels_library()
    libm = ctypes.CDLL("libm.so.6")
    for fn in (lib.edgesdk_expf, lib.edgesdk_tanhf, libm.expf, libm.tanhf):
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    rng = np.random.default_rng(0)
    patterns = np.concatenate([np.arange(0, 1 << 32, 65537, dtype=np.uint64).astype(np.uint32),
                               rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32)])
    near = np.concatenate([np.float32(v) + np.arange(-300, 300, dtype=np.float32) * np.float32(1e-5)
                           for v in (88.0, 88.72, -87.3, -103.28, -103.97, 22.0, 1.0, -9.0, 16.62, 0.3466)])
    values = np.concatenate([patterns.view(np.float32), near.astype(np.float32)])
    for name, mine, theirs in (("expf", lib.edgesdk_expf, libm.expf), ("tanhf", lib.edgesdk_tanhf, libm.tanhf)):
        bad = [float(x) for x in values if np.float32(mine(x)).tobytes() != np.float32(theirs(x)).tobytes()
               and not (np.isnan(mine(x)) and np.isnan(theirs(x)))]
        assert not bad, f"{name} differs from the host's at {bad[:5]}"


def test_lstm_without_the_hidden_intermediate_runs_on_tflite_micro(tmp_path):
    """LiteRT needs the 5th intermediate (the hidden scale) of an integer LSTM; TFLite Micro reads the output state's
    quantization and runs the file. --rounding ref then uses the output state too (docs/rounding.md)."""
    path = _write(tmp_path, "no_hidden", rm.lstm_model(11, hidden_intermediate=False))
    assert not host_mismatches(path, "tflm")
    graph = import_tflite(path)
    partition(graph, ["c"])  # builds in both modes


def test_lstm_references_disagree_and_each_mode_follows_its_own(tmp_path):
    """LiteRT and TFLite Micro compute the integer LSTM differently (gemmlowp vs table sigmoid/tanh, shifts vs
    multipliers, saturation order): on this model their outputs differ, so each --rounding mode is a real choice."""
    path = _write(tmp_path, "disagree", rm.lstm_model(21, weight_scale=(0.02, 0.2), steps=10))
    graph = import_tflite(path)
    steps = _steps(graph, 0)
    outputs = {mode: testing.reference_tensor_sequence(path, steps, mode) for mode in BOTH}
    y = graph.outputs[0].id
    assert any(not np.array_equal(a[y], b[y]) for a, b in zip(outputs["ref"], outputs["tflm"]))
    for mode, other in (("ref", "tflm"), ("tflm", "ref")):
        assert not testing.compare_ops_sequence(graph, outputs[mode], mode)
        assert testing.compare_ops_sequence(graph, outputs[other], mode), f"{mode} arithmetic also matches {other}"


def test_lstm_bias_quantized_beyond_its_rank_builds_with_a_warning(tmp_path):
    """Per-channel bias quantization along an axis beyond the bias's rank: LiteRT refuses the file, TFLite Micro
    runs it. edgesdk builds it, prints a warning, records it in report.json, and matches TFLite Micro."""
    path = _write(tmp_path, "bias_axis", rm.lstm_model(12, per_channel_bias=True, bias_axis=1))
    with pytest.raises(ValueError, match="quantized_dimension"):
        testing.reference_tensors(path, _steps(import_tflite(path), 0, 1)[0], "ref")
    assert not host_mismatches(path, "tflm")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "build", str(path), "--target", "c", "--rounding", "tflm",
                           "--no-firmware", "-o", str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "edgesdk: warning:" in proc.stderr and "beyond their rank" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert len(report["warnings"]) == 1 and "LiteRT refuses this file" in report["warnings"][0]


def test_axis_beyond_rank_anywhere_else_is_still_a_model_error(tmp_path):
    m = ModelBuilder()
    x = m.tensor((1, 4), "int8", 0.05, 0)
    w = m.const(np.ones((3, 4), np.int8), "int8", scale=0.01, zero_point=0)
    b = m.const(np.zeros(3, np.int32), "int32", scale=[5e-4] * 3, zero_point=[0] * 3, axis=1)
    y = m.tensor((1, 3), "int8", 0.05, 0)
    m.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions")
    path = _write(tmp_path, "fc_axis", m.build([x], [y]))
    with pytest.raises(ModelError, match="per-channel scales that do not match axis 1"):
        import_tflite(path)


def _lstm_with(tmp_path, name, edit) -> object:
    """A valid LSTM model (as ModelBuilder) changed by `edit(builder, op)` before serializing."""
    data = rm.lstm_model(13)
    path = _write(tmp_path, name + "_base", data)
    graph = import_tflite(path)
    m = ModelBuilder()
    ids = {}
    op = graph.ops[0]
    for t in [t for t in op.inputs + op.outputs + op.intermediates if t is not None]:
        q = t.quant
        quant = {} if q is None else dict(scale=float(q.scale[0]), zero_point=int(q.zero_point[0]))
        ids[t] = m.tensor(t.shape, t.dtype, data=t.data, name=t.name, variable=t.persistent, **quant)
    spec = dict(inputs=[ids[t] if t is not None else -1 for t in op.inputs], outputs=[ids[op.outputs[0]]],
                intermediates=[ids[t] for t in op.intermediates])
    edit(m, spec, ids, graph)
    m.op("UNIDIRECTIONAL_SEQUENCE_LSTM", spec["inputs"], spec["outputs"], "UnidirectionalSequenceLSTMOptions",
         intermediates=spec["intermediates"], FusedActivationFunction=spec.get("activation", 4), CellClip=10.0,
         TimeMajor=False)
    return _write(tmp_path, name, m.build([spec["inputs"][0]], spec["outputs"]))


def _non_variable_state(m, spec, ids, graph):
    m.tensors[spec["inputs"][18]]["variable"] = False
    spec["inputs"][18] = m.tensor((1, 6), "int8", 0.01, 0, name="not_variable")
    m.tensors[-1]["variable"] = False


def _short_arity(m, spec, ids, graph):
    spec["inputs"] = spec["inputs"][:19]


def _bad_weight_shape(m, spec, ids, graph):
    spec["inputs"][2] = m.const(np.ones((6, 3), np.int8), "int8", scale=0.01, zero_point=0)


def _bad_output_shape(m, spec, ids, graph):
    spec["outputs"] = [m.tensor((1, 4, 6), "int8", 0.01, 0)]


@pytest.mark.parametrize("edit, message", [
    (_non_variable_state, "must be a variable tensor"),
    (_short_arity, "takes 20 to 24 inputs"),
    (_bad_weight_shape, "forget gate input weights"),
    (_bad_output_shape, "output"),
], ids=["state_not_variable", "19_inputs", "weights_shape", "output_shape"])
def test_malformed_lstm_is_a_model_error(tmp_path, edit, message):
    path = _lstm_with(tmp_path, edit.__name__, edit)
    with pytest.raises(ModelError, match=message):
        import_tflite(path)


def test_malformed_model_exits_2_without_a_traceback(tmp_path):
    path = _lstm_with(tmp_path, "arity", _short_arity)
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "build", str(path), "--target", "c", "--no-firmware",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "takes 20 to 24 inputs" in proc.stderr


def _peephole(m, spec, ids, graph):
    spec["inputs"][10] = m.const(np.ones(6, np.int16), "int16", scale=1e-3, zero_point=0)


def _projection(m, spec, ids, graph):
    spec["inputs"][16] = m.const(np.ones((6, 6), np.int8), "int8", scale=1e-2, zero_point=0)


def _cifg(m, spec, ids, graph):
    spec["inputs"][1] = spec["inputs"][5] = spec["inputs"][12] = -1


def _relu_cell(m, spec, ids, graph):
    spec["activation"] = 1


@pytest.mark.parametrize("edit, constraint", [
    (_peephole, "lstm_standard_variant"), (_projection, "lstm_standard_variant"), (_cifg, "lstm_standard_variant"),
    (_relu_cell, "lstm_cell_activation"),
], ids=["peephole", "projection", "cifg", "relu_cell"])
def test_lstm_variants_are_refused_by_name(tmp_path, edit, constraint):
    path = _lstm_with(tmp_path, edit.__name__, edit)
    with pytest.raises(UnsupportedOpError, match=constraint):
        partition(import_tflite(path), ["c"])


@pytest.mark.parametrize("change, constraint", [(dict(bias_dtype="int32"), "lstm_types"),
                                                (dict(zero_point=3), "lstm_quantization")],
                         ids=["int32_biases", "activation_zero_point"])
def test_lstm_16x8_outside_tflite_micro_kernel_is_refused_by_name(tmp_path, change, constraint):
    """TFLite Micro's 16x8 LSTM reads int64 biases and symmetric int16 activations; other forms are refused."""
    path = _write(tmp_path, constraint, rm.lstm_model(41, dtype="int16", **change))
    with pytest.raises(UnsupportedOpError, match=constraint):
        partition(import_tflite(path), ["c"])


# -- SVDF --------------------------------------------------------------------------------------------------------

SVDF_VARIANTS = {  # name: (model arguments, the references that run it)
    "rank2_memory6": (dict(seed=1), BOTH),
    "rank1_memory3": (dict(seed=2, rank=1, memory_size=3, num_units=5, input_size=5), BOTH),
    "rank3_memory10": (dict(seed=3, rank=3, memory_size=10, num_units=3, input_size=12), BOTH),
    "memory1": (dict(seed=4, memory_size=1, rank=2, num_units=4), BOTH),
    "batch2": (dict(seed=5, batches=2), BOTH),
    "int16_state_zero_point": (dict(seed=6, state_zero_point=7), BOTH),
    "int8_state": (dict(seed=7, state_dtype="int8", state_zero_point=5), ("tflm",)),
    "int8_state_rank1": (dict(seed=8, state_dtype="int8", rank=1, memory_size=4), ("tflm",)),
    "activation_none": (dict(seed=9, activation="NONE"), ("tflm",)),
    "no_bias": (dict(seed=10, bias=False), ("ref",)),
    "float": (dict(seed=11, dtype="float32"), BOTH),
    "float_relu_rank3": (dict(seed=12, dtype="float32", activation="RELU", rank=3), BOTH),
    "float_relu1_rank5": (dict(seed=13, dtype="float32", activation="RELU_N1_TO_1", rank=5, memory_size=9,
                               input_size=13, num_units=3), BOTH),
    "float_relu6_batch2": (dict(seed=14, dtype="float32", activation="RELU6", rank=4, memory_size=4, input_size=3,
                                batches=2), BOTH),
    "float_sign_bit": (dict(seed=15, dtype="float32", activation="SIGN_BIT"), BOTH),
    "float_no_bias": (dict(seed=16, dtype="float32", bias=False, rank=4), ("ref",)),
}
SVDF_CASES = [(name, mode) for name, (_, modes) in sorted(SVDF_VARIANTS.items()) for mode in modes]


@pytest.mark.parametrize("variant, mode", SVDF_CASES, ids=[f"{n}-{m}" for n, m in SVDF_CASES])
def test_svdf_bit_exact_over_a_sequence(tmp_path, variant, mode):
    path = _write(tmp_path, variant, rm.svdf_model(**SVDF_VARIANTS[variant][0]))
    assert not host_mismatches(path, mode, count=8)


def test_svdf_references_differ_where_documented(tmp_path):
    """A float SVDF: LiteRT sums in four lanes and adds the bias last, TFLite Micro sums in order from the bias.
    An int16 state with a zero point: LiteRT ignores it, TFLite Micro does not."""
    for name, args in (("float_order", dict(seed=13, dtype="float32", rank=5, memory_size=9, input_size=13,
                                            num_units=3)), ("state_zp", dict(seed=6, state_zero_point=7))):
        path = _write(tmp_path, name, rm.svdf_model(**args))
        graph = import_tflite(path)
        refs = testing.reference_tensor_sequence(path, _steps(graph, 0, 8), "tflm")
        assert testing.compare_ops_sequence(graph, refs, "ref"), f"{name}: the LiteRT arithmetic matches TFLite Micro"


def _svdf_spec(**changes) -> bytes:
    m = ModelBuilder()
    shapes = dict(input=(1, 8), wf=(4, 8), wt=(4, 6), bias=(2,), state=(1, 24), output=(1, 2), rank=2,
                  variable=True)
    shapes.update(changes)
    x = m.tensor(shapes["input"], "int8", 0.02, 0)
    wf = m.const(np.ones(shapes["wf"], np.int8), "int8", scale=0.01, zero_point=0)
    wt = m.const(np.ones(shapes["wt"], np.int16), "int16", scale=1e-4, zero_point=0)
    b = m.const(np.zeros(shapes["bias"], np.int32), "int32", scale=1e-7, zero_point=0)
    s = m.tensor(shapes["state"], "int16", 1e-3, 0, variable=shapes["variable"])
    y = m.tensor(shapes["output"], "int8", 0.05, 0)
    m.op("SVDF", [x, wf, wt, b, s], [y], "SVDFOptions", Rank=shapes["rank"], FusedActivationFunction=1)
    return m.build([x], [y])


@pytest.mark.parametrize("changes, message", [
    (dict(rank=3), "rank 3 does not divide the 4 filters"),
    (dict(state=(1, 20)), "activation state"),
    (dict(variable=False), "must be a variable tensor"),
    (dict(wt=(3, 6)), "weights_time"),
    (dict(bias=(3,)), "bias"),
    (dict(output=(1, 3)), "output"),
    (dict(input=(1, 2, 4)), "must be 2-D"),
], ids=["rank", "state_size", "state_not_variable", "weights_time", "bias", "output", "input_rank"])
def test_malformed_svdf_is_a_model_error(tmp_path, changes, message):
    path = _write(tmp_path, "svdf", _svdf_spec(**changes))
    with pytest.raises(ModelError, match=message):
        import_tflite(path)


def test_svdf_float_tanh_is_refused_by_name(tmp_path):
    path = _write(tmp_path, "tanh", rm.svdf_model(1, dtype="float32", activation="TANH"))
    with pytest.raises(UnsupportedOpError, match="svdf_float_activation"):
        partition(import_tflite(path), ["c"])


# -- firmware ----------------------------------------------------------------------------------------------------

def _state_garbage(report) -> list:
    """(arena offset, bytes) filling every state buffer with a pattern the reset must overwrite."""
    return [(b["offset"], bytes((0xA5 + 37 * k) & 0xFF for k in range(b["size"])))
            for b in report["memory"]["buffers"] if b["kind"] == "state"]


def run_firmware_sequence(out, report, steps) -> list:
    """run_sequence, with the state buffers holding garbage before boot: outputs per step."""
    from edgesdk.board import build_board
    from edgesdk.emulator import elf_symbol, run_elf
    from edgesdk.runner import NUMPY_DTYPES, coerce_input

    elf = out / "firmware.elf"
    arena = elf_symbol(elf, "edgesdk_arena")
    specs, out_specs = report["io"]["inputs"], report["io"]["outputs"]
    step_writes = [[(arena + s["arena_offset"], coerce_input(x, s, i).tobytes()) for i, (x, s) in
                    enumerate(zip(inputs, specs))] for inputs in steps]
    reads = [(arena + s["arena_offset"], s["bytes"]) for s in out_specs]
    garbage = [(arena + offset, data) for offset, data in _state_garbage(report)]
    if len(steps) == 1:  # inputs in place before boot
        result = run_elf(elf, build_board(out, report), writes=garbage + step_writes[0], reads=reads, timeout_s=300)
    else:
        result = run_elf(elf, build_board(out, report), writes=garbage, reads=reads, timeout_s=300, steps=step_writes)
    assert result.exit_code == 0, result.uart
    raw = result.step_reads if len(steps) > 1 else [result.reads]
    return [[np.frombuffer(r, NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"]) for r, s in zip(step, out_specs)]
            for step in raw]


FIRMWARE_MODELS = {
    "lstm_classifier_int8_lstm": (lambda: rm.single_op_from_model(corpus.CORPUS / "lstm_classifier_int8.tflite", 0),
                                  BOTH),
    "lstm_stacked_second_lstm": (lambda: rm.single_op_from_model(corpus.CORPUS / "lstm_stacked_seq_int8.tflite", 1),
                                 ("ref",)),
    "lstm_time_major_batch3": (lambda: rm.lstm_model(**LSTM_VARIANTS["time_major_batch3"]), ("tflm",)),
    "lstm_cell_2^-11": (lambda: rm.lstm_model(**LSTM_VARIANTS["cell_2^-11"]), ("ref",)),
    "lstm_16x8_stacked": (lambda: rm.lstm_16x8_from_int8(corpus.CORPUS / "lstm_stacked_seq_int8.tflite"), ("tflm",)),
    "lstm_16x8_batch2": (lambda: rm.lstm_model(**LSTM_16X8_VARIANTS["batch2_wide"]), ("tflm",)),
    "svdf_int16_state": (lambda: rm.svdf_model(**SVDF_VARIANTS["int16_state_zero_point"][0]), BOTH),
    "svdf_int8_state": (lambda: rm.svdf_model(**SVDF_VARIANTS["int8_state"][0]), ("tflm",)),
    "svdf_float": (lambda: rm.svdf_model(**SVDF_VARIANTS["float_relu1_rank5"][0]), BOTH),
    "lstm_float32": (lambda: rm.single_op_from_model(corpus.CORPUS / "lstm_classifier_float32.tflite", 0), ("tflm",)),
    "lstm_float32_batch2": (lambda: rm.lstm_model(**FLOAT_LSTM_VARIANTS["batch2_clip"]), ("tflm",)),
}
FIRMWARE_CASES = [(name, mode) for name, (_, modes) in sorted(FIRMWARE_MODELS.items()) for mode in modes]


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("name, mode", FIRMWARE_CASES, ids=[f"{n}-{m}" for n, m in FIRMWARE_CASES])
def test_firmware_sequence_bit_exact_and_reset(tmp_path, name, mode):
    """Six inferences in one boot, from state memory full of garbage (the boot's reset must set it), each step
    bit-exact with the reference run on the same sequence; then one step in a fresh boot equals a fresh reference
    and differs from the same step inside the sequence (the state matters)."""
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.reference import run_reference_sequence

    path = _write(tmp_path, name, FIRMWARE_MODELS[name][0]())
    out = tmp_path / "out"
    report = build(path, out, BuildOptions(target="c", rounding=mode, werror=True))
    steps = _steps(import_tflite(path), 1)
    got = run_firmware_sequence(out, report, steps)
    want = run_reference_sequence(path, steps, mode)
    assert len(got) == len(steps)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g[0].tobytes() == np.asarray(w[0]).tobytes(), f"step {k}"
    alone = run_firmware_sequence(out, report, [steps[3]])
    assert alone[0][0].tobytes() == np.asarray(run_reference_sequence(path, [steps[3]], mode)[0][0]).tobytes()
    assert alone[0][0].tobytes() != got[3][0].tobytes()
