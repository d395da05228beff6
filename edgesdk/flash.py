"""`edgesdk flash OUT --probe openocd|gdb|emulator`: put a build's firmware into the board's flash.

* openocd   OpenOCD programs the flash with the board's OpenOCD config (board.json "flashing"), verifies
            it and resets the board:  openocd -f <board>/openocd.cfg -c "program firmware.elf verify reset exit"
* gdb       GDB loads firmware.elf through a running GDB server (a probe's, or OpenOCD's on port 3333) and
            verifies it with compare-sections; the board's reset commands run before and after. With
            reset=False (--no-reset, for a server without them, such as QEMU's) none are sent and GDB detaches
            after verifying, so the core runs the firmware from its entry point, where `load` set the PC.
* emulator  the built-in emulator plays the board: its flash is erased, programmed with the ELF's loadable
            segments (what OpenOCD's `program` writes) and read back, then the core boots from the board's
            reset address (board.json "flashing").

Without a probe or server, the openocd and gdb paths fail with a ProbeError that says what was missing
(the tool, the probe, the server); tests/test_flash.py covers the command lines and the emulator path.
OUT/ also holds firmware.bin and firmware.hex for other flashers.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .board import Board, build_board
from .dataclass_cache import dataclass, field
from .errors import EdgesdkError, ProbeError, ToolchainError, UsageError  # noqa: F401 (ProbeError re-exported)

PROBES = ("openocd", "gdb", "emulator")
ERASED_BYTE = 0xFF  # NOR flash reads all ones after an erase
BOOT_TIMEOUT_S = 30.0
BOOT_SLICE_INSTRUCTIONS = 20_000_000  # between checks of the wall-clock limit
OUTPUT_TAIL_CHARS = 2000


@dataclass(frozen=True)
class FlashSettings:
    """board.json "flashing"."""

    board: Board
    openocd_config: Path
    openocd_package: str
    gdb: tuple
    gdb_package: str
    gdb_server: str
    gdb_before_load: tuple
    gdb_after_load: tuple
    reset_address: int

    @classmethod
    def of(cls, board: Board) -> "FlashSettings":
        raw = json.loads(board.path.read_text()).get("flashing")
        if raw is None:
            raise UsageError(f"Board {board.name} has no \"flashing\" section in {board.path}; add one (see "
                             "edgesdk/boards/riscv-npu/board.json) to flash it.")
        return cls(board, board.path.parent / raw["openocd_config"], raw.get("openocd_package", "openocd"),
                   tuple(raw.get("gdb", ["gdb-multiarch"])), raw.get("gdb_package", "gdb-multiarch"),
                   raw.get("gdb_server", "localhost:3333"), tuple(raw.get("gdb_before_load", [])),
                   tuple(raw.get("gdb_after_load", [])), int(raw.get("reset_address", hex(board.reset_address)), 0))


@dataclass
class FlashResult:
    probe: str
    bytes_written: int
    verified: bool
    command: list = field(default_factory=list)  # the tool's command line (openocd, gdb)
    output: str = ""  # the tool's output, or the firmware's UART output (emulator)
    exit_code: int | None = None  # emulator: the firmware's exit code after booting
    flash_contents: bytes | None = None  # emulator: the whole flash after programming


# ---- Images -----------------------------------------------------------------------------------------

def elf_load_segments(elf_path) -> list:
    """[(load address, bytes)] of the ELF's loadable segments with file contents (what a flasher writes)."""
    from .elf import ElfFile

    return ElfFile.read(elf_path).loaded_segments()


def read_intel_hex(path) -> list:
    """[(address, bytes)] from an Intel HEX file, contiguous records merged; checksums verified."""
    chunks, upper = [], 0
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        if not line.startswith(":"):
            raise UsageError(f"{path}:{number}: not an Intel HEX record.")
        record = bytes.fromhex(line[1:])
        if sum(record) & 0xFF:
            raise UsageError(f"{path}:{number}: bad Intel HEX checksum; rebuild the firmware.")
        length, offset, kind, data = record[0], int.from_bytes(record[1:3], "big"), record[3], record[4:-1]
        if len(data) != length:
            raise UsageError(f"{path}:{number}: Intel HEX record length does not match its data.")
        if kind == 0x00:
            address = upper + offset
            if chunks and chunks[-1][0] + len(chunks[-1][1]) == address:
                chunks[-1][1].extend(data)
            else:
                chunks.append((address, bytearray(data)))
        elif kind == 0x01:
            break
        elif kind == 0x04:
            upper = int.from_bytes(data, "big") << 16
        elif kind == 0x02:
            upper = int.from_bytes(data, "big") << 4
        # 0x03/0x05: start address records; the core starts at the board's reset address instead
    return [(address, bytes(data)) for address, data in chunks]


