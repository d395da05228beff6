"""Every op the compiler supports, built into firmware and run on the emulator, byte for byte against
LiteRT's reference kernels: the single-op models of tests/modelgen.py (random quantization parameters,
int8 and uint8), with the NPU+CPU target list, on a random input and on the extremes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import modelgen
from edgesdk.compiler import BuildOptions, build
from edgesdk.reference import run_reference
from edgesdk.runner import load_report, random_inputs, run_inference
from test_end_to_end import extreme_inputs


@pytest.fixture(scope="module")
def single_op_builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("ops_e2e")
    jobs = []
    for name, data in modelgen.single_op_suite(seed=0):
        path = root / f"{name}.tflite"
        path.write_bytes(data)
        jobs.append((name, path, root / name))
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda job: build(job[1], job[2], BuildOptions(target="npu,c")), jobs))
    return [(name, out, report) for (name, _, out), report in zip(jobs, reports)]


@pytest.mark.slow
def test_single_op_firmware_bit_exact(single_op_builds):
    problems = []
    for name, out, _ in single_op_builds:
        if "tflm_only" in name:  # LiteRT's reference op resolver has no such kernel (tests/test_kernels.py)
            continue
        report = load_report(out)
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
def test_npu_takes_the_layer_ops(single_op_builds):
    on_npu = {name for name, _, report in single_op_builds if any(op["target"] == "npu" for op in report["ops"])}
    for expected in ("conv_dilated", "depthwise_multiplier2", "fc_per_channel", "max_pool_valid", "avg_pool_same",
                     "add_broadcast", "mul_same_shape"):
        assert expected in on_npu, f"{expected} did not run on the NPU"
