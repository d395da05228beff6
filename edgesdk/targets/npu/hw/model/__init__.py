"""The C model of NPU-1, loaded through ctypes (built on first use by edgesdk.hostcc).

`load_npu_model()` returns the CDLL with its signatures set; `NpuDevice` wraps one device (registers,
bus, memory classes); `run_table(...)` runs a table over Python bytearrays, for tests and tools.
"""

from __future__ import annotations

import ctypes
import functools
import traceback
from pathlib import Path

from .....dataclass_cache import dataclass
from .....hostcc import load_shared_library
from .. import registers as R

MODEL_DIR = Path(__file__).resolve().parent
KERNELS_DIR = MODEL_DIR.parents[3] / "kernels"  # edgesdk/kernels: the shared requantization arithmetic

BUS_READ = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)
BUS_WRITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)


def model_sources() -> list:
    """C sources of the model (for a build that links it into something else)."""
    return [MODEL_DIR / "npu_model.c"]


def model_include_dirs() -> list:
    return [MODEL_DIR, KERNELS_DIR]


@functools.lru_cache(maxsize=None)
def load_npu_model() -> ctypes.CDLL:
    lib = load_shared_library("npu_model", model_sources(), model_include_dirs())
    dev = ctypes.c_void_p
    u32 = ctypes.c_uint32
    lib.npu_create.restype = dev
    lib.npu_create.argtypes = []
    lib.npu_destroy.restype = None
    lib.npu_destroy.argtypes = [dev]
    lib.npu_set_bus.restype = None
    lib.npu_set_bus.argtypes = [dev, BUS_READ, BUS_WRITE, ctypes.c_void_p]
    lib.npu_set_memory_class.restype = ctypes.c_int
    lib.npu_set_memory_class.argtypes = [dev, u32, u32, u32, u32]
    lib.npu_clear_memory_classes.restype = None
    lib.npu_clear_memory_classes.argtypes = [dev]
    lib.npu_reg_read.restype = u32
    lib.npu_reg_read.argtypes = [dev, u32]
    lib.npu_reg_write.restype = None
    lib.npu_reg_write.argtypes = [dev, u32, u32]
    lib.npu_irq_pending.restype = ctypes.c_int
    lib.npu_irq_pending.argtypes = [dev]
    lib.npu_validate_table.restype = u32
    lib.npu_validate_table.argtypes = [ctypes.c_char_p, u32, u32, ctypes.POINTER(u32), ctypes.c_void_p]
    return lib


def validate_table(table: bytes, region_bases=(), table_addr: int = 0) -> tuple:
    """(error code, command index or None) of the C model's static pass over `table` (npu_validate_table):
    what a run would report before executing anything. edgesdk.targets.npu.hw.validate.check_table is its mirror."""
    lib = load_npu_model()
    bases = (ctypes.c_uint32 * R.NUM_REGIONS)(*(list(region_bases) + [0] * R.NUM_REGIONS)[:R.NUM_REGIONS])
    result = ctypes.create_string_buffer(64)  # npu_result_t: 2 x u32, 2 x u64, u32, 3 x u64 (< 64 bytes)
    code = lib.npu_validate_table(bytes(table), table_addr, len(table), bases, result)
    command = int.from_bytes(result.raw[4:8], "little")
    return code, (None if command == R.NO_COMMAND else command)


class BytearrayBus:
    """Guest memory as windows {base address: bytearray}; an access outside every window is a bus error.

    `read_only` bases reject writes (flash).
    """

    def __init__(self, windows: dict, read_only=()):
        self.windows = [(int(base), buf) for base, buf in windows.items()]
        self.read_only = {int(b) for b in read_only}
        self.log = []  # (kind, addr, len) of every transfer, for tests

    def _find(self, addr: int, length: int):
        for base, buf in self.windows:
            if base <= addr and addr + length <= base + len(buf):
                return base, buf
        return None, None

    def read(self, _ctx, addr, dst, length) -> int:
        self.log.append(("r", addr, length))
        base, buf = self._find(addr, length)
        if buf is None:
            return 1
        start = addr - base
        ctypes.memmove(dst, (ctypes.c_char * length).from_buffer(buf, start), length)
        return 0

    def write(self, _ctx, addr, src, length) -> int:
        self.log.append(("w", addr, length))
        base, buf = self._find(addr, length)
        if buf is None or base in self.read_only:
            return 1
        start = addr - base
        ctypes.memmove((ctypes.c_char * length).from_buffer(buf, start), src, length)
        return 0


def _guarded(fn):
    """ctypes callbacks must not raise: an exception becomes a bus error (and is printed)."""

    def call(*args):
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - reported, then turned into a bus error
            traceback.print_exc()
            return 1

    return call


