"""The board's Renode platform (boards/<board>/<board>.repl) and how it relates to board.json.

board.json stays the compiler's source of every board constant (memory sizes, NPU clock, bandwidths,
toolchain). The .repl is what users load in Renode; the built-in emulator builds its machine from the same
.repl (memories, UART, exit device, NPU window), so the file our tests exercise is the file users run.
`check_against_board()` lists every place where the two disagree; `emulator_board()` refuses to run on a
drifted pair, and tests/test_renode.py keeps the checked-in files in sync.

Renode types <-> board.json peripheral types:

    Memory.MappedMemory            memory.<name>            base, size
    UART.NS16550                   ns16550                  base; size 0x100 (fixed by Renode's model);
                                                            wideRegisters false/true = reg_shift 0/2
    Edgesdk.SiFiveTestFinisher     sifive_test              <base, +size>   (edgesdk/renode/*.cs)
    Edgesdk.Npu1                   edgesdk-npu1             <base, +size>, IRQ -> plic@irq, and the
                                                            flash/SRAM windows and bandwidths it may master
    CPU.RiscV32                    cpu                      cpuType starts with cpu.isa;
                                                            PerformanceInMips * 1e6 = cpu.clock_hz
    IRQControllers.*               (Renode only)            interrupt controller and timer
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ..board import Board, MemoryRegion, Peripheral
from ..errors import UsageError
from .repl import Repl, ReplEntry, read_repl

MEMORY_TYPE = "Memory.MappedMemory"
UART_TYPE = "UART.NS16550"
EXIT_TYPE = "Edgesdk.SiFiveTestFinisher"
NPU_TYPE = "Edgesdk.Npu1"
CPU_TYPE = "CPU.RiscV32"
NS16550_SIZE = 0x100  # NS16550.Size in Renode's model
DEFAULT_PERFORMANCE_IN_MIPS = 100  # Renode's default for a CPU without PerformanceInMips
BANDWIDTH_SCALE = 256  # the NPU model's bytes_per_cycle_x256
DEFAULT_BYTES_PER_CYCLE_X256 = 8 * 256  # the NPU datasheet's default bandwidth
# Entries that exist only in Renode (not in board.json): the CPU and the interrupt/timer infrastructure.
RENODE_ONLY_TYPE_PREFIXES = ("CPU.", "IRQControllers.")

# Renode type -> board.json peripheral type, for the peripherals both describe. Targets add theirs
# (Target.peripherals(): the NPU's Edgesdk.Npu1, the DSP's, a vendor plugin's).
PERIPHERAL_TYPES = {UART_TYPE: "ns16550", EXIT_TYPE: "sifive_test", NPU_TYPE: "edgesdk-npu1"}


def peripheral_types() -> dict:
    """PERIPHERAL_TYPES plus the Renode types of every installed target's peripheral models."""
    from ..targets import all_targets

    types = dict(PERIPHERAL_TYPES)
    for target in all_targets():
        for model in target.peripherals():
            types.setdefault(model.renode_type, model.type)
    return types


def repl_path(board: Board) -> Path:
    """boards/<dir>/<board name>.repl (it may not exist: boards without a Renode platform)."""
    return board.path.parent / f"{board.name}.repl"


def resc_path(board: Board) -> Path:
    return board.path.parent / f"{board.name}.resc"


@dataclass(frozen=True)
class CpuTiming:
    performance_in_mips: int

    @property
    def instructions_per_second(self) -> int:
        return self.performance_in_mips * 1_000_000


def cpu_timing(repl: Repl) -> CpuTiming:
    """Virtual time in Renode: a CPU executes PerformanceInMips million instructions per virtual second."""
    cpus = repl.of_type(CPU_TYPE)
    mips = cpus[0].attributes.get("PerformanceInMips", DEFAULT_PERFORMANCE_IN_MIPS) if cpus else DEFAULT_PERFORMANCE_IN_MIPS
    return CpuTiming(int(mips))


# ---- repl -> emulator board ------------------------------------------------------------------------

def _npu_windows(repl: Repl) -> dict:
    """{(base, size): (kind, memory name prefix, bytes per NPU cycle)} of the memory windows declared to the NPU."""
    windows = {}
    for npu in repl.of_type(NPU_TYPE):
        a = npu.attributes
        if "flashBase" in a:
            windows[(a["flashBase"], a["flashSize"])] = ("rom", "flash", a.get("flashBytesPerCycleX256", 256) / BANDWIDTH_SCALE)
        if "sramBase" in a:
            windows[(a["sramBase"], a["sramSize"])] = ("ram", "sram", a.get("sramBytesPerCycleX256", 2048) / BANDWIDTH_SCALE)
    return windows


def _bytes_per_cycle(periph, region) -> float:
    """The NPU's bandwidth to a memory: its peripheral's "<memory>_bytes_per_cycle" (board.json), else the
    datasheet's default."""
    return float(periph.props.get(f"{region.name}_bytes_per_cycle", DEFAULT_BYTES_PER_CYCLE_X256 / BANDWIDTH_SCALE))


