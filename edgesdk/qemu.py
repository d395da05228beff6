"""Run a build on stock QEMU: `edgesdk run OUT --emulator qemu [--random-input SEED] [--steps N] [--check]`.

The board's board.json "qemu" section names the machine (riscv-npu: `virt -bios none`, the HiFive1 Rev B:
`sifive_e,revb=true`). QEMU runs the same firmware.elf as the built-in emulator, with `-icount shift=0` so
that its `minstret` counts instructions deterministically, under its GDB server (on a Unix socket in a
temporary folder), driven by edgesdk.gdbremote:

* the ELF and the first inference's inputs are loaded by QEMU's generic loader
  (`-device loader,file=firmware.elf,cpu-num=0`, `-device loader,file=input_K.bin,addr=<edgesdk_arena +
  report.json io.inputs[K].arena_offset>,force-raw=on`): the arena is .noinit, so the firmware leaves them be;
* breakpoints at `edgesdk_harness_mark` (entered before and after each inference) read `minstret` and, after
  each inference, the outputs from their arena slots; before a later step of a sequence (--steps N) its
  inputs are written there, and at the first mark the number of extra steps, as the built-in emulator does;
* a breakpoint at `edgesdk_exit_instruction` (the exit-device store or the semihosting ebreak) reads the total
  (counted from the second instruction on, plus one: QEMU's first resume adds a wall-clock-dependent jump to
  minstret, so the first instruction is single-stepped before counting starts);
* the UART goes to a file (-serial file:), and the exit status is the GDB server's `W` reply or, for QEMU's
  sifive_test device, which ends QEMU at once, QEMU's own exit status. Boards without an exit device exit
  through semihosting (`-semihosting-config enable=on,target=native` is added for them).

Instruction counts equal the built-in emulator's: between the marks (the inference), and from reset up to and
including the exit instruction (the total). tests/test_hifive1.py checks both on the HiFive1.

An image of several models (edgesdk.image.run_image(..., emulator="qemu"), `edgesdk run IMAGE --emulator qemu`)
boots the same way, once: every model's inputs loaded before boot, each model's count between its own pair of
marks, and its outputs and the harness's statuses read at the exit instruction (run_qemu_image).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .board import SEMIHOSTING, Board, exit_method
from .dataclass_cache import dataclass
from .errors import EmulatorError, ToolchainError, UsageError
from .run_io import NUMPY_DTYPES, InferenceResult, coerce_input, input_address, load_report

QEMU_PACKAGE = "qemu-system-misc"
MARK_SYMBOL = "edgesdk_harness_mark"
EXIT_SYMBOL = "edgesdk_exit_instruction"
STEPS_SYMBOL = "edgesdk_harness_extra_steps"


def qemu_program(board: Board) -> str:
    default = "qemu-system-riscv64" if str(board.cpu.get("isa", "")).startswith("rv64") else "qemu-system-riscv32"
    return board.qemu.get("system", default)


def require_qemu(board: Board) -> str:
    """The QEMU executable for `board`; UsageError if board.json has no "qemu" section, ToolchainError if QEMU is
    not installed."""
    if not board.qemu:
        raise UsageError(f"Board {board.name} has no \"qemu\" section in {board.path}, so edgesdk does not know which "
                         "QEMU machine models it (docs/porting-a-new-board.md); run it on the built-in emulator "
                         "instead (edgesdk run without --emulator).")
    program = qemu_program(board)
    path = shutil.which(program)
    if path is None:
        raise ToolchainError(f"{program} is not installed, so the build cannot run on QEMU. Install it with: "
                             f"sudo apt-get install {QEMU_PACKAGE}")
    return path


def qemu_command(board: Board, elf, loads=(), *, program: str | None = None, icount: bool = True,
                 gdb: str | None = None, serial: str = "stdio") -> list:
    """The QEMU command line booting `elf` on the board's machine: `loads` [(file, address)] are raw files the
    generic loader puts in memory before the CPU starts; `gdb` a -gdb device (the CPU then waits, -S)."""
    cmd = [program or qemu_program(board), "-M", board.qemu["machine"], *board.qemu.get("args", []),
           "-display", "none", "-monitor", "none", "-serial", serial,
           "-device", f"loader,file={elf},cpu-num=0"]
    cmd += [arg for path, address in loads for arg in ("-device", f"loader,file={path},addr={address:#x},force-raw=on")]
    if exit_method(board)[0] == SEMIHOSTING:
        cmd += ["-semihosting-config", "enable=on,target=native"]
    if icount:
        cmd += ["-icount", "shift=0"]
    if gdb:
        cmd += ["-gdb", gdb, "-S"]
    return cmd


def check_runs_on_qemu(report: dict, board: Board) -> None:
    """UsageError unless the build runs on the host core alone: stock QEMU models none of edgesdk's accelerators."""
    from .targets import get_target

    used = sorted({r["target"] for r in report.get("regions", [])} | set(report.get("target_reports", {})))
    accelerated = [name for name in used if get_target(name).peripheral_types]
    if accelerated:
        raise UsageError(f"This build runs layers on {', '.join(accelerated)}, which stock QEMU does not model; run "
                         f"it on the built-in emulator, or build it with --target c to run it on QEMU "
                         f"(machine {board.qemu.get('machine')}).")


