"""The DSP target (edgesdk/targets/dsp): blob serializer, constraints, cost model, the C device model's
kernels and error paths (direct windows and bus callbacks), the build-time proof, register constants shared
by Python, C, the firmware runtime and the Renode peripheral."""

from __future__ import annotations

import ctypes
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, model_path
from edgesdk.board import load_board
from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.emulator.devices import GuestBus
from edgesdk.partition.partitioner import partition, reason_of, target_of
from edgesdk.renode.platform import check_against_board
from edgesdk.renode.repl import read_repl
from edgesdk.targets import get_target
from edgesdk.targets.api import DeviceFault
from edgesdk.targets.dsp import blob as B
from edgesdk.targets.dsp import registers as R
from edgesdk.targets.dsp.device import BUS_FN, DspDevice, load_dsp_model
from edgesdk.targets.dsp.supported import DSP_SUPPORT

DSP_DIR = REPO / "edgesdk" / "targets" / "dsp"
FLASH_BASE, SRAM_BASE = 0x2000_0000, 0x8000_0000
BLOB_AT, PARAM_AT = FLASH_BASE + 0x100, FLASH_BASE + 0x800


# -- helpers -------------------------------------------------------------------------------------------------
class Memory:
    """A flash and an SRAM as numpy buffers, and a DspDevice attached to them (the emulator's setup)."""

    def __init__(self, size: int = 0x4000):
        self.flash = np.zeros(size, np.uint8)
        self.sram = np.zeros(size, np.uint8)
        self.bus = GuestBus([("flash", FLASH_BASE, self.flash, False), ("sram", SRAM_BASE, self.sram, True)])
        self.dev = DspDevice()
        self.dev.attach(self.bus)

    def put(self, address: int, data) -> None:
        array = self.flash if address < SRAM_BASE else self.sram
        base = FLASH_BASE if address < SRAM_BASE else SRAM_BASE
        data = np.frombuffer(bytes(data), np.uint8)
        array[address - base:address - base + len(data)] = data


def start(dev, opcode, record, src0=(0, 0), src1=(0, 0), dst=(0, 0), const=(0, 0), param_addr=None,
          param_bytes=None, mem: Memory | None = None) -> int:
    """Program one kernel and START it; return STATUS. The record is stored at PARAM_AT unless given."""
    if mem is not None and param_addr is None:
        mem.put(PARAM_AT, struct.pack(f"<{len(record)}i", *record))
    regs = {R.REG_OPCODE: opcode, R.REG_SRC0_ADDR: src0[0], R.REG_SRC0_BYTES: src0[1], R.REG_SRC1_ADDR: src1[0],
            R.REG_SRC1_BYTES: src1[1], R.REG_DST_ADDR: dst[0], R.REG_DST_BYTES: dst[1],
            R.REG_PARAM_ADDR: PARAM_AT if param_addr is None else param_addr,
            R.REG_PARAM_BYTES: 4 * len(record) if param_bytes is None else param_bytes,
            R.REG_CONST_BASE: const[0], R.REG_CONST_BYTES: const[1]}
    for offset, value in regs.items():
        dev.write(offset, 4, value & 0xFFFFFFFF)
    dev.write(R.REG_CTRL, 4, R.CTRL_START)
    return dev.read(R.REG_STATUS, 4)


def error_code(status: int) -> int:
    assert status & R.STATUS_ERROR, f"status {status:#x} is not an error"
    return (status & R.STATUS_ERROR_CODE_MASK) >> R.STATUS_ERROR_CODE_SHIFT


@pytest.fixture(scope="module")
def kws_dsp():
    return compile_model(model_path("kws"), BuildOptions(target="dsp,c"))


# -- constants shared by every implementation -------------------------------------------------------------------
def _defines(path: Path, prefix: str) -> dict:
    values = {}
    for name, value in re.findall(rf"#define {prefix}(\w+) \(?(-?(?:0x[0-9A-Fa-f]+|\d+))u?\)?", path.read_text()):
        values[name] = int(value, 0)
    return values


