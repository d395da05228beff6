"""`edgesdk flash`: the OpenOCD and GDB command lines generated from board.json, their errors without a
probe or server, a GDB load into a real GDB server (QEMU's), and the emulator path end to end (the flashed
bytes equal the ELF's loadable segments, the rest of flash is erased, the firmware boots from flash)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time

import pytest

from conftest import model_path
from edgesdk.board import BOARDS_DIR, load_board
from edgesdk.cli import main as cli_main
from edgesdk.errors import ToolchainError, UsageError
from edgesdk.flash import (ERASED_BYTE, FlashSettings, ProbeError, elf_load_segments, flash, flash_emulator,
                           flash_gdb, flash_openocd, gdb_command, gdb_script, openocd_command, read_intel_hex)

BOARD_DIR = BOARDS_DIR / "riscv-npu"


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A normal firmware build of the smallest shared model."""
    out = tmp_path_factory.mktemp("flash") / "build"
    assert cli_main(["build", str(model_path("hello_world")), "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def settings():
    return FlashSettings.of(load_board("riscv-npu"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- images -------------------------------------------------------------------------------------------

def test_build_holds_bin_and_hex_with_the_elf_contents(build):
    segments = elf_load_segments(build / "firmware.elf")
    board = load_board("riscv-npu")
    assert segments and all(board.flash.contains(a, len(d)) for a, d in segments)
    # Intel HEX: the section contents (every byte equals the ELF's; only inter-section padding is left out).
    records = read_intel_hex(build / "firmware.hex")
    for address, data in records:
        base, seg = next((b, d) for b, d in segments if b <= address and address + len(data) <= b + len(d))
        assert seg[address - base:address - base + len(data)] == data
    covered = sum(len(d) for _, d in records)
    assert sum(len(d) for _, d in segments) - covered < 16 * len(records)
    # Raw binary: the image from the start of flash.
    binary = (build / "firmware.bin").read_bytes()
    base, data = segments[0]
    assert base == board.flash.base and binary[:len(data)] == data


def test_intel_hex_reader_checks_records(tmp_path):
    good = tmp_path / "a.hex"
    good.write_text(":020000042000DA\n:0400000001020304F2\n:0400040005060708DE\n:00000001FF\n")
    assert read_intel_hex(good) == [(0x20000000, bytes(range(1, 9)))]
    bad = tmp_path / "b.hex"
    bad.write_text(":0400000001020304F3\n")
    with pytest.raises(UsageError, match="bad Intel HEX checksum"):
        read_intel_hex(bad)


# ---- OpenOCD -------------------------------------------------------------------------------------------

def test_openocd_command_line(build, settings):
    elf = build / "firmware.elf"
    assert openocd_command(settings, elf) == ["openocd", "-f", str(BOARD_DIR / "openocd.cfg"), "-c",
                                              f"program {elf} verify reset exit"]


def test_openocd_config_matches_board_json():
    board = load_board("riscv-npu")
    cfg = (BOARD_DIR / "openocd.cfg").read_text()
    bank = re.search(r"^flash bank \S+ cfi (0x[0-9a-f]+) (0x[0-9a-f]+) ", cfg, re.MULTILINE)
    assert (int(bank[1], 16), int(bank[2], 16)) == (board.flash.base, board.flash.size)
    work = re.search(r"-work-area-phys (0x[0-9a-f]+) -work-area-size (0x[0-9a-f]+)", cfg)
    assert board.sram.contains(int(work[1], 16), int(work[2], 16))


def test_openocd_without_a_probe_names_what_is_missing(build):
    if shutil.which("openocd") is None:
        with pytest.raises(ToolchainError, match="OpenOCD is not installed.*apt-get install openocd"):
            flash_openocd(build)
        return
    # OpenOCD reads the whole board config, then fails to open the (absent) JTAG adapter.
    with pytest.raises(ProbeError) as info:
        flash_openocd(build)
    message = str(info.value)
    assert message.startswith("No debug probe found: OpenOCD could not open the adapter configured in")
    assert "openocd.cfg" in message and "ftdi" in message


# ---- GDB -----------------------------------------------------------------------------------------------

def test_gdb_script_and_command_line(build, settings):
    script = gdb_script(settings).splitlines()
    assert script == ["set confirm off", "set pagination off", "set tcp auto-retry off",
                      "target extended-remote localhost:3333", "monitor reset halt", "load", "compare-sections",
                      "monitor reset run"]
    assert gdb_script(settings, "10.0.0.5:2331", before=[], after=["detach"]).splitlines()[3:] == \
        ["target extended-remote 10.0.0.5:2331", "load", "compare-sections", "detach"]
    assert gdb_command("gdb-multiarch", build / "flash.gdb", build / "firmware.elf") == \
        ["gdb-multiarch", "-q", "-nx", "-batch", "-x", str(build / "flash.gdb"), str(build / "firmware.elf")]


def test_gdb_without_a_server_names_what_is_missing(build):
    server = f"127.0.0.1:{free_port()}"  # nothing listens there
    if shutil.which("gdb-multiarch") is None and shutil.which("riscv64-unknown-elf-gdb") is None:
        with pytest.raises(ToolchainError, match="apt-get install gdb-multiarch"):
            flash_gdb(build, server)
        return
    started = time.monotonic()
    with pytest.raises(ProbeError, match=f"No GDB server answered at {re.escape(server)}: start the probe's GDB server"):
        flash_gdb(build, server)
    assert time.monotonic() - started < 10  # no 15 s of connection retries


@pytest.mark.skipif(shutil.which("gdb-multiarch") is None or shutil.which("qemu-system-riscv32") is None,
                    reason="needs gdb-multiarch and qemu-system-riscv32 (QEMU's GDB server)")
def test_gdb_loads_and_verifies_through_a_gdb_server(build, tmp_path):
    """QEMU 'virt' has riscv-npu's flash at 0x20000000: a real GDB server to load into. QEMU's monitor has
    no OpenOCD reset commands, so none are sent."""
    port = free_port()
    qemu = subprocess.Popen(["qemu-system-riscv32", "-M", "virt", "-bios", "none", "-S", "-gdb", f"tcp:127.0.0.1:{port}",
                             "-display", "none", "-monitor", "none", "-serial", "none", "-nodefaults"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port)
        result = flash_gdb(build, f"127.0.0.1:{port}", before=[], after=[])
    finally:
        qemu.kill()
        qemu.wait()
    assert result.verified and result.bytes_written == sum(len(d) for _, d in read_intel_hex(build / "firmware.hex"))
    assert re.search(r"Section \.text, range 0x20000000 -- 0x[0-9a-f]+: matched\.", result.output)


def _wait_for_port(port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"QEMU's GDB server did not open port {port}")


# ---- built-in emulator ---------------------------------------------------------------------------------

def test_emulator_flash_programs_the_elf_segments_and_boots(build):
    result = flash_emulator(build)
    board = load_board("riscv-npu")
    flash_image = result.flash_contents
    assert len(flash_image) == board.flash.size
    written = bytearray([ERASED_BYTE]) * board.flash.size
    for address, data in elf_load_segments(build / "firmware.elf"):
        offset = address - board.flash.base
        assert flash_image[offset:offset + len(data)] == data  # the ELF's loadable segments, byte for byte
        written[offset:offset + len(data)] = data
    assert flash_image == bytes(written)  # and nothing else: the rest of flash is erased
    assert result.verified and result.bytes_written == sum(len(d) for _, d in elf_load_segments(build / "firmware.elf"))
    assert result.exit_code == 0
    assert result.output.splitlines() == ["edgesdk harness: model hello_world_int8 on riscv-npu", "edgesdk: run ok"]


def test_emulator_flash_cli(build, capsys):
    assert cli_main(["flash", str(build), "--probe", "emulator"]) == 0
    out = capsys.readouterr().out
    assert "with emulator, verified" in out and "edgesdk: run ok" in out and "exit code: 0" in out


def test_flash_needs_a_firmware_build(tmp_path):
    with pytest.raises(UsageError, match="is not a firmware build"):
        flash(tmp_path, "emulator")
    with pytest.raises(UsageError, match="--probe must be one of openocd, gdb, emulator"):
        flash(tmp_path, "jlink")