class NpuDevice:
    """One C model device; `with NpuDevice() as dev:` destroys it at the end."""

    def __init__(self):
        self.lib = load_npu_model()
        self.handle = self.lib.npu_create()
        if not self.handle:
            raise MemoryError("npu_create failed")
        self._callbacks = None

    def set_bus(self, read, write) -> None:
        """read(ctx, addr, buf_ptr, len) / write(ctx, addr, buf_ptr, len) -> 0 ok, nonzero bus error."""
        self._callbacks = (BUS_READ(_guarded(read)), BUS_WRITE(_guarded(write)))  # keep them alive
        self.lib.npu_set_bus(self.handle, self._callbacks[0], self._callbacks[1], None)

    def set_memory_class(self, base: int, size: int, kind: int, bytes_per_cycle_x256: int) -> None:
        if self.lib.npu_set_memory_class(self.handle, base, size, kind, bytes_per_cycle_x256) != 0:
            raise ValueError(f"memory class {base:#x}+{size} rejected (full table or bad arguments)")

    def clear_memory_classes(self) -> None:
        self.lib.npu_clear_memory_classes(self.handle)

    def reg_read(self, offset: int) -> int:
        return self.lib.npu_reg_read(self.handle, offset)

    def reg_write(self, offset: int, value: int) -> None:
        self.lib.npu_reg_write(self.handle, offset, value & 0xFFFFFFFF)

    def irq_pending(self) -> bool:
        return bool(self.lib.npu_irq_pending(self.handle))

    def close(self) -> None:
        if self.handle:
            self.lib.npu_destroy(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


@dataclass
class RunResult:
    status: int
    error_command: int
    irq_status: int
    cycles: int
    macs: int
    commands: int
    sram_read_bytes: int
    flash_read_bytes: int
    write_bytes: int

    @property
    def error_code(self) -> int:
        return (self.status & R.STATUS_ERROR_CODE_MASK) >> R.STATUS_ERROR_CODE_SHIFT

    @property
    def ok(self) -> bool:
        return self.status == R.STATUS_DONE

    @property
    def error_name(self) -> str:
        return R.error_name(self.error_code)

    def __str__(self) -> str:
        if self.ok:
            return f"done in {self.cycles} cycles ({self.commands} commands)"
        return f"error {self.error_name} at command {self.error_command}"


def read_result(dev: NpuDevice) -> RunResult:
    def r(off):
        return dev.reg_read(off)

    return RunResult(
        status=r(R.REG_STATUS), error_command=r(R.REG_ERROR_COMMAND), irq_status=r(R.REG_IRQ_STATUS),
        cycles=r(R.REG_PERF_CYCLES_LO) | (r(R.REG_PERF_CYCLES_HI) << 32),
        macs=r(R.REG_PERF_MACS_LO) | (r(R.REG_PERF_MACS_HI) << 32), commands=r(R.REG_PERF_COMMANDS),
        sram_read_bytes=r(R.REG_PERF_SRAM_READ_BYTES), flash_read_bytes=r(R.REG_PERF_FLASH_READ_BYTES),
        write_bytes=r(R.REG_PERF_WRITE_BYTES))


DEFAULT_TABLE_ADDR = 0xF000_0000


def board_memory_classes(board, peripheral=None) -> list:
    """(base, size, kind, bytes_per_cycle_x256) of the board's flash and SRAM as the NPU `peripheral` (default:
    the board's first NPU-1) sees them."""
    from ..timing import MemoryClass, npu_peripheral

    peripheral = peripheral if peripheral is not None else npu_peripheral(board)
    result = []
    for region in (board.flash, board.sram):
        mclass = MemoryClass.from_region(region, peripheral)
        result.append((region.base, region.size, mclass.kind, mclass.bytes_per_cycle_x256))
    return result


def run_table(table: bytes, memory: dict, region_bases, table_addr: int | None = None, memory_classes=None,
              read_only=(), device: NpuDevice | None = None) -> RunResult:
    """Run `table` on a fresh device over `memory` ({base address: bytearray}, modified in place).

    The table is read from `table_addr` when given (it must lie in `memory`), else from a private window.
    `memory_classes` defaults to the riscv-npu board's flash and SRAM.
    """
    windows = dict(memory)
    if table_addr is None:
        table_addr = DEFAULT_TABLE_ADDR
        windows[table_addr] = bytearray(table)
    bus = BytearrayBus(windows, read_only)
    own = device is None
    dev = device or NpuDevice()
    try:
        dev.set_bus(bus.read, bus.write)
        dev.clear_memory_classes()
        for mclass in memory_classes or ():  # none: every address at the datasheet's default bandwidth
            dev.set_memory_class(*mclass)
        bases = list(region_bases) + [0] * (R.NUM_REGIONS - len(region_bases))
        for i, base in enumerate(bases):
            dev.reg_write(R.reg_region_base(i), base)
        dev.reg_write(R.REG_CMD_BASE, table_addr)
        dev.reg_write(R.REG_CMD_SIZE, len(table))
        dev.reg_write(R.REG_CTRL, R.CTRL_START)
        return read_result(dev)
    finally:
        if own:
            dev.close()
