"""The SiFive HiFive1 Rev B (boards/hifive1-revb, issue 14): a board one can buy, CPU only.

* its board.json, board.h and link.ld: the image at the bootloader's jump address, the SiFive UART console,
  the semihosting exit; --target npu,c refused;
* the memory planner on 16 KiB of SRAM: what does not fit is refused with the missing bytes, exactly;
* the same firmware on the built-in emulator and on QEMU (-M sifive_e,revb=true): outputs bit-exact with the
  reference, equal instruction counts, exit codes through semihosting, and, without semihosting (a board with
  no debugger attached), the firmware printing its result and stopping quietly;
* the HIL suites (boot, inference, hang) on the built-in emulator, and the HIL firmware's UART lines on QEMU;
* edgesdk flash --probe gdb into QEMU's GDB server, and OpenOCD reading the board's configuration;
* (slow) every model that fits the board, run bit-exact under QEMU with the built-in emulator's counts.
QEMU tests are skipped without qemu-system-riscv32.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import corpus
from image_batches import batch
from conftest import MODELS_DIR, REPO, model_path
from edgesdk.board import BOARDS_DIR, console_uart, exit_method, load_board
from edgesdk.cli import main as cli_main
from edgesdk.compiler import BuildOptions, build
from edgesdk.emulator import Machine, elf_symbol, run_elf
from edgesdk.errors import EmulatorError, MemoryFitError, UsageError
from edgesdk.firmware_build import build_firmware, render_board_files
from edgesdk.image import link_builds, load_image, run_image
from edgesdk.qemu import check_runs_on_qemu, qemu_command, run_qemu_sequence
from edgesdk.reference import run_reference, run_reference_sequence
from edgesdk.runner import load_report, random_inputs, run_inference, run_sequence

BOARD = "hifive1-revb"
BOARD_DIR = BOARDS_DIR / BOARD
FIXTURES = Path(__file__).resolve().parent / "fixtures"
QEMU = shutil.which("qemu-system-riscv32")
needs_qemu = pytest.mark.skipif(QEMU is None, reason="qemu-system-riscv32 not installed (apt-get install qemu-system-misc)")
HAS_ROBOT = importlib.util.find_spec("robot") is not None
QEMU_TIMEOUT_S = 120  # only stops a hang; QEMU runs these models in well under a second


@pytest.fixture(scope="module")
def board():
    return load_board(BOARD)


@pytest.fixture(scope="module")
def hello(tmp_path_factory) -> Path:
    """hello_world (the shared TFLite Micro example) built for the HiFive1."""
    out = tmp_path_factory.mktemp("hifive1") / "hello"
    build(model_path("hello_world"), out, BuildOptions(board=BOARD, target="c", werror=True))
    return out


# ---- the board ------------------------------------------------------------------------------------------

def test_board_is_the_hifive1_rev_b(board):
    assert (board.sram.base, board.sram.size) == (0x80000000, 16 * 1024)  # the FE310-G002's DTIM
    assert (board.flash.base, board.flash.size) == (0x20000000, 4 << 20)
    assert board.reset_address == 0x20010000 and board.image_flash_bytes == (4 << 20) - 0x10000
    assert console_uart(board).type == "sifive_uart" and console_uart(board).base == 0x10013000
    assert exit_method(board) == ("semihosting", None)
    assert board.qemu["machine"] == "sifive_e,revb=true"


def test_board_h_and_link_ld(tmp_path, board):
    render_board_files(board, tmp_path)
    header = (tmp_path / "board.h").read_text()
    for line in ("#define BOARD_CONSOLE_SIFIVE_UART 1", "#define BOARD_CONSOLE_BASE 0x10013000u",
                 "#define BOARD_CONSOLE_IOF_GPIO_BASE 0x10012000u", "#define BOARD_CONSOLE_IOF_MASK 0x00030000u",
                 "#define BOARD_CONSOLE_BAUD 115200u", "#define BOARD_EXIT_SEMIHOSTING 1",
                 "#define BOARD_RESET_ADDRESS 0x20010000u"):
        assert line in header
    assert "BOARD_EXIT_SIFIVE_TEST" not in header and "BOARD_CONSOLE_NS16550" not in header
    link = (tmp_path / "link.ld").read_text()
    assert "flash (rx!w) : ORIGIN = 0x20010000, LENGTH = 4128768" in link
    assert "sram  (rw!x) : ORIGIN = 0x80000000, LENGTH = 14336" in link  # up to the 2 KiB stack


def test_npu_target_is_refused_with_a_clear_message(tmp_path):
    """Asked for explicitly (the board's own default_targets is "c")."""
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "build", str(model_path("hello_world")), "--board", BOARD,
                           "--target", "npu,c", "-o", str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == 7
    assert "npu" in proc.stderr and BOARD in proc.stderr and "--target" in proc.stderr


def test_firmware_image_starts_at_the_bootloaders_jump_address(hello, board):
    from elftools.elf.elffile import ELFFile

    with (hello / "firmware.elf").open("rb") as f:
        elf = ELFFile(f)
        assert elf["e_entry"] == 0x20010000
        loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        # Only flash contents are loaded; the arena (.noinit) belongs to no segment, so QEMU's loader may fill it.
        assert all(s["p_filesz"] == 0 or board.flash.contains(s["p_paddr"], s["p_filesz"]) for s in loads)
        assert all(s["p_memsz"] == 0 for s in loads if board.sram.contains(s["p_vaddr"]) and s["p_paddr"] == s["p_vaddr"])
    from edgesdk.flash import elf_load_segments

    base, data = elf_load_segments(hello / "firmware.elf")[0]
    assert base == 0x20010000 and (hello / "firmware.bin").read_bytes()[:len(data)] == data  # the raw image too


# ---- memory: what fits, and by how much the rest misses -------------------------------------------------

def test_too_large_a_model_is_refused_with_the_missing_bytes(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "build", str(model_path("vww")), "--board", BOARD,
                           "--target", "c", "-o", str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == 4
    arena = 37632  # vww's planned arena for --target c; refused before planning, on a lower bound of it
    found = re.search(r"activation arena at least (\d+) \+ stack 2048.* over by at least (\d+) bytes", proc.stderr)
    assert found, proc.stderr
    bound, over = int(found[1]), int(found[2])
    assert 16384 - 2048 < bound <= arena and over == bound + 2048 - 16384


def test_a_near_miss_is_measured_by_the_linker_to_the_byte(tmp_path, hello, board):
    """A model whose arena and stack fit but whose whole image does not: the linker's shortfall, exactly."""
    symbols = {name: elf_symbol(hello / "firmware.elf", name) for name in ("__noinit_end",)}
    used = symbols["__noinit_end"] - board.sram.base  # .data + .bss + the arena with its guards, in the real build
    missing = 10
    raw = json.loads((BOARD_DIR / "board.json").read_text())
    raw["name"] = "hifive1-tight"
    raw["memory"]["sram"]["size"] = used + board.stack_bytes - missing
    folder = tmp_path / "hifive1-tight"
    folder.mkdir()
    (folder / "board.json").write_text(json.dumps(raw))
    with pytest.raises(MemoryFitError) as info:
        build(model_path("hello_world"), tmp_path / "o", BuildOptions(board=str(folder), target="c"))
    assert f"SRAM is {missing} bytes short" in str(info.value)
    assert f"need {used} bytes beside the {board.stack_bytes}-byte stack" in str(info.value)


# ---- the same firmware on the built-in emulator and on QEMU ---------------------------------------------

def test_builtin_emulator_runs_it_bit_exact(hello):
    report = load_report(hello)
    for seed in (0, 1):
        inputs = random_inputs(report, seed)
        result = run_inference(hello, inputs)
        assert result.exit_code == 0
        assert result.uart == "edgesdk harness: model hello_world_int8 on hifive1-revb\nedgesdk: run ok\n"
        assert [y.tobytes() for y in result.outputs] == [np.asarray(y).tobytes() for y in run_reference(hello / "model.tflite", inputs, "ref")]


@needs_qemu
def test_qemu_gives_the_same_outputs_and_instruction_counts(hello):
    report = load_report(hello)
    for seed in (0, 1):
        inputs = random_inputs(report, seed)
        ours, qemu = run_inference(hello, inputs), run_sequence(hello, [inputs], QEMU_TIMEOUT_S, emulator="qemu")
        assert qemu.exit_code == 0 and qemu.uart == ours.uart
        assert [y.tobytes() for y in qemu.outputs] == [y.tobytes() for y in ours.outputs]
        assert (qemu.cpu_instructions, qemu.inference_instructions) == (ours.cpu_instructions, ours.inference_instructions)


@needs_qemu
def test_cli_run_on_qemu_checks_against_the_reference(hello, capsys):
    assert cli_main(["run", str(hello), "--emulator", "qemu", "--random-input", "3", "--check", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["emulator"] == "qemu" and summary["exit_code"] == 0 and summary["reference"]["bit_exact"]
    assert summary["peripheral_cycles"] == {} and 0 < summary["inference_instructions"] < summary["cpu_instructions"]


@needs_qemu
def test_qemu_runs_a_stateful_sequence_like_the_builtin_emulator(tmp_path):
    out = tmp_path / "acc"
    model = REPO / "tests" / "models" / "state" / "accumulator_int8.tflite"
    build(model, out, BuildOptions(board=BOARD, target="c"))
    steps = [random_inputs(load_report(out), seed) for seed in range(4)]
    ours = run_sequence(out, steps)
    qemu = run_sequence(out, steps, QEMU_TIMEOUT_S, emulator="qemu")
    expected = run_reference_sequence(out / "model.tflite", steps, "ref", "test")
    for got_ours, got_qemu, want in zip(ours.step_outputs, qemu.step_outputs, expected):
        assert [y.tobytes() for y in got_qemu] == [y.tobytes() for y in got_ours] == [np.asarray(y).tobytes() for y in want]
    assert qemu.step_instructions == ours.step_instructions and len(qemu.step_instructions) == 4


def test_qemu_refuses_builds_with_accelerators(board):
    with pytest.raises(UsageError, match="npu, which stock QEMU does not model"):
        check_runs_on_qemu({"regions": [{"target": "npu"}, {"target": "c"}]}, board)
    check_runs_on_qemu({"regions": [{"target": "c"}]}, board)


@needs_qemu
def test_qemu_stops_a_hung_firmware_at_the_time_limit(tmp_path, hello):
    hung = tmp_path / "hung"
    shutil.copytree(hello, hung, ignore=shutil.ignore_patterns("run", "hil"))
    _patch_elf(hung / "firmware.elf", elf_symbol(hung / "firmware.elf", "edgesdk_default_run"), 0x0000006F)  # j .
    started = time.monotonic()
    with pytest.raises(EmulatorError, match="did not finish within 3 s on QEMU"):
        run_qemu_sequence(hung, [random_inputs(load_report(hung), 0)], timeout_s=3)
    assert time.monotonic() - started < 30
    assert _no_qemu_left(hung)


@needs_qemu
def test_qemu_reports_a_firmware_that_ends_inside_the_inference(tmp_path, hello):
    broken = tmp_path / "broken"
    shutil.copytree(hello, broken, ignore=shutil.ignore_patterns("run", "hil"))
    _patch_elf(broken / "firmware.elf", elf_symbol(broken / "firmware.elf", "edgesdk_default_run"), 0x00000000)
    with pytest.raises(EmulatorError, match=r"exit code 254 on QEMU before finishing inference 1 of 1.*"
                                            r"trap mcause=0x00000002"):
        run_qemu_sequence(broken, [random_inputs(load_report(broken), 0)], timeout_s=QEMU_TIMEOUT_S)


@pytest.fixture(scope="module")
def two_model_image(tmp_path_factory) -> Path:
    """hello_world and an ADD of the op corpus, built under names of their own and linked into one image."""
    tmp = tmp_path_factory.mktemp("hifive1_image")
    models = {"hello": model_path("hello_world"), "adder": corpus.CORPUS / "add_bcast_both_int8.tflite"}
    for name, model in models.items():
        build(model, tmp / name, BuildOptions(board=BOARD, target="c", name=name, compile_firmware=False))
    link_builds([tmp / name for name in models], tmp / "image", werror=True)
    return tmp / "image"


@needs_qemu
def test_qemu_runs_an_image_of_several_models_like_the_builtin_emulator(two_model_image):
    """run_image(..., emulator="qemu"): each model's outputs (bit-exact with its reference), status and own
    instruction count, and the whole boot's count, as on the built-in emulator."""
    models = {m["name"]: m["report"] for m in load_image(two_model_image)["models"]}
    inputs = {name: random_inputs(report, 4) for name, report in models.items()}
    ours = run_image(two_model_image, inputs)
    qemu = run_image(two_model_image, inputs, QEMU_TIMEOUT_S, emulator="qemu")
    assert qemu.exit_code == 0 and qemu.statuses == {"hello": 0, "adder": 0} and qemu.uart == ours.uart
    for name, report in models.items():
        want = run_reference(Path(report_build(two_model_image, name)) / "model.tflite", inputs[name], "ref")
        assert [y.tobytes() for y in qemu.outputs[name]] == [np.asarray(w).tobytes() for w in want], name
    assert qemu.inference_instructions == ours.inference_instructions and all(ours.inference_instructions.values())
    assert qemu.cpu_instructions == ours.cpu_instructions > sum(ours.inference_instructions.values())
    assert qemu.peripheral_stats == {}


def report_build(image: Path, name: str) -> str:
    return next(m["build"] for m in load_image(image)["models"] if m["name"] == name)


@needs_qemu
def test_cli_runs_an_image_on_qemu_and_checks_each_model(two_model_image, tmp_path, capsys):
    assert cli_main(["run", str(two_model_image), "--emulator", "qemu", "--random-input", "1", "--check", "--json",
                     "--output-dir", str(tmp_path / "run")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["emulator"] == "qemu" and summary["exit_code"] == 0 and summary["peripherals"] == {}
    for name in ("hello", "adder"):
        model = summary["models"][name]
        assert model["status"] == 0 and model["reference"]["bit_exact"] and model["inference_instructions"] > 0
    assert cli_main(["run", str(two_model_image), "--emulator", "qemu", "--random-input", "1",
                     "--output-dir", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr().out
    for name in ("hello", "adder"):
        count = summary["models"][name]["inference_instructions"]
        assert f"model {name}: status 0 (ok), {count} cpu instructions" in printed


@needs_qemu
def test_qemu_names_the_image_model_the_firmware_ended_in(tmp_path, two_model_image):
    broken = tmp_path / "image"
    shutil.copytree(two_model_image, broken, ignore=shutil.ignore_patterns("run"))
    _patch_elf(broken / "firmware.elf", elf_symbol(broken / "firmware.elf", "edgesdk_adder_run"), 0x00000000)
    inputs = {m["name"]: random_inputs(m["report"], 0) for m in load_image(broken)["models"]}
    with pytest.raises(EmulatorError, match=r"exit code 254 on QEMU inside model 'adder'.*trap mcause=0x00000002"):
        run_image(broken, inputs, QEMU_TIMEOUT_S, emulator="qemu")


def _patch_elf(elf: Path, address: int, word: int) -> None:
    from elftools.elf.elffile import ELFFile

    with elf.open("rb") as f:
        offset = next(s["p_offset"] + address - s["p_vaddr"] for s in ELFFile(f).iter_segments()
                      if s["p_type"] == "PT_LOAD" and s["p_vaddr"] <= address < s["p_vaddr"] + s["p_filesz"])
    data = bytearray(elf.read_bytes())
    data[offset:offset + 4] = struct.pack("<I", word)
    elf.write_bytes(bytes(data))


def _no_qemu_left(marker: Path) -> bool:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return str(marker) not in ps


# ---- exit codes and traps: the fake model of the emulator tests, on this board --------------------------

@pytest.fixture(scope="module")
def fake(tmp_path_factory, board) -> Path:
    """tests/fixtures/fake_model (output = input + 1; test commands) built for the HiFive1 (it has no NPU: the
    stub's register block is never touched by the commands used here)."""
    tmp = tmp_path_factory.mktemp("fake_hifive1")
    gen = tmp / "src"
    gen.mkdir()
    shutil.copy(FIXTURES / "fake_model" / "model.h", gen)
    text = (FIXTURES / "fake_model" / "model.c").read_text()
    (gen / "model.c").write_text(text.replace('#include "board.h"', '#include "board.h"\n#ifndef BOARD_NPU0_BASE\n'
                                              '#define BOARD_NPU0_BASE 0x40000000u /* unused on this board */\n#endif', 1))
    render_board_files(board, gen)
    return build_firmware(gen, tmp / "out", board)


def fake_input(letter: str = "", payload: bytes = b"") -> bytes:
    return ((b"FLT" + letter.encode() + payload) if letter else bytes(range(16))).ljust(16, b"\0")


@pytest.mark.parametrize("letter, code, uart", [("", 0, "edgesdk: run ok"), ("S", 7, "run failed status=7"),
                                                ("I", 254, "edgesdk: trap mcause=0x00000002"),
                                                ("K", 254, "edgesdk: trap mcause=0x00000003")])
def test_exit_codes_through_semihosting_on_both_emulators(fake, board, tmp_path, letter, code, uart):
    arena = elf_symbol(fake, "edgesdk_arena")
    data = fake_input(letter, b"\x07" if letter == "S" else b"")
    if letter not in "IK" or not letter:  # the built-in emulator reports faults itself, without a trap handler
        ours = run_elf(fake, board, writes=[(arena, data)])
        assert ours.exit_code == code and uart in ours.uart
    if QEMU is None:
        return
    (tmp_path / "in.bin").write_bytes(data)
    proc = subprocess.run(qemu_command(board, fake, [(tmp_path / "in.bin", arena)]), capture_output=True, text=True,
                          timeout=QEMU_TIMEOUT_S)
    assert proc.returncode == code and uart in proc.stdout


@needs_qemu
def test_without_a_debugger_the_firmware_prints_and_stops_quietly(fake, board, tmp_path):
    """QEMU without semihosting plays a board with no debugger attached: the exit's ebreak traps, the trap
    handler recognizes it and halts; the UART has the whole result and no trap report."""
    from edgesdk.gdbremote import GdbRemote

    cmd = [c for c in qemu_command(board, fake, gdb=f"unix:{tmp_path / 'g.sock'},server=on,wait=off",
                                   serial=f"file:{tmp_path / 'uart.txt'}")]
    at = cmd.index("-semihosting-config")
    del cmd[at:at + 2]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        gdb = GdbRemote.connect_unix(tmp_path / "g.sock", time.monotonic() + 30)
        gdb.set_breakpoint(elf_symbol(fake, "edgesdk_halt"))
        assert not gdb.cont().exited  # it reaches the halt loop instead of exiting QEMU
        mcause = gdb.register(gdb.register_number("mcause"))
        mepc = gdb.register(gdb.register_number("mepc"))
        gdb.close()
    finally:
        proc.kill()
        proc.wait()
    assert mcause == 3 and mepc == elf_symbol(fake, "edgesdk_exit_instruction")  # the semihosting ebreak
    assert (tmp_path / "uart.txt").read_text() == "edgesdk harness: model fake on hifive1-revb\nedgesdk: run ok\n"


# ---- hardware-in-the-loop --------------------------------------------------------------------------------

@pytest.mark.skipif(not HAS_ROBOT, reason="Robot Framework not installed (extra [hil])")
def test_hil_suites_pass_on_the_builtin_emulator(hello):
    from edgesdk.hil import run_hil

    result = run_hil(hello, "builtin", ["boot", "inference", "hang"])
    assert result.passed, result.output
    assert "3 tests, 3 passed, 0 failed" in result.output


@needs_qemu
def test_hil_firmware_prints_the_expected_lines_on_qemu(hello, board):
    """The HIL firmware (inputs embedded, outputs printed) on QEMU: the very lines the inference suite expects."""
    from edgesdk.hil.firmware import prepare_hil

    hil = prepare_hil(hello, seed=5)
    proc = subprocess.run(qemu_command(board, hil.firmware), capture_output=True, text=True, timeout=QEMU_TIMEOUT_S)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [f"edgesdk harness: model {hil.model_name} on {BOARD}", *hil.expected_lines,
                                        "edgesdk: run ok"]


# ---- flashing -------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def hello_virt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("virt") / "hello"
    build(model_path("hello_world"), out, BuildOptions(board="riscv-npu", target="c"))
    return out


@pytest.mark.skipif(QEMU is None or shutil.which("gdb-multiarch") is None, reason="needs QEMU and gdb-multiarch")
@pytest.mark.parametrize("which", ["hifive1", "virt"])
def test_gdb_flash_into_qemus_gdb_server_starts_the_firmware(which, request, tmp_path, capsys):
    """QEMU waits (-S) with its GDB server and no firmware; edgesdk flash loads, verifies and starts the build
    through it; the firmware then prints its result and QEMU exits with the firmware's code."""
    out = request.getfixturevalue("hello" if which == "hifive1" else "hello_virt")
    board = load_board(BOARD if which == "hifive1" else "riscv-npu")
    port = free_port()
    cmd = qemu_command(board, out / "firmware.elf", gdb=f"tcp:127.0.0.1:{port}", icount=False,
                       serial=f"file:{tmp_path / 'uart.txt'}")
    at = cmd.index("-device")
    del cmd[at:at + 2]  # no loader: the flash starts empty, edgesdk flash fills it
    qemu = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_port(port)
        assert cli_main(["flash", str(out), "--probe", "gdb", "--gdb-server", f"127.0.0.1:{port}", "--no-reset"]) == 0
        assert qemu.wait(timeout=QEMU_TIMEOUT_S) == 0
    finally:
        if qemu.poll() is None:
            qemu.kill()
        qemu.wait()
        qemu.stderr.close()
    printed = capsys.readouterr().out
    assert "with gdb, verified" in printed
    name = "hifive1-revb" if which == "hifive1" else "riscv-npu"
    assert (tmp_path / "uart.txt").read_text() == f"edgesdk harness: model hello_world_int8 on {name}\nedgesdk: run ok\n"


def _wait_for_port(port: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"QEMU's GDB server did not open port {port}")


def test_emulator_flash_keeps_the_bootloaders_flash_erased_and_boots_at_0x20010000(hello, board):
    from edgesdk.flash import ERASED_BYTE, flash_emulator

    result = flash_emulator(hello)
    assert result.exit_code == 0 and "edgesdk: run ok" in result.output
    assert set(result.flash_contents[:board.reset_address - board.flash.base]) == {ERASED_BYTE}


def test_no_reset_is_for_gdb_only(hello):
    with pytest.raises(UsageError, match="--no-reset applies to --probe gdb only"):
        from edgesdk.flash import flash

        flash(hello, "emulator", reset=False)


def test_openocd_config_matches_board_json(board):
    cfg = (BOARD_DIR / "openocd.cfg").read_text()
    bank = re.search(r"^flash bank \S+ fespi (0x[0-9a-f]+) 0 0 0 \S+ (0x[0-9a-f]+)$", cfg, re.MULTILINE)
    assert int(bank[1], 16) == board.flash.base and int(bank[2], 16) == 0x10014000  # QSPI0's registers
    work = re.search(r"-work-area-phys (0x[0-9a-f]+) -work-area-size (0x[0-9a-f]+)", cfg)
    assert (int(work[1], 16), int(work[2], 16)) == (board.sram.base, board.sram.size)
    assert "-expected-id 0x20000913" in cfg and "interface/jlink.cfg" in cfg


@pytest.mark.skipif(shutil.which("openocd") is None, reason="OpenOCD not installed")
def test_openocd_reads_the_configuration(tmp_path):
    """OpenOCD parses the file, and with its dummy adapter (no probe here) creates the target and the flash bank."""
    cfg = str(BOARD_DIR / "openocd.cfg")
    parsed = subprocess.run(["openocd", "-f", cfg, "-c", "shutdown"], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert parsed.returncode == 0, parsed.stderr
    quiet = ["-c", "gdb_port disabled", "-c", "tcl_port disabled", "-c", "telnet_port disabled"]
    dummy = subprocess.run(["openocd", "-c", "set ADAPTER_CONFIG interface/dummy.cfg", "-f", cfg, *quiet, "-c", "init",
                            "-c", "targets", "-c", "flash banks", "-c", "shutdown"], capture_output=True, text=True,
                           timeout=60, cwd=tmp_path)
    text = dummy.stdout + dummy.stderr
    assert dummy.returncode == 0, text
    assert "riscv.cpu.0" in text and re.search(r"\(fespi\) at 0x20000000", text), text
    # Without the J-Link: edgesdk says so.
    from edgesdk.errors import ProbeError
    from edgesdk.flash import flash_openocd

    with pytest.raises(ProbeError, match="No debug probe found"):
        flash_openocd(FLASH_BUILD(tmp_path))


def FLASH_BUILD(tmp_path: Path) -> Path:  # noqa: N802 - a tiny build for the OpenOCD error path
    out = tmp_path / "build"
    build(model_path("hello_world"), out, BuildOptions(board=BOARD, target="c"))
    return out


# ---- (slow) every model that fits, bit-exact under QEMU ------------------------------------------------

# Shared models (tests/conftest.py names) and their fate on 16 KiB of SRAM with --target c.
FITTING_SHARED = ("hello_world", "micro_speech", "ad", "kws", "ds_cnn_float_io", "har")  # har: host cascades
NOT_FITTING_SHARED = ("vww", "ic", "simple_add", "mobilenet_uint8", "mobilenet_160_uint8", "ds_cnn_int16")
STATE_MODELS = sorted((REPO / "tests" / "models" / "state").glob("*.tflite"))


def _one_int8_model_per_op() -> list:
    chosen = {}
    for entry in corpus.entries():
        if entry["mode"] == "int8" and not corpus.expected_unsupported(entry) and corpus.reference_ok(entry, "ref"):
            chosen.setdefault(entry["op"], entry)
    return [chosen[op] for op in sorted(chosen)]


def _check_on_qemu(model: Path, out: Path, steps: int = 1, inputs: list | None = None) -> dict:
    build(model, out, BuildOptions(board=BOARD, target="c"))
    report = load_report(out)
    inputs = inputs or [random_inputs(report, seed) for seed in range(steps)]
    ours = run_sequence(out, inputs)
    qemu = run_sequence(out, inputs, QEMU_TIMEOUT_S, emulator="qemu")
    expected = run_reference_sequence(out / "model.tflite", inputs, "ref", "test")
    assert qemu.exit_code == 0, qemu.uart
    for got, want in zip(qemu.step_outputs, expected):
        assert [y.tobytes() for y in got] == [np.asarray(w).reshape(y.shape).astype(y.dtype).tobytes() for y, w in zip(got, want)]
    assert (qemu.cpu_instructions, qemu.inference_instructions) == (ours.cpu_instructions, ours.inference_instructions)
    return {"sram": report["memory"]["sram_peak_bytes"], "flash": report["memory"]["flash_bytes"],
            "instructions": qemu.inference_instructions}


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("name", FITTING_SHARED)
def test_fitting_shared_model_is_bit_exact_on_qemu(name, tmp_path):
    figures = _check_on_qemu(model_path(name), tmp_path / name)
    assert figures["sram"] + 2048 <= 16384


@pytest.mark.slow
@pytest.mark.parametrize("name", NOT_FITTING_SHARED)
def test_other_shared_models_do_not_fit(name, tmp_path):
    with pytest.raises(MemoryFitError, match=r"over by at least \d+ bytes"):
        build(model_path(name), tmp_path / name, BuildOptions(board=BOARD, target="c"))


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("model", STATE_MODELS, ids=lambda p: p.stem)
def test_state_model_sequence_is_bit_exact_on_qemu(model, tmp_path):
    _check_on_qemu(model, tmp_path / model.stem, steps=3)


CORPUS_ENTRIES = _one_int8_model_per_op()
CORPUS_FILES = [e["file"] for e in CORPUS_ENTRIES]
CORPUS_CHUNK = 26  # corpus models compiled together (sources only), then linked into the fewest images that fit


@pytest.fixture(scope="session")
def hifive1_corpus(session_builds):
    """file -> {case: (built-in emulator's run, QEMU's run)} of the model, each run (image exit code, model status,
    outputs, the model's own instruction count, the image's total): the model compiled under a name of its own
    with the other models of its chunk, linked into an image with as many of them as the board's SRAM holds, and
    that image booted once per case on each emulator, once per session (any worker; tests/conftest.py)."""
    by_file = {e["file"]: e for e in CORPUS_ENTRIES}

    def get(file: str) -> dict:
        index, members = batch(CORPUS_FILES, file, CORPUS_CHUNK)

        def make(out: Path) -> None:
            builds = {m: out / f"m{k}" for k, m in enumerate(members)}
            reports = {m: build(corpus.CORPUS / m, builds[m], BuildOptions(board=BOARD, target="c", name=f"m{k}",
                                                                         compile_firmware=False))
                       for k, m in enumerate(members)}
            runs = {}
            for g, group in enumerate(_fill_images(reports, load_board(BOARD))):
                image = out / f"image{g}"
                link_builds([builds[m] for m in group], image, werror=True)
                for case in corpus.CASES:
                    inputs = {reports[m]["name"]: corpus.case_inputs(by_file[m], case, 0) for m in group}
                    both = [run_image(image, inputs, QEMU_TIMEOUT_S, emulator=e) for e in ("builtin", "qemu")]
                    for m in group:
                        name = reports[m]["name"]
                        runs.setdefault(m, {})[case] = tuple(
                            (r.exit_code, r.statuses[name], r.outputs[name], r.inference_instructions[name],
                             r.cpu_instructions, r.uart) for r in both)
            (out / "runs.pkl").write_bytes(pickle.dumps(runs))

        out = session_builds(f"hifive1-corpus{index}", make)
        return pickle.loads((out / "runs.pkl").read_bytes())[file]

    return get


def _fill_images(reports: dict, board) -> list:
    """The models (reports' keys, in order) in groups whose arenas (with their guards and state) fit beside the
    stack and the runtime's reserve in the board's SRAM, each group filled before the next is started; the link
    measures the exact image, so a group that still does not fit is refused there, not run."""
    pool = next(iter(reports.values()))["memory"]["pools"]["sram"]
    room = pool["size"] - pool["stack_bytes"] - pool["reserved_bytes"]
    groups, used = [[]], 0
    for key, report in reports.items():
        memory = report["memory"]
        need = memory["arena_bytes"] + memory["arena_guard_bytes"] + memory["state_bytes"] + 16  # + alignment
        if need > room:
            raise AssertionError(f"{key} alone does not fit {board.name}'s SRAM ({need} > {room} bytes)")
        if used + need > room:
            groups.append([])
            used = 0
        groups[-1].append(key)
        used += need
    return groups


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("entry", CORPUS_ENTRIES, ids=lambda e: e["file"])
def test_op_corpus_model_is_bit_exact_on_qemu(entry, hifive1_corpus):
    """The model in a firmware image with other corpus models (each under a name of its own), booted once per
    case on QEMU and on the built-in emulator: its outputs on QEMU bit-exact with the reference, its status 0,
    its own instruction count (between the harness's marks) and the image's total the same on both."""
    # the inputs the references were checked on: random ones break ops with input preconditions (a DIV by
    # zero, a negative GATHER_ND index), which LiteRT refuses at run time
    runs = hifive1_corpus(entry["file"])
    for case in corpus.CASES:  # each case a boot of its own: a model with state starts from its reset state
        want = run_reference(corpus.CORPUS / entry["file"], corpus.case_inputs(entry, case, 0), "ref")
        ours, qemu = runs[case]
        exit_code, status, outputs, instructions, total, uart = qemu
        assert (exit_code, status) == (0, 0), f"{case}: {uart}"
        assert [y.tobytes() for y in outputs] == [np.asarray(w).reshape(y.shape).astype(y.dtype).tobytes()
                                                  for y, w in zip(outputs, want)], case
        assert [y.tobytes() for y in ours[2]] == [y.tobytes() for y in outputs], case
        assert (instructions, total) == (ours[3], ours[4]) and instructions, case
