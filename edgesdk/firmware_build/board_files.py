"""Render the board-specific firmware files (board.h, link.ld) from board.json.

Both files come from Jinja templates in edgesdk/templates/, so every address, size and clock the firmware
uses is the one written in boards/<board>/board.json.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ..aot.render import comment_text
from ..board import Board
from ..errors import UsageError

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"


def _macro_name(name: str, what: str, board: Board) -> str:
    """board.json names become C macro parts: 'uart0' -> 'UART0'."""
    macro = name.upper()
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", macro):
        raise UsageError(
            f"Board {board.name}: {what} name '{name}' in {board.path} cannot be used in a C macro name; "
            "use letters, digits and underscores only (e.g. 'uart0')."
        )
    return macro


def _memories(board: Board) -> list[dict]:
    return [{"macro": _macro_name(m.name, "memory", board), "base": m.base, "size": m.size}
            for m in board.memories.values()]


def _peripherals(board: Board) -> list[dict]:
    result = []
    for p in board.peripherals.values():
        # Only integer properties (irq, clock_hz, reg_shift, ...) make sense as C constants.
        int_props = [(_macro_name(k, "property", board), v) for k, v in sorted(p.props.items())
                     if isinstance(v, int) and not isinstance(v, bool)]
        result.append({"name": p.name, "macro": _macro_name(p.name, "peripheral", board),
                       "base": p.base, "size": p.size, "int_props": int_props})
    return result


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render_board_files(board: Board, out_dir) -> None:
    """Write out_dir/board.h and out_dir/link.ld (the targets' drivers come with the build's targets)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = _environment()
    # board.json's strings are checked by its schema when loaded (edgesdk/board.py); sanitized here again
    # where they enter C strings and comments, whoever built the Board.
    context = {
        "board": board,
        "board_name": comment_text(board.name),
        "cpu_isa": comment_text(board.cpu.get("isa", "")),
        "cpu_clock_hz": int(board.cpu.get("clock_hz", 0)),
        "board_json": comment_text(f"boards/{board.path.parent.name}/board.json"),
        "memories": _memories(board),
        "peripherals": _peripherals(board),
        "flash": board.flash,
        "sram": board.sram,
    }
    for name in ("board.h", "link.ld"):
        text = env.get_template(f"{name}.j2").render(**context)
        (out / name).write_text(text)
