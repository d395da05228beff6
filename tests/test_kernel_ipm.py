"""benchmarks/kernel_ipm.py: grouping of per-layer instruction counts by op, dtype and kernel path."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "kernel_ipm.py"


def _module():
    spec = importlib.util.spec_from_file_location("kernel_ipm", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(op, dtype, kernel, macs, instructions):
    return {"op": op, "dtype": dtype, "kernel": kernel, "macs": macs, "instructions": instructions,
            "instructions_per_mac": instructions / macs}


def test_groups_sum_instructions_and_macs_per_kernel_and_dtype():
    ipm = _module()
    rows = [_row("CONV_2D", "int8", "paired", 100, 250), _row("CONV_2D", "int8", "paired", 300, 900),
            _row("CONV_2D", "int16", "blocked", 10, 45), _row("DEPTHWISE_CONV_2D", "int8", "sliding", 9, 45)]
    groups = {(g["op"], g["dtype"], g["kernel"]): g for g in ipm.group_kernels(rows)}
    paired = groups[("CONV_2D", "int8", "paired")]
    assert (paired["layers"], paired["macs"], paired["instructions"]) == (2, 400, 1150)
    assert paired["instructions_per_mac"] == pytest.approx(1150 / 400)
    assert (paired["lowest"], paired["highest"]) == (2.5, 3.0)
    assert groups[("CONV_2D", "int16", "blocked")]["instructions_per_mac"] == 4.5
    assert len(groups) == 3


def test_kernel_names():
    ipm = _module()
    assert ipm.kernel_name("") == "generic"
    assert ipm.kernel_name("reference loops: dilation") == "reference loops"
    assert ipm.kernel_name("sliding") == "sliding"
    assert ipm.INT16_MODEL.name == "ds_cnn_s_int16.tflite"
