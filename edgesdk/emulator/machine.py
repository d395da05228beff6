"""The built-in emulator: a Unicorn RV32 machine built from board.json.

Flash and SRAM are numpy buffers mapped zero-copy into Unicorn. The UART, the exit device and the register
windows of native peripheral models are MMIO callbacks, and instructions are counted by a block hook; all of
these are C (csrc/emu_glue.c, built together with the C model of every native peripheral of the board -- the
NPU, a plugin's accelerator -- into one host library), so nothing on the hot path runs Python. Python models
(EmulatedDevice) are mapped beside them. Python only loads the ELF, starts the CPU in wall-clock chunks and
explains faults.

Instruction counts are exact and deterministic (Unicorn's own instret/cycle CSRs return host time):
`cpu_instructions` counts every executed instruction until the exit-device write, and
`inference_instructions` those between the harness's two calls to `edgesdk_harness_mark`.
"""

from __future__ import annotations

import bisect
import ctypes
import struct
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import unicorn
from unicorn import riscv_const as rv

from ..board import PACKAGE_DIR, Board, load_board
from ..dataclass_cache import dataclass, field
from ..elf import EM_RISCV, STT_FUNC, ElfFile, ElfFormatError
from ..errors import EmulatorError, UsageError
from ..hostcc import load_shared_library
from ..renode.platform import emulator_board
from ..targets.api import NativeModelSpec

try:  # the binding keeps its ctypes handle to libunicorn here; the C hooks are registered through it
    from unicorn.unicorn_py3.unicorn import uclib as _uclib
except ImportError:  # pragma: no cover - older binding layout
    from unicorn.unicorn import _uc as _uclib

CSRC_DIR = Path(__file__).resolve().parent / "csrc"
UNICORN_INCLUDE_DIR = Path(unicorn.__file__).resolve().parent / "include"

HARNESS_MARK_SYMBOL = "edgesdk_harness_mark"
PAGE = 4096
# Never a RISC-V PC (odd), so emu_start only stops on our request.
NO_UNTIL_ADDRESS = 0xFFFF_FFFF
# SRAM starts filled with this byte, not zero, like real SRAM holding garbage: code that reads memory it
# never wrote (the arena is not cleared at boot) gets visibly wrong results instead of lucky zeros.
# It also lets run_elf measure the stack high-water mark.
SRAM_FILL_BYTE = 0xA5
RUN_SLICE_INSTRUCTIONS = 20_000_000  # run() slice (~0.05-0.2 s): keeps Ctrl-C responsive and enforces timeout_s

# emu_glue.h enums
_STOP_EXIT, _STOP_LIMIT, _STOP_DEVICE_ERROR = 1, 2, 3
_DEV_ACCESS_SIZE, _DEV_EXIT_RESET = 1, 2

_UC_HOOK_BLOCK = unicorn.UC_HOOK_BLOCK
# RISC-V exception causes (mcause) as delivered to the interrupt hook.
_TRAP_CAUSES = {0: "misaligned instruction address", 1: "instruction access fault", 4: "misaligned load",
                5: "load access fault", 6: "misaligned store", 7: "store access fault",
                12: "instruction page fault", 13: "load page fault", 15: "store page fault"}


@dataclass
class RunResult:
    exit_code: int
    uart: str
    cpu_instructions: int
    inference_instructions: int | None
    reads: list = field(default_factory=list)
    peripheral_stats: dict = field(default_factory=dict)  # every modelled peripheral (native, Python): name -> counters
    stack_bytes_used: int | None = None
    step_reads: list = field(default_factory=list)  # a sequence run: per step, the reads after that step
    step_instructions: list = field(default_factory=list)  # a sequence run: per step, the inference's count
    observations: list = field(default_factory=list)  # what each of run_elf's `observers` collected


def native_peripherals(board: Board) -> list:
    """[(peripheral, NativeModelSpec)] of the board's peripherals whose model is native (compiled into the
    emulator's library, PeripheralModel.native), in board order: one instance each, side by side."""
    from ..targets import peripheral_model

    found = []
    for periph in board.peripherals.values():
        model = peripheral_model(periph.type)
        if model is not None and model.native:
            spec = model.create(periph, board)
            if not spec.symbol_prefix:
                raise EmulatorError(f"The native model of peripheral type {periph.type} names no symbol_prefix "
                                    "(NativeModelSpec): the emulator cannot find its functions.")
            found.append((periph, spec))
    return found


# ---- Native library ---------------------------------------------------------------------------------

