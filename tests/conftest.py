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
}


@pytest.fixture(scope="session")
def models_dir() -> Path:
    if not MODELS_DIR.is_dir():
        pytest.fail(f"shared models not found at {MODELS_DIR}")
    return MODELS_DIR


def model_path(name: str) -> Path:
    return MODELS_DIR / SHARED_MODELS[name]
