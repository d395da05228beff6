"""The DSP target end to end: real models built for "dsp,c" and "npu,dsp,c" run on the emulator bit-exact
with LiteRT's reference kernels, the DSP counts the cycles the cost model predicted, and a corrupted blob in
the firmware image makes the runtime (or the DSP) stop with the documented error code."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from conftest import model_path
from edgesdk.compiler import BuildOptions, build
from edgesdk.reference import run_reference
from edgesdk.runner import load_report, random_inputs, run_inference
from edgesdk.targets.dsp import blob as B
from edgesdk.targets.dsp import registers as R

pytestmark = pytest.mark.slow

CASES = [("kws", "dsp,c"), ("kws", "npu,dsp,c"), ("vww", "dsp,c"), ("vww", "npu,dsp,c"), ("ic", "dsp,c"),
         ("ic", "npu,dsp,c"), ("micro_speech", "dsp,c"), ("micro_speech", "npu,dsp,c"), ("ds_cnn_float_io", "dsp,c"),
         ("ds_cnn_float_io", "npu,dsp,c")]


@pytest.fixture(scope="session")
def dsp_built(session_builds):
    """(model name, targets) -> build directory, built once per session (any worker); tests copy it to change it."""

    def get(name: str, targets: str):
        def make(out):
            build(model_path(name), out / "build", BuildOptions(target=targets, werror=True))

        return session_builds(f"dsp-{name}-{targets.replace(',', '_')}", make) / "build"

    return get


@pytest.mark.parametrize("name, targets", CASES)
def test_bit_exact_and_cycles_as_estimated(dsp_built, name, targets):
    out = dsp_built(name, targets)
    report = load_report(out)
    on_dsp = [op["type"] for op in report["ops"] if op["target"] == "dsp"]
    assert "SOFTMAX" in on_dsp
    if targets == "npu,dsp,c":
        assert not any(op["target"] == "c" and op["type"] == "SOFTMAX" for op in report["ops"])
    estimated = sum(r["cycles"] for r in report["estimate"]["regions"] if r["target"] == "dsp")
    for seed in (0, 1):
        inputs = random_inputs(report, seed)
        result = run_inference(out, inputs)
        assert result.exit_code == 0, result.uart
        for k, (want, got) in enumerate(zip(run_reference(out / "model.tflite", inputs, "ref"), result.outputs)):
            assert want.shape == got.shape and np.array_equal(want.view(np.uint8), got.view(np.uint8)), \
                f"{name} {targets} seed {seed}: output {k} differs from BUILTIN_REF"
        stats = result.peripheral_stats["dsp0"]
        assert stats["errors"] == 0 and stats["kernels"] > 0
        assert stats["cycles"] == estimated, "the DSP counts what Target.estimate predicted"


# -- faults in the firmware image ------------------------------------------------------------------------------
def _file_offset(elf_path, symbol: str) -> int:
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        address = elf.get_section_by_name(".symtab").get_symbol_by_name(symbol)[0]["st_value"]
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= address < seg["p_vaddr"] + seg["p_filesz"]:
                return seg["p_offset"] + address - seg["p_vaddr"]
    raise AssertionError(f"{symbol} is not in a loadable segment")


def _run_corrupted(build_dir, tmp_path, patch):
    copy = tmp_path / "corrupt"
    shutil.copytree(build_dir, copy)
    elf = copy / "firmware.elf"
    data = bytearray(elf.read_bytes())
    start = _file_offset(elf, "dsp_graph_0")
    patch(data, start)
    elf.write_bytes(bytes(data))
    return run_inference(copy, random_inputs(load_report(copy), 0))


def test_bad_magic_stops_before_the_dsp_runs(dsp_built, tmp_path):
    result = _run_corrupted(dsp_built("kws", "dsp,c"), tmp_path, lambda d, s: d.__setitem__(s, d[s] ^ 0xFF))
    assert result.exit_code == 19 and "status=-19" in result.uart  # EDGESDK_DSP_ERR_BLOB
    assert result.peripheral_stats["dsp0"]["kernels"] == 0


def test_tensor_outside_the_arena_is_refused_by_the_runtime(dsp_built, tmp_path):
    def patch(data, start):
        tensors = struct.unpack_from("<I", data, start + 16)[0]
        struct.pack_into("<I", data, start + tensors + 4, 0x7FFF_0000)  # tensor 0's arena offset

    result = _run_corrupted(dsp_built("kws", "dsp,c"), tmp_path, patch)
    assert result.exit_code == 21 and "status=-21" in result.uart  # EDGESDK_DSP_ERR_TENSOR
    assert result.peripheral_stats["dsp0"]["kernels"] == 0


def test_constant_reference_outside_the_blob_is_a_dsp_error(dsp_built, tmp_path):
    """The runtime checks the container; the record's contents are checked by the DSP (ERROR_CODE 3)."""
    def patch(data, start):
        nodes = struct.unpack_from("<I", data, start + 20)[0]
        opcode, _n, _i0, _i1, _o, _r, param_offset, _pb = B.NODE.unpack_from(data, start + nodes)
        assert opcode == R.OP_DEPTHWISE_CONV
        filter_ref = R.RECORD_FIELDS[opcode].index("filter_ref")
        struct.pack_into("<i", data, start + param_offset + 4 * filter_ref, 0x0100_0000)

    result = _run_corrupted(dsp_built("kws", "dsp,c"), tmp_path, patch)
    assert result.exit_code == 16 and "status=-16" in result.uart  # EDGESDK_DSP_ERR_DEVICE
    assert "dsp_error=3 dsp_node=0" in result.uart  # the harness names the DSP's code and the failing node
    assert result.peripheral_stats["dsp0"]["errors"] == 1
