"""The NPU, its driver and the firmware under faults, end to end on the emulator (docs/reliability.md).

One KWS build (NPU table 0 has 12 commands); each test changes what the NPU sees -- the table bytes in
flash, a descriptor aimed at unmapped memory, the table size, a reset in the middle of a run -- and checks
the whole chain: the NPU stops with the documented error code and failing command index, the driver
returns EDGESDK_NPU_ERR_STATUS, edgesdk_default_run returns it (EDGESDK_ERR_NPU), the harness prints
`npu_error=<code> npu_command=<index>` and exits 1, and the emulator reports it without crashing.
tests/test_npu_model.py covers the same errors on the C model alone.
"""

from __future__ import annotations

import ctypes
import random
import re
import shutil
import struct

import numpy as np
import pytest

from conftest import model_path
from edgesdk.board import load_board
from edgesdk.compiler import BuildOptions, build
from edgesdk.emulator.machine import Machine, elf_symbol, run_elf
from edgesdk.errors import EmulatorError
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import registers as R
from edgesdk.runner import failure_message, load_report, random_inputs

pytestmark = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V cross compiler not installed")
NPU_ERROR = 1  # harness exit code for EDGESDK_NPU_ERR_STATUS (-1)


class Firmware:
    """The build, with the table's flash address and bytes, and a way to run it with a patched table."""

    def __init__(self, out):
        self.out = out
        self.elf = out / "firmware.elf"
        self.board = load_board("riscv-npu")
        self.report = load_report(out)
        arena = elf_symbol(self.elf, "edgesdk_arena")
        self.inputs = [(arena + s["arena_offset"], x.tobytes())
                       for s, x in zip(self.report["io"]["inputs"], random_inputs(self.report, 0))]
        self.table_address = elf_symbol(self.elf, "edgesdk_npu_table_0")
        size = self.report["target_reports"]["npu"]["tables"][0]["bytes"]
        machine = Machine(self.board, self.elf)
        self.table = machine.read(self.table_address, size)
        machine.close()
        self.commands = C.decode(self.table)

    def run(self, table: bytes | None = None):
        writes = list(self.inputs) + ([(self.table_address, table)] if table is not None else [])
        return run_elf(self.elf, self.board, writes=writes, timeout_s=30)

    def command_offset(self, index: int) -> int:
        pos = R.TABLE_HEADER_BYTES
        for _ in range(index):
            pos += struct.unpack_from("<H", self.table, pos + 2)[0]
        return pos


@pytest.fixture(scope="module")
def kws(tmp_path_factory):
    out = tmp_path_factory.mktemp("npu_faults") / "kws"
    build(model_path("kws"), out, BuildOptions(target="npu,c"))
    return Firmware(out)


def npu_fields(uart: str) -> tuple:
    match = re.search(r"status=-1 npu_error=(\d+) npu_command=(-?\d+)", uart)
    assert match, uart
    return int(match.group(1)), int(match.group(2)) & 0xFFFFFFFF


def patched(table: bytes, pos: int, fmt: str, value) -> bytes:
    data = bytearray(table)
    struct.pack_into(fmt, data, pos, value)
    return bytes(data)


def test_intact_table_runs(kws):
    result = kws.run()
    assert result.exit_code == 0, result.uart
    # 11 layers (the reshape is free) + END, and 3 DMAs that pad the first convolution's input (its kernel
    # rows are folded into channels: targets/npu/fold.py)
    assert len(kws.commands) == 15 and isinstance(kws.commands[-1], C.End)


def test_dma_outside_any_mapped_region_is_a_bus_error_at_that_command(kws):
    """An output descriptor moved to an address no memory answers at: BUS error during execution."""
    index = next(i for i, c in enumerate(kws.commands) if isinstance(c, C.Conv2D) and i > 0)
    arena = elf_symbol(kws.elf, "edgesdk_arena")
    offset = 0xC0000000 - arena  # region 1 base + offset = 0xC0000000: unmapped on riscv-npu
    table = patched(kws.table, kws.command_offset(index) + 40 + 4, "<I", offset)
    result = kws.run(table)
    assert result.exit_code == NPU_ERROR
    assert npu_fields(result.uart) == (R.ERR_BUS, index)
    assert f"error BUS" in failure_message(_inference(result)) and f"command {index}" in failure_message(_inference(result))


def test_descriptor_past_the_end_of_the_address_space(kws):
    """Caught statically (ADDRESS_RANGE), before any command runs."""
    table = patched(kws.table, kws.command_offset(2) + 8 + 4, "<I", 0xFFFFFF00)
    result = kws.run(table)
    assert result.exit_code == NPU_ERROR and npu_fields(result.uart) == (R.ERR_ADDRESS_RANGE, 2)


