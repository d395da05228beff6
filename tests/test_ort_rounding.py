"""--rounding ort: bit-exact with ONNX Runtime's CPU execution of QDQ models made by its own quantizer.

The corpus (tests/models/onnx, written by tests/models/make_onnx_models.py with onnxruntime's quantize_static) covers
Conv, depthwise Conv, Gemm, MatMul, Add, Mul, MaxPool, AveragePool, GlobalAveragePool, Concat, Relu, Clip, Sigmoid
and LeakyRelu, with uint8 and int8 activations and per-tensor and per-channel weights.

* host level (every model edgesdk accepts, every check case of tests/ort_corpus.py): the C target's generated
  calls run on the host kernels, compared byte for byte with ONNX Runtime's outputs;
* the models edgesdk refuses are exactly those the manifest lists, for the reason it records;
* firmware (slow, a few models): built, run on the emulator, compared with ONNX Runtime (and `edgesdk run --check`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: pip install '.[tvm]'")
pytest.importorskip("tvm", reason="apache-tvm is not installed: pip install '.[tvm]' (docs/tvm-interop.md)")

import ort_corpus as oc  # noqa: E402
from edgesdk.errors import UnsupportedOpError  # noqa: E402

ENTRIES = oc.models()
ISSUE_OPS = {"Conv", "Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul", "Concat",
             "Relu", "Clip", "Sigmoid", "LeakyRelu"}


def _entry(file: str) -> dict:
    return next(e for e in ENTRIES if e["file"] == file)


def test_corpus_is_what_the_manifest_lists_and_stays_small():
    assert {p.name for p in oc.ONNX_DIR.glob("*.onnx")} == {e["file"] for e in ENTRIES}
    for e in ENTRIES:
        data = oc.path(e).read_bytes()
        assert hashlib.sha256(data).hexdigest() == e["sha256"], e["file"]
        assert len(data) < 16 * 1024, e["file"]
    assert sum(oc.path(e).stat().st_size for e in ENTRIES) < 512 * 1024


def test_corpus_covers_the_ops_of_the_issue_in_models_edgesdk_builds():
    built = [e for e in ENTRIES if oc.buildable(e)]
    assert ISSUE_OPS <= {op for e in built for op in e["ops"]}  # Clip: folded into the output range
    assert {"depthwise3x3", "gemm", "matmul", "global_avgpool", "concat_inputs", "net_issue12", "net_mixed"} <= \
        {e["spec"] for e in built}
    assert {e["activation"] for e in built} == {"uint8", "int8"}
    assert any(e["per_channel"] for e in built)
    fused = {k for e in built for k in e["ort_kernels"]}
    assert {"QLinearConv", "QGemm", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearAveragePool",
            "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu"} <= fused
    assert {"Add", "Mul"} <= fused  # groups ONNX Runtime keeps in float32 (int8 tensors read by several ops)


def test_onnxruntime_fuses_the_groups_the_manifest_recorded():
    """The corpus's expectations hold for the installed ONNX Runtime (its fusions are what --rounding ort models)."""
    import onnxruntime
    import sys

    sys.path.insert(0, str(oc.ONNX_DIR.parent))
    import make_onnx_models

    changed = [e["file"] for e in ENTRIES if make_onnx_models.ort_kernels(oc.path(e)) != e["ort_kernels"]]
    assert not changed, f"ONNX Runtime {onnxruntime.__version__} fuses these differently: {changed}"


def test_models_refused_are_those_listed_with_the_reason():
    from edgesdk.importer.onnx_importer import import_model
    from edgesdk.importer.ort_plan import prepare

    problems = []
    for e in ENTRIES:
        try:
            prepare(import_model(oc.path(e)))
            refusal = None
        except UnsupportedOpError as exc:
            refusal = str(exc)
        if oc.buildable(e) != (refusal is None):
            problems.append(f"{e['file']}: manifest says buildable={oc.buildable(e)}, got {refusal!r}")
        elif refusal is not None:
            assert refusal.startswith(e["ort_refusal"]), e["file"]
            assert "float32 (not fused" in refusal and "QuantType.QUInt8" in refusal and "--rounding ref" in refusal
    assert not problems, "\n".join(problems)
    refused = {e["file"] for e in ENTRIES if not oc.buildable(e)}
    assert refused and all("_s8" in f for f in refused)  # only int8 activations that fan out run as float Conv


