"""Built-in emulator: runs edgesdk firmware on a Unicorn model of the board (see machine.py)."""

from .machine import Machine, NativeModelSpec, RunResult, elf_symbol, instructions_between_marks, run_elf

__all__ = ["Machine", "NativeModelSpec", "RunResult", "elf_symbol", "run_elf"]
