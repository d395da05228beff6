"""Every op the compiler supports, built into firmware and run on the emulator, byte for byte against
LiteRT's reference kernels: the single-op models of tests/modelgen.py (random quantization parameters,
int8 and uint8), with the NPU+CPU target list, on a random input and on the extremes."""

from __future__ import annotations

import numpy as np
import pytest

import modelgen
from edgesdk.compiler import BuildOptions, build
from edgesdk.reference import run_reference
from edgesdk.runner import load_report, random_inputs, run_inference
from test_end_to_end import extreme_inputs


SUITE = list(modelgen.single_op_suite(seed=0))


@pytest.fixture(scope="session")
def single_op_build(session_builds):
    """name -> (build directory, report) of that single-op model built for npu,c, once per session (any worker):
    each model is a test of its own, so pytest-xdist spreads the builds over its workers."""
    models = dict(SUITE)

    def get(name: str):
        def make(out):
            (out / f"{name}.tflite").write_bytes(models[name])
            build(out / f"{name}.tflite", out / "build", BuildOptions(target="npu,c"))

        out = session_builds(f"ops_e2e-{name}", make) / "build"
        return out, load_report(out)

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, _ in SUITE])
def test_single_op_firmware_bit_exact(single_op_build, name):
    out, report = single_op_build(name)  # every model builds
    if "tflm_only" in name:  # LiteRT's reference op resolver has no such kernel (tests/test_kernels.py)
        return
    problems = []
    for label, inputs in (("random", random_inputs(report, 3)), ("min", extreme_inputs(report, "min")),
                          ("max", extreme_inputs(report, "max"))):
        result = run_inference(out, inputs)
        if result.exit_code != 0:
            problems.append(f"{name} {label}: exit {result.exit_code} {result.uart!r}")
            continue
        expected = run_reference(out / "model.tflite", inputs, "ref")
        for want, got in zip(expected, result.outputs):
            # reshape(-1) first: a 0-d int32 output cannot be viewed as bytes directly
            diff = np.count_nonzero(np.asarray(want).reshape(-1).view(np.uint8) != got.reshape(-1).view(np.uint8))
            if diff:
                problems.append(f"{name} {label}: {diff} bytes differ")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_npu_takes_the_layer_ops(single_op_build):
    for expected in ("conv_dilated", "depthwise_multiplier2", "fc_per_channel", "max_pool_valid", "avg_pool_same",
                     "add_broadcast", "mul_same_shape"):
        _, report = single_op_build(expected)
        assert any(op["target"] == "npu" for op in report["ops"]), f"{expected} did not run on the NPU"