def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    c = ctypes
    signatures = {
        "emu_create": (c.c_void_p, [c.c_void_p]),
        "emu_destroy": (None, [c.c_void_p]),
        "emu_set_window": (None, [c.c_void_p, c.c_int, c.c_uint32, c.c_uint32, c.c_void_p, c.c_int]),
        "emu_set_mark_address": (None, [c.c_void_p, c.c_uint64]),
        "emu_set_instruction_limit": (None, [c.c_void_p, c.c_uint64]),
        "emu_set_uart_reg_shift": (None, [c.c_void_p, c.c_uint32]),
        "emu_prepare_resume": (None, [c.c_void_p, c.c_uint64]),
        "emu_settle_exit": (None, [c.c_void_p, c.c_uint64]),
        "emu_exit_at": (None, [c.c_void_p, c.c_int32, c.c_uint64]),
        "emu_add_device": (c.c_void_p, [c.c_void_p] * 5),
        "emu_set_device_accounting": (None, [c.c_void_p, c.c_uint32, c.c_uint32, c.POINTER(c.c_uint32), c.c_uint32]),
        "emu_device_perf_total": (c.c_uint64, [c.c_void_p, c.c_uint32]),
        "emu_device_starts": (c.c_uint64, [c.c_void_p]),
        "emu_device_irq_pending": (c.c_int, [c.c_void_p]),
        "emu_device_write": (None, [c.c_void_p, c.c_uint64, c.c_uint, c.c_uint64, c.c_void_p]),
        "emu_device_read": (c.c_uint64, [c.c_void_p, c.c_uint64, c.c_uint, c.c_void_p]),
        "emu_device_trace_length": (c.c_uint64, [c.c_void_p]),
        "emu_device_trace": (c.POINTER(c.c_uint64), [c.c_void_p]),
        "emu_device_error_device": (c.c_int, [c.c_void_p]),
        "emu_instructions": (c.c_uint64, [c.c_void_p]),
        "emu_instructions_before": (c.c_uint64, [c.c_void_p, c.c_uint64]),
        "emu_mark_hits": (c.c_uint32, [c.c_void_p]),
        "emu_mark_instructions": (c.c_uint64, [c.c_void_p, c.c_uint32]),
        "emu_stop_reason": (c.c_int, [c.c_void_p]),
        "emu_exit_code": (c.c_int32, [c.c_void_p]),
        "emu_device_error": (c.c_int, [c.c_void_p, c.POINTER(c.c_uint64), c.POINTER(c.c_uint32)]),
        "emu_uart_length": (c.c_uint32, [c.c_void_p]),
        "emu_uart_text": (c.c_void_p, [c.c_void_p]),
        "emu_uart_dropped": (c.c_uint32, [c.c_void_p]),
        "emu_bus_errors": (c.c_uint32, [c.c_void_p]),
        "emu_bus_read": (c.c_int, [c.c_void_p, c.c_uint32, c.c_void_p, c.c_uint32]),
        "emu_bus_write": (c.c_int, [c.c_void_p, c.c_uint32, c.c_void_p, c.c_uint32]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


# A native model's functions (NativeModelSpec): name -> (restype, argtypes after the device pointer), required.
_MODEL_FUNCTIONS = {
    "create": (ctypes.c_void_p, None, True),
    "destroy": (None, [], True),
    "set_bus": (None, [ctypes.c_void_p] * 3, True),
    "reg_read": (ctypes.c_uint32, [ctypes.c_uint32], True),
    "reg_write": (None, [ctypes.c_uint32, ctypes.c_uint32], True),
    "irq_pending": (ctypes.c_int, [], False),
    "configure": (ctypes.c_int, [ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32], False),
    "set_memory_class": (ctypes.c_int, [ctypes.c_uint32] * 4, False),
    "set_command_observer": (None, [ctypes.c_void_p, ctypes.c_void_p], False),
}


def native_library(specs=()) -> ctypes.CDLL:
    """emu_glue.c + the sources of every native model in `specs` (NativeModelSpec, or None), built once per
    content hash by edgesdk.hostcc."""
    specs = [spec for spec in ([specs] if isinstance(specs, NativeModelSpec) else specs) if spec is not None]
    sources = tuple(dict.fromkeys(source for spec in specs for source in spec.sources))
    include_dirs = tuple(dict.fromkeys(d for spec in specs for d in spec.include_dirs))
    return _native_library(sources, include_dirs)


@lru_cache(maxsize=None)
def _native_library(model_sources: tuple, model_include_dirs: tuple) -> ctypes.CDLL:
    sources = [CSRC_DIR / "emu_glue.c", *model_sources]
    include_dirs = [CSRC_DIR, UNICORN_INCLUDE_DIR, *model_include_dirs]
    return _declare(load_shared_library("edgesdk_emu", sources, include_dirs, []))


def model_function(lib: ctypes.CDLL, spec: NativeModelSpec, name: str):
    """The native model's function `<symbol_prefix>_<name>`, declared; None for a missing optional one."""
    symbol = f"{spec.symbol_prefix}_{name}"
    restype, argtypes, required = _MODEL_FUNCTIONS[name]
    if not hasattr(lib, symbol):
        if required:
            raise EmulatorError(f"The native peripheral model with symbol prefix '{spec.symbol_prefix}' does not "
                                f"export {symbol}() (NativeModelSpec; docs/porting-a-new-accelerator.md).")
        return None
    fn = getattr(lib, symbol)
    fn.restype, fn.argtypes = restype, ([] if argtypes is None else [ctypes.c_void_p, *argtypes])
    return fn


@dataclass
class NativeDevice:
    """One native model instance on the emulated bus: the board peripheral, its spec, the model (the pointer
    its create() returned) and the glue's device (emu_device_t *: counters, trace)."""

    name: str
    type: str
    spec: NativeModelSpec
    model: int
    handle: int
    perf_registers: list = field(default_factory=list)
    traced: bool = False


def _c_function_address(lib: ctypes.CDLL, name: str) -> int:
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


# ---- ELF helpers ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Elf:
    entry: int
    segments: tuple  # (physical load address, bytes)
    symbols: dict  # name -> address
    functions: tuple  # sorted (address, size, name) of code symbols
    sizes: dict = None  # name -> st_size


def _read_elf(elf_path) -> _Elf:
    """The parsed ELF, read once per file version: a run looks symbols up several times (the harness's marks,
    its step count, the arena) and parsing the symbol table of a model's firmware takes tens of milliseconds.
    The file's inode, size and modification time name the version (a rebuild writes a new file)."""
    path = Path(elf_path)
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise UsageError(f"Firmware {path} not found; build it first ('edgesdk build').") from None
    return _parse_elf(path, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns))


@lru_cache(maxsize=8)
def _parse_elf(path: Path, version: tuple) -> _Elf:  # noqa: ARG001 - `version` keys the cache
    try:
        elf = ElfFile.read(path)
        if elf.machine != EM_RISCV or elf.bits != 32:
            raise EmulatorError(f"{path} is not an RV32 ELF file (machine {elf.machine}, {elf.bits}-bit); build "
                                "it for the board with 'edgesdk build'.")
        symbols, functions, sizes = {}, [], {}
        for sym in elf.symbols():
            if sym.shndx != 0:  # SHN_UNDEF: not defined here
                symbols.setdefault(sym.name, sym.value)
                sizes.setdefault(sym.name, sym.size)
                if sym.type == STT_FUNC:
                    functions.append((sym.value, sym.size, sym.name))
        return _Elf(elf.entry, tuple(elf.loaded_segments()), symbols, tuple(sorted(functions)), sizes)
    except FileNotFoundError:
        raise UsageError(f"Firmware {path} not found; build it first ('edgesdk build').") from None
    except ElfFormatError as exc:
        raise EmulatorError(f"{path} is not a valid ELF file ({exc}); rebuild the firmware.") from None


def elf_symbol(elf_path, name: str) -> int:
    """Address of symbol `name` in the ELF file."""
    symbols = _read_elf(elf_path).symbols
    if name not in symbols:
        raise EmulatorError(f"Symbol '{name}' is not defined in {elf_path}; was the firmware built by edgesdk "
                            "from the same model?")
    return symbols[name]


def _run_steps(machine, elf_path, steps: list, reads) -> list:
    """Arm the mark callback of a sequence run; return the per-step reads list it fills."""
    count = elf_symbol(elf_path, STEPS_SYMBOL)
    results = [None] * len(steps)

    def at_mark(hit: int) -> None:
        step, end = divmod(hit, 2)
        if step >= len(steps):
            return
        if not end:  # mark 1: the step's inputs (and, at the first, how many steps to run)
            if step == 0:
                machine.write(count, struct.pack("<I", len(steps) - 1))
            for address, data in steps[step]:
                machine.write(address, data)
        else:  # mark 2: its outputs
            results[step] = [machine.read(address, length) for address, length in reads]

    machine.on_mark(at_mark)
    return results


def instructions_between_marks(marks: list) -> list:
    """Instructions of each run the harness marks before and after (an inference of a sequence, a model of an
    image): between marks 2k and 2k+1, from the counts before each mark (mark_instructions)."""
    return [marks[k + 1] - marks[k] for k in range(0, len(marks) - 1, 2)]


def elf_symbol_size(elf_path, name: str) -> int:
    """Size (st_size) of symbol `name` in the ELF file."""
    elf_symbol(elf_path, name)  # the same error when it is missing
    return _read_elf(elf_path).sizes[name]


def _symbolize(elf: _Elf, address: int) -> str:
    """'function+0x12' for an address inside a known function, else '?'."""
    index = bisect.bisect_right(elf.functions, (address, float("inf"), "")) - 1
    if index >= 0:
        start, size, name = elf.functions[index]
        if start <= address < start + max(size, 1):
            return f"{name}+{address - start:#x}"
    return "?"


# ---- The machine ------------------------------------------------------------------------------------

class _FaultEvents:
    """What the fault hooks saw. A separate object so Unicorn's callbacks do not keep the Machine (and
    its memory buffers) alive."""

    def __init__(self):
        self.fault = None  # (access kind, address, size) from the invalid-memory hook
        self.interrupt = None  # (intno, pc) from the interrupt hook

    def on_invalid_memory(self, uc, access, address, size, value, user_data) -> bool:
        self.fault = (access, address, size)
        return False  # let Unicorn stop with the error

    def on_interrupt(self, uc, intno, user_data) -> None:
        self.interrupt = (intno, uc.reg_read(rv.UC_RISCV_REG_PC))
        uc.emu_stop()


class Machine:
    """One emulated board running one ELF; use run_elf() unless you need the pieces."""

    def __init__(self, board: Board, elf_path, native_models: dict | None = None):
        """`native_models` ({peripheral name: NativeModelSpec}) replaces the native models the installed
        targets give those peripherals (tests use stand-ins)."""
        # Memory map and peripherals from the board's Renode platform (.repl), checked against board.json.
        self.board = emulator_board(board)
        self.elf_path = Path(elf_path)
        self.elf = _read_elf(elf_path)
        specs = {periph.name: spec for periph, spec in native_peripherals(self.board)}
        specs.update(native_models or {})
        self.devices: list = []  # MappedDevice: Python peripheral models of target plugins (and board devices)
        self._board_devices: set = set()  # names of the board's own Python devices (devices.BOARD_DEVICES)
        self.native: dict = {}  # peripheral name -> NativeDevice, in board order
        self.lib = native_library(list(specs.values()))
        self.flash = np.zeros(board.flash.size, dtype=np.uint8)
        self.sram = np.full(board.sram.size, SRAM_FILL_BYTE, dtype=np.uint8)
        self.state = self.lib.emu_create(_c_function_address(_uclib, "uc_emu_stop"))
        self._native_specs = specs
        self.events = _FaultEvents()
        self.uc = unicorn.Uc(unicorn.UC_ARCH_RISCV, unicorn.UC_MODE_RISCV32)
        self._map_memory()
        self._map_peripherals()
        self._install_hooks()
        self._load_elf()
        self._watch_stack()

    def close(self) -> None:
        """Free Unicorn, the NPU model and the native state now (not whenever the GC gets to them)."""
        if self.uc is not None:
            # Unicorn first: no callback may run once the native state is freed. The binding closes the
            # engine in a weakref finalizer; calling it now releases the engine at once.
            release = getattr(self.uc, "_Uc__finalizer", None)
            if release is not None:
                release()
            self.uc = None
        for device in self.native.values():
            if device.model:
                model_function(self.lib, device.spec, "destroy")(device.model)
                device.model = None
        self.native = {}
        if self.state:
            self.lib.emu_destroy(self.state)
            self.state = None

    # -- setup --

    def _map_memory(self) -> None:
        windows = ((0, self.board.flash, self.flash, unicorn.UC_PROT_READ | unicorn.UC_PROT_EXEC, 0),
                   (1, self.board.sram, self.sram, unicorn.UC_PROT_READ | unicorn.UC_PROT_WRITE, 1))
        for index, region, buffer, perms, writable in windows:
            pointer = buffer.ctypes.data
            self.uc.mem_map_ptr(region.base, region.size, perms, pointer)
            self.lib.emu_set_window(self.state, index, region.base, region.size, pointer, writable)

    def _map_peripherals(self) -> None:
        devices = {"ns16550": ("emu_uart_read", "emu_uart_write"),
                   "sifive_uart": ("emu_sifive_uart_read", "emu_sifive_uart_write"),
                   "sifive_test": ("emu_exit_read", "emu_exit_write")}
        for periph in self.board.peripherals.values():
            names, context = devices.get(periph.type), self.state
            if periph.name in self._native_specs:  # a native model, served by the glue
                names, context = ("emu_device_read", "emu_device_write"), self._attach_native(periph)
            if names is None:
                self._map_python_device(periph)
                continue
            if periph.type == "ns16550":
                self.lib.emu_set_uart_reg_shift(self.state, int(periph.props.get("reg_shift", 0)))
            size = -(-periph.size // PAGE) * PAGE  # Unicorn maps whole pages
            status = _uclib.uc_mmio_map(self.uc._uch, periph.base, size,
                                        _c_function_address(self.lib, names[0]), context,
                                        _c_function_address(self.lib, names[1]), context)
            if status != unicorn.UC_ERR_OK:
                raise EmulatorError(f"Cannot map peripheral {periph.name} at {periph.base:#x} "
                                    f"({unicorn.UcError(status)}); check {self.board.path}.")

    def _map_python_device(self, periph) -> None:
        """A target plugin's Python model of `periph` (edgesdk/emulator/devices.py); a peripheral no
        installed target models stays unmapped, so accesses fault naming it."""
        from ..targets import peripheral_model
        from .devices import BOARD_DEVICES, GuestBus, MappedDevice

        model = peripheral_model(periph.type)
        device = model.create(periph, self.board) if model is not None else None
        if device is None and periph.type in BOARD_DEVICES:  # a board peripheral the firmware only configures
            device = BOARD_DEVICES[periph.type](periph)
            self._board_devices.add(periph.name)
        if device is None:
            return
        bus = GuestBus([("flash", self.board.flash.base, self.flash, False),
                        ("sram", self.board.sram.base, self.sram, True)])
        device.attach(bus)
        mapped = MappedDevice(periph.name, device, lambda: self.uc.emu_stop())
        size = -(-periph.size // PAGE) * PAGE
        try:
            self.uc.mmio_map(periph.base, size, mapped.read, None, mapped.write, None)
        except unicorn.UcError as exc:
            raise EmulatorError(f"Cannot map peripheral {periph.name} at {periph.base:#x} ({exc}); check "
                                f"{self.board.path}.") from None
        self.devices.append(mapped)

    def peripheral_stats(self) -> dict:
        """Counters of every modelled peripheral the targets bring, native or Python (e.g. the NPU's and the
        DSP's cycles), by peripheral name."""
        stats = {name: self.native_stats(name) for name in self.native}
        stats.update({d.name: dict(d.device.stats()) for d in self.devices if d.name not in self._board_devices})
        return stats

    def _attach_native(self, periph) -> int:
        """Create the native model of `periph`, bind its bus to guest memory, tell it the board (settings,
        memory classes), and let the glue sum its counters over runs; the glue's device (MMIO context)."""
        spec = self._native_specs[periph.name]
        model = model_function(self.lib, spec, "create")()
        if not model:
            raise EmulatorError(f"The native model of peripheral {periph.name} ({periph.type}) could not be "
                                "created (out of memory).")
        optional = {name: model_function(self.lib, spec, name) for name in ("irq_pending", "configure",
                                                                            "set_memory_class")}
        irq = _c_function_address(self.lib, f"{spec.symbol_prefix}_irq_pending") if optional["irq_pending"] else None
        handle = self.lib.emu_add_device(self.state, model, _c_function_address(self.lib, f"{spec.symbol_prefix}_reg_read"),
                                         _c_function_address(self.lib, f"{spec.symbol_prefix}_reg_write"), irq)
        device = NativeDevice(periph.name, periph.type, spec, model, handle)
        self.native[periph.name] = device  # close() destroys it from here on
        if not handle:
            raise EmulatorError(f"Board {self.board.name} has more native peripheral models than the emulator "
                                f"hosts; {periph.name} is one too many.")
        model_function(self.lib, spec, "set_bus")(model, _c_function_address(self.lib, "emu_bus_read"),
                                                  _c_function_address(self.lib, "emu_bus_write"), self.state)
        self._configure_native(device, optional)
        device.perf_registers = sorted({offset for pair in spec.perf_counters.values() for offset in pair
                                        if offset is not None})
        offsets = (ctypes.c_uint32 * len(device.perf_registers))(*device.perf_registers)
        self.lib.emu_set_device_accounting(handle, spec.ctrl_offset, spec.start_mask, offsets,
                                           len(device.perf_registers))
        return handle

    def _configure_native(self, device: NativeDevice, functions: dict) -> None:
        """Hand the model its settings words and tell it which addresses are flash and SRAM (timing, byte
        counters); a model without the function for what its spec asks is refused."""
        spec, where = device.spec, f"peripheral {device.name} ({device.type}) of board {self.board.name}"
        if spec.settings:
            if functions["configure"] is None:
                raise EmulatorError(f"The native model of {where} has settings but no {spec.symbol_prefix}_configure().")
            words = (ctypes.c_uint32 * len(spec.settings))(*spec.settings)
            if functions["configure"](device.model, words, len(spec.settings)) != 0:
                raise EmulatorError(f"The native model of {where} refused its settings {list(spec.settings)}; "
                                    f"check {self.board.path}.")
        if functions["set_memory_class"] is None:
            return  # a model without a timing model
        for base, size, kind, bytes_per_cycle_x256 in spec.memory_classes:
            if functions["set_memory_class"](device.model, base, size, kind, bytes_per_cycle_x256) != 0:
                raise EmulatorError(f"The native model of {where} rejected memory class {base:#x}+{size}; "
                                    f"check {self.board.path}.")

    def _install_hooks(self) -> None:
        self._block_hook = ctypes.c_size_t()  # handle; the C callback needs no Python reference
        status = _uclib.uc_hook_add(self.uc._uch, ctypes.byref(self._block_hook), _UC_HOOK_BLOCK,
                                    _c_function_address(self.lib, "emu_block_hook"), self.state,
                                    ctypes.c_uint64(1), ctypes.c_uint64(0))
        if status != unicorn.UC_ERR_OK:
            raise EmulatorError(f"Cannot install the instruction counter ({unicorn.UcError(status)}).")
        if HARNESS_MARK_SYMBOL in self.elf.symbols:
            self.lib.emu_set_mark_address(self.state, self.elf.symbols[HARNESS_MARK_SYMBOL])
        # Faults only: these Python hooks never run on the hot path.
        self.uc.hook_add(unicorn.UC_HOOK_MEM_INVALID, self.events.on_invalid_memory)
        self.uc.hook_add(unicorn.UC_HOOK_INTR, self.events.on_interrupt)

    def _host_view(self, address: int, length: int):
        """numpy view of guest memory [address, address + length), or None if not in flash/SRAM."""
        for region, buffer in ((self.board.flash, self.flash), (self.board.sram, self.sram)):
            if region.contains(address, max(length, 1)):
                return buffer[address - region.base:address - region.base + length]
        return None

    def _load_elf(self) -> None:
        for address, data in self.elf.segments:
            view = self._host_view(address, len(data))
            if view is None:
                raise EmulatorError(
                    f"{self.elf_path}: a loadable segment at {address:#x} ({len(data)} B) lies outside flash "
                    f"and SRAM of board {self.board.name}; it was linked for another board. Rebuild it.")
            view[:] = np.frombuffer(data, dtype=np.uint8)

    # -- running --

    def write(self, address: int, data: bytes) -> None:
        view = self._host_view(address, len(data))
        if view is None:
            raise UsageError(f"Cannot write {len(data)} bytes at {address:#x}: not inside flash or SRAM of "
                             f"board {self.board.name}.")
        view[:] = np.frombuffer(bytes(data), dtype=np.uint8)

    def read(self, address: int, length: int) -> bytes:
        view = self._host_view(address, length)
        if view is None:
            raise UsageError(f"Cannot read {length} bytes at {address:#x}: not inside flash or SRAM of "
                             f"board {self.board.name}.")
        return view.tobytes()

    def run(self, timeout_s: float = 60.0, max_instructions: int | None = None) -> None:
        """Run from the ELF entry until the exit device is written; raise EmulatorError otherwise.

        Runs in instruction-budget slices (advance()), checking the wall-clock deadline between them: a
        wall-clock stop could land inside an MMIO access (an NPU START) and re-execute it on resume.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            budget = RUN_SLICE_INSTRUCTIONS
            if max_instructions is not None:
                left = max_instructions - self.instructions()
                if left <= 0:
                    raise self._unfinished_error(f"did not finish within the budget of {max_instructions} instructions")
                budget = min(budget, left)
            if self.advance(budget):
                break
            if time.monotonic() > deadline:
                raise self._unfinished_error(f"did not finish within {timeout_s:g} s")
        if self.stack_guard_intact() is False:
            raise self._stack_overflow_error("the guard words at the bottom of the stack were overwritten")

    # advance() state: where the CPU stopped (None before the first slice) and whether it has exited.
    ADVANCE_MIN_INSTRUCTIONS = 1024
    _resume_pc = None
    _exited = False

    def advance(self, max_instructions: int, start_pc: int | None = None) -> bool:
        """Run at most `max_instructions` more instructions, from `start_pc` (default: the ELF entry) the
        first time and from where the CPU stopped afterwards; True once the firmware has written the exit
        device. For callers that watch the firmware while it runs (edgesdk.hil, edgesdk.flash); faults raise
        EmulatorError as in run(). Do not mix with run() on one Machine.

        Slices end on the instruction budget, never on wall-clock time: the budget stops the CPU at a block
        boundary, before the block runs, whereas a wall-clock stop can land inside an MMIO callback (an NPU
        START running its table, a UART write) and leave the PC on that store, which resuming would execute
        a second time. The glue keeps the first stop reason, so after the first budget stop an exit is told
        apart from the next budget stop by the count: a budget stop happens only at or past the budget.
        """
        if self._exited:
            return True
        if self._resume_pc is None:
            pc = self.elf.entry if start_pc is None else start_pc
        else:
            pc = self._resume_pc
            self.lib.emu_prepare_resume(self.state, pc)
        # The budget must exceed the longest translation block (QEMU: 512 instructions): the CPU stops
        # before a block that would reach the budget, so a smaller budget would never make progress.
        limit = self.instructions() + max(self.ADVANCE_MIN_INSTRUCTIONS, max_instructions)
        self.lib.emu_set_instruction_limit(self.state, limit)
        try:
            self.uc.emu_start(pc, NO_UNTIL_ADDRESS)
        except unicorn.UcError as exc:
            if not self._semihosting_exit(exc):
                raise self._fault_error(exc) from None
            self._exited = True
            return True
        faults = [d.fault for d in self.devices if d.fault]
        if faults:
            raise EmulatorError(f"The firmware stopped near {self._where(self.pc())}: {faults[0]}.{self._uart_tail()}")
        offset, size = ctypes.c_uint64(), ctypes.c_uint32()
        if self.lib.emu_device_error(self.state, ctypes.byref(offset), ctypes.byref(size)) != 0:
            raise self._device_error()
        if self.events.interrupt is not None:
            raise self._trap_error()
        reason = self.lib.emu_stop_reason(self.state)
        if reason == _STOP_EXIT or (reason == _STOP_LIMIT and self.instructions() < limit):
            self.lib.emu_settle_exit(self.state, self.pc())
            self._exited = True
            return True
        self._resume_pc = self.pc()
        return False

    def pc(self) -> int:
        return self.uc.reg_read(rv.UC_RISCV_REG_PC)

    def _semihosting_exit(self, exc: unicorn.UcError) -> bool:
        """True if the CPU stopped at a RISC-V semihosting call (an ebreak between `slli zero, zero, 0x1f` and
        `srai zero, zero, 7`, which Unicorn cannot execute) that ends the run: SYS_EXIT (a1 = reason) or
        SYS_EXIT_EXTENDED (a1 -> {reason, code}), answered as QEMU does (exit code 0 / the code for
        ADP_Stopped_ApplicationExit, else 1). Other calls are refused: edgesdk firmware makes none."""
        if exc.errno != unicorn.UC_ERR_INSN_INVALID:
            return False
        pc = self.pc()
        words = self._host_view(pc - 4, 12)
        if words is None or struct.unpack("<III", words.tobytes()) != SEMIHOSTING_SEQUENCE:
            return False
        op, arg = self.uc.reg_read(rv.UC_RISCV_REG_A0), self.uc.reg_read(rv.UC_RISCV_REG_A1)
        if op == SEMIHOSTING_SYS_EXIT:
            code = 0 if arg == SEMIHOSTING_APPLICATION_EXIT else 1
        elif op == SEMIHOSTING_SYS_EXIT_EXTENDED:
            block = self._host_view(arg, 8)
            if block is None:
                raise EmulatorError(f"The firmware's semihosting SYS_EXIT_EXTENDED at {self._where(pc)} points a1 "
                                    f"at {arg:#010x}, outside flash and SRAM.{self._uart_tail()}")
            reason, code = struct.unpack("<Ii", block.tobytes())
            code = code if reason == SEMIHOSTING_APPLICATION_EXIT else 1
        else:
            raise EmulatorError(f"The firmware made semihosting call {op:#x} at {self._where(pc)}; the built-in "
                                "emulator answers SYS_EXIT (0x18) and SYS_EXIT_EXTENDED (0x20) only, the calls "
                                f"edgesdk's firmware makes.{self._uart_tail()}")
        self.lib.emu_exit_at(self.state, code, pc)
        return True

    # -- results --

    def instructions(self) -> int:
        return self.lib.emu_instructions(self.state)

    def on_mark(self, callback) -> None:
        """Call `callback(hit)` whenever the firmware enters edgesdk_harness_mark; `hit` counts the entries from
        0 (a resumed slice that re-enters the mark reports the same hit again, so callbacks must be idempotent)."""
        address = self.elf.symbols.get(HARNESS_MARK_SYMBOL)
        if address is None:
            raise EmulatorError(f"{self.elf_path} has no {HARNESS_MARK_SYMBOL}: not an edgesdk harness build.")

        def hook(uc, pc, size, data):
            callback(self.lib.emu_mark_hits(self.state) - 1)

        self.uc.hook_add(unicorn.UC_HOOK_CODE, hook, begin=address, end=address)

    def instructions_before(self, pc: int) -> int:
        """From a UC_HOOK_CODE callback on the instruction at `pc`: the instructions executed before it (the
        block counter has counted the rest of its block already)."""
        return self.lib.emu_instructions_before(self.state, pc)

    def trace_commands(self) -> bool:
        """Record every command's cycles from now on (command_trace) in the native models that can report
        them (<prefix>_set_command_observer); False if none can."""
        for device in self.native.values():
            observe = model_function(self.lib, device.spec, "set_command_observer")
            if observe is not None:
                observe(device.model, _c_function_address(self.lib, "emu_device_command_observer"), device.handle)
                device.traced = True
        return any(device.traced for device in self.native.values())

    def command_trace(self) -> dict:
        """{peripheral name: [(run index, command index, cycles) of every command since trace_commands(), in
        order]} of each native model that reports commands; the run index counts that peripheral's starts."""
        trace = {}
        for name, device in self.native.items():
            if not device.traced:
                continue
            length = int(self.lib.emu_device_trace_length(device.handle))
            flat = (np.ctypeslib.as_array(self.lib.emu_device_trace(device.handle), shape=(length * 3,))
                    if length else [])
            trace[name] = [tuple(int(v) for v in flat[k:k + 3]) for k in range(0, len(flat), 3)]
        return trace

    def command_runs(self) -> dict:
        """{peripheral name: runs (starts) so far} of the native models whose commands are traced."""
        return {name: int(self.lib.emu_device_starts(d.handle)) for name, d in self.native.items() if d.traced}

    def irq_pending(self, name: str) -> bool:
        """Whether native peripheral `name` raises its interrupt line (its model's <prefix>_irq_pending)."""
        return bool(self.lib.emu_device_irq_pending(self.native[name].handle))

    def mark_instructions(self) -> list:
        """Instructions executed before each call of edgesdk_harness_mark."""
        return [self.lib.emu_mark_instructions(self.state, i) for i in range(self.lib.emu_mark_hits(self.state))]

    def inference_instructions(self) -> int | None:
        if self.lib.emu_mark_hits(self.state) < 2:
            return None
        return self.lib.emu_mark_instructions(self.state, 1) - self.lib.emu_mark_instructions(self.state, 0)

    def exit_code(self) -> int:
        return self.lib.emu_exit_code(self.state)

    def uart_text(self) -> str:
        length = self.lib.emu_uart_length(self.state)
        text = ctypes.string_at(self.lib.emu_uart_text(self.state), length).decode("utf-8", "replace")
        dropped = self.lib.emu_uart_dropped(self.state)
        return text + (f"\n[emulator: {dropped} more UART bytes dropped]\n" if dropped else "")

    def native_stats(self, name: str) -> dict:
        """Native peripheral `name`'s performance counters summed over its runs, plus its run count
        (NativeModelSpec.starts_name)."""
        device = self.native[name]

        def total(offset):
            return self.lib.emu_device_perf_total(device.handle, device.perf_registers.index(offset))

        stats = {counter: total(low) + (total(high) << 32 if high is not None else 0)
                 for counter, (low, high) in sorted(device.spec.perf_counters.items())}
        stats[device.spec.starts_name] = self.lib.emu_device_starts(device.handle)
        return stats

    # -- stack overflow detection (firmware/startup.c writes the guard; docs/reliability.md) --

    def _watch_stack(self) -> None:
        """Remember the stack guard the firmware keeps at __stack_bottom (pattern and size from its
        `edgesdk_stack_guard` symbol), and make the free SRAM pages between the last section (.noinit, the
        arena) and the stack read-only: the stack grows down into them, so a write there faults at once and
        is reported as a stack overflow, with the PC that made it. Firmware that links malloc uses that
        space as its heap, so it is left writable then."""
        symbols = self.elf.symbols
        self.stack_guard, self.stack_gap = None, None
        bottom = symbols.get("__stack_bottom")
        if bottom is None:
            return
        info = self._host_view(symbols["edgesdk_stack_guard"], 8) if "edgesdk_stack_guard" in symbols else None
        if info is not None:
            pattern, size = struct.unpack("<II", info.tobytes())
            self.stack_guard = (bottom, size, pattern)
        used_end = symbols.get("__heap_start", symbols.get("__noinit_end"))
        if used_end is None or {"malloc", "sbrk", "_sbrk"} & symbols.keys():
            return
        low, high = -(-used_end // PAGE) * PAGE, bottom // PAGE * PAGE
        if low < high and self.board.sram.contains(low, high - low):
            self.uc.mem_protect(low, high - low, unicorn.UC_PROT_READ)
            self.stack_gap = (low, high)

    def stack_guard_intact(self) -> bool | None:
        """False if the firmware's stack guard words changed; None if the firmware has no stack guard."""
        if self.stack_guard is None:
            return None
        bottom, size, pattern = self.stack_guard
        view = self._host_view(bottom, size)
        return view is not None and bool(np.all(view.view(np.uint32) == np.uint32(pattern)))

    def _stack_overflow_error(self, what: str) -> EmulatorError:
        bottom = self.elf.symbols.get("__stack_bottom", 0)
        sp = self.uc.reg_read(rv.UC_RISCV_REG_SP)
        return EmulatorError(
            f"The firmware overflowed its stack: {what} (the stack is {self.board.stack_bytes} bytes, from "
            f"__stack_bottom {bottom:#010x} up; sp is {sp:#010x}), at {self._where(self.pc())} "
            f"({self._return_address()}), after {self.instructions()} instructions.{self._uart_tail()} Reduce "
            "stack use (deep recursion, large local arrays) or give the board more stack (stack_bytes in "
            "board.json).")

    def stack_bytes_used(self) -> int | None:
        """Deepest stack use, from the SRAM fill pattern left below the stack pointer."""
        bottom = self.elf.symbols.get("__stack_bottom")
        top = self.elf.symbols.get("__stack")
        view = self._host_view(bottom, top - bottom) if bottom is not None and top is not None else None
        if view is None or len(view) == 0:
            return None
        # The stack guard (firmware/startup.c) is written at reset, not by the stack: look above it.
        guard = self.stack_guard[1] if self.stack_guard and self.stack_guard_intact() else 0
        touched = np.flatnonzero(view[guard:] != SRAM_FILL_BYTE)
        return int(len(view) - guard - touched[0]) if len(touched) else 0

    # -- error messages --

    def _where(self, pc: int) -> str:
        return f"PC {pc:#010x} in {_symbolize(self.elf, pc)}"

    def _return_address(self) -> str:
        ra = self.uc.reg_read(rv.UC_RISCV_REG_RA)
        return f"return address {ra:#010x} in {_symbolize(self.elf, ra)}"

    def _uart_tail(self) -> str:
        text = self.uart_text().strip()
        return f" UART output so far: {text[-400:]!r}." if text else " There was no UART output."

    def _region_name(self, address: int) -> str:
        for region in self.board.memories.values():
            if region.contains(address):
                return f"{region.name} ({region.kind})"
        for periph in self.board.peripherals.values():
            if periph.base <= address < periph.base + periph.size:
                return f"peripheral {periph.name} ({periph.type}, not modelled by the emulator)"
        return "unmapped memory"

    def _fault_error(self, exc: unicorn.UcError) -> EmulatorError:
        pc = self.pc()
        address = self.events.fault[1] if self.events.fault else None
        gap = self.stack_gap
        if exc.errno == unicorn.UC_ERR_WRITE_PROT and address is not None and gap and gap[0] <= address < gap[1]:
            return self._stack_overflow_error(f"a write to {address:#010x}, below the bottom of the stack")
        if self.stack_guard_intact() is False:
            return self._stack_overflow_error(f"the stack guard words were overwritten before a crash ('{exc}')")
        kinds = {
            unicorn.UC_ERR_READ_UNMAPPED: "read from unmapped address",
            unicorn.UC_ERR_WRITE_UNMAPPED: "write to unmapped address",
            unicorn.UC_ERR_FETCH_UNMAPPED: "jump to unmapped address",
            unicorn.UC_ERR_WRITE_PROT: "write to read-only memory at",
            unicorn.UC_ERR_FETCH_PROT: "jump to non-executable memory at",
            unicorn.UC_ERR_READ_PROT: "read from protected memory at",
            unicorn.UC_ERR_READ_UNALIGNED: "misaligned read at",
            unicorn.UC_ERR_WRITE_UNALIGNED: "misaligned write at",
            unicorn.UC_ERR_FETCH_UNALIGNED: "misaligned jump to",
        }
        if exc.errno == unicorn.UC_ERR_INSN_INVALID:
            what = f"illegal instruction or ebreak{self._encoding(pc)}"
        elif exc.errno in kinds and address is not None:
            what = f"{kinds[exc.errno]} {address:#010x} [{self._region_name(address)}]"
        else:
            what = f"CPU fault '{exc}'"
        return EmulatorError(
            f"The firmware crashed: {what} at {self._where(pc)} ({self._return_address()}), after "
            f"{self.instructions()} instructions.{self._uart_tail()} Look up the address with "
            f"'riscv64-unknown-elf-addr2line -e {self.elf_path} {pc:#x}'.")

    def _trap_error(self) -> EmulatorError:
        intno, pc = self.events.interrupt
        if intno == 2:
            what = f"an illegal instruction{self._encoding(pc)}"
        elif intno in (3, 8, 9, 11):
            what = ("ebreak" if intno == 3 else "ecall") + (
                " (edgesdk firmware runs bare metal, with no debugger or monitor to answer it)")
        else:
            what = f"a trap with cause {intno} ({_TRAP_CAUSES.get(intno, 'unknown')})"
        return EmulatorError(
            f"The firmware crashed: {what} at {self._where(pc)} ({self._return_address()}), after "
            f"{self.instructions()} instructions.{self._uart_tail()}")

    def _encoding(self, pc: int) -> str:
        word = self._host_view(pc, 4)
        return f" (encoding {int.from_bytes(word.tobytes(), 'little'):#010x})" if word is not None else ""

    def _unfinished_error(self, why: str) -> EmulatorError:
        pc = self.pc()
        return EmulatorError(
            f"The firmware {why} ({self.instructions()} instructions executed); it was stopped at "
            f"{self._where(pc)}. It is probably stuck in a loop (e.g. polling a device that never "
            f"answers); if it is just slow, raise the limit (timeout / max_instructions).{self._uart_tail()}")

    def _device_error(self) -> EmulatorError:
        offset, size = ctypes.c_uint64(), ctypes.c_uint32()
        code = self.lib.emu_device_error(self.state, ctypes.byref(offset), ctypes.byref(size))
        where = self._where(self.pc())
        if code == _DEV_ACCESS_SIZE:
            index = self.lib.emu_device_error_device(self.state)
            device = list(self.native.values())[index]
            what = (f"accessed {device.name} ({device.type}) register offset {offset.value:#x} with a "
                    f"{size.value}-byte access; its registers only support aligned 32-bit loads and stores")
        elif code == _DEV_EXIT_RESET:
            what = "asked the exit device for a reset, which the emulator does not support"
        else:
            what = f"caused device error {code}"
        return EmulatorError(f"The firmware {what} (near {where}).{self._uart_tail()}")


STEPS_SYMBOL = "edgesdk_harness_extra_steps"
# RISC-V semihosting: slli zero, zero, 0x1f; ebreak; srai zero, zero, 7 (uncompressed), a0 = call, a1 = argument.
SEMIHOSTING_SEQUENCE = (0x01F01013, 0x00100073, 0x40705013)
SEMIHOSTING_SYS_EXIT, SEMIHOSTING_SYS_EXIT_EXTENDED = 0x18, 0x20
SEMIHOSTING_APPLICATION_EXIT = 0x20026  # ADP_Stopped_ApplicationExit


def run_elf(elf_path, board, writes=(), reads=(), timeout_s: float = 60.0, max_instructions: int | None = None,
            native_models: dict | None = None, steps: list | None = None, observers=()) -> RunResult:
    """Boot `elf_path` on `board` (Board or name), with `writes` [(address, bytes)] applied to memory before
    boot, until it writes the exit device; return exit code, UART text, counts and the `reads`
    [(address, length)] taken after exit. Raises EmulatorError on faults, ecall/ebreak and time-outs.

    `steps` ([writes per inference]) runs a sequence of inferences in one boot (the harness runs
    1 + edgesdk_harness_extra_steps inferences): each step's writes go into memory when its inference starts, and `reads` are
    taken after each one (RunResult.step_reads; a step the firmware did not finish has none).

    `native_models` ({peripheral name: NativeModelSpec}) replaces native models (Machine).
    `observers` watch the run (e.g. edgesdk.report.profile.StepProfiler): `attach(machine)` before it starts,
    `collect(machine)` after it ends, whose results are RunResult.observations, in order."""
    board = load_board(board) if isinstance(board, str) else board
    machine = Machine(board, elf_path, native_models)
    try:
        for address, data in writes:
            machine.write(address, data)
        step_reads = _run_steps(machine, elf_path, steps, reads) if steps else []
        for observer in observers:
            observer.attach(machine)
        machine.run(timeout_s, max_instructions)
        return RunResult(
            exit_code=machine.exit_code(),
            uart=machine.uart_text(),
            cpu_instructions=machine.instructions(),
            inference_instructions=machine.inference_instructions(),
            reads=[machine.read(address, length) for address, length in reads],
            stack_bytes_used=machine.stack_bytes_used(),
            peripheral_stats=machine.peripheral_stats(),
            step_reads=[r for r in step_reads if r is not None],
            step_instructions=instructions_between_marks(machine.mark_instructions()) if steps else [],
            observations=[observer.collect(machine) for observer in observers],
        )
    finally:
        machine.close()
