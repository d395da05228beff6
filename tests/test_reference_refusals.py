"""Models LiteRT itself refuses, and options no tensor bounds (issue 12, items 7 and 11).

Each case either builds under a documented reading (docs/reliability.md, 'Models the reference refuses') or
fails cleanly at build time; `edgesdk run --check` on one the reference refuses ends in a ModelError naming the
reference's refusal (exit code 2), never in "internal error". A pooling filter of 2^31 - 1 taps runs in a number
of instructions bounded by the tensor shapes (the C kernels compute a window's valid taps in closed form).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from modelgen import SAME, VALID, conv_model, pool_model

from edgesdk.reference import ReferenceRefused, run_reference

BIG = 2**31 - 1
Q = (0.05, 0)


def _conv(stride=(1, 1), dilation=(1, 1), padding=SAME):
    w = np.ones((4, 2, 2, 4), np.int8)
    return conv_model((1, 8, 8, 4), w, np.zeros(4, np.int32), Q, 0.01, (0.1, 0), stride, dilation, padding)


def _non_utf8_name() -> bytes:
    data = pool_model("MAX_POOL_2D", (1, 8, 8, 4), (2, 2), (2, 2), VALID, Q)
    assert data.count(b"t1") == 1  # the output tensor's name
    return data.replace(b"t1", b"\xff\xfe")


# name -> (model bytes, file name, what the build does: 0 = builds, 2 = refused as a ModelError)
CASES = {
    "padding 9": (pool_model("MAX_POOL_2D", (1, 8, 8, 4), (2, 2), (2, 2), 9, Q), "m.tflite", 2),
    "padding -1": (pool_model("AVERAGE_POOL_2D", (1, 8, 8, 4), (2, 2), (2, 2), -1, Q), "m.tflite", 2),
    "conv padding 9": (_conv(padding=9), "m.tflite", 2),
    "pool stride above INT16_MAX": (pool_model("MAX_POOL_2D", (1, 8, 8, 4), (2, 2), (40000, 40000), VALID, Q),
                                    "m.tflite", 0),
    "conv stride above INT16_MAX": (_conv(stride=(40000, 1)), "m.tflite", 0),
    "conv dilation above INT16_MAX": (_conv(dilation=(40000, 40000)), "m.tflite", 0),
    "pool filter 2^31 - 1, SAME": (pool_model("AVERAGE_POOL_2D", (1, 8, 8, 4), (BIG, BIG), (1, 1), SAME, Q),
                                   "m.tflite", 0),
    "non-UTF-8 tensor name": (_non_utf8_name(), "m.tflite", 0),
    "not named .tflite": (pool_model("MAX_POOL_2D", (1, 8, 8, 4), (3, 3), (1, 1), SAME, Q), "model.bin", 0),
}


def edgesdk(*args):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("name", sorted(CASES))
def test_litert_refused_cases_build_as_documented_or_fail_cleanly(name, tmp_path):
    data, file_name, expected = CASES[name]
    model = tmp_path / file_name
    model.write_bytes(data)
    proc = edgesdk("build", model, "--target", "c", "--no-firmware", "-o", tmp_path / "out")
    assert proc.returncode == expected, proc.stderr
    if expected:
        assert "padding code" in proc.stderr and not (tmp_path / "out").exists()
        return
    # The reference either runs the model or refuses it with a ReferenceRefused, never anything else.
    x = np.random.default_rng(0).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    try:
        run_reference(model, [x])
    except ReferenceRefused as err:
        assert "refuses to run" in str(err) and "\n" not in str(err)


def test_a_reference_refusal_is_a_model_error_not_a_crash(tmp_path):
    """LiteRT's prepare fails on a 2^31 - 1 pooling filter (RuntimeError inside the interpreter): that is
    a ReferenceRefused (exit code 2) naming the refusal."""
    model = tmp_path / "m.tflite"
    model.write_bytes(CASES["pool filter 2^31 - 1, SAME"][0])
    with pytest.raises(ReferenceRefused, match="LiteRT BUILTIN_REF refuses to run m.tflite .*AVERAGE_POOL_2D"):
        run_reference(model, [np.zeros((1, 8, 8, 4), np.int8)])
    assert ReferenceRefused("x").exit_code == 2


@pytest.mark.slow
def test_a_huge_pooling_filter_runs_in_work_bounded_by_the_shapes(tmp_path):
    """Issue 12 item 7: AVERAGE_POOL_2D with a 2^31 - 1 filter and SAME padding ran ~6e9 instructions on the C
    target (the window's taps were counted one by one). Now: 64 output pixels x 4 channels x 64 taps at most,
    ~1e5 instructions; `run --check` ends in the reference's refusal, exit code 2."""
    model = tmp_path / "m.tflite"
    model.write_bytes(CASES["pool filter 2^31 - 1, SAME"][0])
    out = tmp_path / "out"
    assert edgesdk("build", model, "--target", "c", "-o", out).returncode == 0
    proc = edgesdk("run", out, "--random-input", "1", "--json", "--timeout", "120")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["inference_instructions"] < 1_000_000, summary["inference_instructions"]
    y = np.load(out / "run" / "output_0.npy")
    assert y.shape == (1, 8, 8, 4)
    checked = edgesdk("run", out, "--random-input", "1", "--check")
    assert checked.returncode == 2 and "refuses to run" in checked.stderr, checked.stderr
