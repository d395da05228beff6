"""Board descriptions: `edgesdk/boards/<name>/board.json` is the single source of every board constant.

The compiler (memory limits, NPU clocks and bandwidths), the firmware build (toolchain flags, generated
link.ld and board.h) and the emulator (memory map, peripherals) all read it through this module.
"""

from __future__ import annotations

import json
from pathlib import Path

from .dataclass_cache import dataclass, field
from .errors import UsageError
from .resources import package_dir, package_path

PACKAGE_DIR = package_dir()  # edgesdk/ (installed or in a checkout): its boards, firmware and HIL suites
BOARDS_DIR = package_path("boards")
SCHEMA_PATH = BOARDS_DIR / "board.schema.json"  # every board.json is checked against it (edgesdk/schema.py)
MAX_REPORTED_PROBLEMS = 6


def _int(value) -> int:
    """Board files write addresses as hex strings ("0x80000000") and sizes as integers."""
    return int(value, 0) if isinstance(value, str) else int(value)


@dataclass(frozen=True)
class MemoryRegion:
    """A memory of the board (board.json "memory")."""

    name: str
    base: int
    size: int
    kind: str  # "rom" (flash: code, weights, command tables) or "ram"

    @property
    def end(self) -> int:
        return self.base + self.size

    def contains(self, addr: int, length: int = 1) -> bool:
        return self.base <= addr and addr + length <= self.end


@dataclass(frozen=True)
class Peripheral:
    """A peripheral of the board (board.json "peripherals"): its type, address range and properties."""

    name: str
    type: str
    base: int
    size: int
    props: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Board:
    """A board.json, checked and read."""

    name: str
    path: Path
    description: str
    cpu: dict
    memories: dict  # name -> MemoryRegion
    peripherals: dict  # name -> Peripheral
    stack_bytes: int
    toolchain: dict
    qemu: dict = field(default_factory=dict)  # board.json "qemu": how stock QEMU boots the board (edgesdk/qemu.py)
    # board.json "default_targets": the priority list of a build without --target ("": derived from the installed
    # targets, edgesdk.targets.default_target_list)
    default_targets: str = ""

    @property
    def flash(self) -> MemoryRegion:
        return self.memories["flash"]

    @property
    def sram(self) -> MemoryRegion:
        return self.memories["sram"]

    @property
    def reset_address(self) -> int:
        """Where the core starts the firmware after reset (cpu.reset_address, default the start of flash): link.ld
        puts _start and the whole image there."""
        value = self.cpu.get("reset_address")
        return self.flash.base if value is None else _int(value)

    @property
    def image_flash_bytes(self) -> int:
        """Flash the firmware image may use: from the reset address to the end of flash (a bootloader may own
        the flash below it, as on the HiFive1 Rev B)."""
        return self.flash.end - self.reset_address

    def peripheral_of_type(self, type_name: str) -> Peripheral:
        for p in self.peripherals.values():
            if p.type == type_name:
                return p
        raise KeyError(type_name)


# Peripheral types edgesdk's firmware (edgesdk/firmware/console.c, startup.c) can use as its console and to exit.
CONSOLE_TYPES = ("ns16550", "sifive_uart")
EXIT_DEVICE_TYPES = ("sifive_test",)
SEMIHOSTING = "semihosting"


def console_uart(board: Board) -> Peripheral:
    """The UART the firmware prints on: `uart0` if its type is one the firmware drives (CONSOLE_TYPES), else the
    first such peripheral. UsageError if the board has none."""
    uarts = [p for p in board.peripherals.values() if p.type in CONSOLE_TYPES]
    if not uarts:
        raise UsageError(f"Board {board.name} ({board.path}) has no UART edgesdk's firmware can print on: it needs a "
                         f"peripheral of type {' or '.join(CONSOLE_TYPES)} (docs/porting-a-new-board.md).")
    return next((p for p in uarts if p.name == "uart0"), uarts[0])


def exit_method(board: Board) -> tuple:
    """How the firmware ends a run: ("sifive_test", peripheral) through QEMU's test/exit device when the board has
    one, else ("semihosting", None): a RISC-V semihosting SYS_EXIT_EXTENDED call, which QEMU (-semihosting-config
    enable=on), the built-in emulator and a debugger with semihosting answer, and which on a board without one
    traps into the firmware's handler, which stops the core."""
    device = next((p for p in board.peripherals.values() if p.type in EXIT_DEVICE_TYPES), None)
    return (device.type, device) if device is not None else (SEMIHOSTING, None)


def board_dirs() -> list:
    """Where boards live: edgesdk's boards/ first, then the boards installed target plugins ship."""
    from .targets import extra_board_dirs

    return [BOARDS_DIR] + [Path(d) for d in extra_board_dirs()]


def available_boards() -> list[str]:
    return sorted({p.parent.name for d in board_dirs() for p in d.glob("*/board.json")})


