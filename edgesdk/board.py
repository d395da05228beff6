"""Board descriptions: `edgesdk/boards/<name>/board.json` is the single source of every board constant.

The compiler (memory limits, NPU clocks and bandwidths), the firmware build (toolchain flags, generated
link.ld and board.h) and the emulator (memory map, peripherals) all read it through this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .resources import package_dir, package_path

PACKAGE_DIR = package_dir()  # edgesdk/ (installed or in a checkout): its boards, firmware and HIL suites
BOARDS_DIR = package_path("boards")


def _int(value) -> int:
    """Board files write addresses as hex strings ("0x80000000") and sizes as integers."""
    return int(value, 0) if isinstance(value, str) else int(value)


@dataclass(frozen=True)
class MemoryRegion:
    name: str
    base: int
    size: int
    kind: str  # "rom" (flash: code, weights, command tables) or "ram"
    bytes_per_npu_cycle: float

    @property
    def end(self) -> int:
        return self.base + self.size

    def contains(self, addr: int, length: int = 1) -> bool:
        return self.base <= addr and addr + length <= self.end


@dataclass(frozen=True)
class Peripheral:
    name: str
    type: str
    base: int
    size: int
    props: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Board:
    name: str
    path: Path
    description: str
    cpu: dict
    memories: dict  # name -> MemoryRegion
    peripherals: dict  # name -> Peripheral
    stack_bytes: int
    toolchain: dict

    @property
    def flash(self) -> MemoryRegion:
        return self.memories["flash"]

    @property
    def sram(self) -> MemoryRegion:
        return self.memories["sram"]

    @property
    def npu(self) -> Peripheral | None:
        return next((p for p in self.peripherals.values() if p.type.startswith("edgesdk-npu")), None)

    def peripheral_of_type(self, type_name: str) -> Peripheral:
        for p in self.peripherals.values():
            if p.type == type_name:
                return p
        raise KeyError(type_name)


def board_dirs() -> list:
    """Where boards live: edgesdk's boards/ first, then the boards installed target plugins ship."""
    from .targets import extra_board_dirs

    return [BOARDS_DIR] + [Path(d) for d in extra_board_dirs()]


def available_boards() -> list[str]:
    return sorted({p.parent.name for d in board_dirs() for p in d.glob("*/board.json")})


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
    try:
        raw = json.loads(path.read_text())
        memories = {
            name: MemoryRegion(name, _int(m["base"]), _int(m["size"]), m["kind"], float(m["bytes_per_npu_cycle"]))
            for name, m in raw["memory"].items()
        }
        peripherals = {
            name: Peripheral(name, p["type"], _int(p["base"]), _int(p["size"]),
                             {k: v for k, v in p.items() if k not in ("type", "base", "size")})
            for name, p in raw["peripherals"].items()
        }
        return Board(raw["name"], path, raw.get("description", ""), raw["cpu"], memories, peripherals,
                     int(raw["stack_bytes"]), raw["toolchain"])
    except (KeyError, ValueError, TypeError) as exc:
        raise UsageError(f"Board description {path} is malformed ({exc!r}); compare it with edgesdk/boards/riscv-npu/board.json.") from None