def run_qemu_sequence(build_dir, steps: list, timeout_s: float = 120.0):
    """runner.run_sequence on QEMU: the same inputs, outputs, counts and exit code (an InferenceResult)."""
    from .board import build_board
    from .emulator import elf_symbol, instructions_between_marks
    import numpy as np

    build_dir = Path(build_dir)
    report = load_report(build_dir)
    board = build_board(build_dir, report)
    program = require_qemu(board)
    check_runs_on_qemu(report, board)
    elf = (build_dir / "firmware.elf").resolve()
    if not elf.is_file():
        raise UsageError(f"{elf} is missing; rebuild with 'edgesdk build'.")
    from .model_name import DEFAULT_NAME, arena_symbol, stream_symbol

    name = report.get("name", DEFAULT_NAME)  # a build named with --name: edgesdk_NAME_arena
    symbols = {s: elf_symbol(elf, s) for s in (arena_symbol(name), MARK_SYMBOL, EXIT_SYMBOL, STEPS_SYMBOL)}
    arena = symbols[arena_symbol(name)]
    in_specs, out_specs = report["io"]["inputs"], report["io"]["outputs"]
    step_writes = [[(input_address(s, arena, lambda: elf_symbol(elf, stream_symbol(name))), coerce_input(x, s, k).tobytes())
                    for k, (x, s) in enumerate(zip(inputs, in_specs))] for inputs in steps]
    reads = [(arena + s["arena_offset"], s["bytes"]) for s in out_specs]
    outcome, uart = _boot(board, program, elf, step_writes[0], symbols, timeout_s, step_writes=step_writes,
                          step_reads=reads)

    def decode(raw_list):
        return [np.frombuffer(raw, NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"]).copy() for raw, s in zip(raw_list, out_specs)]

    if len(outcome["step_reads"]) < len(steps):  # it ended inside an inference (a trap, a stack overflow)
        raise EmulatorError(f"The firmware ended with exit code {outcome['exit_code']} on QEMU before finishing "
                            f"inference {len(outcome['step_reads']) + 1} of {len(steps)}. UART output: "
                            f"{uart.strip()[-400:]!r}")
    step_outputs = [decode(r) for r in outcome["step_reads"]]
    marks = outcome["marks"]
    step_instructions = instructions_between_marks(marks)
    return InferenceResult(
        outputs=step_outputs[-1] if step_outputs else [],
        exit_code=outcome["exit_code"],
        cpu_instructions=outcome["total"],
        inference_instructions=step_instructions[0] if step_instructions else None,
        uart=uart, step_outputs=step_outputs,
        step_instructions=step_instructions if len(steps) > 1 else [])


def _boot(board: Board, program: str, elf: Path, writes: list, symbols: dict, timeout_s: float, *,
          step_writes: list = (), step_reads: list = (), exit_reads: list = ()) -> tuple:
    """Boot `elf` once under QEMU's GDB server, with `writes` [(address, bytes)] put in memory by the generic
    loader before the CPU starts; return (the session's outcome: _Session.run, the UART text). EmulatorError when
    QEMU ends without an exit status."""
    with tempfile.TemporaryDirectory(prefix="edgesdk-qemu-") as tmp:
        tmp = Path(tmp)
        loads = []
        for k, (address, data) in enumerate(writes):
            (tmp / f"input_{k}.bin").write_bytes(data)
            loads.append((tmp / f"input_{k}.bin", address))
        uart_file = tmp / "uart.txt"
        cmd = qemu_command(board, elf, loads, program=program, gdb=f"unix:{tmp / 'gdb.sock'},server=on,wait=off",
                           serial=f"file:{uart_file}")
        session = _Session(cmd, tmp / "gdb.sock", time.monotonic() + timeout_s, timeout_s)
        try:
            outcome = session.run(symbols, list(step_writes), list(step_reads), list(exit_reads))
        finally:
            session.close()
        uart = uart_file.read_text(errors="replace") if uart_file.is_file() else ""
    if outcome["exit_code"] is None:
        raise EmulatorError(f"QEMU ended without an exit status ({outcome['why']}). QEMU said: "
                            f"{outcome['stderr'].strip()[-1000:]!r}. UART output: {uart.strip()[-400:]!r}")
    return outcome, uart


@dataclass
class QemuImageRun:
    """One boot of a firmware of several models (edgesdk.image.run_image(..., emulator="qemu"))."""

    exit_code: int
    uart: str
    cpu_instructions: int | None  # from reset up to and including the exit instruction; None if never reached
    marks: list  # instructions before each entry to edgesdk_harness_mark (two per model run: before, after)
    reads: list  # the bytes of each (address, length) asked for, read at the exit instruction


def run_qemu_image(elf, board: Board, writes: list, reads: list, timeout_s: float = 120.0) -> QemuImageRun:
    """Boot a firmware image (edgesdk.image) once on QEMU: `writes` [(address, bytes)] loaded before boot, `reads`
    [(address, length)] taken at the exit instruction, before the exit (which ends QEMU). A firmware that ends
    without reaching its exit instruction (QEMU's sifive_test device ends at once) has no reads."""
    from .emulator import elf_symbol

    program = require_qemu(board)
    elf = Path(elf).resolve()
    symbols = {s: elf_symbol(elf, s) for s in (MARK_SYMBOL, EXIT_SYMBOL)}
    outcome, uart = _boot(board, program, elf, writes, symbols, timeout_s, exit_reads=reads)
    return QemuImageRun(outcome["exit_code"], uart, outcome["total"], outcome["marks"], outcome["exit_reads"])


class _Session:
    """One QEMU process under its GDB server."""

    def __init__(self, cmd: list, socket_path: Path, deadline: float, timeout_s: float):
        self.cmd, self.deadline, self.timeout_s = cmd, deadline, timeout_s
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.socket_path = socket_path
        self.gdb = None

    def close(self) -> None:
        if self.gdb is not None:
            self.gdb.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read().decode(errors="replace")

    def run(self, symbols: dict, step_writes: list, reads: list, exit_reads: list = ()) -> dict:
        from .gdbremote import GdbRemote, GdbRemoteError

        mark, exit_insn = symbols[MARK_SYMBOL], symbols[EXIT_SYMBOL]
        result = {"exit_code": None, "total": None, "marks": [], "step_reads": [], "exit_reads": [], "why": "",
                  "stderr": ""}
        try:
            self.gdb = gdb = GdbRemote.connect_unix(self.socket_path, self.deadline, lambda: self.proc.poll() is None)
            minstret = gdb.register_number("minstret")
            # The first resume of QEMU's virtual clock adds a wall-clock-dependent jump to minstret; from then on it
            # counts instructions exactly. So step the first instruction and count from there.
            stop = gdb.step()
            base = gdb.register(minstret) - 1
            gdb.set_breakpoint(mark)
            gdb.set_breakpoint(exit_insn)
            if not stop.exited:
                stop = gdb.cont()
            while not stop.exited:
                pc = gdb.register(32)
                if pc == mark:
                    self._at_mark(gdb, len(result["marks"]), step_writes, reads, symbols, result)
                    result["marks"].append(gdb.register(minstret) - base)
                elif pc == exit_insn:
                    result["total"] = gdb.register(minstret) - base + 1  # + 1: the exit instruction itself
                    result["exit_reads"] = [gdb.read_memory(address, length) for address, length in exit_reads]
                else:
                    raise EmulatorError(f"QEMU stopped at {pc:#010x}, not at a breakpoint edgesdk set (signal "
                                        f"{stop.status}).")
                gdb.clear_breakpoint(pc)  # step off the breakpoint, then put it back
                stop = gdb.step()
                if not stop.exited:
                    gdb.set_breakpoint(pc)
                    stop = gdb.cont()
            result["exit_code"] = stop.status
        except EOFError:  # QEMU ended (its sifive_test exit device calls exit()): its own status is the firmware's
            try:
                result["exit_code"] = self.proc.wait(timeout=max(1.0, self.deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                result["why"] = "the GDB connection closed but QEMU kept running"
        except GdbRemoteError as exc:
            if time.monotonic() > self.deadline:
                raise EmulatorError(f"The firmware did not finish within {self.timeout_s:g} s on QEMU ({exc}); it is "
                                    "probably stuck in a loop. Command: " + " ".join(map(str, self.cmd))) from None
            result["why"] = str(exc)
        if result["exit_code"] is None:
            result["stderr"] = self._stderr()
        return result

    @staticmethod
    def _at_mark(gdb, hit: int, step_writes: list, reads: list, symbols: dict, result: dict) -> None:
        step, end = divmod(hit, 2)
        if step >= len(step_writes):
            return
        if not end:  # before inference `step`: at the first, how many more; later ones get their inputs now
            if step == 0 and len(step_writes) > 1:
                gdb.write_memory(symbols[STEPS_SYMBOL], (len(step_writes) - 1).to_bytes(4, "little"))
            if step > 0:
                for address, data in step_writes[step]:
                    gdb.write_memory(address, data)
        else:  # after it: its outputs
            result["step_reads"].append([gdb.read_memory(address, length) for address, length in reads])