def test_model_header_matches_registers_py():
    c = _defines(DSP_DIR / "model" / "dsp_model.h", "DSP_")
    checked = 0
    for name, value in c.items():
        key = {"NODE_OVERHEAD_CYCLES": "NODE_OVERHEAD_CYCLES", "SOFTMAX_ROW_OPS": "SOFTMAX_ROW_OPS"}.get(name, name)
        key = key[4:] if key.startswith("ERR_") and not hasattr(R, key) else key
        if hasattr(R, key):
            assert getattr(R, key) == value, name
            checked += 1
    assert checked >= 40


def test_runtime_header_and_csharp_match_registers_py():
    runtime = _defines(DSP_DIR / "runtime" / "edgesdk_dsp_runtime.h", "EDGESDK_DSP_")
    for name in ("ID_VALUE", "VERSION_MAJOR", "CTRL_START", "CTRL_RESET", "STATUS_DONE", "STATUS_ERROR",
                 "STATUS_ERROR_CODE_SHIFT", "STATUS_ERROR_CODE_MASK"):
        assert runtime[name] == getattr(R, name), name
    for name, value in runtime.items():
        if name.startswith("REG_"):
            assert value == getattr(R, name), name
    assert runtime["BLOB_MAGIC"] == B.MAGIC and runtime["BLOB_VERSION"] == B.VERSION
    cs = (REPO / "edgesdk" / "targets" / "dsp" / "renode" / "EdgesdkDsp1.cs").read_text()
    for cs_name, value in {"RegisterCtrl": R.REG_CTRL, "RegisterStatus": R.REG_STATUS, "RegisterOpcode": R.REG_OPCODE,
                           "RegisterLastCycles": R.REG_LAST_CYCLES, "CtrlStart": R.CTRL_START,
                           "CtrlReset": R.CTRL_RESET, "StatusError": R.STATUS_ERROR,
                           "StatusErrorCodeMask": R.STATUS_ERROR_CODE_MASK}.items():
        found = re.search(rf"{cs_name} = (0x[0-9A-Fa-f]+|\d+);", cs)
        assert found and int(found.group(1), 0) == value, cs_name


# -- serializer -------------------------------------------------------------------------------------------------
def test_blob_round_trip_of_a_real_region(kws_dsp):
    graphs = kws_dsp.executor.target_data["dsp"]
    assert graphs, "kws with --target dsp,c has DSP regions"
    for graph in graphs:
        decoded = B.decode(graph.data)
        assert decoded.header["blob_bytes"] == len(graph.data)
        assert B.check_blob(graph.data, kws_dsp.executor.arena_bytes) == []
        for node in decoded.nodes:
            assert len(node.words) == len(R.RECORD_FIELDS[node.opcode])
        for t in decoded.tensors:
            assert t.location == B.LOCATION_ARENA and 0 < t.nbytes and t.offset + t.nbytes <= kws_dsp.executor.arena_bytes
        # Re-encoding what was decoded gives the same bytes (records hold resolved offsets now).
        builder = B.BlobBuilder(tensors=decoded.tensors, nodes=decoded.nodes)
        builder.consts = [graph.data[decoded.header["data_offset"]:decoded.nodes[0].param_offset]]
        assert B.encode(builder) == graph.data


