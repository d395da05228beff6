"""The Renode platform of riscv-npu: .repl/.resc in sync with board.json, the emulator built from the .repl,
and the C# peripherals (compiled against the Renode stand-ins with Mono's mcs, and run through the shared
C NPU model by P/Invoke, compared with the ctypes path the built-in emulator uses)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgesdk.board import BOARDS_DIR, load_board
from edgesdk.emulator import Machine
from edgesdk.errors import ToolchainError, UsageError
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import registers as R
from edgesdk.targets.dsp import registers as D
from edgesdk.targets.npu.hw.model import run_table
from edgesdk.renode import compile_peripherals, native_libraries, peripheral_sources
from edgesdk.targets.dsp.renode import RENODE_SOURCE as DSP_CS
from edgesdk.targets.npu.renode import RENODE_SOURCE as NPU_CS
from edgesdk.renode.platform import (check_against_board, cpu_timing, emulator_board, platform_board, repl_path,
                                     resc_path, scaffold_repl)
from edgesdk.renode.repl import Connection, Enum, Range, Reference, ReplSyntaxError, format_repl, parse_repl, read_repl
from test_npu_model import FLASH, SRAM, Memory, mixed_table

from edgesdk.board import load_board as _load_board  # noqa: E402
from edgesdk.targets.npu.hw.model import board_memory_classes as _board_memory_classes  # noqa: E402

BOARD_CLASSES = _board_memory_classes(_load_board("riscv-npu"))  # the NPU's view of riscv-npu's memories

BOARD_DIR = BOARDS_DIR / "riscv-npu"


@pytest.fixture(scope="module")
def board():
    return load_board("riscv-npu")


@pytest.fixture(scope="module")
def repl(board):
    return read_repl(repl_path(board))


# ---- .repl reader/writer ------------------------------------------------------------------------------

def test_repl_reader_reads_the_renode_syntax_used():
    text = """// header
flash: Memory.MappedMemory @ sysbus 0x20000000
    size: 0x400000
npu: Edgesdk.Npu1 @ sysbus <0x40000000, +0x1000> { sramBase: 0x80000000; sramSize: 524288 }
    IRQ -> plic@8
cpu: CPU.RiscV32 @ sysbus
    cpuType: "rv32imac"   /* inline comment */
    privilegedArchitecture: PrivilegedArchitecture.Priv1_11
    timeProvider: clint
    allowUnalignedAccesses: true
    window: <0x1000, +0x100>
clint: IRQControllers.CoreLevelInterruptor @ sysbus 0x02000000
    [0, 1] -> cpu@[3, 7]
gpio: GPIOPort.X @ sysbus 0x1000
    [0-3] -> plic@[8-11]
