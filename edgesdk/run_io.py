"""A build's run contract, shared by every way of running it (the built-in emulator, QEMU, an attached board):
report.json read and checked, inputs checked against its io section, and what one run returns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .dataclass_cache import dataclass, field
from .errors import UsageError
from .model_name import NAME_PATTERN

NUMPY_DTYPES = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
                "float32": np.float32, "bool": np.bool_}  # bool: one byte, 0 or 1 (TFLite's layout)


@dataclass
class InferenceResult:
    outputs: list  # numpy arrays, model order
    exit_code: int
    cpu_instructions: int
    inference_instructions: int | None
    uart: str
    peripheral_stats: dict = field(default_factory=dict)  # the peripherals the build uses: name -> counters
    target_peripherals: dict = field(default_factory=dict)  # target name -> the peripheral it drives (those used)
    step_outputs: list = field(default_factory=list)  # per inference of a sequence run: its outputs
    step_instructions: list = field(default_factory=list)  # per inference: instructions between the marks
    observations: list = field(default_factory=list)  # what run_elf's observers collected (the built-in emulator)

    def cycles_of(self, target: str) -> int | None:
        """The cycles the peripheral of `target` counted over the run; None if the build does not use one
        (or the run did not model it: QEMU, an attached board)."""
        counters = self.peripheral_stats.get(self.target_peripherals.get(target), {})
        return counters.get("cycles")

    @property
    def peripheral_cycles(self) -> dict:
        """{peripheral name: cycles it counted over the run} for the peripherals the build uses that count
        cycles (`edgesdk run --json` "peripheral_cycles"); {} when the run models none."""
        return {name: counters["cycles"] for name, counters in sorted(self.peripheral_stats.items())
                if "cycles" in counters}


ROUNDING_MODES = ("ref", "tflm", "ort")  # = edgesdk.compiler.ROUNDING_MODES (not imported: the runner needs no compiler)
MAX_ARENA_BYTES = (1 << 31) - 1


def load_report(build_dir: Path) -> dict:
    """report.json of a build directory, checked (check_report): nothing in it is trusted unchecked."""
    report_path = Path(build_dir) / "report.json"
    if not report_path.is_file():
        raise UsageError(f"{build_dir} is not an edgesdk build directory (no report.json). Run 'edgesdk build MODEL -o {build_dir}' first.")
    try:
        report = json.loads(report_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{report_path} is corrupt ({exc}); rebuild with 'edgesdk build'.") from None
    check_report(report, report_path)
    return report


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_report(report, report_path) -> None:
    """The fields `edgesdk run`, `hil` and `flash` use, checked before anything is written into the emulated
    board: a known board and rounding, at least one input and one output, and for each a name, a known
    dtype, a shape of positive dimensions, a byte count equal to shape x element size and an arena slot
    inside the arena (memory.arena_bytes, itself a valid size). A UsageError (exit code 7) names the first
    problem: report.json is edgesdk's output, and a different one means it was edited or damaged."""
    def bad(what: str) -> UsageError:
        return UsageError(f"{report_path} is not a valid edgesdk build report: {what}. Rebuild with 'edgesdk build' "
                          "(report.json must be the one the build wrote).")

    if not isinstance(report, dict):
        raise bad("it is not a JSON object")
    if not isinstance(report.get("board"), str) or not report["board"]:
        raise bad("'board' is not a board name")
    if report.get("rounding") not in ROUNDING_MODES:
        raise bad(f"'rounding' is {report.get('rounding')!r}, not one of {', '.join(ROUNDING_MODES)}")
    if "name" in report and not (isinstance(report["name"], str) and NAME_PATTERN.match(report["name"])):
        raise bad(f"'name' is {report['name']!r}, not a model name (edgesdk build --name)")
    memory = report.get("memory")
    arena = memory.get("arena_bytes") if isinstance(memory, dict) else None
    if not _is_int(arena) or not 0 < arena <= MAX_ARENA_BYTES:
        raise bad(f"'memory.arena_bytes' is {arena!r}, not a positive arena size")
    io = report.get("io")
    if not isinstance(io, dict):
        raise bad("'io' is missing")
    for kind in ("inputs", "outputs"):
        specs = io.get(kind)
        if not isinstance(specs, list) or not specs:
            raise bad(f"'io.{kind}' is {'empty' if specs == [] else 'not a list'} (a model has at least one)")
        for index, spec in enumerate(specs):
            where = f"io.{kind}[{index}]"
            if not isinstance(spec, dict):
                raise bad(f"{where} is not an object")
            if not isinstance(spec.get("name"), str):
                raise bad(f"{where}.name is not a string")
            if spec.get("dtype") not in NUMPY_DTYPES:
                raise bad(f"{where}.dtype is {spec.get('dtype')!r}, not one of {', '.join(NUMPY_DTYPES)}")
            shape = spec.get("shape")
            if not isinstance(shape, list) or not all(_is_int(d) and d >= 1 for d in shape):
                raise bad(f"{where}.shape is {shape!r}, not a list of positive dimensions")
            nbytes = int(np.prod(shape, dtype=object)) * np.dtype(NUMPY_DTYPES[spec["dtype"]]).itemsize
            if spec.get("bytes") != nbytes or not _is_int(spec.get("bytes")):
                raise bad(f"{where}.bytes is {spec.get('bytes')!r}, but shape {shape} of {spec['dtype']} is {nbytes} bytes")
            offset = spec.get("arena_offset")
            if kind == "inputs" and spec.get("streamed") is True:  # given in rows, no slot (--stream-input)
                if offset is not None or not _is_int(spec.get("stream_offset")) or spec["stream_offset"] < 0:
                    raise bad(f"{where} is streamed but has an arena slot or no stream_offset")
                continue
            if not _is_int(offset) or offset < 0 or offset + nbytes > arena:
                raise bad(f"{where}.arena_offset {offset!r} + {nbytes} bytes is not inside the arena of {arena} bytes")