def _build_files(build_dir) -> tuple:
    build_dir = Path(build_dir)
    report = build_dir / "report.json"
    elf, hex_file = build_dir / "firmware.elf", build_dir / "firmware.hex"
    for path in (report, elf, hex_file):
        if not path.is_file():
            raise UsageError(f"{path} is missing: {build_dir} is not a firmware build. Run 'edgesdk build MODEL -o "
                             f"{build_dir}' first (without --no-firmware).")
    board = build_board(build_dir, json.loads(report.read_text()))
    return board, elf, hex_file


# ---- OpenOCD ------------------------------------------------------------------------------------------

def openocd_command(settings: FlashSettings, elf: Path, openocd: str = "openocd") -> list:
    return [openocd, "-f", str(settings.openocd_config), "-c", f"program {elf} verify reset exit"]


def flash_openocd(build_dir) -> FlashResult:
    board, elf, _ = _build_files(build_dir)
    settings = FlashSettings.of(board)
    if not settings.openocd_config.is_file():
        raise UsageError(f"Board {board.name}'s OpenOCD config {settings.openocd_config} does not exist (board.json "
                         "\"flashing\" names it, relative to board.json). Keep the board's folder as it was when you "
                         "built, or fix the name.")
    openocd = shutil.which("openocd")
    if openocd is None:
        raise ToolchainError(f"OpenOCD is not installed, so the board cannot be programmed through a probe. Install it "
                             f"with: sudo apt-get install {settings.openocd_package} (or use --probe gdb with your "
                             "probe's own GDB server).")
    cmd = openocd_command(settings, elf.resolve(), openocd)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise _openocd_error(output, settings)
    return FlashResult("openocd", sum(len(d) for _, d in elf_load_segments(elf)), True, cmd, output)


def _openocd_error(output: str, settings: FlashSettings) -> ProbeError:
    errors = [line.removeprefix("Error: ").strip() for line in output.splitlines() if line.startswith("Error:")]
    said = "; ".join(errors[-3:]) or output.strip()[-OUTPUT_TAIL_CHARS:]
    config = settings.openocd_config
    if "init failed" in output:
        return ProbeError(
            f"No debug probe found: OpenOCD could not open the adapter configured in {config} ({said}). Connect "
            "the board's JTAG probe (the file names the default one; for another probe set ADAPTER_CONFIG as it "
            "explains) and make sure your user may access it (udev rules), then run the command again.")
    if "verify" in output.lower() and ("fail" in output.lower() or "mismatch" in output.lower()):
        return ProbeError(f"OpenOCD programmed the flash but verification failed ({said}); the flash may be "
                          "worn or write-protected. Erase it and try again.")
    return ProbeError(f"OpenOCD failed to program the board with {config}: {said}")


# ---- GDB ----------------------------------------------------------------------------------------------

def gdb_script(settings: FlashSettings, server: str | None = None, before=None, after=None) -> str:
    """GDB commands: connect, reset/halt, load, verify, restart. An error stops the script (GDB aborts a
    sourced file at its first failing command), so a failed connection never reaches `load`."""
    lines = ["set confirm off", "set pagination off",
             "set tcp auto-retry off",  # a missing server fails at once instead of after 15 s of retries
             f"target extended-remote {server or settings.gdb_server}"]
    lines += list(settings.gdb_before_load if before is None else before)
    lines += ["load", "compare-sections"]
    lines += list(settings.gdb_after_load if after is None else after)
    return "\n".join(lines) + "\n"


def gdb_command(gdb: str, script: Path, elf: Path) -> list:
    return [gdb, "-q", "-nx", "-batch", "-x", str(script), str(elf)]


def find_gdb(settings: FlashSettings) -> str:
    for name in settings.gdb:
        path = shutil.which(name)
        if path:
            return path
    raise ToolchainError(f"No GDB for RISC-V found ({', '.join(settings.gdb)}). Install one with: sudo apt-get install "
                         f"{settings.gdb_package}")