BUILD_BOARD_FILE = "board.json"  # OUT/board.json: the copy of the board description a build was made for


def build_board(build_dir, report: dict) -> Board:
    """The board a build was made for, for `edgesdk run`, `hil` and `flash`.

    OUT/board.json (the copy `edgesdk build` recorded) is what the firmware was built from, so it decides.
    Its companion files (the Renode platform .repl and script .resc, the OpenOCD config) live beside the
    original board.json: when that file (report.json "board_file"), or the board of the same name edgesdk
    or a plugin ships, still says the same, the board is loaded from there; otherwise from the copy (the
    built-in emulator then runs from board.json alone, and what needs a companion file says so). A build
    made before edgesdk recorded its board is looked up by name.
    """
    copy = Path(build_dir) / BUILD_BOARD_FILE
    if not copy.is_file():
        return load_board(report["board"])
    recorded = _json_or_none(copy)
    candidates = [Path(report["board_file"])] if report.get("board_file") else []
    candidates += [d / str(report.get("board", "")) / "board.json" for d in board_dirs()]
    for candidate in candidates:
        if candidate.is_file() and candidate.resolve() != copy.resolve() and _json_or_none(candidate) == recorded:
            return load_board(str(candidate))
    return load_board(str(copy))


# board.json texts that passed the schema in this process: the verdict is a function of the text (and of the
# schema shipped with this edgesdk), and the tuner, the regression farm and a build of several models load the
# same board for every compile (its check was ~0.1-0.2 ms, about 1-2 % of a KWS compile step)
_VALID_BOARD_TEXTS: set = set()


def check_board_json(path: Path) -> dict:
    """board.json's contents, checked against edgesdk/boards/board.schema.json; UsageError naming every bad
    field (up to MAX_REPORTED_PROBLEMS) and what it allows."""
    from .schema import load_schema, validate

    try:
        text = path.read_text()
        raw = json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"Cannot read board description {path}: {exc}.") from None
    except ValueError as exc:
        raise UsageError(f"Board description {path} is not valid JSON ({exc}).") from None
    if text in _VALID_BOARD_TEXTS:  # the same text passed the schema before in this process
        return raw
    problems = validate(raw, load_schema(str(SCHEMA_PATH)))
    if problems:
        shown = "; ".join(f"{where or 'the file'}: {message}" for where, message in problems[:MAX_REPORTED_PROBLEMS])
        more = f" (and {len(problems) - MAX_REPORTED_PROBLEMS} more)" if len(problems) > MAX_REPORTED_PROBLEMS else ""
        raise UsageError(f"Board description {path} is invalid: {shown}{more}. {SCHEMA_PATH} describes every "
                         "field; edgesdk/boards/riscv-npu/board.json is a complete example.")
    _VALID_BOARD_TEXTS.add(text)
    return raw


def _json_or_none(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def load_board(name_or_path: str) -> Board:
    """Load a board by name (edgesdk/boards/<name>/board.json, or a plugin's) or by a path to a board.json or
    its folder."""
    path = Path(name_or_path)
    if path.is_dir():
        path = path / "board.json"
    if not path.is_file():
        path = BOARDS_DIR / name_or_path / "board.json"
    if not path.is_file():  # a board a target plugin ships (asking the plugins only when needed)
        path = next((d / name_or_path / "board.json" for d in board_dirs()
                     if (d / name_or_path / "board.json").is_file()), path)
    if not path.is_file():
        raise UsageError(
            f"Unknown board '{name_or_path}'. Available boards: {', '.join(available_boards()) or 'none'}. "
            "Pass a board name or the path to a board.json."
        )
    raw = check_board_json(path)
    try:
        memories = {
            name: MemoryRegion(name, _int(m["base"]), _int(m["size"]), m["kind"])
            for name, m in raw["memory"].items()
        }
        peripherals = {
            name: Peripheral(name, p["type"], _int(p["base"]), _int(p["size"]),
                             {k: v for k, v in p.items() if k not in ("type", "base", "size")})
            for name, p in raw["peripherals"].items()
        }
        board = Board(raw["name"], path, raw.get("description", ""), raw["cpu"], memories, peripherals,
                      int(raw["stack_bytes"]), raw["toolchain"], raw.get("qemu", {}), raw.get("default_targets", ""))
    except (KeyError, ValueError, TypeError) as exc:
        raise UsageError(f"Board description {path} is malformed ({exc!r}); compare it with edgesdk/boards/riscv-npu/board.json.") from None
    if not board.flash.contains(board.reset_address, 2):
        raise UsageError(f"Board description {path}: cpu.reset_address {board.reset_address:#x} is not inside "
                         f"memory.flash ({board.flash.base:#x}+{board.flash.size:#x}); the firmware is linked there.")
    return board