def _peripheral_from_entry(entry: ReplEntry, repl: Repl) -> Peripheral | None:
    kind = peripheral_types().get(entry.type)
    if kind is None or entry.address is None:
        return None
    props = {}
    size = entry.size
    if entry.type == UART_TYPE:
        size = NS16550_SIZE
        props["reg_shift"] = 2 if entry.attributes.get("wideRegisters") is True else 0
    if entry.type == NPU_TYPE:
        irqs = [n for c in entry.connections for n in c.inputs if c.source in ("IRQ", None)]
        if irqs:
            props["irq"] = irqs[0]
        for prefix in ("flash", "sram"):  # the bandwidths the .repl declares to the NPU (board.json props)
            if f"{prefix}BytesPerCycleX256" in entry.attributes:
                props[f"{prefix}_bytes_per_cycle"] = entry.attributes[f"{prefix}BytesPerCycleX256"] / BANDWIDTH_SCALE
    if size is None:
        raise UsageError(f"{repl.path}:{entry.line}: '{entry.name}' ({entry.type}) needs a <base, +size> "
                         "registration (the model does not declare its size).")
    return Peripheral(entry.name, kind, entry.address, size, props)


def platform_board(repl: Repl, board: Board | None = None) -> Board:
    """A Board whose memory map and peripherals are the .repl's; everything else from `board` (if given).

    Memory kinds come from `board` when it names the same memory, else from the flash and SRAM windows the
    .repl declares to the NPU (a memory the NPU may only read is flash, "rom"); the NPU's bandwidths are its
    peripheral's properties.
    """
    windows = _npu_windows(repl)
    memories = {}
    for entry in repl.of_type(MEMORY_TYPE):
        size = entry.attributes.get("size")
        if entry.address is None or not isinstance(size, int):
            raise UsageError(f"{repl.path}:{entry.line}: memory '{entry.name}' needs an address and a size.")
        known = board.memories.get(entry.name) if board else None
        kind = known.kind if known is not None else windows.get((entry.address, size), ("ram",))[0]
        memories[entry.name] = MemoryRegion(entry.name, entry.address, size, kind)
    peripherals = {}
    for entry in repl.entries.values():
        periph = _peripheral_from_entry(entry, repl)
        if periph is not None:
            if board is not None and entry.name in board.peripherals:
                extra = {k: v for k, v in board.peripherals[entry.name].props.items() if k not in periph.props}
                periph = dataclasses.replace(periph, props={**extra, **periph.props})
            peripherals[entry.name] = periph
    _require_flash_and_sram(memories, repl)
    path = repl.path or Path("<repl>")
    if board is None:
        return Board(path.stem, path, f"Renode platform {path.name}", {}, memories, peripherals, 0, {})
    return dataclasses.replace(board, memories=memories, peripherals=peripherals)


def _require_flash_and_sram(memories: dict, repl: Repl) -> None:
    for name in ("flash", "sram"):
        if name not in memories:
            raise UsageError(f"{repl.path}: the built-in emulator needs a Memory.MappedMemory entry named '{name}' "
                             f"(found: {', '.join(memories) or 'none'}).")


def emulator_board(board: Board) -> Board:
    """The board the built-in emulator builds: memory map and peripherals from the board's .repl (checked
    against board.json), or board.json itself for a board without a Renode platform."""
    path = repl_path(board)
    if not path.is_file():
        return board
    repl = read_repl(path)
    problems = check_against_board(repl, board)
    if problems:
        raise UsageError(f"{path} and {board.path} disagree: " + "; ".join(problems) +
                         ". Change both together (docs/renode.md).")
    return platform_board(repl, board)


# ---- Consistency check -----------------------------------------------------------------------------

def check_against_board(repl: Repl, board: Board) -> list:
    """Every disagreement between the .repl and board.json, as sentences (empty: in sync)."""
    problems = []
    for region in board.memories.values():
        problems += _check_memory(repl, region)
    for periph in board.peripherals.values():
        problems += _check_peripheral(repl, periph, board)
    problems += _check_cpu(repl, board)
    described = set(board.memories) | set(board.peripherals)
    for entry in repl.entries.values():
        if entry.name in described or entry.type is None or entry.type.startswith(RENODE_ONLY_TYPE_PREFIXES):
            continue
        problems.append(f"the .repl has '{entry.name}' ({entry.type}) which board.json does not describe")
    return problems


def _check_memory(repl: Repl, region: MemoryRegion) -> list:
    entry = repl.entries.get(region.name)
    if entry is None or entry.type != MEMORY_TYPE:
        return [f"memory '{region.name}' has no {MEMORY_TYPE} entry"]
    found = (entry.address, entry.attributes.get("size"))
    if found != (region.base, region.size):
        return [f"memory '{region.name}' is at {_where(*found)} in the .repl but {_where(region.base, region.size)} "
                "in board.json"]
    return []


def _where(base, size) -> str:
    return f"{base:#x}+{size:#x}" if isinstance(base, int) and isinstance(size, int) else f"{base}+{size}"


