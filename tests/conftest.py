"""Shared fixtures: the externally-made models in ../shared/models (see its MANIFEST.tsv)."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO.parent / "shared" / "models"

# name -> path relative to MODELS_DIR
SHARED_MODELS = {
    "kws": "mlcommons_tiny/kws_ref_model.tflite",
    "vww": "mlcommons_tiny/vww_96_int8.tflite",
    "ic": "mlcommons_tiny/pretrainedResnet_quant.tflite",
    "ad": "mlcommons_tiny/ad01_int8.tflite",
    "micro_speech": "tflite_micro/micro_speech_quantized.tflite",
    "hello_world": "tflite_micro/hello_world_int8.tflite",
    "simple_add": "tflite_micro/simple_add_model.tflite",
    "ds_cnn_float_io": "arm_ml_examples/ds_cnn_s_quantized.tflite",
    "mobilenet_uint8": "coral/mobilenet_v1_0.25_128_quant.tflite",
    "mobilenet_160_uint8": "coral/mobilenet_v1_0.5_160_quant.tflite",
    "har": "arm_ml_zoo/har_int8.tflite",
    "ds_cnn_int16": "arm_ml_zoo/ds_cnn_s_int16.tflite",
}
# Models whose activations do not fit the riscv-npu board's 512 KiB of SRAM yet (issue 13): they run on the
# riscv-npu-large board (4 MiB of SRAM, 16 MiB of flash). tests/test_end_to_end.py runs them in slow tests.
LARGE_MODELS = {
    "mobilenet_v2_224_uint8": "large/mobilenet_v2_1.0_224_inat_bird_quant.tflite",
    "ssd_mobilenet_v3": "large/ssd_mobilenet_v3_int8.tflite",
}
LARGE_BOARD = "riscv-npu-large"

# Configured CMake trees kept per board and flags (edgesdk/firmware_build/build_tree.py; a user's default is 4).
# The op corpus's 327 firmware builds cycle through 68 kernel file sets (2026-11-25): with 4 trees every session
# re-configures 127-137 of them, with 96 (under 1 MB each, in $EDGESDK_CACHE/cmake) a set is configured once
# and the next session re-configured 5 (docs/performance.md). Subprocesses (CLI runs) inherit it.
os.environ.setdefault("EDGESDK_BUILD_TREES", "96")


@pytest.fixture(scope="session")
def models_dir() -> Path:
    if not MODELS_DIR.is_dir():
        pytest.fail(f"shared models not found at {MODELS_DIR}")
    return MODELS_DIR


def model_path(name: str) -> Path:
    return MODELS_DIR / {**SHARED_MODELS, **LARGE_MODELS}[name]


@contextmanager
def _locked(lock_file: Path):
    with lock_file.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def session_builds(tmp_path_factory):
    """get(key, make) -> a directory that make(directory) filled once per test session, for every pytest-xdist
    worker: the first test to ask builds it (under a file lock), the others, on any worker, reuse it. For
    firmware several tests check without changing it (a test that writes into it must copy it first)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's directory, above each worker's own
    root = root / "session-builds"
    root.mkdir(exist_ok=True)

    def get(key: str, make) -> Path:
        out, done = root / key, root / f"{key}.done"
        with _locked(root / f"{key}.lock"):
            if not done.exists():
                shutil.rmtree(out, ignore_errors=True)  # a build that failed in another test
                out.mkdir()
                make(out)
                done.touch()
        return out

    return get


# ---- The order tests run in ------------------------------------------------------------------------------
# Seconds one slow test of a file takes on average (setup + call + teardown, measured per test in the whole
# suite's run with `-n 2`, an empty EDGESDK_CACHE, on 2 cores loaded ~5, 2026-11-25), for files whose slow
# tests are far from the default. In the files that build firmware images of several models
# (tests/image_batches.py) the test that asks for a batch first builds it and the others reuse it: the mean
# holds both. Only the order in which pytest-xdist hands tests out depends on these figures, never a result: a
# stale figure costs balance, not correctness.
SLOW_TEST_SECONDS = {
    "test_model_names_end_to_end.py": 15.2, "test_export.py": 13.9, "test_farm.py": 12.0,
    "test_cascade_host.py": 7.0, "test_ops_reduce.py": 6.7, "test_install.py": 6.1, "test_hil.py": 5.5,
    "test_report_html.py": 4.2, "test_end_to_end.py": 3.8, "test_host_estimate.py": 3.6,
    "test_firmware_build.py": 3.6, "test_reports.py": 2.9, "test_control_flow.py": 2.2, "test_ops_conv.py": 0.81,
    "test_op_corpus.py": 0.77, "test_ops_recurrent.py": 0.76, "test_ops_unary.py": 0.66, "test_cascade.py": 0.56,
    "test_ops_end_to_end.py": 0.46, "test_reproducible.py": 0.38, "test_ops_detection.py": 0.34,
    "test_npu_ops.py": 0.2, "test_hifive1.py": 0.3,  # its 78 corpus models in 3 QEMU images (branch qemuimg)
}
DEFAULT_SLOW_TEST_SECONDS = 1.5
FAST_TEST_SECONDS = 0.05
# Seconds of the longest non-slow tests of a file, summed (the 30 longest of the same run): added once when the
# file's non-slow tests run.
FAST_TESTS_EXTRA_SECONDS = {
    "test_target_plugins.py": 78, "test_kernels.py": 61, "test_fuzz.py": 45, "test_c_codegen.py": 40,
    "test_op_corpus.py": 35, "test_hifive1.py": 31, "test_ort_rounding.py": 25, "test_memory_plan.py": 21,
    "test_hil.py": 18, "test_memory_fit.py": 12, "test_ops_conv.py": 12, "test_ops_elementwise.py": 11,
    "test_ops_recurrent.py": 11, "test_output_safety.py": 11, "test_run_checks.py": 10, "test_cascade_prune.py": 10,
    "test_board_file.py": 10, "test_ops_unary.py": 9, "test_farm.py": 9, "test_reports.py": 8,
    "test_firmware_build.py": 8, "test_reliability.py": 8, "test_stripe_floor.py": 8, "test_ops_fixedpoint.py": 8,
    "test_target_names.py": 8, "test_cli_errors.py": 7, "test_npu_weight_codec.py": 7, "test_rounding.py": 6,
    "test_npu_ops.py": 5, "test_renode.py": 5, "test_ops_shape.py": 4,
}


def pytest_collection_modifyitems(config, items):
    """The files with the most work first, each file's tests in their own order. pytest-xdist hands tests out in
    this order, so the long end-to-end files start at once and both workers end on short unit tests together,
    instead of one idling while the other runs a late firmware build. A file stays in one piece, so its
    module-scoped fixtures (a firmware several tests check) are still set up once per worker."""
    work = defaultdict(float)
    fast_files = set()
    for item in items:
        if item.get_closest_marker("slow") is not None:
            work[item.path] += SLOW_TEST_SECONDS.get(item.path.name, DEFAULT_SLOW_TEST_SECONDS)
        else:
            work[item.path] += FAST_TEST_SECONDS
            fast_files.add(item.path)
    for path in fast_files:
        work[path] += FAST_TESTS_EXTRA_SECONDS.get(path.name, 0)
    items.sort(key=lambda item: -work[item.path])  # stable: ties and each file's tests keep pytest's order
