"""The LUT-1's model for edgesdk's built-in emulator (an EmulatedDevice; registers in hal/lutaccel.h).

On START it reads LENGTH bytes at SRC, maps each through the table and writes them at DST, at once. With
CTRL's LOAD_TABLE bit it first fetches its 256-byte table from TABLE_SRC itself (a DMA, instead of the CPU
writing the TABLE window). The cycle counter follows the datasheet, with the figures the board file gives
its peripheral entry (`lookups_per_cycle`, `startup_cycles`, `table_dma_bytes_per_cycle`; defaults below).
"""

from __future__ import annotations

import numpy as np

from edgesdk.targets.api import DeviceFault, EmulatedDevice

ID_VALUE = 0x4C555431  # "LUT1"
REG_ID, REG_CTRL, REG_STATUS, REG_SRC, REG_DST, REG_LENGTH, REG_CYCLES = 0x00, 0x04, 0x08, 0x0C, 0x10, 0x14, 0x18
REG_TABLE_SRC = 0x1C
TABLE_OFFSET, TABLE_BYTES = 0x100, 256
WINDOW_BYTES = TABLE_OFFSET + TABLE_BYTES  # the register window a board must map
CTRL_START, CTRL_LOAD_TABLE = 1, 2
STATUS_DONE = 1 << 1
ERROR_SHIFT = 8
ERR_BUS, ERR_LENGTH = 1, 2
MAX_LENGTH = 1 << 24
DEFAULT_TIMING = {"lookups_per_cycle": 4, "startup_cycles": 16, "table_dma_bytes_per_cycle": 4}


def timing_of(props: dict) -> dict:
    """The LUT-1's timing figures from its board peripheral entry (board.json), datasheet defaults else."""
    return {name: int(props.get(name, default)) for name, default in DEFAULT_TIMING.items()}


def run_cycles(length: int, timing: dict = DEFAULT_TIMING, dma_table: bool = False) -> int:
    cycles = timing["startup_cycles"] + -(-length // timing["lookups_per_cycle"])
    return cycles + (-(-TABLE_BYTES // timing["table_dma_bytes_per_cycle"]) if dma_table else 0)


class Lut1Device(EmulatedDevice):
    def __init__(self, timing: dict = DEFAULT_TIMING):
        self.timing = dict(timing)
        self.table = np.zeros(TABLE_BYTES, np.uint8)
        self.regs = {REG_STATUS: 0, REG_SRC: 0, REG_DST: 0, REG_LENGTH: 0, REG_CYCLES: 0, REG_TABLE_SRC: 0}
        self.total_cycles = 0
        self.runs = 0

    def read(self, offset: int, size: int) -> int:
        if offset == REG_ID:
            return ID_VALUE
        if TABLE_OFFSET <= offset < TABLE_OFFSET + TABLE_BYTES:
            start = offset - TABLE_OFFSET
            return int.from_bytes(self.table[start:start + size].tobytes(), "little")
        return self.regs.get(offset, 0)

    def write(self, offset: int, size: int, value: int) -> None:
        if TABLE_OFFSET <= offset < TABLE_OFFSET + TABLE_BYTES:
            start = offset - TABLE_OFFSET
            self.table[start:start + size] = np.frombuffer(value.to_bytes(size, "little"), np.uint8)[:TABLE_BYTES - start]
        elif offset == REG_CTRL:
            if value & CTRL_START:
                self._run(bool(value & CTRL_LOAD_TABLE))
        elif offset in (REG_SRC, REG_DST, REG_LENGTH, REG_TABLE_SRC):
            self.regs[offset] = value

    def _run(self, load_table: bool) -> None:
        length = self.regs[REG_LENGTH]
        if length == 0 or length > MAX_LENGTH:
            self.regs[REG_STATUS] = STATUS_DONE | (ERR_LENGTH << ERROR_SHIFT)
            return
        try:
            if load_table:
                self.table[:] = self.bus.view(self.regs[REG_TABLE_SRC], TABLE_BYTES)
            src = self.bus.view(self.regs[REG_SRC], length)
            dst = self.bus.view(self.regs[REG_DST], length, write=True)
        except DeviceFault:  # the DMA address is not in a memory the LUT-1 may access
            self.regs[REG_STATUS] = STATUS_DONE | (ERR_BUS << ERROR_SHIFT)
            return
        dst[:] = self.table[src]
        cycles = run_cycles(length, self.timing, load_table)
        self.regs[REG_CYCLES] = cycles
        self.regs[REG_STATUS] = STATUS_DONE
        self.total_cycles += cycles
        self.runs += 1

    def stats(self) -> dict:
        return {"cycles": self.total_cycles, "runs": self.runs}