STREAM_SYMBOL = "edgesdk_harness_stream"  # the test harness's copy of the streamed inputs (firmware/main.c)


def input_address(spec: dict, arena: int, stream_base) -> int:
    """Where a run writes an input: its arena slot, or for a streamed input (--stream-input) its place in the
    harness's stream buffer, from which the harness gives the model its rows. `stream_base()` -> the
    buffer's address (asked only for a streamed input)."""
    if spec.get("streamed"):
        return stream_base() + spec["stream_offset"]
    return arena + spec["arena_offset"]


def used_targets(report: dict) -> set:
    """The targets the build's code runs on: those with a region in report.json (every target of the
    --target list for a report without regions)."""
    if "regions" in report:
        return {region["target"] for region in report["regions"]}
    return set(report.get("targets", []))


def coerce_input(array: np.ndarray, spec: dict, index: int) -> np.ndarray:
    """Check an input against the model's declared dtype and shape (exactly: a shape that merely has the same
    number of elements is refused, it usually means a wrong layout); return it as a contiguous array."""
    want = NUMPY_DTYPES[spec["dtype"]]
    if array.dtype != want:
        raise UsageError(f"Input {index} ('{spec['name']}') must be {spec['dtype']}, got {array.dtype}. "
                         f"Convert it, e.g. np.asarray(x, dtype=np.{spec['dtype']}).")
    if list(array.shape) != list(spec["shape"]):
        hint = (f" It has the right number of elements: if its layout is right, save x.reshape({tuple(spec['shape'])})."
                if array.size * array.itemsize == spec["bytes"] else "")
        raise UsageError(f"Input {index} ('{spec['name']}') must have shape {spec['shape']} ({spec['bytes']} bytes), "
                         f"got shape {list(array.shape)}.{hint}")
    return np.ascontiguousarray(array)
