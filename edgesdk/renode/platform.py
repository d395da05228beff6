"""The board's Renode platform (boards/<board>/<board>.repl) and how it relates to board.json.

board.json stays the compiler's source of every board constant (memory sizes, accelerator clocks,
bandwidths, toolchain). The .repl is what users load in Renode; the built-in emulator builds its machine from
the same .repl (memories, UART, exit device, the targets' peripherals), so the file our tests exercise is the
file users run.
`check_against_board()` lists every place where the two disagree; `emulator_board()` refuses to run on a
drifted pair, and tests/test_renode.py keeps the checked-in files in sync.

Renode types <-> board.json peripheral types:

    Memory.MappedMemory            memory.<name>            base, size
    UART.NS16550                   ns16550                  base; size 0x100 (fixed by Renode's model);
                                                            wideRegisters false/true = reg_shift 0/2
    UART.SiFive_UART               sifive_uart              base; size 0x100 (fixed by Renode's model)
    GPIOPort.SiFive_GPIO           sifive_gpio              base; size 0x1000 (fixed by Renode's model)
    Edgesdk.SiFiveTestFinisher     sifive_test              <base, +size>   (edgesdk/renode/*.cs)
    (a target's peripheral)        (its PeripheralModel)    <base, +size>, IRQ -> plic@irq, and the attributes
                                                            its PeripheralModel.repl_attributes relates to
                                                            board.json (e.g. the memory windows it masters)
    CPU.RiscV32                    cpu                      cpuType starts with cpu.isa;
                                                            PerformanceInMips * 1e6 = cpu.clock_hz
    IRQControllers.*               (Renode only)            interrupt controller and timer
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..board import Board, MemoryRegion, Peripheral
from ..dataclass_cache import dataclass
from ..errors import UsageError
from .repl import Repl, ReplEntry, read_repl

MEMORY_TYPE = "Memory.MappedMemory"
UART_TYPE = "UART.NS16550"
SIFIVE_UART_TYPE = "UART.SiFive_UART"
SIFIVE_GPIO_TYPE = "GPIOPort.SiFive_GPIO"
EXIT_TYPE = "Edgesdk.SiFiveTestFinisher"
CPU_TYPE = "CPU.RiscV32"
NS16550_SIZE = 0x100  # NS16550.Size in Renode's model
# Renode models whose size is fixed (IKnownSize.Size in renode-infrastructure), registered at a bare address.
KNOWN_SIZES = {UART_TYPE: NS16550_SIZE, SIFIVE_UART_TYPE: 0x100, SIFIVE_GPIO_TYPE: 0x1000}
DEFAULT_PERFORMANCE_IN_MIPS = 100  # Renode's default for a CPU without PerformanceInMips
# Entries that exist only in Renode (not in board.json): the CPU and the interrupt/timer infrastructure.
RENODE_ONLY_TYPE_PREFIXES = ("CPU.", "IRQControllers.")

# Renode type -> board.json peripheral type, for the peripherals both describe. Targets add theirs
# (Target.peripherals(): each PeripheralModel's renode_type and type).
PERIPHERAL_TYPES = {UART_TYPE: "ns16550", SIFIVE_UART_TYPE: "sifive_uart", SIFIVE_GPIO_TYPE: "sifive_gpio",
                    EXIT_TYPE: "sifive_test"}


def peripheral_types() -> dict:
    """PERIPHERAL_TYPES plus the Renode types of every installed target's peripheral models."""
    types = dict(PERIPHERAL_TYPES)
    for renode_type, model in _target_models().items():
        types.setdefault(renode_type, model.type)
    return types


def _target_models() -> dict:
    from . import peripheral_models

    return peripheral_models()


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

def _declared_memory_kinds(repl: Repl) -> dict:
    """{(base, size): "rom" | "ram"} of the memory windows the target peripherals' entries declare."""
    models = _target_models()
    kinds = {}
    for entry in repl.entries.values():
        if entry.type in models:
            kinds.update(models[entry.type].repl_attributes.memory_kinds(entry.attributes))
    return kinds


def _irq(entry: ReplEntry):
    """The interrupt controller input the entry's IRQ line is connected to (None: not connected)."""
    irqs = [n for c in entry.connections for n in c.inputs if c.source in ("IRQ", None)]
    return irqs[0] if irqs else None


def _peripheral_from_entry(entry: ReplEntry, repl: Repl) -> Peripheral | None:
    kind = peripheral_types().get(entry.type)
    if kind is None or entry.address is None:
        return None
    props = {}
    size = entry.size
    if entry.type in KNOWN_SIZES:
        size = KNOWN_SIZES[entry.type]
    if entry.type == UART_TYPE:
        props["reg_shift"] = 2 if entry.attributes.get("wideRegisters") is True else 0
    model = _target_models().get(entry.type)
    if model is not None:  # a target's peripheral: its IRQ line and what its attributes say (board.json props)
        if _irq(entry) is not None:
            props["irq"] = _irq(entry)
        props.update(model.repl_attributes.props(entry.attributes))
    if size is None:
        raise UsageError(f"{repl.path}:{entry.line}: '{entry.name}' ({entry.type}) needs a <base, +size> "
                         "registration (the model does not declare its size).")
    return Peripheral(entry.name, kind, entry.address, size, props)


def platform_board(repl: Repl, board: Board | None = None) -> Board:
    """A Board whose memory map and peripherals are the .repl's; everything else from `board` (if given).

    Memory kinds come from `board` when it names the same memory, else from the memory windows the target
    peripherals' entries declare (a memory their bus masters may only read is flash, "rom"); what else their
    attributes say becomes their peripherals' properties (PeripheralModel.repl_attributes).
    """
    windows = _declared_memory_kinds(repl)
    memories = {}
    for entry in repl.of_type(MEMORY_TYPE):
        size = entry.attributes.get("size")
        if entry.address is None or not isinstance(size, int):
            raise UsageError(f"{repl.path}:{entry.line}: memory '{entry.name}' needs an address and a size.")
        known = board.memories.get(entry.name) if board else None
        kind = known.kind if known is not None else windows.get((entry.address, size), "ram")
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
    model = _target_models().get(entry.type)
    if model is not None:
        problems += _check_attributes(entry, model.repl_attributes.expected(periph, board))
    return problems


def _check_attributes(entry: ReplEntry, expected: dict) -> list:
    """The entry's attributes that differ from what board.json implies (PeripheralModel.repl_attributes)."""
    return [f"'{entry.name}' has {key}: {entry.attributes.get(key)} in the .repl but board.json gives {value}"
            for key, value in expected.items() if entry.attributes.get(key) != value]


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
        entry = ReplEntry(periph.name, renode_type, "sysbus", periph.base, None if renode_type in KNOWN_SIZES else periph.size)
        if renode_type == UART_TYPE:
            entry.attributes["wideRegisters"] = periph.props.get("reg_shift", 0) == 2
        model = _target_models().get(renode_type)
        if model is not None:
            entry.attributes.update(model.repl_attributes.expected(periph, board))
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
