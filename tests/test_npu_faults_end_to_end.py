"""NPU failures reach the user: a corrupted command table in the firmware image makes the NPU stop with the
documented error code and command index, the driver returns an error, the harness exits non-zero, and
`edgesdk run` says what happened."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

from conftest import REPO, model_path
from edgesdk.compiler import BuildOptions, build
from edgesdk.targets.npu.hw import registers as R


@pytest.fixture(scope="module")
def kws_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("faults") / "kws"
    build(model_path("kws"), out, BuildOptions(target="npu,c"))
    return out


def symbol_file_offset(elf_path, name) -> int:
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        sym = elf.get_section_by_name(".symtab").get_symbol_by_name(name)[0]
        addr = sym["st_value"]
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= addr < seg["p_vaddr"] + seg["p_filesz"]:
                return seg["p_offset"] + addr - seg["p_vaddr"]
    raise AssertionError(f"{name} not in a loadable segment")


def corrupted_copy(build_dir, tmp_path, patch) -> object:
    copy = tmp_path / "corrupt"
    shutil.copytree(build_dir, copy)
    elf = copy / "firmware.elf"
    data = bytearray(elf.read_bytes())
    table = symbol_file_offset(elf, "edgesdk_npu_table_0")
    patch(data, table)
    elf.write_bytes(bytes(data))
    return copy


def run_cli(build_dir):
    return subprocess.run([sys.executable, "-m", "edgesdk", "run", str(build_dir), "--random-input", "0"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def second_command_offset(data, table) -> int:
    first_size = struct.unpack_from("<H", data, table + R.TABLE_HEADER_BYTES + 2)[0]
    return table + R.TABLE_HEADER_BYTES + first_size


def test_bad_magic_is_reported_at_table_header(kws_build, tmp_path):
    def patch(data, table):
        data[table] ^= 0xFF

    proc = run_cli(corrupted_copy(kws_build, tmp_path, patch))
    assert proc.returncode == 6, proc.stderr
    assert "TABLE_MAGIC" in proc.stderr and "table header" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_opcode_is_reported_with_its_command_index(kws_build, tmp_path):
    def patch(data, table):
        data[second_command_offset(data, table)] = 0xEE  # opcode of command 1

    proc = run_cli(corrupted_copy(kws_build, tmp_path, patch))
    assert proc.returncode == 6, proc.stderr
    assert "BAD_OPCODE" in proc.stderr and "command 1 " in proc.stderr
    assert "npu_error=4 npu_command=1" in proc.stderr


def test_intact_build_runs(kws_build):
    proc = run_cli(kws_build)
    assert proc.returncode == 0, proc.stderr


def test_small_run_slices_never_repeat_an_npu_start(kws_build, monkeypatch):
    """Slices end on instruction budgets, never inside the MMIO write that starts the NPU (which a
    wall-clock stop could re-execute on resume)."""
    import numpy as np

    from edgesdk.emulator import machine as machine_module
    from edgesdk.runner import load_report, random_inputs, run_inference

    inputs = random_inputs(load_report(kws_build), 0)
    normal = run_inference(kws_build, inputs)
    monkeypatch.setattr(machine_module, "RUN_SLICE_INSTRUCTIONS", 1500)
    sliced = run_inference(kws_build, inputs)
    assert sliced.peripheral_stats["npu0"]["starts"] == normal.peripheral_stats["npu0"]["starts"] == 1
    assert (sliced.cpu_instructions, sliced.peripheral_cycles) == (normal.cpu_instructions, normal.peripheral_cycles)
    assert np.array_equal(sliced.outputs[0], normal.outputs[0])
