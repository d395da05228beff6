"""End to end, as a user runs it: `edgesdk build` then `edgesdk run` on every shared model, for the NPU+CPU
and the CPU-only targets, compared byte for byte with LiteRT's reference kernels (BUILTIN_REF).

Each (model, target) is built once per session; inputs are seeded random plus the extremes (all min, all max).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import LARGE_MODELS, SHARED_MODELS, model_path
from edgesdk.cli import main as cli_main
from edgesdk.reference import run_reference
from edgesdk.runner import NUMPY_DTYPES, load_report, random_inputs, run_inference

TARGETS = {"npu": "npu,c", "cpu": "c"}
RANDOM_SEEDS = (0, 1, 2)


@pytest.fixture(scope="session")
def built(session_builds):
    """(model name, target key) -> build directory, built on first use by any worker (-Werror: generated C has
    no warnings)."""

    def get(name: str, target_key: str):
        def make(out):
            code = cli_main(["build", str(model_path(name)), "--board", "riscv-npu", "--target", TARGETS[target_key],
                             "-o", str(out / "build"), "--werror"])
            assert code == 0, f"build of {name} for {TARGETS[target_key]} failed"

        return session_builds(f"end_to_end-{name}-{target_key}", make) / "build"

    return get


def extreme_inputs(report: dict, which: str) -> list:
    result = []
    for spec in report["io"]["inputs"]:
        dtype = NUMPY_DTYPES[spec["dtype"]]
        if spec["dtype"] == "float32":
            value = -1.0 if which == "min" else 1.0
        elif spec["dtype"] == "bool":
            value = which == "max"
        else:
            value = np.iinfo(dtype).min if which == "min" else np.iinfo(dtype).max
        result.append(np.full(spec["shape"], value, dtype=dtype))
    return result


def assert_bit_exact(build_dir, inputs, label):
    result = run_inference(build_dir, inputs)
    assert result.exit_code == 0, result.uart
    expected = run_reference(model_path_of(build_dir), inputs, "ref")
    for k, (want, got) in enumerate(zip(expected, result.outputs)):
        assert want.dtype == got.dtype and want.shape == got.shape, f"{label}: output {k} type/shape"
        diff = np.count_nonzero(want.view(np.uint8) != got.view(np.uint8))
        assert diff == 0, f"{label}: output {k} differs from BUILTIN_REF in {diff} bytes"
    return result


def model_path_of(build_dir):
    return build_dir / "model.tflite"


@pytest.mark.slow
@pytest.mark.parametrize("target_key", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_bit_exact_against_litert_reference(built, name, target_key):
    build_dir = built(name, target_key)
    report = load_report(build_dir)
    cases = [(f"seed {s}", random_inputs(report, s)) for s in RANDOM_SEEDS]
    cases += [(f"all {w}", extreme_inputs(report, w)) for w in ("min", "max")]
    for label, inputs in cases:
        assert_bit_exact(build_dir, inputs, f"{name}/{target_key}/{label}")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_npu_build_uses_the_npu_and_reports_every_op(built, name):
    report = load_report(built(name, "npu"))
    assert {"index", "type", "target", "reason"} <= set(report["ops"][0])
    assert report["memory"]["sram_peak_bytes"] > 0 and report["memory"]["flash_bytes"] > 0
    on_npu = [op for op in report["ops"] if op["target"] == "npu"]
    heavy = [op for op in report["ops"] if op["type"] in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")]
    if heavy:
        assert on_npu, f"{name}: no op placed on the NPU"
        assert report["target_reports"]["npu"]["cycles"] > 0
    for op in report["ops"]:
        if op["target"] != "npu":
            assert op["reason"], f"{name}: op {op['index']} is off the NPU without a reason"


@pytest.mark.slow
def test_cpu_only_build_has_no_npu_tables(built):
    report = load_report(built("kws", "cpu"))
    assert all(op["target"] == "c" for op in report["ops"])
    assert "npu" not in report["target_reports"]


@pytest.mark.slow
def test_run_cli_writes_outputs_and_json(built, tmp_path, capsys):
    build_dir = built("kws", "npu")
    capsys.readouterr()  # what the build printed, if this test is the first to need it
    report = load_report(build_dir)
    x = random_inputs(report, 5)[0]
    np.save(tmp_path / "x.npy", x)
    code = cli_main(["run", str(build_dir), "--input", str(tmp_path / "x.npy"), "--output-dir", str(tmp_path / "out"), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary) >= {"outputs", "cpu_instructions", "peripheral_cycles", "exit_code"}
    y = np.load(tmp_path / "out" / "output_0.npy")
    assert y.tolist() == np.asarray(summary["outputs"][0]["values"]).reshape(y.shape).tolist()
    assert summary["exit_code"] == 0 and summary["peripheral_cycles"]["npu0"] > 0 and summary["cpu_instructions"] > 0
    # deterministic: the same run gives the same counters
    code = cli_main(["run", str(build_dir), "--input", str(tmp_path / "x.npy"), "--output-dir", str(tmp_path / "out2"), "--json"])
    again = json.loads(capsys.readouterr().out)
    assert (again["cpu_instructions"], again["peripheral_cycles"]) == (summary["cpu_instructions"], summary["peripheral_cycles"])


# TFLite Micro cannot run the uint8 MobileNet ("Hybrid models are not supported"); every other shared model.
TFLM_MODELS = ["kws", "vww", "ic", "ad", "micro_speech", "hello_world", "simple_add", "ds_cnn_float_io", "har",
               "ds_cnn_int16"]


@pytest.mark.slow
@pytest.mark.parametrize("name", TFLM_MODELS)
def test_rounding_tflm_matches_tflite_micro(tmp_path, name):
    out = tmp_path / "build"
    assert cli_main(["build", str(model_path(name)), "--rounding", "tflm", "-o", str(out), "--json"]) == 0
    report = load_report(out)
    for seed in (0, 1):
        inputs = random_inputs(report, seed)
        result = run_inference(out, inputs)
        expected = run_reference(out / "model.tflite", inputs, "tflm")
        for want, got in zip(expected, result.outputs):
            assert np.array_equal(want.reshape(got.shape).view(np.uint8), got.view(np.uint8)), f"{name} seed {seed}"


# The large models (tests/conftest.py LARGE_MODELS) on riscv-npu (512 KiB SRAM, 4 MiB flash), which they fit
# through cascades and in-place ops (issue 13): each on the NPU, and the SSD detector (HARD_SWISH, MUL, QUANTIZE,
# LOGISTIC, CONCATENATION of reshaped heads) on the CPU alone too, where its paired conv weights would overflow
# the flash unless its largest layers keep the compact layout. The CPU-only MobileNetV2 is in
# tests/test_cascade_host.py. scripts/check_shared_models.py runs every target x rounding x seed
# (docs/shared-models.md).
LARGE_CASES = [(name, "npu,c") for name in sorted(LARGE_MODELS)] + [("ssd_mobilenet_v3", "c")]


@pytest.mark.slow
@pytest.mark.parametrize("name,target", LARGE_CASES)
def test_large_models_bit_exact_on_riscv_npu(tmp_path, name, target):
    out = tmp_path / "build"
    assert cli_main(["build", str(model_path(name)), "--target", target, "-o", str(out), "--werror"]) == 0
    report = load_report(out)
    assert report["board"] == "riscv-npu" and report["memory"]["sram_peak_bytes"] <= 512 * 1024
    assert_bit_exact(out, random_inputs(report, 0), f"{name}/{target}/seed 0")