@pytest.fixture(scope="module")
def host():
    """Every accepted model's graph, compiled into one host library (a single C compile)."""
    graphs = {e["file"]: oc.import_for_ort(oc.path(e)) for e in ENTRIES if oc.buildable(e)}
    runnable = {f: g for f, g in graphs.items() if oc.HostGraphs.runnable(g)}
    return runnable, oc.HostGraphs(list(runnable.values()))


def test_host_bit_exact_with_onnxruntime(host):
    graphs, library = host
    # every accepted model but the LeakyRelu ones (lowered through TVM: the firmware test runs them)
    assert len(graphs) == sum(oc.buildable(e) for e in ENTRIES) - 3
    problems = []
    for file, graph in graphs.items():
        entry = _entry(file)
        scales = oc.input_scales(oc.path(entry))
        for case in range(len(oc.CASES)):
            feeds = oc.inputs(entry, case, scales)
            expected = oc.onnxruntime_outputs(oc.path(entry), feeds)
            got = library.run(graph, [feeds[t.name] if t.name in feeds else list(feeds.values())[k]
                                      for k, t in enumerate(graph.inputs)])
            for k, (want, have) in enumerate(zip(expected, got)):
                if not oc.same_bits(np.asarray(want, np.float32), np.asarray(have)):
                    problems.append(f"{file} [{oc.CASES[case]} {case}] output {k}: "
                                    f"{int(np.count_nonzero(np.asarray(want).reshape(-1) != np.asarray(have).reshape(-1)))} differ")
    assert not problems, "\n".join(problems[:40])


def test_host_run_detects_a_one_step_change(host):
    """The comparison can fail: the same graph run on a nudged input no longer matches ONNX Runtime's output."""
    graphs, library = host
    graph = graphs["conv3x3_u8.onnx"]
    entry = _entry("conv3x3_u8.onnx")
    feeds = oc.inputs(entry, 0)
    want = oc.onnxruntime_outputs(oc.path(entry), feeds)[0]
    assert oc.same_bits(want, library.run(graph, [feeds["x"]])[0])
    feeds["x"] = feeds["x"].copy()
    feeds["x"].reshape(-1)[0] += 0.25
    assert not oc.same_bits(want, library.run(graph, [feeds["x"]])[0])


FIRMWARE = ("net_mixed_u8.onnx", "net_issue12_u8_pc.onnx", "elementwise_fanout_s8.onnx", "leaky_relu_s8.onnx")


@pytest.mark.slow
@pytest.mark.parametrize("file", FIRMWARE)
def test_firmware_bit_exact_with_onnxruntime(file, tmp_path):
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.runner import run_inference

    entry = _entry(file)
    out = tmp_path / "fw"
    build(oc.path(entry), out, BuildOptions(rounding="ort"))
    scales = oc.input_scales(oc.path(entry))
    problems = []
    for case in range(0, len(oc.CASES), 2 if file != FIRMWARE[0] else 1):
        feeds = oc.inputs(entry, case, scales)
        result = run_inference(out, list(feeds.values()))
        assert result.exit_code == 0
        for want, got in zip(oc.onnxruntime_outputs(oc.path(entry), feeds), result.outputs):
            if not oc.same_bits(np.asarray(want, np.float32), got):
                problems.append(f"[{oc.CASES[case]} {case}]: {want.reshape(-1)[:8]} != {got.reshape(-1)[:8]}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_cli_build_and_run_check_with_onnxruntime(tmp_path, capsys):
    from edgesdk.cli import main

    out = tmp_path / "fw"
    assert main(["build", str(oc.path(_entry("net_issue12_u8.onnx"))), "--rounding", "ort", "-o", str(out)]) == 0
    assert (out / "model.onnx").is_file()
    capsys.readouterr()
    assert main(["run", str(out), "--random-input", "5", "--check"]) == 0
    assert "reference (ONNX Runtime CPU (ORT_ENABLE_ALL)): bit-exact" in capsys.readouterr().out
    refused = tmp_path / "refused"
    assert main(["build", str(oc.path(_entry("net_issue12_s8.onnx"))), "--rounding", "ort", "-o", str(refused)]) == 3
    assert not refused.exists()