def test_blob_layout_is_aligned_and_refs_resolve():
    builder = B.BlobBuilder()
    t_in = builder.tensor("x", lambda: B.BlobTensor(B.LOCATION_ARENA, 16, 8, (1, 8), 0.5, -3))
    table = builder.const(bytes(range(256)))
    const_t = builder.tensor("c", lambda: B.BlobTensor(B.LOCATION_BLOB, builder.const(b"\x01\x02\x03"), 3, (3,)))
    builder.add(B.BlobNode(R.OP_LUT, (t_in,), t_in, [8, table]))
    data = B.encode(builder)
    decoded = B.decode(data)
    lay = B.layout(builder)
    assert lay.data_offset % 4 == 0 and all(o % 4 == 0 for o in lay.const_offsets + lay.record_offsets)
    assert decoded.nodes[0].fields()["table_ref"] == lay.const_offsets[0]
    assert data[lay.const_offsets[0]:lay.const_offsets[0] + 256] == bytes(range(256))
    assert decoded.tensors[const_t].offset == lay.const_offsets[1]
    assert decoded.tensors[t_in].scale == 0.5 and decoded.tensors[t_in].zero_point == -3
    assert B.check_blob(data, 64) == []
    assert any("outside the arena" in p for p in B.check_blob(data, 20))  # 16 + 8 > 20


@pytest.mark.parametrize("mutate, complaint", [
    (lambda d: d.__setitem__(slice(0, 4), b"XXXX"), "magic"),
    (lambda d: struct.pack_into("<I", d, 28, len(d) + 4), "header says"),
    (lambda d: struct.pack_into("<H", d, B.HEADER.size + 36 * 1 + 8, 9), "tensor indices"),  # node 0 output
])
def test_check_blob_names_structural_faults(mutate, complaint):
    builder = B.BlobBuilder()
    x = builder.tensor("x", lambda: B.BlobTensor(B.LOCATION_ARENA, 0, 4, (4,)))
    builder.add(B.BlobNode(R.OP_COPY, (x,), x, [4]))
    data = bytearray(B.encode(builder))
    mutate(data)
    assert any(complaint in p for p in B.check_blob(bytes(data), 64)), B.check_blob(bytes(data), 64)


def test_check_blob_finds_a_constant_reference_outside_the_blob():
    builder = B.BlobBuilder()
    x = builder.tensor("x", lambda: B.BlobTensor(B.LOCATION_ARENA, 0, 4, (4,)))
    builder.add(B.BlobNode(R.OP_LUT, (x,), x, [4, 10_000]))
    assert any("table reference" in p for p in B.check_blob(B.encode(builder), 64))


# -- constraints and partitioning ------------------------------------------------------------------------------
def test_constraints_have_rules_and_the_softmax_lands_on_the_dsp(kws_dsp):
    for op_type, rules in DSP_SUPPORT.rules().items():
        assert rules or op_type == "RESHAPE"
        assert all(rule and not rule.endswith(".") for _name, rule in rules)
    by_target = {op.type: target for op, target in target_of(kws_dsp.regions).items()}
    assert by_target["SOFTMAX"] == "dsp" and by_target["DEPTHWISE_CONV_2D"] == "dsp"
    assert by_target["CONV_2D"] == "c" and by_target["FULLY_CONNECTED"] == "c"


def test_npu_dsp_c_priority_puts_only_what_the_npu_leaves_on_the_dsp():
    compiled = compile_model(model_path("kws"), BuildOptions(target="npu,dsp,c"))
    targets = {op.type: target for op, target in target_of(compiled.regions).items()}
    assert targets["SOFTMAX"] == "dsp" and targets["DEPTHWISE_CONV_2D"] == "npu"
    assert [r.target for r in compiled.regions] == ["npu", "dsp"]


def test_a_failing_constraint_is_named(kws_dsp):
    from edgesdk.importer.onnx_importer import import_model

    graph = import_model(model_path("kws"))
    dw = next(op for op in graph.ops if op.type == "DEPTHWISE_CONV_2D")
    dw.attrs["stride_h"] = 300
    ok, why = DSP_SUPPORT.check(dw)
    assert not ok and why.startswith("window_limits:") and "255" in why
    softmax = next(op for op in graph.ops if op.type == "SOFTMAX")
    softmax.outputs[0].quant.zero_point[...] = 0
    ok, why = DSP_SUPPORT.check(softmax)
    assert not ok and "softmax_output_quantization" in why
    softmax.outputs[0].quant.zero_point[...] = -128
    regions = partition(graph, ["dsp", "c"])
    assert target_of(regions)[dw] == "c" and reason_of(regions)[dw].startswith("not dsp: window_limits")
    assert target_of(regions)[softmax] == "dsp"


