"""Built-in emulator: the fake-model firmware boots, computes, exits; faults, limits and the NPU glue.

One firmware image serves all tests: the fake model runs a test command when its input starts with "FLT"
(see tests/fixtures/fake_model/model.c). The QEMU cross-checks are skipped without qemu-system-riscv32.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from edgesdk.board import load_board
from edgesdk.emulator import Machine, NativeModelSpec, elf_symbol, run_elf
from edgesdk.emulator import machine as machine_module
from edgesdk.emulator.machine import model_function
from edgesdk.errors import EmulatorError
from edgesdk.firmware_build import build_firmware, render_board_files

FIXTURES = Path(__file__).resolve().parent / "fixtures"
IO_BYTES = 16  # fake model: input at arena offset 0, output at offset 16


@pytest.fixture(scope="module")
def board():
    return load_board("riscv-npu")


@pytest.fixture(scope="module")
def firmware(tmp_path_factory, board) -> Path:
    tmp = tmp_path_factory.mktemp("fw")
    gen = tmp / "src"
    gen.mkdir()
    for src in (FIXTURES / "fake_model").glob("*.[ch]"):
        shutil.copy(src, gen)
    render_board_files(board, gen)
    return build_firmware(gen, tmp / "out", board)


@pytest.fixture(scope="module")
def arena(firmware) -> int:
    return elf_symbol(firmware, "edgesdk_arena")


@pytest.fixture(scope="module")
def npu_stub() -> dict:
    """The board's npu0 served by a stand-in native model."""
    stub = FIXTURES / "npu_stub"
    spec = importlib.util.spec_from_file_location("npu_stub_registers", stub / "registers.py")
    registers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(registers)
    return {"npu0": NativeModelSpec.from_registers((stub / "npu_stub.c",), (stub,), registers, symbol_prefix="npu")}


def command(letter: str, payload: bytes = b"") -> bytes:
    return (b"FLT" + letter.encode() + payload).ljust(IO_BYTES, b"\0")


def run(firmware, board, arena, data: bytes, **kwargs):
    return run_elf(firmware, board, writes=[(arena, data)], reads=[(arena + IO_BYTES, IO_BYTES)], **kwargs)


# ---- normal runs ------------------------------------------------------------------------------------

def test_runs_model_and_exits(firmware, board, arena):
    data = bytes([0, 1, 2, 0x7F, 0x80, 0xFF] + list(range(10, 20)))
    result = run(firmware, board, arena, data)
    assert result.exit_code == 0
    assert result.uart == "edgesdk harness: model fake on riscv-npu\nedgesdk: run ok\n"
    # + 1 with int8 wrap-around; needs .data copied and .bss cleared by startup (SRAM starts as 0xA5)
    assert result.reads == [bytes((b + 1) & 0xFF for b in data)]
    assert 0 < result.inference_instructions < result.cpu_instructions
    assert 0 < result.stack_bytes_used < board.stack_bytes
    npu = result.peripheral_stats["npu0"]
    assert npu["starts"] == npu["cycles"] == 0  # CPU-only: the NPU never runs


def test_counts_are_deterministic(firmware, board, arena, monkeypatch):
    spin = command("P", struct.pack("<I", 200_000))
    first = run(firmware, board, arena, spin)
    # Many small slices must not change the counts (the CPU resumes exactly where it stopped).
    monkeypatch.setattr(machine_module, "RUN_SLICE_INSTRUCTIONS", 1500)
    second = run(firmware, board, arena, spin)
    assert first.exit_code == second.exit_code == 0
    assert first.cpu_instructions == second.cpu_instructions > 1_000_000
    assert first.inference_instructions == second.inference_instructions
    plain = [run(firmware, board, arena, bytes(IO_BYTES)) for _ in range(2)]
    assert plain[0].cpu_instructions == plain[1].cpu_instructions
    assert plain[0].inference_instructions == plain[1].inference_instructions
    assert plain[0].inference_instructions < first.inference_instructions


def test_failed_run_reports_status(firmware, board, arena):
    result = run(firmware, board, arena, command("S"))
    assert result.exit_code == 7
    assert result.uart.endswith("edgesdk: run failed status=7\n")


# ---- faults and limits ------------------------------------------------------------------------------

