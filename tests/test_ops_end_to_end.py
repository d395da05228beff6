"""Every op the compiler supports, built into firmware and run on the emulator, byte for byte against
LiteRT's reference kernels: the single-op models of tests/modelgen.py (random quantization parameters,
int8 and uint8), with the NPU+CPU target list, on a random input and on the extremes. The models are built
BATCH at a time into one firmware image, each under a name of its own (tests/image_batches.py): one firmware
build and three boots per batch instead of per model."""

from __future__ import annotations

import numpy as np
import pytest

import modelgen
from edgesdk.compiler import BuildOptions, build
from edgesdk.reference import run_reference
from edgesdk.runner import load_report, random_inputs
from image_batches import batch, link_and_run, load_runs
from test_end_to_end import extreme_inputs


SUITE = list(modelgen.single_op_suite(seed=0))
NAMES = [name for name, _ in SUITE]
BATCH = 16  # single-op models per firmware image
CASES = {"random": lambda report: random_inputs(report, 3), "min": lambda report: extreme_inputs(report, "min"),
         "max": lambda report: extreme_inputs(report, "max")}


@pytest.fixture(scope="session")
def single_op_build(session_builds):
    """name -> (build directory, report, {case: (status, outputs, uart)}) of that single-op model, built for npu,c
    in its batch's firmware image, once per session (any worker) and run on each case."""
    models = dict(SUITE)

    def get(name: str):
        index, members = batch(NAMES, name, BATCH)

        def make(out):
            for k, member in enumerate(members):
                (out / f"{member}.tflite").write_bytes(models[member])
                build(out / f"{member}.tflite", out / member,
                      BuildOptions(target="npu,c", name=f"m{k}", compile_firmware=False))
            reports = {member: load_report(out / member) for member in members}
            link_and_run(out, {member: out / member for member in members},
                         {label: {member: inputs(reports[member]) for member in members}
                          for label, inputs in CASES.items()})

        out = session_builds(f"ops_e2e-batch{index}", make)
        runs = load_runs(out)
        return out / name, load_report(out / name), {label: runs[label][name] for label in CASES}

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_single_op_firmware_bit_exact(single_op_build, name):
    out, report, runs = single_op_build(name)  # every model builds
    if "tflm_only" in name:  # LiteRT's reference op resolver has no such kernel (tests/test_kernels.py)
        return
    problems = []
    for label, make_inputs in CASES.items():
        status, outputs, uart = runs[label]
        if status != 0:
            problems.append(f"{name} {label}: exit {-status} {uart!r}")
            continue
        expected = run_reference(out / "model.tflite", make_inputs(report), "ref")
        assert len(outputs) == len(expected)
        for want, got in zip(expected, outputs):
            # reshape(-1) first: a 0-d int32 output cannot be viewed as bytes directly
            diff = np.count_nonzero(np.asarray(want).reshape(-1).view(np.uint8) != got.reshape(-1).view(np.uint8))
            if diff:
                problems.append(f"{name} {label}: {diff} bytes differ")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_npu_takes_the_layer_ops(single_op_build):
    for expected in ("conv_dilated", "depthwise_multiplier2", "fc_per_channel", "max_pool_valid", "avg_pool_same",
                     "add_broadcast", "mul_same_shape"):
        _, report, _ = single_op_build(expected)
        assert any(op["target"] == "npu" for op in report["ops"]), f"{expected} did not run on the NPU"
