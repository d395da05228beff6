"""Checks the firmware tests share: a built firmware run on the emulator, compared with the reference."""

from __future__ import annotations

import numpy as np

from edgesdk.reference import run_reference
from edgesdk.runner import random_inputs, run_inference


def assert_runs_bit_exact(build_dir, report: dict, model, seeds=(0, 1), timeout_s: float = 120.0):
    """Per seed: the firmware in build_dir (built from `model`, its build report `report`) runs a seeded random
    input to exit 0, and every output equals LiteRT's reference kernels' (BUILTIN_REF) byte for byte. Returns
    the last seed's run (its cycle counts)."""
    for seed in seeds:
        inputs = random_inputs(report, seed)
        result = run_inference(build_dir, inputs, timeout_s=timeout_s)
        assert result.exit_code == 0, result.uart
        want = run_reference(model, inputs, "ref")
        assert len(result.outputs) == len(want), f"seed {seed}: {len(result.outputs)} outputs, reference {len(want)}"
        for k, (got, expected) in enumerate(zip(result.outputs, want)):
            assert np.array_equal(got, expected), f"seed {seed}: output {k} differs from the reference"
    return result
