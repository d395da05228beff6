"""Shared fixtures: the externally-made models in ../shared/models (see its MANIFEST.tsv)."""

from __future__ import annotations

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
