"""Shared fixtures: the externally-made models in ../shared/models (see its MANIFEST.tsv)."""

from __future__ import annotations

import fcntl
import os
import shutil
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
