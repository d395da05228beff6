"""Run a build on a board attached to this machine, through its debug probe's GDB server (`edgesdk regress
--run-on board`; in a farm, Ray sends the row to the node that offers the resource board:<name>).

The server is $EDGESDK_GDB_SERVER_<BOARD> (the board's name upper-cased, other characters as `_`, e.g.
EDGESDK_GDB_SERVER_HIFIVE1_REVB=localhost:3333), else board.json "flashing" "gdb_server" (OpenOCD's port 3333).
One run, driven with edgesdk.gdbremote:

1. reset and halt: board.json "flashing" "gdb_before_load" (e.g. `monitor reset halt`); a server without the
   command (QEMU's, started with -S, already halted at reset) answers nothing and is taken as halted;
2. load: each loadable segment of firmware.elf; into flash with the server's flash commands (vFlashErase,
   vFlashWrite, vFlashDone: OpenOCD's) where its memory map names flash, else with plain memory writes (RAM, or
   QEMU, which writes its ROM so); read back and compared;
3. the PC set to the ELF's entry, the first inference's inputs written into their arena slots (.noinit: the
   startup code leaves them be);
4. as `edgesdk run --emulator qemu` does (edgesdk/qemu.py): breakpoints at the harness's marks read `minstret`
   around the inference and the outputs after it; a breakpoint at the exit instruction reads the total and the
   exit status from the firmware's own exit call (the semihosting block, or the value stored to the exit
   device), so no semihosting host is needed; the core stays halted there until the next run resets it.

The board's UART is not read (it is wired to the host's serial port, not to the probe): a failure reports the
exit status only.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..errors import EmulatorError, ProbeError, UsageError

MARK_SYMBOL = "edgesdk_harness_mark"
EXIT_SYMBOL = "edgesdk_exit_instruction"
PC_REGISTER = 32  # RISC-V GDB numbering: x0..x31, then pc
A0, A1 = 10, 11
SIFIVE_TEST_PASS = 0x5555


def server_env_name(board_name: str) -> str:
    return "EDGESDK_GDB_SERVER_" + re.sub(r"[^A-Z0-9]", "_", board_name.upper())


def gdb_server_of(board) -> str:
    """HOST:PORT of the GDB server in front of this node's board (see the module docstring)."""
    from ..flash import FlashSettings

    configured = os.environ.get(server_env_name(board.name))
    return configured or FlashSettings.of(board).gdb_server