def test_wrong_table_size(kws):
    """The header's size disagrees with CMD_SIZE (sizeof the table): a table-level error."""
    result = kws.run(patched(kws.table, 12, "<I", len(kws.table) + 8))
    assert result.exit_code == NPU_ERROR and npu_fields(result.uart) == (R.ERR_TABLE_SIZE, R.NO_COMMAND)
    # A command that claims to run past the table's end.
    last = len(kws.commands) - 1
    result = kws.run(patched(kws.table, kws.command_offset(last) + 2, "<H", 64))
    assert result.exit_code == NPU_ERROR and npu_fields(result.uart)[0] in (R.ERR_CMD_SIZE, R.ERR_TABLE_SIZE)


def test_random_tables(kws):
    """Random bytes in place of the table: a documented table-level or command error, never a crash."""
    rng = np.random.default_rng(6)
    for _ in range(4):
        table = rng.integers(0, 256, len(kws.table), dtype=np.uint8).tobytes()
        result = kws.run(table)
        code, command = npu_fields(result.uart)
        assert result.exit_code == NPU_ERROR and code in R.ERROR_NAMES
        assert command == R.NO_COMMAND or command < len(kws.commands)


def test_mutated_tables(kws):
    """Seeded field mutations of the real table. The NPU trusts the region bases the driver gives it, so a
    mutated table may also write elsewhere in SRAM; every outcome must still be reported: success, a
    documented NPU error with its command, the arena guards (exit 5), or a clear emulator error."""
    rng = random.Random(2026)
    outcomes = {}
    for trial in range(200):
        table = bytearray(kws.table)
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(R.TABLE_HEADER_BYTES, len(table))
            table[pos] = rng.randrange(256) if trial % 2 else table[pos] ^ (1 << rng.randrange(8))
        try:
            result = kws.run(bytes(table))
        except EmulatorError as exc:  # e.g. the NPU overwrote the stack: reported, with the PC
            assert "Traceback" not in str(exc)
            outcomes["emulator error"] = outcomes.get("emulator error", 0) + 1
            continue
        if result.exit_code == NPU_ERROR:
            code, command = npu_fields(result.uart)
            assert code in R.ERROR_NAMES and (command == R.NO_COMMAND or command < len(kws.commands)), result.uart
            outcomes[R.ERROR_NAMES[code][0]] = outcomes.get(R.ERROR_NAMES[code][0], 0) + 1
        else:
            assert result.exit_code in (0, 5), result.uart
            outcomes[f"exit {result.exit_code}"] = outcomes.get(f"exit {result.exit_code}", 0) + 1
    assert len(outcomes) >= 3, outcomes  # the mutations reach several different checks


def test_reset_in_the_middle_of_a_run(kws):
    """CTRL.RESET while the NPU is writing command k's output: ABORTED with index k, reported by the run."""
    machine = Machine(kws.board, kws.elf)
    try:
        for address, data in kws.inputs:
            machine.write(address, data)
        lib, npu = machine.lib, machine.native["npu0"]
        lib.npu_set_bus.restype, lib.npu_set_bus.argtypes = None, [ctypes.c_void_p, BUS, BUS, ctypes.c_void_p]
        lib.npu_reg_write.restype, lib.npu_reg_write.argtypes = None, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]
        writes = []

        def read(_ctx, addr, buf, length):
            return lib.emu_bus_read(machine.state, addr, buf, length)

        def write(_ctx, addr, buf, length):
            writes.append(addr)
            status = lib.emu_bus_write(machine.state, addr, buf, length)
            if len(writes) == 3:  # during the write back of the third command's output
                lib.npu_reg_write(npu.model, R.REG_CTRL, R.CTRL_RESET)
            return status

        callbacks = (BUS(read), BUS(write))
        lib.npu_set_bus(npu.model, callbacks[0], callbacks[1], None)
        machine.run(timeout_s=30)
        uart = machine.uart_text()
        assert machine.exit_code() == NPU_ERROR, uart
        assert npu_fields(uart) == (R.ERR_ABORTED, 2)
    finally:
        machine.close()


BUS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)


def _inference(result):
    """A RunResult as the runner's InferenceResult, for failure_message()."""
    from edgesdk.runner import InferenceResult

    return InferenceResult([], result.exit_code, result.cpu_instructions, result.inference_instructions, result.uart,
                           dict(result.peripheral_stats))