@pytest.mark.parametrize("letter, expected", [
    ("J", r"jump to unmapped address 0x0f000000 .*PC 0x0f000000.*edgesdk_default_run"),
    ("R", r"read from unmapped address 0x0f000000 .*PC 0x2[0-9a-f]{7} in edgesdk_default_run\+0x"),
    ("W", r"write to read-only memory at 0x2[0-9a-f]{7} \[flash .*PC 0x2[0-9a-f]{7} in edgesdk_default_run"),
    ("I", r"illegal instruction.*PC 0x2[0-9a-f]{7} in edgesdk_default_run\+0x"),
    ("E", r"ecall.*PC 0x2[0-9a-f]{7} in edgesdk_default_run\+0x"),
    ("K", r"ebreak.*PC 0x2[0-9a-f]{7} in edgesdk_default_run\+0x"),
])
def test_faults_name_pc_and_function(firmware, board, arena, letter, expected):
    with pytest.raises(EmulatorError, match=expected) as err:
        run(firmware, board, arena, command(letter))
    assert "edgesdk harness: model fake" in str(err.value)  # UART output so far


def test_instruction_budget(firmware, board, arena):
    with pytest.raises(EmulatorError, match=r"did not finish within the budget of 100000 instructions.*"
                                            r"PC 0x2[0-9a-f]{7} in edgesdk_default_run"):
        run(firmware, board, arena, command("L"), max_instructions=100_000)


def test_wall_clock_timeout(firmware, board, arena):
    start = time.monotonic()
    with pytest.raises(EmulatorError, match=r"did not finish within 0.3 s.*in edgesdk_default_run"):
        run(firmware, board, arena, command("L"), timeout_s=0.3)
    assert time.monotonic() - start < 60  # it stops (no hang); how soon depends on the machine's load


def test_unknown_symbol(firmware):
    with pytest.raises(EmulatorError, match="no_such_symbol"):
        elf_symbol(firmware, "no_such_symbol")


def test_the_elf_is_parsed_once_per_file_version(firmware, tmp_path):
    elf = tmp_path / "firmware.elf"
    shutil.copy(firmware, elf)
    first = machine_module._read_elf(elf)
    assert machine_module._read_elf(elf) is first  # a run's several symbol look-ups parse the file once
    rebuilt = bytearray(elf.read_bytes())
    rebuilt[24:28] = struct.pack("<I", first.entry + 4)  # e_entry of the ELF32 header
    (tmp_path / "rebuilt.elf").write_bytes(rebuilt)
    os.replace(tmp_path / "rebuilt.elf", elf)  # as a build replaces its output
    assert machine_module._read_elf(elf).entry == first.entry + 4



def test_the_elf_reader_reads_what_pyelftools_reads(firmware, tmp_path):
    """edgesdk/elf.py (struct, shared with the firmware build's size reader) gives the emulator the entry, the
    loadable segments and the defined symbols pyelftools gives; other machines and non-ELF files are errors."""
    import sys

    from elftools.elf.elffile import ELFFile

    with open(firmware, "rb") as f:
        elf = ELFFile(f)
        segments = tuple((s["p_paddr"], s.data()) for s in elf.iter_segments()
                         if s["p_type"] == "PT_LOAD" and s["p_filesz"] > 0)
        symbols = [s for s in elf.get_section_by_name(".symtab").iter_symbols()
                   if s.name and s["st_shndx"] != "SHN_UNDEF"]
        entry = elf["e_entry"]
    parsed = machine_module._parse_elf.__wrapped__(firmware, None)
    assert (parsed.entry, parsed.segments) == (entry, segments) and len(segments) >= 2
    assert parsed.symbols == {s.name: s["st_value"] for s in reversed(symbols)}  # the first of a name wins
    assert parsed.functions == tuple(sorted((s["st_value"], s["st_size"], s.name) for s in symbols
                                            if s["st_info"]["type"] == "STT_FUNC"))
    with pytest.raises(EmulatorError, match="not an RV32 ELF file"):
        machine_module._parse_elf.__wrapped__(Path(sys.executable).resolve(), None)
    for name, data in (("empty.elf", b""), ("cut.elf", firmware.read_bytes()[:60])):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(EmulatorError, match="not a valid ELF file"):
            machine_module._parse_elf.__wrapped__(tmp_path / name, None)

# ---- NPU ----------------------------------------------------------------------------------------------

def test_npu_registers_and_bus_through_the_cpu(firmware, board, arena, npu_stub):
    """The CPU programs the NPU stub over MMIO; the stub copies input + 1 to output over the bus."""
    data = command("N")
    result = run(firmware, board, arena, data, native_models=npu_stub)
    assert result.exit_code == 0, result.uart
    assert result.reads == [bytes((b + 1) & 0xFF for b in data)]
    assert result.peripheral_stats["npu0"] == {"cycles": IO_BYTES, "starts": 1}


