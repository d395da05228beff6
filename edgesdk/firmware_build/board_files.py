"""Render the board-specific firmware files (board.h, link.ld) from board.json.

Both files come from Jinja templates in edgesdk/templates/, so every address, size and clock the firmware
uses is the one written in boards/<board>/board.json.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ..ctext import comment_text
from ..board import SEMIHOSTING, Board, console_uart, exit_method
from ..errors import UsageError
from ..resources import template_bytecode_cache

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


def _console(board: Board) -> dict:
    """The console UART (edgesdk/firmware/console.c) as board.h macros: which driver, where, and for a SiFive UART
    the line settings and the GPIO pins it is routed to (its hardware I/O function), when board.json gives them."""
    uart = console_uart(board)
    props = uart.props
    console = {"name": uart.name, "base": uart.base, "driver": _macro_name(uart.type, "peripheral type", board),
               "defines": []}
    if uart.type == "ns16550":
        console["defines"].append(("REG_SHIFT", f"{int(props.get('reg_shift', 0))}u"))
    if "baud" in props and "clock_hz" in props:
        console["defines"] += [("BAUD", f"{int(props['baud'])}u"), ("CLOCK_HZ", f"{int(props['clock_hz'])}u")]
    if "iof_gpio" in props:
        gpio = board.peripherals.get(str(props["iof_gpio"]))
        if gpio is None or gpio.type != "sifive_gpio":
            raise UsageError(f"Board {board.name}: {uart.name}.iof_gpio names '{props['iof_gpio']}', which is not a "
                             f"sifive_gpio peripheral of {board.path}.")
        pins = [int(props[k]) for k in ("tx_pin", "rx_pin") if k in props]
        if not pins or any(not 0 <= pin < 32 for pin in pins):
            raise UsageError(f"Board {board.name}: {uart.name} with iof_gpio needs tx_pin (and rx_pin) from 0 to 31.")
        mask = sum(1 << pin for pin in pins)
        console["defines"] += [("IOF_GPIO_BASE", f"0x{gpio.base:08x}u"), ("IOF_MASK", f"0x{mask:08x}u")]
    return console


def _exit(board: Board) -> dict:
    method, device = exit_method(board)
    if method == SEMIHOSTING:
        return {"method": "SEMIHOSTING", "name": None, "base": None}
    return {"method": _macro_name(method, "peripheral type", board), "name": device.name, "base": device.base}


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                              bytecode_cache=template_bytecode_cache())


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
        "reset_address": board.reset_address,
        "image_flash_bytes": board.image_flash_bytes,
        "console": _console(board),
        "exit": _exit(board),
    }
    for name in ("board.h", "link.ld"):
        text = env.get_template(f"{name}.j2").render(**context)
        (out / name).write_text(text)