def _check_peripheral(repl: Repl, periph: Peripheral, board: Board) -> list:
    entry = repl.entries.get(periph.name)
    expected_types = [t for t, kind in peripheral_types().items() if kind == periph.type]
    if entry is None:
        return [f"peripheral '{periph.name}' ({periph.type}) is missing"]
    if entry.type not in expected_types:
        return [f"peripheral '{periph.name}' is {entry.type} in the .repl; board.json type '{periph.type}' "
                f"needs {' or '.join(expected_types) or 'a type edgesdk knows'}"]
    problems = []
    found = _peripheral_from_entry(entry, repl)
    if (found.base, found.size) != (periph.base, periph.size):
        problems.append(f"peripheral '{periph.name}' is at {_where(found.base, found.size)} in the .repl but "
                        f"{_where(periph.base, periph.size)} in board.json")
    for key in ("reg_shift", "irq"):
        if key in periph.props and found.props.get(key) != periph.props[key]:
            problems.append(f"peripheral '{periph.name}' has {key} {found.props.get(key)} in the .repl but "
                            f"{periph.props[key]} in board.json")
    if entry.type == NPU_TYPE:
        problems += _check_npu_windows(entry, board, periph)
    return problems


def _check_npu_windows(entry: ReplEntry, board: Board, periph) -> list:
    problems = []
    for prefix, region in (("flash", board.flash), ("sram", board.sram)):
        expected = {f"{prefix}Base": region.base, f"{prefix}Size": region.size,
                    f"{prefix}BytesPerCycleX256": round(_bytes_per_cycle(periph, region) * BANDWIDTH_SCALE)}
        for key, value in expected.items():
            if entry.attributes.get(key) != value:
                problems.append(f"'{entry.name}' has {key}: {entry.attributes.get(key)} in the .repl but board.json "
                                f"gives {value}")
    return problems


def _check_cpu(repl: Repl, board: Board) -> list:
    cpus = repl.of_type(CPU_TYPE)
    if len(cpus) != 1:
        return [f"the .repl must have exactly one {CPU_TYPE} (found {len(cpus)})"]
    cpu, problems = cpus[0], []
    isa = board.cpu.get("isa", "")
    if not str(cpu.attributes.get("cpuType", "")).startswith(isa):
        problems.append(f"cpuType {cpu.attributes.get('cpuType')!r} does not start with board.json's isa {isa!r}")
    clock = board.cpu.get("clock_hz")
    if clock is not None and cpu_timing(repl).instructions_per_second != clock:
        problems.append(f"PerformanceInMips {cpu_timing(repl).performance_in_mips} does not match board.json's "
                        f"clock_hz {clock} (one instruction per cycle)")
    return problems


# ---- Writing a starting .repl for a new board -------------------------------------------------------

def scaffold_repl(board: Board) -> Repl:
    """A .repl describing board.json's memories and peripherals, plus a CPU, PLIC and CLINT at QEMU 'virt'
    addresses: a starting point for a new board's platform (edit, then keep it in sync with the check)."""
    from .repl import Connection, Enum, Reference

    entries = {}
    for region in board.memories.values():
        entries[region.name] = ReplEntry(region.name, MEMORY_TYPE, "sysbus", region.base, None, {"size": region.size})
    for periph in board.peripherals.values():
        renode_type = next((t for t, kind in peripheral_types().items() if kind == periph.type), None)
        if renode_type is None:
            continue
        entry = ReplEntry(periph.name, renode_type, "sysbus", periph.base, None if renode_type == UART_TYPE else periph.size)
        if renode_type == UART_TYPE:
            entry.attributes["wideRegisters"] = periph.props.get("reg_shift", 0) == 2
        if renode_type == NPU_TYPE:
            for prefix, region in (("flash", board.flash), ("sram", board.sram)):
                entry.attributes[f"{prefix}Base"] = region.base
                entry.attributes[f"{prefix}Size"] = region.size
                entry.attributes[f"{prefix}BytesPerCycleX256"] = round(_bytes_per_cycle(periph, region) * BANDWIDTH_SCALE)
            if "irq" in periph.props:
                entry.connections.append(Connection("IRQ", "plic", (periph.props["irq"],)))
        entries[periph.name] = entry
    cpu = ReplEntry("cpu", CPU_TYPE, "sysbus", attributes={
        "cpuType": board.cpu.get("isa", "rv32imac") + "_zicsr_zifencei",
        "privilegedArchitecture": Enum("PrivilegedArchitecture.Priv1_11"),
        "timeProvider": Reference("clint"), "hartId": 0,
        "PerformanceInMips": int(board.cpu.get("clock_hz", 100_000_000)) // 1_000_000})
    plic = ReplEntry("plic", "IRQControllers.PlatformLevelInterruptController", "sysbus", 0x0C000000, None,
                     {"numberOfSources": 31, "numberOfContexts": 1}, [Connection((0,), "cpu", (11,))])
    clint = ReplEntry("clint", "IRQControllers.CoreLevelInterruptor", "sysbus", 0x02000000, None,
                      {"frequency": 10_000_000}, [Connection((0, 1), "cpu", (3, 7))])
    entries.update(cpu=cpu, plic=plic, clint=clint)
    return Repl(entries, None, f"// Renode platform for board {board.name}, scaffolded from {board.path.name}.")