# --no-reset: no reset commands; detaching lets the core run from the PC `load` set (the ELF's entry point).
NO_RESET_BEFORE, NO_RESET_AFTER = (), ("detach",)


def flash_gdb(build_dir, server: str | None = None, before=None, after=None, reset: bool = True) -> FlashResult:
    board, elf, _ = _build_files(build_dir)
    settings = FlashSettings.of(board)
    if not reset:
        before, after = NO_RESET_BEFORE, NO_RESET_AFTER
    gdb = find_gdb(settings)
    server = server or settings.gdb_server
    with tempfile.TemporaryDirectory(prefix="edgesdk-flash-") as tmp:
        script = Path(tmp) / "flash.gdb"
        script.write_text(gdb_script(settings, server, before, after))
        cmd = gdb_command(gdb, script, elf.resolve())
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise ProbeError(f"GDB did not finish loading through {server} within 10 minutes; check the probe.") from None
    output = proc.stdout + proc.stderr
    loaded = sum(int(n, 16) for n in re.findall(r"Loading section \S+, size (0x[0-9a-f]+)", output))
    matched = re.findall(r"Section \S+, range .*: matched\.", output)
    if re.search(r"Connection refused|Connection timed out|could not connect|No route to host|Name or service not known",
                 output, re.IGNORECASE):
        raise ProbeError(f"No GDB server answered at {server}: start the probe's GDB server first (for this board: "
                         f"openocd -f {settings.openocd_config}, which listens on port 3333) or pass "
                         "--gdb-server HOST:PORT.")
    if "MIS-MATCHED" in output or proc.returncode != 0 or not matched:
        raise ProbeError(f"GDB could not load and verify {elf} through {server}:\n{output.strip()[-OUTPUT_TAIL_CHARS:]}")
    return FlashResult("gdb", loaded, True, cmd, output)


# ---- Built-in emulator --------------------------------------------------------------------------------

def flash_emulator(build_dir, timeout_s: float = BOOT_TIMEOUT_S) -> FlashResult:
    """Erase the built-in emulator's flash, program the ELF's loadable segments (what OpenOCD's `program`
    writes), read them back, then boot the core from the board's reset address."""
    from .emulator import Machine

    board, elf, _ = _build_files(build_dir)
    settings = FlashSettings.of(board)
    image = elf_load_segments(elf)
    machine = Machine(board, elf)  # memory is erased and programmed below; the ELF names functions in faults
    try:
        flash = machine.board.flash
        machine.flash[:] = ERASED_BYTE
        for address, data in image:
            if not flash.contains(address, len(data)):
                raise ProbeError(f"{elf} has {len(data)} bytes to load at {address:#x}, outside the flash of board "
                                 f"{board.name} ({flash.base:#x}+{flash.size:#x}); rebuild the firmware for this board.")
            machine.write(address, data)
        verified = all(machine.read(address, len(data)) == data for address, data in image)
        if not verified:
            raise ProbeError("The emulator's flash does not read back what was programmed.")
        output, exit_code = _boot(machine, settings.reset_address, timeout_s)
        return FlashResult("emulator", sum(len(d) for _, d in image), True, [], output, exit_code,
                           machine.read(flash.base, flash.size))
    finally:
        machine.close()


def _boot(machine, reset_address: int, timeout_s: float) -> tuple:
    deadline = time.monotonic() + timeout_s
    start = reset_address
    while not machine.advance(BOOT_SLICE_INSTRUCTIONS, start_pc=start):
        start = None
        if time.monotonic() > deadline:
            raise ProbeError(f"The flashed firmware did not finish within {timeout_s:g} s on the emulator. UART "
                             f"output: {machine.uart_text().strip()[-400:]!r}")
    return machine.uart_text(), machine.exit_code()


# ---- Entry point --------------------------------------------------------------------------------------

def flash(build_dir, probe: str, gdb_server: str | None = None, reset: bool = True) -> FlashResult:
    if probe not in PROBES:
        raise UsageError(f"--probe must be one of {', '.join(PROBES)}, not '{probe}'.")
    if not reset and probe != "gdb":
        raise UsageError("--no-reset applies to --probe gdb only (a GDB server without reset commands).")
    if probe == "openocd":
        return flash_openocd(build_dir)
    if probe == "gdb":
        return flash_gdb(build_dir, gdb_server, reset=reset)
    return flash_emulator(build_dir)