def test_npu_refuses_byte_access(firmware, board, arena, npu_stub):
    with pytest.raises(EmulatorError, match=r"npu0 \(edgesdk-npu1\) register offset 0x1 with a 1-byte access"):
        run(firmware, board, arena, command("B"), native_models=npu_stub)


def test_bus_rejects_flash_writes_and_unmapped(firmware, board, npu_stub):
    machine = Machine(board, firmware, npu_stub)
    try:
        lib, state = machine.lib, machine.state
        buf = (ctypes.c_uint8 * 8)(*range(1, 9))
        sram, flash = board.sram.base, board.flash.base
        assert lib.emu_bus_write(state, sram + 64, buf, 8) == 0
        assert machine.read(sram + 64, 8) == bytes(range(1, 9))
        assert lib.emu_bus_read(state, flash, buf, 8) == 0
        assert bytes(buf) == machine.read(flash, 8)
        assert lib.emu_bus_write(state, flash, buf, 8) != 0  # flash is read-only for the NPU too
        assert lib.emu_bus_read(state, board.sram.end - 4, buf, 8) != 0  # runs past the end of SRAM
        assert lib.emu_bus_read(state, 0x0F000000, buf, 4) != 0
        assert lib.emu_bus_errors(state) == 3
    finally:
        machine.close()


def test_real_npu_model_uses_guest_memory(firmware, board):
    """The shared C NPU model behind the emulator's register window: a DMA table in flash copies flash ->
    SRAM through the bus glue, and the performance counters add up over runs."""
    cmdtable = pytest.importorskip("edgesdk.targets.npu.hw.cmdtable")
    R = pytest.importorskip("edgesdk.targets.npu.hw.registers")
    machine = Machine(board, firmware)
    try:
        lib = machine.lib

        npu = machine.native["npu0"]
        read_register = model_function(lib, npu.spec, "reg_read")

        def write_register(offset, value):  # what a guest store to the NPU window does
            lib.emu_device_write(None, offset, 4, value, npu.handle)

        assert read_register(npu.model, R.REG_ID) == R.ID_VALUE
        table_addr, src_offset, dst_offset = board.flash.base + 0x10000, 0x20000, 0x100
        payload = bytes(range(32))
        machine.write(board.flash.base + src_offset, payload)
        desc = cmdtable.TensorDesc.dense
        table = cmdtable.encode([cmdtable.DmaCopy(desc(0, src_offset, (32,)), desc(1, dst_offset, (32,))),
                                 cmdtable.End()])
        machine.write(table_addr, table)

        def run_dma(dst_region_base):
            for index, base in enumerate((board.flash.base, dst_region_base)):
                write_register(R.reg_region_base(index), base)
            write_register(R.REG_CMD_BASE, table_addr)
            write_register(R.REG_CMD_SIZE, len(table))
            write_register(R.REG_CTRL, R.CTRL_START)
            return read_register(npu.model, R.REG_STATUS)

        assert run_dma(board.sram.base) == R.STATUS_DONE
        assert machine.read(board.sram.base + dst_offset, 32) == payload
        assert not machine.irq_pending("npu0")  # DONE is raised, its interrupt masked
        write_register(R.REG_IRQ_ENABLE, R.IRQ_DONE)
        assert machine.irq_pending("npu0")  # the model's line, through the glue
        write_register(R.REG_IRQ_CLEAR, R.IRQ_DONE)
        assert not machine.irq_pending("npu0")
        one_run = machine.native_stats("npu0")
        assert one_run["starts"] == 1 and one_run["cycles"] > 0
        assert one_run["flash_read_bytes"] >= 32 and one_run["write_bytes"] == 32
        assert run_dma(board.sram.base) == R.STATUS_DONE
        two_runs = machine.native_stats("npu0")
        assert two_runs["cycles"] == 2 * one_run["cycles"] and two_runs["write_bytes"] == 64
        status = run_dma(board.flash.base)  # destination in flash: bus error
        assert status & R.STATUS_ERROR
        assert (status & R.STATUS_ERROR_CODE_MASK) >> R.STATUS_ERROR_CODE_SHIFT == R.ERR_BUS
    finally:
        machine.close()


# ---- QEMU cross-check -----------------------------------------------------------------------------------

QEMU = shutil.which("qemu-system-riscv32")
needs_qemu = pytest.mark.skipif(QEMU is None, reason="qemu-system-riscv32 not installed")