"""
    r = parse_repl(text)
    assert r.header == "// header"
    assert (r["flash"].address, r["flash"].attributes) == (0x20000000, {"size": 0x400000})
    npu = r["npu"]
    assert (npu.address, npu.size, npu.attributes["sramSize"]) == (0x40000000, 0x1000, 524288)
    assert npu.connections == [Connection("IRQ", "plic", (8,))] and npu.irq_inputs("plic") == [8]
    cpu = r["cpu"]
    assert cpu.bus == "sysbus" and cpu.address is None
    assert cpu.attributes == {"cpuType": "rv32imac", "privilegedArchitecture": Enum("PrivilegedArchitecture.Priv1_11"),
                              "timeProvider": Reference("clint"), "allowUnalignedAccesses": True,
                              "window": Range(0x1000, 0x100)}
    assert r["clint"].connections == [Connection((0, 1), "cpu", (3, 7))]
    assert r["gpio"].connections == [Connection((0, 1, 2, 3), "plic", (8, 9, 10, 11))]
    assert parse_repl(format_repl(r)).entries == r.entries


@pytest.mark.parametrize("text, message", [
    ("a: X @ sysbus 0x0\n    init:\n", "'init' sections"),
    ("a: X @ { sysbus 0x0; sysbus 0x4 }\n", "registration point"),
    ("a: X @ sysbus new Bus.BusPointRegistration { address: 0x0 }\n", "registration point"),
    ("    size: 4\n", "outside any entry"),
    ("a: X @ sysbus 0x0\na: Y @ sysbus 0x4\n", "defined twice"),
    ("a: X @ sysbus 0x0\n    v: <0x1, 0x2>\n", "<base, +size>"),
])
def test_repl_reader_refuses_what_it_does_not_understand(text, message):
    with pytest.raises(ReplSyntaxError, match=re.escape(message)):
        parse_repl(text, "x.repl")


def test_checked_in_repl_round_trips(repl):
    assert parse_repl(format_repl(repl)).entries == repl.entries


# ---- .repl and board.json in sync -------------------------------------------------------------------

def test_repl_and_board_json_agree(repl, board):
    assert check_against_board(repl, board) == []
    assert cpu_timing(repl).instructions_per_second == board.cpu["clock_hz"]


@pytest.mark.parametrize("old, new, complaint", [
    ("    size: 0x80000", "    size: 0x40000", "memory 'sram' is at 0x80000000+0x40000 in the .repl"),
    ("npu0: Edgesdk.Npu1 @ sysbus <0x40000000, +0x1000>", "npu0: Edgesdk.Npu1 @ sysbus <0x40001000, +0x1000>",
     "peripheral 'npu0' is at 0x40001000+0x1000"),
    ("    IRQ -> plic@8", "    IRQ -> plic@9", "has irq 9 in the .repl but 8"),
    ("    flashBytesPerCycleX256: 256", "    flashBytesPerCycleX256: 512", "flashBytesPerCycleX256: 512"),
    ("    wideRegisters: false", "    wideRegisters: true", "has reg_shift 2 in the .repl but 0"),
    ("dsp0: Edgesdk.Dsp1 @ sysbus <0x40001000, +0x1000>\n    flashBase: 0x20000000",
     "dsp0: Edgesdk.Dsp1 @ sysbus <0x40001000, +0x1000>\n    flashBase: 0x20001000",
     "'dsp0' has flashBase: 536875008 in the .repl but board.json gives 536870912"),
    ("    PerformanceInMips: 200", "    PerformanceInMips: 100", "PerformanceInMips 100"),
    ("uart0: UART.NS16550 @ sysbus 0x10000000", "uart1: UART.NS16550 @ sysbus 0x10000000",
     "peripheral 'uart0' (ns16550) is missing"),
    ("clint: IRQControllers.CoreLevelInterruptor", "timer: Timers.Something @ sysbus 0x3000\n\nclint: "
     "IRQControllers.CoreLevelInterruptor", "'timer' (Timers.Something) which board.json does not describe"),
])
def test_drift_between_repl_and_board_json_is_reported(board, old, new, complaint):
    text = repl_path(board).read_text()
    assert old in text
    problems = check_against_board(parse_repl(text.replace(old, new, 1)), board)
    assert any(complaint in p for p in problems), problems


def board_copy(tmp_path, repl_text: str | None = None):
    """boards/riscv-npu copied to tmp_path (board.json, and the .repl or `repl_text` instead)."""
    target = tmp_path / "riscv-npu"
    target.mkdir(parents=True)
    shutil.copy(BOARD_DIR / "board.json", target / "board.json")
    (target / "riscv-npu.repl").write_text(repl_text if repl_text is not None else repl_path(load_board("riscv-npu")).read_text())
    return load_board(str(target))


def test_emulator_builds_its_machine_from_the_repl(tmp_path, board, repl):
    emulated = emulator_board(board)
    assert emulated.memories == board.memories
    assert {n: (p.type, p.base, p.size) for n, p in emulated.peripherals.items()} == \
        {n: (p.type, p.base, p.size) for n, p in board.peripherals.items()}
    # The .repl alone (no board.json) gives the same machine: kinds and the NPU's bandwidths from its windows.
    alone = platform_board(repl)
    assert alone.memories == board.memories
    assert alone.peripherals["uart0"].props == {"reg_shift": 0}
    assert alone.peripherals["npu0"].props == {"irq": 8, "flash_bytes_per_cycle": 1, "sram_bytes_per_cycle": 8}
    # The emulator really reads the file: a broken or drifted .repl stops it, naming the file.
    broken = board_copy(tmp_path / "a", repl_path(board).read_text() + "\nbad line here\n")
    with pytest.raises(ReplSyntaxError, match="riscv-npu.repl"):
        emulator_board(broken)
    drifted = board_copy(tmp_path / "b", repl_path(board).read_text().replace("size: 0x80000", "size: 0x40000"))
    with pytest.raises(UsageError, match="disagree: memory 'sram'"):
        emulator_board(drifted)


def test_emulator_refuses_a_drifted_platform(tmp_path, board):
    drifted = board_copy(tmp_path, repl_path(board).read_text().replace("IRQ -> plic@8", "IRQ -> plic@3"))
    elf = tmp_path / "unused.elf"
    with pytest.raises(UsageError, match="has irq 3 in the .repl but 8"):
        Machine(drifted, elf)


def test_board_without_repl_uses_board_json(tmp_path, board):
    target = tmp_path / "plain"
    target.mkdir()
    shutil.copy(BOARD_DIR / "board.json", target / "board.json")
    plain = load_board(str(target))
    assert emulator_board(plain) is plain


def test_scaffold_for_a_new_board_is_consistent(board):
    scaffold = parse_repl(format_repl(scaffold_repl(board)))
    assert check_against_board(scaffold, board) == []


def test_resc_loads_the_platform_the_peripherals_and_the_firmware(board):
    text = resc_path(board).read_text()
    assert "machine LoadPlatformDescription $ORIGIN/riscv-npu.repl" in text
    assert "sysbus LoadELF $elf" in text and "$elf?=@firmware.elf" in text
    includes = re.findall(r"^include \$ORIGIN/(\S+\.cs)$", text, re.MULTILINE)
    assert sorted((resc_path(board).parent / p).resolve() for p in includes) == sorted(peripheral_sources())
    # Each C# type the .repl uses is defined by one of the included files.
    defined = {f"Edgesdk.{name}" for p in peripheral_sources() for name in re.findall(r"public class (\w+)", p.read_text())}
    used = {e.type for e in read_repl(repl_path(board)).entries.values() if e.type and e.type.startswith("Edgesdk.")}
    assert used == defined


# ---- C# peripherals ---------------------------------------------------------------------------------

needs_mcs = pytest.mark.skipif(shutil.which("mcs") is None, reason="Mono's C# compiler (apt-get install mono-mcs) is not installed")
needs_mono = pytest.mark.skipif(shutil.which("mcs") is None or shutil.which("mono") is None,
                                reason="Mono (apt-get install mono-mcs) is not installed")


@needs_mcs
def test_csharp_peripherals_compile_against_the_standins(tmp_path):
    dll = compile_peripherals(tmp_path)
    assert dll.stat().st_size > 0


@needs_mcs
def test_csharp_compile_errors_are_reported(tmp_path):
    broken = tmp_path / "Broken.cs"
    broken.write_text(NPU_CS.read_text().replace("sysbus.ReadBytes(", "sysbus.ReadBytez("))
    with pytest.raises(ToolchainError, match="ReadBytez"):
        compile_peripherals(tmp_path / "out", sources=(broken, DSP_CS))


def test_csharp_register_constants_match_the_register_map():
    text = NPU_CS.read_text()
    constants = {name: int(value, 0) for name, value in re.findall(r"const u?int (\w+) = (0x[0-9A-Fa-f]+|\d+);", text)}
    expected = {"RegisterCtrl": R.REG_CTRL, "RegisterStatus": R.REG_STATUS, "RegisterErrorCommand": R.REG_ERROR_COMMAND,
                "RegisterPerfCyclesLow": R.REG_PERF_CYCLES_LO, "RegisterPerfCyclesHigh": R.REG_PERF_CYCLES_HI,
                "CtrlStart": R.CTRL_START, "CtrlReset": R.CTRL_RESET, "StatusError": R.STATUS_ERROR,
                "StatusErrorCodeMask": R.STATUS_ERROR_CODE_MASK, "StatusErrorCodeShift": R.STATUS_ERROR_CODE_SHIFT}
    assert {k: constants[k] for k in expected} == expected


HARNESS_CS = Path(__file__).resolve().parent / "renode" / "PeripheralHarness.cs"


class Harness:
    """PeripheralHarness.exe under Mono: the C# peripherals over the stand-ins, with their native models
    (libedgesdk_npu.so, libedgesdk_dsp.so)."""

    def __init__(self, tmp_path, flash_size=0x400000, sram_size=0x80000, sources=None):
        self.dir = tmp_path
        self.exe = compile_peripherals(tmp_path, harness=HARNESS_CS, sources=sources)
        self.lib_dir = tmp_path / "lib"
        native_libraries(self.lib_dir)
        self.args = [hex(FLASH), hex(flash_size), hex(SRAM), hex(sram_size)]

    def run(self, script: list) -> list:
        env = dict(os.environ, LD_LIBRARY_PATH=str(self.lib_dir))
        proc = subprocess.run(["mono", str(self.exe), *self.args], input="\n".join(script) + "\n",
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()


def program_and_start(table_address: int, table_bytes: int, irq_enable: int = 0) -> list:
    """The driver's programming sequence (docs/npu-datasheet.md section 2) as harness commands."""
    return [f"write {R.reg_region_base(0):#x} {FLASH:#x}", f"write {R.reg_region_base(1):#x} {SRAM:#x}",
            f"write {R.REG_CMD_BASE:#x} {table_address:#x}", f"write {R.REG_CMD_SIZE:#x} {table_bytes}",
            f"write {R.REG_IRQ_ENABLE:#x} {irq_enable}", f"write {R.REG_CTRL:#x} {R.CTRL_START}"]