def test_board_and_repl_declare_the_dsp_with_the_same_windows():
    board = load_board("riscv-npu")
    repl = read_repl(REPO / "edgesdk" / "boards" / "riscv-npu" / "riscv-npu.repl")
    assert check_against_board(repl, board) == []
    periph = board.peripherals["dsp0"]
    assert periph.type == "edgesdk-dsp1" and int(periph.props["clock_hz"]) > 0
    attrs = repl.entries["dsp0"].attributes
    assert (attrs["flashBase"], attrs["flashSize"]) == (board.flash.base, board.flash.size)
    assert (attrs["sramBase"], attrs["sramSize"]) == (board.sram.base, board.sram.size)
    assert "EdgesdkDsp1.cs" in (REPO / "edgesdk" / "boards" / "riscv-npu" / "riscv-npu.resc").read_text()


# -- the device model -----------------------------------------------------------------------------------------
def test_identity_and_word_access_only():
    mem = Memory()
    assert mem.dev.read(R.REG_ID, 4) == R.ID_VALUE and mem.dev.read(R.REG_VERSION, 4) == R.VERSION_VALUE
    with pytest.raises(DeviceFault):
        mem.dev.read(R.REG_ID, 1)


def test_lut_and_copy_compute_and_count_cycles():
    mem = Memory()
    table = (np.arange(256, dtype=np.int32) * 7 % 256).astype(np.uint8)
    mem.put(BLOB_AT, table.tobytes())
    x = np.arange(-50, 50, dtype=np.int8)
    mem.put(SRAM_BASE, x.tobytes())
    status = start(mem.dev, R.OP_LUT, [100, 0], src0=(SRAM_BASE, 100), dst=(SRAM_BASE + 0x200, 100),
                   const=(BLOB_AT, 256), mem=mem)
    assert status == R.STATUS_DONE
    assert np.array_equal(mem.sram[0x200:0x200 + 100], table[x.view(np.uint8)])
    status = start(mem.dev, R.OP_COPY, [100], src0=(SRAM_BASE + 0x200, 100), dst=(SRAM_BASE + 0x400, 100), mem=mem)
    assert status == R.STATUS_DONE and np.array_equal(mem.sram[0x400:0x464], mem.sram[0x200:0x264])
    expected = R.kernel_cycles(R.OP_LUT, {"size": 100}) + R.kernel_cycles(R.OP_COPY, {"bytes": 100})
    assert expected == 2 * R.NODE_OVERHEAD_CYCLES + 7 + 7
    assert mem.dev.stats() == {"cycles": expected, "kernels": 2, "errors": 0}
    assert mem.dev.read(R.REG_LAST_CYCLES, 4) == R.kernel_cycles(R.OP_COPY, {"bytes": 100})


