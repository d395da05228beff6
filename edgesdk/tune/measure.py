"""Measure a candidate: build its firmware, run one inference on the built-in emulator, compare with the
reference interpreter.

Measured latency = the CPU's instructions of the inference (between the harness's two marks, one per cycle)
at cpu.clock_hz + each accelerator's cycle counter (its peripheral's "cycles") at its peripheral's clock:
the units take turns (the host waits for each accelerator run), so the times add up. The same formula as
the benchmark's latency row (docs/performance.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..dataclass_cache import dataclass


def unit_clocks(board, targets: list) -> dict:
    """unit -> (clock in Hz, board peripheral or None) for the host core ("cpu") and each target's peripheral
    (by its instance name, "npu0": RegionEstimate.unit, so measured and predicted cycles share their keys)."""
    from ..targets import get_target
    from ..targets.api import CPU_UNIT

    clocks = {CPU_UNIT: (int(board.cpu.get("clock_hz", 0)), None)}
    for name in targets:
        peripheral = get_target(name).peripheral_of(board)
        if peripheral is not None:
            clocks[peripheral.name] = (int(peripheral.props.get("clock_hz", 0)), peripheral)
    return clocks


@dataclass(frozen=True)
class MeasureTask:
    """One candidate to measure, self-contained (the model as bytes), so that any worker of a Ray cluster can."""

    model_file: str
    model_data: bytes
    options: object  # edgesdk.compiler.BuildOptions, with the candidate's schedule
    seed: int


def measure_task(task: MeasureTask) -> dict:
    """measure_build on a copy of the model; a build or run failure is the result ({"error": message})."""
    from ..errors import EdgesdkError

    with tempfile.TemporaryDirectory(prefix="edgesdk-tune-model-") as tmp:
        model = Path(tmp) / task.model_file
        model.write_bytes(task.model_data)
        try:
            return measure_build(model, task.options, task.seed)
        except EdgesdkError as exc:
            return {"error": str(exc)}


def measure_build(model_path, options, seed: int = 0) -> dict:
    """Build `options` (a BuildOptions with its schedule) into a temporary directory, run it on seeded random
    inputs and return the measured figures (see the module docstring)."""
    from ..compiler import build

    with tempfile.TemporaryDirectory(prefix="edgesdk-tune-") as tmp:
        out = Path(tmp) / "firmware"
        report = build(model_path, out, options)
        return measure_output(out, report, seed)


def measure_output(out: Path, report: dict, seed: int = 0) -> dict:
    """The measured figures of an already built output directory."""
    from ..board import build_board
    from ..reference import run_reference
    from ..runner import check_succeeded, random_inputs, run_inference

    inputs = random_inputs(report, seed)
    result = run_inference(out, inputs)
    check_succeeded(result)
    bit_exact = None  # no reference interpreter for an ONNX / Relax model
    if (out / "model.tflite").is_file():
        expected = run_reference(out / "model.tflite", inputs, report["rounding"])
        bit_exact = all(np.array_equal(e.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8))
                        for e, y in zip(expected, result.outputs))
    board = build_board(out, report)
    cycles = {"cpu": int(result.inference_instructions or 0)}  # CPU_UNIT
    latency = 0.0
    for unit, (clock, peripheral) in unit_clocks(board, report["targets"]).items():
        if peripheral is not None:
            cycles[unit] = int(result.peripheral_stats.get(peripheral.name, {}).get("cycles", 0))
        latency += cycles[unit] * 1e6 / clock if clock else 0.0
    return {"arena_bytes": report["memory"]["arena_bytes"], "flash_bytes": report["memory"]["flash_bytes"],
            "cycles": cycles, "latency_us": round(latency, 3), "bit_exact": bit_exact, "input_seed": seed}
