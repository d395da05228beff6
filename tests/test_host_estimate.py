"""The host core's per-layer estimate (report.json `layers`, Target.estimate_layers of the C target) against the
instructions `edgesdk run --profile` measures per block on the emulator, per kernel family, on small real
models: KWS (the int8 fast kernels: paired convolutions, the sliding depthwise kernel, the average pool and a
cascade group; its FC and softmax are too small to compare), DS-CNN S int16 (the 16x8 kernels) and MobileNet
v1 0.25 uint8 (the reference loops a filter zero point takes, the edge conversions, a 1,001-class softmax)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, model_path

# A family's estimate (its layers' together) must be within this of its measure; per block, the wider one.
# Measured when written: families within 0.97-1.02 but KWS's sliding depthwise layers at 1.10 (the stripe
# search's calibration, kernel_cost.py); blocks of 20,000 instructions or more within 15 %
# (docs/performance.md, "The host's per-layer estimate").
FAMILY_TOLERANCE = 0.15
BLOCK_TOLERANCE = 0.30
SMALL_BLOCK = 20_000  # instructions: below, a block's call set-up and guard checks dominate


def _edgesdk(*args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=1800)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc


def estimate_against_profile(profile: dict) -> list:
    """(family, estimated, measured) per host block of the profile: its layers' estimates summed (the profile
    holds the build's report.json figures per layer); a block of one layer is its op type's family (each
    model here has one dtype), a cascade group's "group"."""
    rows = []
    for step in profile["steps"]:
        if step["target"] != "c":
            continue
        layers = [layer for layer in profile["layers"] if layer["step"] == step["step"]]
        assert sorted(layer["index"] for layer in layers) == sorted(step["layers"])
        family = "group" if len(layers) > 1 else layers[0]["type"]
        rows.append((family, sum(layer["estimate"]["count"] for layer in layers), step["instructions"]))
    return rows


def check_families(rows: list) -> dict:
    """{family: estimated / measured} of the families large enough to compare, asserting the tolerances."""
    totals = {}
    for family, estimated, measured in rows:
        e, m = totals.get(family, (0, 0))
        totals[family] = (e + estimated, m + measured)
        if measured >= SMALL_BLOCK:
            assert abs(estimated / measured - 1) <= BLOCK_TOLERANCE, (family, estimated, measured)
    ratios = {}
    for family, (estimated, measured) in totals.items():
        if measured < SMALL_BLOCK:
            continue
        ratios[family] = estimated / measured
        assert abs(ratios[family] - 1) <= FAMILY_TOLERANCE, (family, estimated, measured)
    return ratios


def test_the_check_fails_on_an_estimate_off_by_two():
    rows = [("CONV_2D", 1_000_000, 1_000_000), ("group", 30_000, 31_000)]
    check_families(rows)
    for wrong in (2.0, 0.5):
        with pytest.raises(AssertionError):
            check_families([(f, int(e * wrong) if f == "CONV_2D" else e, m) for f, e, m in rows])
    with pytest.raises(AssertionError):  # a family within tolerance overall, one large block of it not
        check_families(rows + [("CONV_2D", 100_000, 250_000), ("CONV_2D", 400_000, 250_000)])


@pytest.mark.slow
@pytest.mark.parametrize("model, families", [
    ("kws", {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "group"}),
    ("ds_cnn_int16", {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D"}),
    ("mobilenet_uint8", {"CONV_2D", "DEPTHWISE_CONV_2D", "SOFTMAX", "QUANTIZE"}),
])
def test_host_estimate_is_close_to_the_emulator_per_kernel_family(model, families, tmp_path):
    out = tmp_path / "out"
    _edgesdk("build", model_path(model), "--target", "c", "-o", out, "-q")
    result = json.loads(_edgesdk("run", out, "--random-input", "1", "--profile", "--json",
                                 "--output-dir", tmp_path / "run").stdout)
    ratios = check_families(estimate_against_profile(result["profile"]))
    assert families <= set(ratios), ratios  # the families this model is here for were large enough to compare
    print(model, {family: round(ratio, 3) for family, ratio in sorted(ratios.items())})


@pytest.mark.slow
def test_max_pool_estimate_follows_its_clipped_windows(tmp_path):
    """A 3x3 stride-2 SAME max pool over 33x33x24 (its edge windows clipped to 2x3, 3x2 and 2x2 taps): the
    estimate (kernel_cost.max_pool_instructions) counts the taps the kernel visits, not whole windows."""
    from modelgen import SAME, pool_model

    model = tmp_path / "max_pool.tflite"
    model.write_bytes(pool_model("MAX_POOL_2D", (1, 33, 33, 24), (3, 3), (2, 2), SAME, (0.05, -3)))
    out = tmp_path / "out"
    _edgesdk("build", model, "--target", "c", "-o", out, "-q")
    result = json.loads(_edgesdk("run", out, "--random-input", "1", "--profile", "--json",
                                 "--output-dir", tmp_path / "run").stdout)
    ratios = check_families(estimate_against_profile(result["profile"]))
    assert abs(ratios["MAX_POOL_2D"] - 1) <= 0.05, ratios  # 1.01 when written; the generic model said 0.15
