"""Instructions per kernel call, and an arena guard check, from one instrumented emulator run.

The emulator counts instructions exactly in C (edgesdk/emulator). Here two cheap Python block hooks are
added: one on the entry block of every global function, one on the blocks of the generated run function.
A call from the run function opens a record (function name, instruction count); the next block executed
in the run function (the instruction after the call) closes it. Nested calls (a kernel calling a helper)
stay inside their caller's record. The hooks fire a few times per layer, so the run stays at full speed.

The guard: the emulator fills SRAM with 0xA5 before boot and the arena is not zero-initialised, so after
the run every arena byte that no planned buffer covers must still hold 0xA5; a kernel or NPU command that
wrote outside its planned tensors there would show up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import unicorn
from elftools.elf.elffile import ELFFile
from unicorn import riscv_const as rv

from edgesdk.board import load_board
from edgesdk.emulator.machine import SRAM_FILL_BYTE, Machine
from edgesdk.emulator import elf_symbol
from edgesdk.runner import coerce_input, load_report


@dataclass
class ProfiledRun:
    calls: list  # (function name, instructions) per call from the run function, in order
    inference_instructions: int | None
    guard_bytes: int  # arena bytes outside every planned buffer
    guard_intact: bool  # all of them still hold the fill pattern


def _functions(elf_path: Path) -> dict:
    with open(elf_path, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return {s.name: (s["st_value"] & ~1, s["st_size"]) for s in symtab.iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC" and s["st_size"] > 0}


def _run_function(functions: dict) -> str:
    for name in functions:
        if name.startswith("edgesdk_") and name.endswith("_run") and name != "edgesdk_npu_run":
            return name
    raise ValueError("no edgesdk_<model>_run function in the firmware")


def _gaps(buffers: list, arena_bytes: int) -> np.ndarray:
    covered = np.zeros(arena_bytes, dtype=bool)
    for b in buffers:
        covered[b["offset"]:b["offset"] + b["size"]] = True
    return ~covered


def profile_run(build_dir, inputs: list, timeout_s: float = 300.0) -> ProfiledRun:
    build_dir = Path(build_dir)
    report = load_report(build_dir)
    elf = build_dir / "firmware.elf"
    functions = _functions(elf)
    run_name = _run_function(functions)
    run_lo, run_size = functions[run_name]
    machine = Machine(load_board(report["board"]), elf)
    try:
        arena = elf_symbol(elf, "edgesdk_arena")
        for i, (x, spec) in enumerate(zip(inputs, report["io"]["inputs"])):
            machine.write(arena + spec["arena_offset"], coerce_input(x, spec, i).tobytes())
        calls, open_call = [], []

        def on_run_block(uc, address, size, user_data):
            if open_call:
                name, start = open_call.pop()
                calls.append((name, machine.instructions() - start))

        def on_entry(uc, address, size, name):
            if not open_call and run_lo <= uc.reg_read(rv.UC_RISCV_REG_RA) < run_lo + run_size:
                open_call.append((name, machine.instructions()))

        machine.uc.hook_add(unicorn.UC_HOOK_BLOCK, on_run_block, begin=run_lo, end=run_lo + run_size - 1)
        for name, (start, _) in functions.items():
            if name != run_name:
                machine.uc.hook_add(unicorn.UC_HOOK_BLOCK, on_entry, user_data=name, begin=start, end=start)
        machine.run(timeout_s)
        memory = report["memory"]
        arena_now = np.frombuffer(machine.read(arena, memory["arena_bytes"]), dtype=np.uint8)
        gaps = _gaps(memory["buffers"], memory["arena_bytes"])
        intact = bool(np.all(arena_now[gaps] == SRAM_FILL_BYTE))
        return ProfiledRun(calls, machine.inference_instructions(), int(gaps.sum()), intact)
    finally:
        machine.close()


KERNEL_CATEGORIES = (("depthwise", "DEPTHWISE_CONV_2D"), ("conv", "CONV_2D"), ("fully_connected", "FULLY_CONNECTED"))


def calls_kernel(callee: str, called: str) -> bool:
    """Whether the executor's call to `callee` is model.c's call to `called`: the same function, or one of its
    kernels where `called` is an inline dispatch (edgesdk_depthwise_conv2d_s8 -> edgesdk_depthwise_conv2d_s8_sliding
    when the layer's constant params say so)."""
    return callee == called or callee.startswith(called + "_")


def category(function_name: str) -> str:
    """The op type a kernel function implements, by its name (edgesdk_<op>_...)."""
    for key, op_type in KERNEL_CATEGORIES:
        if key in function_name:
            return op_type
    return "other"