@pytest.mark.parametrize("case, code", [
    ("unknown opcode", R.ERR_OPCODE),
    ("record size", R.ERR_PARAM),
    ("operand bytes disagree with the record", R.ERR_PARAM),
    ("dst outside memory", R.ERR_BUS),
    ("dst in flash", R.ERR_BUS),
    ("src wraps past 4 GiB", R.ERR_BUS),
    ("record outside memory", R.ERR_BUS),
    ("table outside the constant window", R.ERR_CONST_REF),
    ("negative table reference", R.ERR_CONST_REF),
])
def test_error_paths_set_the_documented_code_and_write_nothing(case, code):
    mem = Memory()
    mem.put(SRAM_BASE, bytes(range(64)))
    before = mem.sram.copy()
    src, dst = (SRAM_BASE, 64), (SRAM_BASE + 0x100, 64)
    lut = dict(src0=src, dst=dst, const=(BLOB_AT, 256), mem=mem)
    status = {
        "unknown opcode": lambda: start(mem.dev, 99, [64], src0=src, dst=dst, mem=mem),
        "record size": lambda: start(mem.dev, R.OP_COPY, [64], src0=src, dst=dst, param_bytes=8, mem=mem),
        "operand bytes disagree with the record": lambda: start(mem.dev, R.OP_COPY, [32], src0=src, dst=dst, mem=mem),
        "dst outside memory": lambda: start(mem.dev, R.OP_COPY, [64], src0=src, dst=(0x6000_0000, 64), mem=mem),
        "dst in flash": lambda: start(mem.dev, R.OP_COPY, [64], src0=src, dst=(FLASH_BASE, 64), mem=mem),
        "src wraps past 4 GiB": lambda: start(mem.dev, R.OP_COPY, [64], src0=(0xFFFF_FFF0, 64), dst=dst, mem=mem),
        "record outside memory": lambda: start(mem.dev, R.OP_COPY, [64], src0=src, dst=dst, param_addr=0x1000),
        "table outside the constant window": lambda: start(mem.dev, R.OP_LUT, [64, 16], **{**lut, "const": (BLOB_AT, 200)}),
        "negative table reference": lambda: start(mem.dev, R.OP_LUT, [64, -4], **lut),
    }[case]()
    assert error_code(status) == code
    assert np.array_equal(mem.sram, before)
    assert mem.dev.stats()["errors"] == 1 and mem.dev.stats()["kernels"] == 0
    mem.dev.write(R.REG_CTRL, 4, R.CTRL_RESET)
    assert mem.dev.read(R.REG_STATUS, 4) == 0 and mem.dev.stats() == {"cycles": 0, "kernels": 0, "errors": 0}


def test_bus_callback_mode_matches_direct_windows(kws_dsp):
    """The Renode path (no direct windows: operands staged through callbacks) computes the same bytes."""
    graph = kws_dsp.executor.target_data["dsp"][0]
    decoded = B.decode(graph.data)
    arena = np.random.default_rng(1).integers(-128, 128, kws_dsp.executor.arena_bytes, dtype=np.int16).astype(np.int8)
    results = []
    for mode in ("direct", "bus"):
        flash = np.zeros(0x10000, np.uint8)
        sram = np.zeros(0x10000, np.uint8)
        flash[:len(graph.data)] = np.frombuffer(graph.data, np.uint8)
        sram[:len(arena)] = arena.view(np.uint8)
        lib = load_dsp_model()
        dev = DspDevice()
        keep = None
        if mode == "direct":
            dev.attach(GuestBus([("flash", FLASH_BASE, flash, False), ("sram", SRAM_BASE, sram, True)]))
        else:
            bus = GuestBus([("flash", FLASH_BASE, flash, False), ("sram", SRAM_BASE, sram, True)])

            def read(_ctx, address, buffer, length):
                try:
                    ctypes.memmove(buffer, bus.view(address, length).ctypes.data, length)
                    return 0
                except DeviceFault:
                    return 1

            def write(_ctx, address, buffer, length):
                try:
                    target = bus.view(address, length, write=True)
                except DeviceFault:
                    return 1
                ctypes.memmove(target.ctypes.data, buffer, length)
                return 0

            keep = (BUS_FN(read), BUS_FN(write))
            lib.dsp_set_bus(dev.handle, keep[0], keep[1], None)
        _run_blob(dev, decoded, FLASH_BASE, SRAM_BASE)
        assert dev.stats()["errors"] == 0 and dev.stats()["kernels"] == len(decoded.nodes)
        results.append((sram.copy(), dev.stats()))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]
    assert results[0][1]["cycles"] == graph.cycles  # the cost model is what the device counts


def _run_blob(dev, decoded, blob_base, arena_base) -> None:
    """What edgesdk_dsp_runtime.c does per node, in Python."""
    t = decoded.tensors
    for node in decoded.nodes:
        def where(k):
            return (arena_base if t[k].location == B.LOCATION_ARENA else blob_base) + t[k].offset, t[k].nbytes
        srcs = [where(k) for k in node.inputs] + [(0, 0)]
        start(dev, node.opcode, node.words, src0=srcs[0], src1=srcs[1], dst=where(node.output),
              const=(blob_base, decoded.header["blob_bytes"]), param_addr=blob_base + node.param_offset)


