"""Step 8: run a built firmware on the built-in emulator with user inputs, collect outputs and counters."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .board import load_board
from .errors import EmulatorError, UsageError

NUMPY_DTYPES = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
                "float32": np.float32, "bool": np.bool_}


@dataclass
class InferenceResult:
    outputs: list  # numpy arrays, model order
    exit_code: int
    cpu_instructions: int
    inference_instructions: int | None
    npu_cycles: int
    npu_stats: dict
    uart: str
    peripheral_stats: dict = field(default_factory=dict)  # Python peripheral models (DSP, plugins): counters


def load_report(build_dir: Path) -> dict:
    report_path = Path(build_dir) / "report.json"
    if not report_path.is_file():
        raise UsageError(f"{build_dir} is not an edgesdk build directory (no report.json). Run 'edgesdk build MODEL -o {build_dir}' first.")
    try:
        return json.loads(report_path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{report_path} is corrupt ({exc}); rebuild with 'edgesdk build'.") from None


def coerce_input(array: np.ndarray, spec: dict, index: int) -> np.ndarray:
    """Check an input against the model's declared dtype and size; return it as contiguous bytes-ready array."""
    want = NUMPY_DTYPES[spec["dtype"]]
    if array.dtype != want:
        raise UsageError(f"Input {index} ('{spec['name']}') must be {spec['dtype']}, got {array.dtype}. "
                         f"Convert it, e.g. np.asarray(x, dtype=np.{spec['dtype']}).")
    if array.size * array.itemsize != spec["bytes"]:
        raise UsageError(f"Input {index} ('{spec['name']}') must have shape {spec['shape']} ({spec['bytes']} bytes), got shape {list(array.shape)}.")
    return np.ascontiguousarray(array).reshape(spec["shape"])


def random_inputs(report: dict, seed: int) -> list:
    """Seeded random inputs covering each input type's full range."""
    rng = np.random.default_rng(seed)
    result = []
    for spec in report["io"]["inputs"]:
        dtype = NUMPY_DTYPES[spec["dtype"]]
        if spec["dtype"] == "float32":
            result.append(rng.uniform(-1.0, 1.0, spec["shape"]).astype(np.float32))
        elif spec["dtype"] == "bool":
            result.append(rng.integers(0, 2, spec["shape"]).astype(np.bool_))
        else:
            info = np.iinfo(dtype)
            result.append(rng.integers(info.min, info.max + 1, spec["shape"], dtype=dtype))
    return result


def run_inference(build_dir, inputs: list, timeout_s: float = 120.0) -> InferenceResult:
    from .emulator import elf_symbol, run_elf

    build_dir = Path(build_dir)
    report = load_report(build_dir)
    specs = report["io"]["inputs"]
    if len(inputs) != len(specs):
        names = ", ".join(f"'{s['name']}' {s['dtype']}{s['shape']}" for s in specs)
        raise UsageError(f"The model takes {len(specs)} input(s) ({names}); {len(inputs)} given.")
    elf = build_dir / "firmware.elf"
    if not elf.is_file():
        raise UsageError(f"{elf} is missing; rebuild with 'edgesdk build'.")
    board = load_board(report["board"])
    arena = elf_symbol(elf, "edgesdk_arena")
    writes = [(arena + s["arena_offset"], coerce_input(x, s, i).tobytes()) for i, (x, s) in enumerate(zip(inputs, specs))]
    out_specs = report["io"]["outputs"]
    reads = [(arena + s["arena_offset"], s["bytes"]) for s in out_specs]
    result = run_elf(elf, board, writes=writes, reads=reads, timeout_s=timeout_s)
    outputs = [np.frombuffer(raw, NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"]).copy() for raw, s in zip(result.reads, out_specs)]
    return InferenceResult(outputs, result.exit_code, result.cpu_instructions, result.inference_instructions,
                           result.npu_cycles, dict(result.npu_stats), result.uart, dict(result.peripheral_stats))


def failure_message(result: InferenceResult) -> str:
    message = f"The firmware reported failure (exit code {result.exit_code}). UART output: {result.uart.strip()!r}."
    npu = re.search(r"npu_error=(-?\d+) npu_command=(-?\d+)", result.uart)
    if npu:
        from .npu.registers import ERROR_NAMES

        code, command = int(npu.group(1)), int(npu.group(2)) & 0xFFFFFFFF
        name, meaning = ERROR_NAMES.get(code, (f"code {code}", "undocumented error code"))
        where = "the table header" if command == 0xFFFFFFFF else f"command {command}"
        message += f" The NPU stopped with error {name} ({meaning}) at {where} of its command table."
    dsp = re.search(r"dsp_error=(-?\d+) dsp_node=(-?\d+)", result.uart)
    if dsp:
        from .targets.dsp.registers import ERROR_NAMES as DSP_ERROR_NAMES

        code = int(dsp.group(1))
        message += (f" The DSP stopped with error {DSP_ERROR_NAMES.get(code, f'code {code}')} at node "
                    f"{dsp.group(2)} of its serialized subgraph (docs/dsp-datasheet.md lists the DSP error codes).")
    return message + " docs/npu-datasheet.md lists the NPU error codes."


def check_succeeded(result: InferenceResult) -> None:
    if result.exit_code != 0:
        raise EmulatorError(failure_message(result))
