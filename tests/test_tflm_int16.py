"""benchmarks/tflm_int16.py: TFLite Micro's int16 reference kernels as the anchor of issue 13's int16 goal."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
OPS = Path(__file__).resolve().parent / "models" / "ops"


def _module():
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("tflm_int16", BENCHMARKS / "tflm_int16.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(model, op, tflm, ours, checked="LiteRT"):
    return {"model": model, "op": op, "macs": 10, "tflm_instructions": tflm, "edgesdk_instructions": ours,
            "ratio": ours / tflm, "checked_against": checked}


def test_goal_is_a_third_of_tflite_micro_per_op_and_model():
    t = _module()
    rows = [_row("a", "CONV_2D", 900, 200), _row("a", "FULLY_CONNECTED", 90, 40), _row("b", "CONV_2D", 300, 120)]
    ops = {g["op"]: g for g in t.by_op(rows)}
    assert (ops["CONV_2D"]["tflm_instructions"], ops["CONV_2D"]["edgesdk_instructions"]) == (1200, 320)
    assert ops["CONV_2D"]["met"] and not ops["FULLY_CONNECTED"]["met"]
    assert ops["CONV_2D"]["worst_layer_ratio"] == pytest.approx(0.4)
    models = {g["model"]: g for g in t.by_model(rows)}
    assert models["a"]["edgesdk_instructions"] == 240 and models["a"]["met"]
    assert not t.by_model([_row("c", "CONV_2D", 30, 10, "NO")])[0]["checked"]


def test_harness_calls_tflite_micro_kernels_with_prepare_data():
    """The generated C++ calls the int16 kernels as TFLite Micro's Eval does: int64 accumulation for an int64 or
    missing bias, the per-channel FC for per-channel weights, the layer's own input."""
    from edgesdk.importer import import_tflite

    t = _module()
    layers = []
    for name in ("conv_3x3_same_int16", "fc_batch3_nobias_int16"):
        (op,) = import_tflite(OPS / f"{name}.tflite").ops
        layers.append((op, np.arange(op.inputs[0].num_elements, dtype=np.int16).reshape(op.inputs[0].shape)))
    source = t.harness_source(layers)
    assert "reference_integer_ops::ConvPerChannel<int64_t>(p, m0, s0" in source
    assert "reference_integer_ops::FullyConnectedPerChannel(p, m1, (const int*)s1" in source
    assert "(const int64_t*)nullptr" in source
    assert source.count("edgesdk_harness_mark(") == 1 + 4  # the definition, two marks per layer


@pytest.mark.slow
def test_tflite_micro_kernels_run_on_the_emulator_and_match_the_reference(tmp_path):
    t = _module()
    tree = t.source_tree(tmp_path)
    if tree is None:
        pytest.skip("TFLite Micro's sources are not on this machine (EDGESDK_TFLM_SRC / EDGESDK_GEMMLOWP_SRC)")
    result = t.compare([OPS / "conv_3x3_same_int16.tflite", OPS / "fc_batch3_nobias_int16.tflite"], work_dir=tmp_path)
    rows = {r["model"]: r for r in result["layers"]}
    assert rows["conv_3x3_same_int16.tflite"]["checked_against"] == "LiteRT"
    # LiteRT's reference FC rounds once, TFLite Micro's twice: checked against TFLite Micro's own interpreter.
    assert rows["fc_batch3_nobias_int16.tflite"]["checked_against"] == "TFLite Micro"
    conv = rows["conv_3x3_same_int16.tflite"]
    assert conv["tflm_instructions"] > 10 * conv["macs"]  # the reference kernel: > 10 instructions per MAC
    assert conv["edgesdk_instructions"] < conv["tflm_instructions"] / 3
