"""Step 8: run a built firmware on the built-in emulator with user inputs, collect outputs and counters."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .board import build_board
from .errors import EmulatorError, UsageError
from .model_name import DEFAULT_NAME, arena_symbol, stream_symbol
from .qemu import run_qemu_sequence
# the run contract lives in run_io (QEMU and attached boards share it); InferenceResult and load_report stay
# importable from here
from .run_io import (NUMPY_DTYPES, STREAM_SYMBOL, InferenceResult, coerce_input, input_address,  # noqa: F401
                     load_report, used_targets)

def check_firmware_arena(report: dict, elf) -> int:
    """The arena's address, after checking report.json's arena against the firmware's: the ELF's arena block
    (edgesdk_arena_block: guard bytes, the arena, guard bytes) must hold memory.arena_bytes between its
    guards, so every slot check_report accepted lies inside the firmware's arena. Returns edgesdk_arena."""
    from .emulator.machine import elf_symbol, elf_symbol_size

    symbol = arena_symbol(report.get("name", DEFAULT_NAME))  # a build named with --name: edgesdk_NAME_arena
    arena = elf_symbol(elf, symbol)
    block, block_bytes = elf_symbol(elf, f"{symbol}_block"), elf_symbol_size(elf, f"{symbol}_block")
    guard = arena - block
    capacity = block_bytes - 2 * guard
    if guard < 0 or capacity != report["memory"]["arena_bytes"]:
        raise UsageError(
            f"report.json says the arena has {report['memory']['arena_bytes']} bytes, but {elf} has an arena of "
            f"{capacity} bytes: the report and the firmware are not from the same build. Rebuild with 'edgesdk build'.")
    return arena


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


MAX_STEPS = 1000  # inferences of one sequence run (the emulator records two marks per inference)


def run_inference(build_dir, inputs: list, timeout_s: float = 120.0, max_instructions: int | None = None) -> InferenceResult:
    """One inference on `inputs` (one array per model input)."""
    return run_sequence(build_dir, [inputs], timeout_s, max_instructions=max_instructions)


EMULATORS = ("builtin", "qemu")


def run_sequence(build_dir, steps: list, timeout_s: float = 120.0, emulator: str = "builtin",
                 observers=(), max_instructions: int | None = None) -> InferenceResult:
    """Inferences on `steps` (per step, one array per model input) in one boot: a stateful model carries its
    state from one step to the next. The result's `outputs` are the last step's, `step_outputs` all of them.
    `emulator`: the built-in emulator, or stock QEMU with the board's machine (edgesdk/qemu.py).
    `observers` watch the built-in emulator's run (edgesdk.emulator.run_elf). `max_instructions`: the built-in
    emulator stops the firmware with an EmulatorError after that many instructions (a deterministic limit, where
    `timeout_s` is wall-clock time)."""
    from .emulator import run_elf

    if emulator not in EMULATORS:
        raise UsageError(f"--emulator must be one of {', '.join(EMULATORS)}, not '{emulator}'.")
    build_dir = Path(build_dir)
    report = load_report(build_dir)
    specs = report["io"]["inputs"]
    if not 1 <= len(steps) <= MAX_STEPS:
        raise UsageError(f"A run takes 1 to {MAX_STEPS} steps, not {len(steps)}.")
    for inputs in steps:
        if len(inputs) != len(specs):
            names = ", ".join(f"'{s['name']}' {s['dtype']}{s['shape']}" for s in specs)
            raise UsageError(f"The model takes {len(specs)} input(s) ({names}); {len(inputs)} given.")
    if emulator == "qemu":
        if observers:
            raise UsageError("Profiling needs the built-in emulator; drop --emulator qemu.")
        if max_instructions is not None:
            raise UsageError("--max-instructions applies to the built-in emulator; QEMU runs are limited by --timeout.")

        return run_qemu_sequence(build_dir, steps, timeout_s)
    elf = build_dir / "firmware.elf"
    if not elf.is_file():
        raise UsageError(f"{elf} is missing; rebuild with 'edgesdk build'.")
    board = build_board(build_dir, report)
    arena = check_firmware_arena(report, elf)
    from .emulator.machine import elf_symbol

    def stream_base():
        return elf_symbol(elf, stream_symbol(report.get("name", DEFAULT_NAME)))

    step_writes = [[(input_address(s, arena, stream_base), coerce_input(x, s, i).tobytes())
                    for i, (x, s) in enumerate(zip(inputs, specs))] for inputs in steps]
    out_specs = report["io"]["outputs"]
    reads = [(arena + s["arena_offset"], s["bytes"]) for s in out_specs]
    if len(steps) == 1:  # the plain way: inputs in place before boot, outputs after exit
        result = run_elf(elf, board, writes=step_writes[0], reads=reads, timeout_s=timeout_s, observers=observers,
                         max_instructions=max_instructions)
        step_reads, step_instructions = [result.reads], [result.inference_instructions]
    else:
        result = run_elf(elf, board, reads=reads, timeout_s=timeout_s, steps=step_writes, observers=observers,
                         max_instructions=max_instructions)
        step_reads, step_instructions = result.step_reads, result.step_instructions

    def decode(raw_list):
        return [np.frombuffer(raw, NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"]).copy() for raw, s in zip(raw_list, out_specs)]

    step_outputs = [decode(r) for r in step_reads]
    outputs = step_outputs[-1] if step_outputs else decode(result.reads)
    inference = step_instructions[0] if step_instructions else result.inference_instructions
    used = target_peripherals(report, board)
    stats = {name: dict(counters) for name, counters in result.peripheral_stats.items() if name in used.values()}
    return InferenceResult(outputs, result.exit_code, result.cpu_instructions, inference, result.uart, stats, used,
                           step_outputs, step_instructions, list(result.observations))


def target_peripherals(report: dict, board) -> dict:
    """{target name: name of the board peripheral it drives} for the targets the build uses (a target on the
    host core drives none): the peripherals whose counters a run reports."""
    from .errors import EdgesdkError
    from .targets import get_target

    used = {}
    for name in sorted(used_targets(report)):
        try:
            peripheral = get_target(name).peripheral_of(board)
        except EdgesdkError:  # a target no longer installed: its peripheral is not modelled either
            continue
        if peripheral is not None:
            used[name] = peripheral.name
    return used


def failure_message(result: InferenceResult) -> str:
    """What a failed run printed, with each installed target's reading of it (Target.describe_failure: e.g. the
    NPU's error name and failing command)."""
    from .targets import all_targets

    message = f"The firmware reported failure (exit code {result.exit_code}). UART output: {result.uart.strip()!r}."
    for target in all_targets():
        text = target.describe_failure(result.uart)
        if text:
            message += " " + text
    return message


def check_succeeded(result: InferenceResult) -> None:
    if result.exit_code != 0:
        raise EmulatorError(failure_message(result))