def run_on_attached_board(build_dir, inputs: list, timeout_s: float = 120.0):
    """One inference on the attached board; an edgesdk.runner.InferenceResult."""
    from ..board import build_board
    from ..emulator import elf_symbol
    from ..flash import FlashSettings
    from ..gdbremote import GdbRemote, GdbRemoteError
    from ..run_io import InferenceResult, NUMPY_DTYPES, STREAM_SYMBOL, coerce_input, input_address, load_report

    import numpy as np

    build_dir = Path(build_dir)
    report = load_report(build_dir)
    board = build_board(build_dir, report)
    elf = build_dir / "firmware.elf"
    if not elf.is_file():
        raise UsageError(f"{elf} is missing; rebuild with 'edgesdk build'.")
    server = gdb_server_of(board)
    host, _, port = server.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"The GDB server address {server!r} for board {board.name} is not HOST:PORT; set "
                         f"{server_env_name(board.name)}=HOST:PORT on the node the board is attached to.")
    symbols = {name: elf_symbol(elf, name) for name in ("edgesdk_arena", MARK_SYMBOL, EXIT_SYMBOL)}
    arena = symbols["edgesdk_arena"]
    writes = [(input_address(s, arena, lambda: elf_symbol(elf, STREAM_SYMBOL)), coerce_input(x, s, k).tobytes())
              for k, (x, s) in enumerate(zip(inputs, report["io"]["inputs"]))]
    out_specs = report["io"]["outputs"]
    reads = [(arena + s["arena_offset"], s["bytes"]) for s in out_specs]
    deadline = time.monotonic() + timeout_s
    try:
        gdb = GdbRemote.connect_tcp(host, int(port), deadline)
    except GdbRemoteError as exc:
        raise ProbeError(f"Board {board.name}: {exc}. On this node, start the probe's GDB server (e.g. 'openocd -f "
                         f"{FlashSettings.of(board).openocd_config}') or point {server_env_name(board.name)} at "
                         "it (docs/farm.md).") from None
    try:
        outcome = _drive(gdb, board, elf, symbols, writes, reads)
    except GdbRemoteError as exc:
        if time.monotonic() > deadline:
            raise EmulatorError(f"The firmware did not finish within {timeout_s:g} s on board {board.name} ({exc}); "
                                "it is probably stuck in a loop.") from None
        raise ProbeError(f"Board {board.name} through the GDB server at {server}: {exc}.") from None
    except EOFError as exc:
        raise ProbeError(f"Board {board.name}: the GDB server at {server} closed the connection ({exc}).") from None
    finally:
        gdb.close()
    if outcome["outputs"] is None:
        raise EmulatorError(f"The firmware ended with exit code {outcome['exit_code']} on board {board.name} before "
                            "finishing the inference (the board's UART, on the host's serial port, says why).")
    outputs = [np.frombuffer(raw, NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"]).copy()
               for raw, s in zip(outcome["outputs"], out_specs)]
    marks = outcome["marks"]
    return InferenceResult(outputs=outputs, exit_code=outcome["exit_code"], cpu_instructions=outcome["total"],
                           inference_instructions=marks[1] - marks[0] if len(marks) >= 2 else None,
                           uart="", step_outputs=[outputs])


def _drive(gdb, board, elf: Path, symbols: dict, writes: list, reads: list) -> dict:
    from ..flash import FlashSettings, elf_load_segments

    from ..elf import ElfFile

    minstret = gdb.register_number("minstret")  # reads the target description (QEMU writes registers only after)
    for command in FlashSettings.of(board).gdb_before_load:
        gdb.monitor(command.removeprefix("monitor ").strip())  # None: no such command (QEMU -S: halted at reset)
    flash = _flash_regions(gdb)
    for address, data in elf_load_segments(elf):
        _load(gdb, address, data, flash)
    for address, data in elf_load_segments(elf):
        if gdb.read_memory(address, len(data)) != data:
            raise EmulatorError(f"Loading the firmware into board {board.name} failed: the {len(data)} bytes at "
                                f"{address:#x} read back differently.")
    gdb.write_register(PC_REGISTER, ElfFile.read(elf).entry)
    for address, data in writes:
        gdb.write_memory(address, data)
    return _run_to_exit(gdb, minstret, symbols, reads)


def _run_to_exit(gdb, minstret: int, symbols: dict, reads: list) -> dict:
    mark, exit_insn = symbols[MARK_SYMBOL], symbols[EXIT_SYMBOL]
    result = {"marks": [], "outputs": None, "total": None, "exit_code": None}
    # As on QEMU (edgesdk/qemu.py): count from the second instruction on, the first one stepped.
    gdb.step()
    base = gdb.register(minstret) - 1
    gdb.set_breakpoint(mark)
    gdb.set_breakpoint(exit_insn)
    stop = gdb.cont()
    while not stop.exited:
        pc = gdb.register(PC_REGISTER)
        if pc == exit_insn:
            result["total"] = gdb.register(minstret) - base + 1  # + 1: the exit instruction itself
            result["exit_code"] = _exit_status(gdb, exit_insn)
            gdb.clear_breakpoint(mark)
            gdb.clear_breakpoint(exit_insn)
            return result  # the core stays halted here; the next run resets it
        if pc != mark:
            raise EmulatorError(f"The board stopped at {pc:#010x}, not at a breakpoint edgesdk set (signal "
                                f"{stop.status}).")
        if len(result["marks"]) == 1:  # after the inference: its outputs
            result["outputs"] = [gdb.read_memory(address, length) for address, length in reads]
        result["marks"].append(gdb.register(minstret) - base)
        gdb.clear_breakpoint(pc)  # step off the breakpoint, then put it back
        stop = gdb.step()
        if not stop.exited:
            gdb.set_breakpoint(pc)
            stop = gdb.cont()
    result["exit_code"] = stop.status  # a server that answered the semihosting exit itself
    return result


def _exit_status(gdb, exit_insn: int) -> int:
    """The status the firmware is exiting with, read at its exit instruction: the semihosting call's block
    {reason, status} at a1, or the word `sw` stores to the exit device (0x5555: 0; (code << 16) | 0x3333: code)."""
    word = int.from_bytes(gdb.read_memory(exit_insn, 4), "little")
    if word == 0x00100073:  # ebreak: the semihosting sequence
        block = gdb.read_memory(gdb.register(A1), 8)
        return int.from_bytes(block[4:8], "little", signed=True) & 0xFF
    if word & 3 == 3:  # sw rs2, imm(rs1)
        rs2 = (word >> 20) & 31
    else:  # c.sw rs2', imm(rs1')
        rs2 = 8 + ((word >> 2) & 7)
    value = gdb.register(rs2)
    return 0 if value & 0xFFFF == SIFIVE_TEST_PASS else (value >> 16) & 0xFF


# -- loading -------------------------------------------------------------------------------------------------

def _flash_regions(gdb) -> list:
    """[(start, length, erase block size)] of the flash the server can program (its memory map), [] if none."""
    supported = gdb.command("qSupported:swbreak+")
    if "qXfer:memory-map:read+" not in supported:
        return []
    text = ""
    while True:
        reply = gdb.command(f"qXfer:memory-map:read::{len(text):x},800")
        if reply[:1] not in ("l", "m"):
            return []
        text += reply[1:]
        if reply[0] == "l":
            break
    regions = []
    for attrs, body in re.findall(r'<memory([^>]*type="flash"[^>]*)>(.*?)</memory>', text, re.S):
        start, length = (int(re.search(rf'{key}="([^"]+)"', attrs).group(1), 0) for key in ("start", "length"))
        block = re.search(r'<property name="blocksize">([^<]+)</property>', body)
        regions.append((start, length, int(block.group(1), 0) if block else 4096))
    return regions


def _load(gdb, address: int, data: bytes, flash: list) -> None:
    region = next(((s, n, b) for s, n, b in flash if s <= address < s + n), None)
    if region is None:
        gdb.write_memory(address, data)
        return
    start, _, block = region
    first = start + (address - start) // block * block
    last = start + -(-(address + len(data) - start) // block) * block
    gdb._ok(f"vFlashErase:{first:x},{last - first:x}")
    for offset in range(0, len(data), 512):
        chunk = data[offset:offset + 512]
        gdb._ok(f"vFlashWrite:{address + offset:x}:" + _escape_binary(chunk))
    gdb._ok("vFlashDone")


def _escape_binary(data: bytes) -> str:
    """The remote protocol's binary data: '#', '$', '}' and '*' escaped as '}' + (byte ^ 0x20)."""
    out = []
    for byte in data:
        if byte in b"#$}*":
            out.append("}" + chr(byte ^ 0x20))
        else:
            out.append(chr(byte))
    return "".join(out)