READ_BACK = [R.REG_STATUS, R.REG_ERROR_COMMAND, R.REG_IRQ_STATUS, R.REG_PERF_CYCLES_LO, R.REG_PERF_CYCLES_HI,
             R.REG_PERF_MACS_LO, R.REG_PERF_COMMANDS, R.REG_PERF_SRAM_READ_BYTES, R.REG_PERF_FLASH_READ_BYTES,
             R.REG_PERF_WRITE_BYTES]


def ctypes_registers(result) -> list:
    return [result.status, result.error_command, result.irq_status, result.cycles & 0xFFFFFFFF, result.cycles >> 32,
            result.macs & 0xFFFFFFFF, result.commands, result.sram_read_bytes, result.flash_read_bytes,
            result.write_bytes]


@needs_mono
def test_csharp_peripheral_computes_what_the_emulator_computes(tmp_path):
    """A table of every command kind, through Npu1.cs + P/Invoke and through ctypes: same SRAM, same registers."""
    m = Memory()
    table = C.encode(mixed_table(m, np.random.default_rng(7)))
    table_offset = (len(m.flash) + 15) // 16 * 16
    flash = bytes(m.flash) + bytes(table_offset - len(m.flash)) + table
    (tmp_path / "flash.bin").write_bytes(flash)
    (tmp_path / "sram.bin").write_bytes(bytes(m.sram))

    expected_sram = bytearray(m.sram)
    expected = run_table(table, {FLASH: bytearray(flash), SRAM: expected_sram}, [FLASH, SRAM],
                         table_addr=FLASH + table_offset, read_only=[FLASH], memory_classes=BOARD_CLASSES)
    assert expected.ok, expected

    harness = Harness(tmp_path / "cs")
    out = harness.run([f"load {FLASH:#x} {tmp_path / 'flash.bin'}", f"load {SRAM:#x} {tmp_path / 'sram.bin'}",
                       *program_and_start(FLASH + table_offset, len(table), R.IRQ_DONE),
                       *[f"read {r:#x}" for r in READ_BACK], "irq",
                       f"write {R.REG_IRQ_CLEAR:#x} {R.IRQ_DONE}", "irq",
                       f"save {SRAM:#x} {len(m.sram)} {tmp_path / 'out.bin'}", "log"])
    assert [int(v, 16) for v in out[:len(READ_BACK)]] == ctypes_registers(expected)
    assert out[len(READ_BACK):len(READ_BACK) + 2] == ["1", "0"]  # completion IRQ raised, then cleared
    assert (tmp_path / "out.bin").read_bytes() == bytes(expected_sram)
    assert f"DEBUG NPU run done in {expected.cycles} NPU cycles" in out


