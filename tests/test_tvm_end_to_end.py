"""End to end through TVM: ONNX QDQ models and a Relax module -> firmware -> emulator, against references.

Figures printed here are the ones docs/tvm-interop.md quotes (pytest -s shows them).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed: pip install '.[tvm]' (docs/tvm-interop.md)")
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: pip install '.[tvm]'")

import onnx_models  # noqa: E402
from conftest import model_path  # noqa: E402
from edgesdk.cli import main as cli_main  # noqa: E402
from edgesdk.compiler import BuildOptions, build, build_from_relax  # noqa: E402
from edgesdk.reference import run_reference  # noqa: E402
from edgesdk.runner import load_report, random_inputs, run_inference  # noqa: E402

pytestmark = pytest.mark.slow
RUNS = int(os.environ.get("EDGESDK_TVM_RUNS", "8"))  # inputs per comparison (docs quote a 100-input run)


def _lsb_differences(y, ref, scale):
    return np.rint(np.abs(y.astype(np.float64) - ref.astype(np.float64)) / scale).astype(int)


def test_onnx_qdq_conv_net_runs_on_the_npu_and_matches_onnxruntime(tmp_path, capsys):
    model = onnx_models.conv_net_qdq(tmp_path)
    out = tmp_path / "fw"
    assert cli_main(["build", str(model), "--target", "npu,c", "-o", str(out), "--werror"]) == 0
    report = load_report(out)
    targets = {(op["type"], op["target"]) for op in report["ops"]}
    # the layout transpose (imported through TVM) runs as strided DMA, like a TFLite TRANSPOSE
    assert {("TRANSPOSE", "npu"), ("CONV_2D", "npu"), ("ADD", "npu"), ("MAX_POOL_2D", "npu"),
            ("FULLY_CONNECTED", "npu")} <= targets
    assert (out / "model.onnx").is_file()
    scale = float(onnx_models_output_scale(model))
    rng = np.random.default_rng(7)
    worst = {"as written": 0, "optimized": 0}
    exact = {"as written": 0, "optimized": 0}
    for _ in range(RUNS):
        x = rng.normal(0.0, 1.0, onnx_models.CONV_NET_INPUT).astype(np.float32)
        result = run_inference(out, [x])
        assert result.exit_code == 0 and result.cycles_of("npu") > 0
        for mode, optimize in (("as written", False), ("optimized", True)):
            ref = onnx_models.run_onnxruntime(model, {"x": x}, optimize=optimize)[0]
            lsb = _lsb_differences(result.outputs[0], ref, scale)
            worst[mode] = max(worst[mode], int(lsb.max()))
            exact[mode] += int(np.count_nonzero(lsb == 0))
    total = RUNS * 10
    with capsys.disabled():
        for mode in worst:
            print(f"\nconv net vs ONNX Runtime ({mode}): max {worst[mode]} LSB, {exact[mode]}/{total} outputs equal")
    # The QDQ graph as written (float ops between DequantizeLinear and QuantizeLinear) differs from the
    # integer pipeline only where a float result lies within rounding of a half step: at most 1 LSB.
    assert worst["as written"] <= 1
    assert worst["optimized"] <= 8  # ORT's fused QLinear kernels differ from its own unfused run as much


def onnx_models_output_scale(model):
    import onnx

    inits = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(str(model)).graph.initializer}
    return inits["y_scale"]


def test_long_tail_ops_lowered_through_tvm_are_bit_exact_with_onnxruntime(tmp_path):
    model = onnx_models.long_tail_qdq(tmp_path / "long_tail.onnx")
    out = tmp_path / "fw"
    report = build(model, out, BuildOptions(target="npu,c", werror=True))
    assert [(op["type"], op["target"]) for op in report["ops"]][2:] == [("SUB", "c"), ("ABS", "c")]
    source = (out / "src" / "model_tvm.c").read_text()
    assert "tvmgen_sub_2(" in source and "tvmgen_abs_3(" in source
    for seed in range(RUNS):
        rng = np.random.default_rng(seed)
        a, b = (rng.uniform(-2.5, 2.5, onnx_models.LONG_TAIL_SHAPE).astype(np.float32) for _ in range(2))
        y = run_inference(out, [a, b]).outputs[0]
        for optimize in (False, True):
            ref = onnx_models.run_onnxruntime(model, {"a": a, "b": b}, optimize=optimize)[0]
            assert np.array_equal(y.view(np.uint32), ref.view(np.uint32)), (seed, optimize)


def test_relax_module_from_python_builds_bit_exact_with_litert(tmp_path):
    """A Relax IRModule (here: TVM's TFLite frontend on KWS) built with build_from_relax runs bit-exact with
    LiteRT's reference kernels: the QDQ patterns recover TFLite's integer ops exactly."""
    import tflite
    from tvm.relax.frontend.tflite import from_tflite

    path = model_path("kws")
    mod = from_tflite(tflite.Model.GetRootAsModel(path.read_bytes(), 0))
    out = tmp_path / "fw"
    report = build_from_relax(mod, out, BuildOptions(werror=True), name="kws")
    assert sum(op["target"] == "npu" for op in report["ops"]) == 12
    assert (out / "model.relax.py").is_file()
    for seed in range(3):
        inputs = random_inputs(report, seed)
        y = run_inference(out, inputs).outputs
        ref = run_reference(path, inputs)
        assert all(np.array_equal(a.reshape(-1), b.reshape(-1)) for a, b in zip(y, ref))