def qemu_command(elf: Path, *extra: str) -> list:
    # -kernel would jump to the RAM base (0x80000000) with -bios none; the generic loader loads the ELF's
    # flash segments into virt's pflash window and starts the CPU at the ELF entry.
    return [QEMU, "-M", "virt", "-bios", "none", "-device", f"loader,file={elf},cpu-num=0",
            "-display", "none", "-serial", "stdio", "-monitor", "none", *extra]


@needs_qemu
def test_same_elf_boots_on_qemu(firmware, arena, tmp_path):
    ok = subprocess.run(qemu_command(firmware), capture_output=True, text=True, timeout=20)
    assert ok.returncode == 0
    assert ok.stdout == "edgesdk harness: model fake on riscv-npu\nedgesdk: run ok\n"
    # Inputs preloaded into the arena like the emulator does: the failure status becomes QEMU's exit code.
    def run_qemu(data: bytes):
        (tmp_path / "input.bin").write_bytes(data)
        return subprocess.run(qemu_command(firmware, "-device", f"loader,file={tmp_path / 'input.bin'},addr={arena:#x}"),
                              capture_output=True, text=True, timeout=20)

    failed = run_qemu(command("S"))
    assert failed.returncode == 7
    assert "run failed status=7" in failed.stdout
    # QEMU delivers traps to the firmware's handler, which reports and exits with EDGESDK_EXIT_TRAP.
    trapped = run_qemu(command("I"))
    assert trapped.returncode == 254
    assert "edgesdk: trap mcause=0x00000002" in trapped.stdout


class GdbRemote:
    """Just enough of the GDB remote protocol to break, step and read registers."""

    def __init__(self, path: Path):
        deadline = time.monotonic() + 10
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.settimeout(10)
                self.sock.connect(str(path))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.buffer = b""

    def command(self, payload: str) -> str:
        data = payload.encode()
        self.sock.sendall(b"$" + data + b"#" + f"{sum(data) % 256:02x}".encode())
        while True:
            match = re.search(rb"\$([^#]*)#[0-9a-fA-F]{2}", self.buffer)
            if match:
                self.buffer = self.buffer[match.end():]
                self.sock.sendall(b"+")
                return match.group(1).decode()
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("QEMU closed the GDB connection")
            self.buffer += chunk

    def read_xml(self, name: str) -> str:
        text = ""
        while True:
            reply = self.command(f"qXfer:features:read:{name}:{len(text):x},800")
            text += reply[1:]
            if reply[0] == "l":
                return text

    def register(self, number: int) -> int:
        return int.from_bytes(bytes.fromhex(self.command(f"p{number:x}")), "little")


def emulate_to_exit(firmware, board, arena) -> Machine:
    machine = Machine(board, firmware)
    machine.write(arena, bytes(IO_BYTES))  # QEMU's RAM starts zeroed: same input
    machine.run()
    return machine


@needs_qemu
def test_qemu_icount_matches_instruction_counts(firmware, board, arena, tmp_path):
    """Under -icount shift=0, minstret advances exactly as our counts: between the two harness marks
    (inference_instructions), and from the first mark to the exit-device store (the total)."""
    machine = emulate_to_exit(firmware, board, arena)
    try:
        ours_marks, ours_total, exit_store = machine.mark_instructions(), machine.instructions(), machine.pc()
    finally:
        machine.close()
    mark = elf_symbol(firmware, "edgesdk_harness_mark")
    sock = tmp_path / "gdb.sock"
    proc = subprocess.Popen(qemu_command(firmware, "-icount", "shift=0", "-S", "-gdb", f"unix:{sock},server=on,wait=off"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        gdb = GdbRemote(sock)
        minstret = int(re.search(r'<reg name="minstret"[^>]*regnum="(\d+)"', gdb.read_xml("riscv-csr.xml")).group(1))
        stops = [(mark, 1), (mark, 2), (exit_store, None)]
        counts, previous = [], None
        for address, argument in stops:
            if previous is not None:  # step off the previous breakpoint before continuing
                gdb.command(f"z0,{previous:x},2")
                gdb.command("s")
            assert gdb.command(f"Z0,{address:x},2") == "OK"
            assert gdb.command("c").startswith("T05")
            assert gdb.register(32) == address
            if argument is not None:
                assert gdb.register(10) == argument  # a0: edgesdk_harness_mark(1), then (2)
            counts.append(gdb.register(minstret))
            previous = address
        gdb.command(f"z0,{previous:x},2")
        try:
            gdb.command("c")
        except EOFError:
            pass
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert counts[1] - counts[0] == ours_marks[1] - ours_marks[0]
    assert counts[2] + 1 - counts[0] == ours_total - ours_marks[0]  # + 1: the store itself