@needs_mono
def test_csharp_peripheral_errors_irq_reset_and_exit_device(tmp_path):
    good = C.encode([C.DmaCopy(C.TensorDesc.dense(1, 0, (1, 1, 1, 64)), C.TensorDesc.dense(1, 64, (1, 1, 1, 64))),
                     C.End()])
    corrupted = b"\0\0\0\0" + good[4:]  # bad magic
    into_flash = C.encode([C.DmaCopy(C.TensorDesc.dense(1, 0, (1, 1, 1, 64)), C.TensorDesc.dense(0, 0, (1, 1, 1, 64))),
                           C.End()])  # DMA into region 0 = flash: the NPU may not write there
    files = {"corrupted": corrupted, "into_flash": into_flash}
    for name, table in files.items():
        (tmp_path / f"{name}.bin").write_bytes(table)
    script = []
    for name, table in files.items():
        script += [f"load {FLASH:#x} {tmp_path / (name + '.bin')}", *program_and_start(FLASH, len(table), R.IRQ_ERROR),
                   f"read {R.REG_STATUS:#x}", f"read {R.REG_ERROR_COMMAND:#x}", "irq"]
    script += ["reset", f"read {R.REG_STATUS:#x}", "irq", "exitcode", "finish 0x5555", "exitcode",
               "finish 0x70007777", "finish 0x2a3333", "exitcode", "pauses", "log"]
    out = Harness(tmp_path / "cs").run(script)

    expected = {}
    for name, table in files.items():
        flash = bytearray(table) + bytes(64)
        result = run_table(table, {FLASH: flash, SRAM: bytearray(1024)}, [FLASH, SRAM], table_addr=FLASH,
                           read_only=[FLASH], memory_classes=BOARD_CLASSES)
        expected[name] = [f"0x{result.status:08X}", f"0x{result.error_command:08X}", "1"]
    assert out[0:3] == expected["corrupted"] == [f"0x{R.STATUS_ERROR | (R.ERR_TABLE_MAGIC << 8):08X}", "0xFFFFFFFF", "1"]
    assert out[3:6] == expected["into_flash"] == [f"0x{R.STATUS_ERROR | (R.ERR_BUS << 8):08X}", "0x00000000", "1"]
    assert out[6:8] == ["0x00000000", "0"]  # Reset(): registers back to reset values, IRQ line low
    # Exit device: -1 before any exit; pass = 0; a reset request is refused; fail with code 42; 3 pauses.
    assert out[8:12] == ["-1", "0", "42", "3"]
    log = out[12:]
    assert log == ["WARNING NPU run failed: error code 0x01 at command 0xFFFFFFFF (docs/npu-datasheet.md lists the codes)",
                   "WARNING NPU run failed: error code 0x0B at command 0x00000000 (docs/npu-datasheet.md lists the codes)",
                   "INFO firmware exited with code 0.",
                   "ERROR firmware asked for a reset, which the riscv-npu platform does not support.",
                   "INFO firmware exited with code 42.", "end"]