# -- target hooks: estimate, verify, sources -------------------------------------------------------------------
def test_estimate_before_and_after_codegen(kws_dsp):
    target, board = get_target("dsp"), kws_dsp.board
    for region, graph in zip([r for r in kws_dsp.regions if r.target == "dsp"], kws_dsp.executor.target_data["dsp"]):
        after = target.estimate(region, board, kws_dsp.executor)
        assert after.cycles == graph.cycles and after.unit == "dsp0" and after.clock_hz == 400_000_000
        before = target.estimate(region, board, None)
        copies = sum(op.type == "RESHAPE" for op in region.ops)  # aliased in the plan: no node afterwards
        assert after.cycles <= before.cycles <= after.cycles + copies * (R.NODE_OVERHEAD_CYCLES + 1000)


from edgesdk.verify import Proof  # noqa: E402  (the proof object Target.verify is given)


def test_verify_accepts_the_build_and_rejects_a_tampered_blob(kws_dsp):
    target = get_target("dsp")
    proof = Proof()
    target.verify(kws_dsp, proof)
    assert proof.failures == []
    graph = kws_dsp.executor.target_data["dsp"][0]
    original = graph.data
    try:
        data = bytearray(original)
        tensors_offset = struct.unpack_from("<I", data, 16)[0]
        struct.pack_into("<I", data, tensors_offset + 4, kws_dsp.executor.arena_bytes)  # tensor 0 offset
        graph.data = bytes(data)
        target.verify(kws_dsp, proof)
        assert any("outside the arena" in f for f in proof.failures), proof.failures
    finally:
        graph.data = original


def test_generated_sources_list_the_nodes(kws_dsp):
    from edgesdk import __version__

    files = get_target("dsp").render_sources(kws_dsp.executor, None, {"m": kws_dsp.executor, "version": __version__})
    source = files["model_dsp.c"]
    graph = kws_dsp.executor.target_data["dsp"][0]
    assert f"const uint8_t {graph.symbol}[{len(graph.data)}] __attribute__((aligned(4)))" in source
    assert "DEPTHWISE_CONV(t0) -> t1" in source and "node table" in source
    assert f"extern const uint8_t {graph.symbol}[{len(graph.data)}];" in files["model_dsp.h"]


# -- C compiles warning-free -------------------------------------------------------------------------------------
def test_runtime_compiles_warning_free_for_the_board(tmp_path):
    gcc = shutil.which("riscv64-unknown-elf-gcc")
    if gcc is None:
        pytest.skip("riscv64-unknown-elf-gcc is not installed")
    (tmp_path / "board.h").write_text("#define BOARD_DSP0_BASE 0x40001000u\n")
    proc = subprocess.run([gcc, "-march=rv32imac_zicsr", "-mabi=ilp32", "--specs=picolibc.specs", "-O2", "-Wall",
                           "-Wextra", "-Werror", "-std=c11", f"-I{tmp_path}", "-c",
                           str(DSP_DIR / "runtime" / "edgesdk_dsp_runtime.c"), "-o", str(tmp_path / "rt.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("mcs") is None, reason="Mono's C# compiler (apt-get install mono-mcs) is not installed")
def test_csharp_peripheral_compiles_against_the_standins(tmp_path):
    renode = REPO / "edgesdk" / "renode"
    proc = subprocess.run(["mcs", "-target:library", "-warnaserror+", "-warn:4", "-nologo",
                           f"-out:{tmp_path / 'dsp.dll'}", str(REPO / "edgesdk" / "targets" / "dsp" / "renode" / "EdgesdkDsp1.cs"),
                           str(renode / "standins" / "RenodeStandins.cs")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