# ---- hifive1-revb: the FE310 platform ------------------------------------------------------------------

HIFIVE1_DIR = BOARDS_DIR / "hifive1-revb"
FIXTURES_DIR = BOARDS_DIR.parents[1] / "tests" / "fixtures"

# Renode's FE310 platform, as renode/renode platforms/cpus/sifive-fe310.repl (commit 06854d4, 2026-08) has it:
# entry -> (type, address, attributes the edgesdk file keeps, connections). Our names for its entries in the
# second column where they differ (board.json's flash/sram; gpio0 for its gpioInputs).
RENODE_FE310 = {
    "dtim": ("sram", "Memory.MappedMemory", 0x80000000, {"size": 0x4000}, []),
    "qspi0Xip": ("flash", "Memory.MappedMemory", 0x20000000, {}, []),  # Renode maps the whole 512 MiB window
    "uart0": ("uart0", "UART.SiFive_UART", 0x10013000, {}, [Connection("IRQ", "plic", (3,))]),
    "gpioInputs": ("gpio0", "GPIOPort.SiFive_GPIO", 0x10012000, {},
                   [Connection(tuple(range(32)), "plic", tuple(range(8, 40)))]),
    "cpu": ("cpu", "CPU.RiscV32", None, {"cpuType": "rv32imac_zicsr_zifencei",
                                         "privilegedArchitecture": Enum("PrivilegedArchitecture.Priv1_10"),
                                         "timeProvider": Reference("clint")}, []),
    "plic": ("plic", "IRQControllers.PlatformLevelInterruptController", 0x0C000000,
             {"numberOfSources": 52, "numberOfContexts": 1}, [Connection((0,), "cpu", (11,))]),
    "clint": ("clint", "IRQControllers.CoreLevelInterruptor", 0x02000000, {"frequency": 62000000},
              [Connection((0, 1), "cpu", (3, 7))]),
}
# scripts/single-node/sifive_fe310.resc: `cpu PerformanceInMips 320`. renode-infrastructure: SiFive_UART.Size is
# 0x100, SiFive_GPIO.Size 0x1000 (src/Emulator/Peripherals/Peripherals/{UART/SiFive_UART,GPIOPort/SiFive_GPIO}.cs).
RENODE_FE310_MIPS = 320
RENODE_MODEL_SIZES = {"UART.SiFive_UART": 0x100, "GPIOPort.SiFive_GPIO": 0x1000}


@pytest.fixture(scope="module")
def hifive1():
    return load_board("hifive1-revb")


@pytest.fixture(scope="module")
def hifive1_repl(hifive1):
    return read_repl(repl_path(hifive1))


def test_hifive1_repl_and_board_json_agree(hifive1, hifive1_repl):
    assert check_against_board(hifive1_repl, hifive1) == []
    assert cpu_timing(hifive1_repl).instructions_per_second == hifive1.cpu["clock_hz"] == RENODE_FE310_MIPS * 1_000_000
    assert parse_repl(format_repl(hifive1_repl)).entries == hifive1_repl.entries


def test_hifive1_repl_follows_renodes_fe310_platform(hifive1_repl):
    for renode_name, (ours, kind, address, attributes, connections) in RENODE_FE310.items():
        entry = hifive1_repl[ours]
        assert (entry.type, entry.address) == (kind, address), renode_name
        assert {k: entry.attributes[k] for k in attributes} == attributes, renode_name
        assert entry.connections == connections, renode_name
    # Nothing beyond Renode's entries (it also has maskRom, otp and uart1, which edgesdk firmware never uses).
    assert set(hifive1_repl.entries) == {v[0] for v in RENODE_FE310.values()}
    assert hifive1_repl["flash"].attributes["size"] == 4 << 20  # the board's chip inside Renode's XIP window


def test_hifive1_peripheral_sizes_are_renodes(hifive1):
    from edgesdk.renode.platform import KNOWN_SIZES

    for renode_type, size in RENODE_MODEL_SIZES.items():
        assert KNOWN_SIZES[renode_type] == size
    assert hifive1.peripherals["uart0"].size == RENODE_MODEL_SIZES["UART.SiFive_UART"]
    assert hifive1.peripherals["gpio0"].size == RENODE_MODEL_SIZES["GPIOPort.SiFive_GPIO"]


def test_hifive1_drift_is_reported(hifive1):
    text = repl_path(hifive1).read_text()
    for old, new, complaint in [
        ("    size: 0x4000\n", "    size: 0x8000\n", "memory 'sram' is at 0x80000000+0x8000 in the .repl"),
        ("uart0: UART.SiFive_UART @ sysbus 0x10013000", "uart0: UART.SiFive_UART @ sysbus 0x10023000",
         "peripheral 'uart0' is at 0x10023000+0x100"),
        ("uart0: UART.SiFive_UART", "uart0: UART.NS16550", "board.json type 'sifive_uart' needs UART.SiFive_UART"),
        ("    PerformanceInMips: 320", "    PerformanceInMips: 16", "PerformanceInMips 16"),
    ]:
        assert old in text
        problems = check_against_board(parse_repl(text.replace(old, new, 1)), hifive1)
        assert any(complaint in p for p in problems), problems


def test_hifive1_emulator_machine_comes_from_the_repl(hifive1):
    emulated = emulator_board(hifive1)
    assert emulated.memories == hifive1.memories
    assert {n: (p.type, p.base, p.size) for n, p in emulated.peripherals.items()} == \
        {"uart0": ("sifive_uart", 0x10013000, 0x100), "gpio0": ("sifive_gpio", 0x10012000, 0x1000)}


def test_hifive1_resc_loads_the_platform_the_firmware_and_reports_the_exit(hifive1):
    text = resc_path(hifive1).read_text()
    assert "machine LoadPlatformDescription $ORIGIN/hifive1-revb.repl" in text
    assert "sysbus LoadELF $elf" in text and "$elf?=@firmware.elf" in text and "showAnalyzer uart0" in text
    assert not re.search(r"^include", text, re.MULTILINE)  # no C# peripheral: all Renode's own models
    # No semihosting in Renode's RISC-V cores: a hook on the exit function logs what the exit device would, with
    # the status the firmware passes in a0 (x10), and pauses like EdgesdkSiFiveTestFinisher.cs.
    hook = re.search(r'^cpu AddHook `sysbus GetSymbolAddress "(\w+)"` "(.+)"$', text, re.MULTILINE)
    assert hook and hook[1] == "edgesdk_board_exit"
    assert "firmware exited with code {0}." in hook[2] and "cpu.GetRegister(10).RawValue" in hook[2]
    assert "machine.PauseAndRequestEmulationPause()" in hook[2]
    finisher = (BOARDS_DIR.parent / "renode" / "EdgesdkSiFiveTestFinisher.cs").read_text()
    assert '"firmware exited with code {0}."' in finisher and "PauseAndRequestEmulationPause()" in finisher
    startup = (BOARDS_DIR.parent / "firmware" / "startup.c").read_text()
    assert "void edgesdk_board_exit(uint32_t status)" in startup  # a0 = the status, as the hook reads it


def test_builtin_monitor_takes_only_the_exit_hook(tmp_path):
    from edgesdk.board import load_board as _load
    from edgesdk.firmware_build import build_firmware, render_board_files
    from edgesdk.hil.emulation import Emulation, Monitor, RenodeError

    board = _load("hifive1-revb")
    gen = tmp_path / "src"
    gen.mkdir()
    shutil.copy(FIXTURES_DIR / "fake_model" / "model.h", gen)
    (gen / "model.c").write_text((FIXTURES_DIR / "fake_model" / "model.c").read_text().replace(
        '#include "board.h"', '#include "board.h"\n#define BOARD_NPU0_BASE 0x40000000u', 1))
    render_board_files(board, gen)
    elf = build_firmware(gen, tmp_path / "out", board)
    monitor = Monitor(Emulation())
    monitor.execute(f"$elf=@{elf}")
    monitor.execute(f"include @{resc_path(board)}")  # the hook line included
    address = monitor.execute('sysbus GetSymbolAddress "edgesdk_halt"').strip()
    with pytest.raises(RenodeError, match="accepts only the exit hook on edgesdk_board_exit"):
        monitor.execute(f'cpu AddHook {address} "cpu.Log(LogLevel.Info, 1)"')
    monitor.emulation.close()


# ---- snapshots (issue 12 item 16) -----------------------------------------------------------------------
# renode-test saves a snapshot whenever a test fails; Renode's serializer (Migrant) refuses native pointers
# ("Pointer or ThreadLocal or SpinLock encountered during serialization"). The harness's `snapshot` does what
# Migrant does to a peripheral (PeripheralHarness.cs, class Snapshot) and carries on with the restored copies.

DSP_PROGRAMMABLE = [D.REG_OPCODE, D.REG_SRC0_ADDR, D.REG_SRC0_BYTES, D.REG_SRC1_ADDR, D.REG_SRC1_BYTES, D.REG_DST_ADDR,
                    D.REG_DST_BYTES, D.REG_PARAM_ADDR, D.REG_PARAM_BYTES, D.REG_CONST_BASE, D.REG_CONST_BYTES]
DSP_COUNTERS = [D.REG_STATUS, D.REG_LAST_CYCLES, D.REG_CYCLES_LO, D.REG_CYCLES_HI, D.REG_KERNELS, D.REG_ERRORS]


@needs_mono
def test_peripherals_survive_a_snapshot_and_keep_working(tmp_path):
    """Every field of Npu1, Dsp1 and the exit device can be saved; after loading, the registers are those saved
    and the NPU, with a new native model, runs a table on the bus as before."""
    m = Memory()
    table = C.encode(mixed_table(m, np.random.default_rng(3)))
    table_offset = (len(m.flash) + 15) // 16 * 16
    flash = bytes(m.flash) + bytes(table_offset - len(m.flash)) + table
    (tmp_path / "flash.bin").write_bytes(flash)
    (tmp_path / "sram.bin").write_bytes(bytes(m.sram))
    expected_sram = bytearray(m.sram)
    expected = run_table(table, {FLASH: bytearray(flash), SRAM: expected_sram}, [FLASH, SRAM],
                         table_addr=FLASH + table_offset, read_only=[FLASH], memory_classes=BOARD_CLASSES)
    dsp_values = [0x1000 + 4 * k for k in range(len(DSP_PROGRAMMABLE))]
    reads = [f"read {r:#x}" for r in READ_BACK] + [f"read {R.reg_region_base(1):#x}", f"read {R.REG_IRQ_ENABLE:#x}"]
    dsp_reads = [f"dsp-read {r:#x}" for r in DSP_PROGRAMMABLE + DSP_COUNTERS]
    run = [f"load {SRAM:#x} {tmp_path / 'sram.bin'}", *program_and_start(FLASH + table_offset, len(table), R.IRQ_DONE)]
    out = Harness(tmp_path / "cs").run(
        ["serializable", f"load {FLASH:#x} {tmp_path / 'flash.bin'}", *run,
         *[f"dsp-write {r:#x} {v:#x}" for r, v in zip(DSP_PROGRAMMABLE, dsp_values)],
         f"dsp-write {D.REG_OPCODE:#x} 0xEE", f"dsp-write {D.REG_CTRL:#x} {D.CTRL_START}",  # an error, counted
         *reads, *dsp_reads, "snapshot", *reads, *dsp_reads, "irq",
         f"write {R.REG_IRQ_CLEAR:#x} {R.IRQ_DONE}", *run, *reads, f"save {SRAM:#x} {len(m.sram)} {tmp_path / 'out.bin'}"])
    assert out[:3] == ["Npu1 ok", "Dsp1 ok", "SiFiveTestFinisher ok"]
    n, d = len(reads), len(dsp_reads)
    before, dsp_before = out[3:3 + n], out[3 + n:3 + n + d]
    assert out[3 + n + d] == "snapshot ok"
    after, dsp_after = out[4 + n + d:4 + 2 * n + d], out[4 + 2 * n + d:4 + 2 * n + 2 * d]
    assert [int(v, 16) for v in before[:len(READ_BACK)]] == ctypes_registers(expected)
    assert after == before  # the NPU's registers crossed the snapshot
    dsp_before_values = [int(v, 16) for v in dsp_before]
    assert dsp_before_values[:len(DSP_PROGRAMMABLE)] == [0xEE] + dsp_values[1:]
    assert dsp_before_values[len(DSP_PROGRAMMABLE) + 5] == 1 and dsp_before_values[len(DSP_PROGRAMMABLE)] & D.STATUS_ERROR
    assert dsp_after == dsp_before  # the DSP's too, counters included
    assert out[4 + 2 * n + 2 * d] == "1"  # the IRQ line of the restored NPU
    # The restored NPU (a new native model on the same bus) runs the table again: same registers, same SRAM.
    assert out[5 + 2 * n + 2 * d:] == before
    assert (tmp_path / "out.bin").read_bytes() == bytes(expected_sram)


@needs_mono
def test_snapshot_check_refuses_native_state_that_is_not_transient(tmp_path):
    """The harness's serializer is not a formality: without [Transient] on the native handle and callbacks,
    it refuses Npu1 with Migrant's message, as Renode's snapshot did before."""
    plain = tmp_path / "EdgesdkNpu1.cs"
    plain.write_text(NPU_CS.read_text().replace("[Transient]", ""))
    sources = tuple(plain if source == NPU_CS else source for source in peripheral_sources())
    out = Harness(tmp_path / "cs", sources=sources).run(["serializable", "snapshot"])
    assert "Npu1.device: IntPtr is a native pointer; mark it [Transient] and recreate it after loading" in out
    assert "Npu1.busRead: BusReadFunction is a delegate; mark it [Transient] and recreate it after loading" in out
    assert "Dsp1 ok" in out
    assert out[-1].startswith("snapshot failed: Pointer or ThreadLocal or SpinLock encountered during serialization")


def test_native_models_save_and_restore_their_registers():
    """npu_/dsp_save_state and _restore_state, the C half of the snapshots, through ctypes: a fresh model given
    the saved words reads back every register; a state of the wrong size is refused."""
    import ctypes

    from edgesdk.targets.npu.hw.model import load_npu_model
    from edgesdk.targets.dsp.device import load_dsp_model

    cases = [(load_npu_model(), "npu", [R.REG_CMD_BASE, R.REG_CMD_SIZE, R.REG_IRQ_ENABLE, R.reg_region_base(0),
                                        R.reg_region_base(3)], range(0, 0x80, 4)),
             (load_dsp_model(), "dsp", DSP_PROGRAMMABLE, [*DSP_PROGRAMMABLE, *DSP_COUNTERS])]
    for lib, prefix, writable, readable in cases:
        create, destroy = getattr(lib, f"{prefix}_create"), getattr(lib, f"{prefix}_destroy")
        read, write = getattr(lib, f"{prefix}_reg_read"), getattr(lib, f"{prefix}_reg_write")
        words = getattr(lib, f"{prefix}_state_words")
        save, restore = getattr(lib, f"{prefix}_save_state"), getattr(lib, f"{prefix}_restore_state")
        words.restype, save.restype, restore.restype = ctypes.c_uint32, None, ctypes.c_int
        save.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]
        restore.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32]
        first, second = create(), create()
        try:
            for k, offset in enumerate(writable):
                write(first, offset, 0x100 * (k + 1) | (1 if offset == R.REG_IRQ_ENABLE and prefix == "npu" else 0))
            state = (ctypes.c_uint32 * words())()
            save(first, state)
            assert restore(second, state, words() - 1) == -1
            assert restore(second, state, words()) == 0
            assert [read(second, o) for o in readable] == [read(first, o) for o in readable], prefix
            assert any(read(second, o) for o in writable)
        finally:
            destroy(first)
            destroy(second)
