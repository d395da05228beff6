"""What NPU-1 refuses, and that edgesdk refuses it first (issue 12, item 8).

1. edgesdk.targets.npu.hw.validate (the Python mirror of the C model's static pass) reports exactly what the C model's
   `npu_validate_table` reports -- error code and command index -- on compiled tables and thousands of
   mutated and random ones.
2. For every NPU error code, table-driven: a model whose naive lowering would reach it is refused when
   partitioning (the NPU's constraints), a table carrying it is refused by the build-time proof, or the code
   cannot come from a compiled table (and why).
3. The build-time proof passes real builds holding every command kind of format 1.2 (int8 and int16) and
   refuses each of their commands moved outside its region.
"""

from __future__ import annotations

import dataclasses
import random
import struct

import numpy as np
import pytest

import corpus
import modelgen
from conftest import model_path
from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.aot.executor import Blob
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import registers as R
from edgesdk.targets.npu.hw import validate
from edgesdk.targets.npu.hw.model import validate_table
from edgesdk.targets.npu.supported import NPU_SUPPORT, _ProbeContext
from edgesdk.verify import VerificationError, verify_build

STATIC_CODES = {R.ERR_TABLE_MAGIC, R.ERR_TABLE_VERSION, R.ERR_TABLE_SIZE, R.ERR_BAD_OPCODE, R.ERR_CMD_SIZE,
                R.ERR_BAD_REGION, R.ERR_BAD_SHAPE, R.ERR_BAD_PARAM, R.ERR_ADDRESS_RANGE, R.ERR_TOO_LARGE,
                R.ERR_BAD_QUANT, R.ERR_NO_END}


# -- 1. the mirror equals the C model ------------------------------------------------------------------------
def _sample_tables() -> list:
    """Tables edgesdk writes (KWS, VWW, IC and the single-op suite's NPU ops) plus one of every command."""
    tables = []
    for name in ("kws", "vww", "ic"):
        tables += [t.data for t in compile_model(model_path(name), BuildOptions(target="npu,c")).executor.target_data["npu"]]
    d = C.TensorDesc.dense
    x, y = d(1, 0, (1, 8, 8, 16)), d(1, 1024, (1, 8, 8, 16))
    p = C.ParamRef(0, 64)
    tables.append(C.encode([
        C.Conv2D(x, d(1, 2048, (1, 8, 8, 8)), d(0, 0, (8, 3, 3, 16)), p, pad_top=1, pad_left=1, rounding=2),
        C.DepthwiseConv2D(x, y, d(0, 0, (1, 3, 3, 16)), p, pad_top=1, pad_left=1, depth_multiplier=1),
        C.Conv2D(x, d(1, 2048, (1, 8, 8, 8)), d(0, 512, (8, 1, 1, 16)), p, weight_stream_bytes=200),
        C.MaxPool2D(x, d(1, 3000, (1, 4, 4, 16)), filter_h=2, filter_w=2, stride_h=2, stride_w=2),
        C.AvgPool2D(x, d(1, 3000, (1, 4, 4, 16)), filter_h=2, filter_w=2, stride_h=2, stride_w=2, floor_rounding=True),
        C.Add(x, C.TensorDesc(1, 0, (1, 8, 8, 16), (0, 0, 0, 1)), y, input1_multiplier=1 << 30,
              input2_multiplier=1 << 30, output_multiplier=1 << 30, output_shift=-20),
        C.Mul(x, x, y, output_multiplier=1 << 30, output_shift=-8),
        C.DmaCopy(x, y),
        C.End(),
    ]))
    x16, y16 = d(1, 0, (1, 8, 8, 16), "int16"), d(1, 4096, (1, 8, 8, 16), "int16")
    tables.append(C.encode([  # version 1.2: int16 operands, signed strides, the new commands
        C.Conv2D(x16, d(1, 8192, (1, 8, 8, 8), "int16"), d(0, 0, (8, 3, 3, 16)), p, pad_top=1, pad_left=1,
                 act_min=-1000, act_max=30000),
        C.DepthwiseConv2D(x16, y16, d(0, 0, (1, 3, 3, 16)), p, pad_top=1, pad_left=1, rounding=2),
        C.TransposeConv2D(x, d(1, 8192, (1, 16, 16, 8)), d(0, 0, (8, 3, 3, 16)), p, stride_h=2, stride_w=2,
                          pad_top=1, pad_left=1),
        C.MaxPool2D(x16, d(1, 9000, (1, 4, 4, 16), "int16"), filter_h=2, filter_w=2, stride_h=2, stride_w=2,
                    act_min=-300, act_max=300),
        C.Sub(x16, y16, d(1, 12000, (1, 8, 8, 16), "int16"), input1_multiplier=1 << 30, input2_multiplier=1 << 30,
              output_multiplier=1 << 30, output_shift=-15, left_shift=15, act_min=-32768, act_max=-2),
        C.Minimum(x, x, y), C.Maximum(x16, y16, d(1, 16000, (1, 8, 8, 16), "int16")),
        C.Table(x, y, p, table_count=16), C.Table(x16, y16, p),
        C.GatherHW(x, d(1, 2048, (1, 16, 4, 16)), p),
        C.DmaCopy(C.TensorDesc(1, 1023, (1, 8, 8, 16), (1024, 128, 16, -1)), y),
        C.End(),
    ]))
    return tables


# Values that sit on the edges of the NPU's checks, for the field-aware mutations.
EDGES_U8 = [0, 1, 2, 3, 7, 8, 255]
EDGES_U16 = [0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 255, 256, 257, 4096, 32767, 32768, 65535]
EDGES_U32 = [0, 1, 71, 72, 1 << 20, (1 << 22) + 1, 1 << 28, 0x7FFFFFFF, 0xFFFFFFF0, 0xFFFFFFFF]


def _command_starts(table: bytes) -> list:
    starts, pos = [], R.TABLE_HEADER_BYTES
    while pos + 4 <= len(table):
        starts.append(pos)
        size = struct.unpack_from("<H", table, pos + 2)[0]
        if size == 0:
            break
        pos += size
    return starts


def _mutate(table: bytes, rng: random.Random) -> bytes:
    data = bytearray(table)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.random()
        starts = _command_starts(bytes(data)) or [R.TABLE_HEADER_BYTES]
        if kind < 0.55:  # a field of a command: u8 / u16 / u32 at an aligned offset, set to an edge value
            base = rng.choice(starts)
            width = rng.choice([1, 2, 2, 4, 4])
            offset = base + rng.randrange(0, 144, width)
            if offset + width > len(data):
                continue
            value = rng.choice({1: EDGES_U8, 2: EDGES_U16, 4: EDGES_U32}[width])
            if rng.random() < 0.3:  # near the current value
                value = max(0, int.from_bytes(data[offset:offset + width], "little") + rng.choice([-1, 1]))
            data[offset:offset + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
        elif kind < 0.75:  # random bytes
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind < 0.85:  # the header
            offset = rng.choice([0, 4, 8, 12])
            data[offset:offset + 4] = rng.choice(EDGES_U32 + [len(data), len(data) + 8]).to_bytes(4, "little")
        elif kind < 0.93:  # cut or grow the table
            data = data[:rng.randrange(len(data))] if rng.random() < 0.5 else data + bytes(rng.randint(1, 80))
        else:  # swap two commands' bodies of different sizes / drop one
            if len(starts) > 1:
                k = rng.randrange(len(starts) - 1)
                del data[starts[k]:starts[k + 1]]
    return bytes(data)


def test_python_mirror_equals_the_c_model_on_mutated_tables():
    rng = random.Random(20261124)
    tables = _sample_tables()
    seen = {}
    for k in range(6000):
        table = _mutate(rng.choice(tables), rng)
        bases = rng.choice([(0, 0), (0x20000000, 0x80000000), (0xFFFF0000, 0xFFFFF000),
                            tuple(rng.randrange(1 << 32) for _ in range(8))])
        address = rng.choice([0, 0x20000000, 0xFFFFFFF0])
        want = validate_table(table, bases, address)
        assert validate.check_table(table, bases, address) == want, (k, table.hex(), bases, address)
        seen[want[0]] = seen.get(want[0], 0) + 1
    # The mutations reach every error of the static pass, and many tables pass it.
    assert set(seen) == STATIC_CODES | {R.ERR_NONE}, sorted(R.error_name(c) for c in seen)


def test_python_mirror_equals_the_c_model_on_random_tables():
    rng = random.Random(5)
    for k in range(2000):
        count = rng.randint(1, 4)
        body = b""
        for _ in range(count):
            opcode = rng.choice([R.OP_END, R.OP_DMA_COPY, R.OP_CONV2D, R.OP_DEPTHWISE_CONV2D, R.OP_MAX_POOL,
                                 R.OP_AVG_POOL, R.OP_ADD, R.OP_MUL, R.OP_SUB, R.OP_MIN, R.OP_MAX, R.OP_TABLE,
                                 R.OP_GATHER_HW, R.OP_TRANSPOSE_CONV2D, 0x7F])
            size = {R.OP_END: 8, R.OP_DMA_COPY: 72, R.OP_MAX_POOL: 88, R.OP_AVG_POOL: 88, R.OP_ADD: 144,
                    R.OP_MUL: 144, R.OP_SUB: 144, R.OP_MIN: 144, R.OP_MAX: 144, R.OP_TABLE: 88,
                    R.OP_GATHER_HW: 80}.get(opcode, 136)
            fields = bytes(rng.choice([0, 0, 0, 1, 2, 255]) for _ in range(size - 8))
            body += struct.pack("<BBHHH", opcode, rng.choice([0, 0, 1, 2, 3]), size, rng.choice([0, 0, 1, 2, 4, 8]),
                                0) + fields
        table = struct.pack("<IHHII", R.TABLE_MAGIC, 1, 1, count, 16 + len(body)) + body
        assert validate.check_table(table) == validate_table(table), (k, table.hex())


# -- 2. every NPU error, table-driven -------------------------------------------------------------------------
def _op(data: bytes, tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return import_tflite(path).ops[0], path


class _RunContext(_ProbeContext):
    """Lowers an op for a real run: activations placed one after another, constants kept in a blob."""

    probing = False  # the run reads the constants (channel records, tables): lowered with their values

    def __init__(self):
        self.offsets, self.weights = {}, Blob("weights", "weights")

    def arena_offset(self, tensor) -> int:
        if tensor not in self.offsets:
            self.offsets[tensor] = sum(t.nbytes for t in self.offsets)
        return self.offsets[tensor]

    def blob(self, name):
        return self.weights


def _naive_error(op) -> int:
    """The error the NPU stops with when it runs the op's commands as codegen lowers them, if no constraint
    stopped the op (the C model, both passes: static checks and execution, e.g. records read from memory)."""
    from edgesdk.targets.npu.hw.model import run_table
    from edgesdk.targets.npu.codegen import LOWERINGS

    ctx = _RunContext()
    table = C.encode(LOWERINGS[op.type](op, ctx) + [C.End()])
    flash, sram = 0x20000000, 0x80000000
    arena = bytearray(max(1, sum(t.nbytes for t in ctx.offsets)))
    result = run_table(table, {flash: bytearray(ctx.weights.data) + bytes(16), sram: arena}, [flash, sram], read_only=[flash])
    return result.error_code


def _pool_channels_differ():
    """Issue 12, item 8: a pooling whose output has other channels than its input (built OK, BAD_SHAPE)."""
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 8, 8, 8), "int8", 0.05, -3)
    y = m.tensor((1, 4, 4, 4), "int8", 0.05, -3)
    m.op("AVERAGE_POOL_2D", [x], [y], "Pool2DOptions", Padding=modelgen.VALID, StrideH=2, StrideW=2,
         FilterHeight=2, FilterWidth=2)
    return m.build([x], [y])


def _conv_channels_differ():
    """A CONV_2D whose output has more channels than it has filters (the importer only checks the bias)."""
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 4, 4, 8), "int8", 0.05, 0)
    w = m.const(np.ones((4, 1, 1, 8)), "int8", scale=0.02, zero_point=0)
    y = m.tensor((1, 4, 4, 6), "int8", 0.1, 0)
    m.op("CONV_2D", [x, w], [y], "Conv2DOptions", Padding=modelgen.SAME, StrideH=1, StrideW=1)
    return m.build([x], [y])


def _depthwise_filter_batch():
    """A DEPTHWISE_CONV_2D with filters [2, KH, KW, C] (the NPU wants [1, KH, KW, C])."""
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 4, 4, 8), "int8", 0.05, 0)
    w = m.const(np.ones((2, 3, 3, 8)), "int8", scale=0.02, zero_point=0)
    y = m.tensor((1, 4, 4, 8), "int8", 0.1, 0)
    m.op("DEPTHWISE_CONV_2D", [x, w], [y], "DepthwiseConv2DOptions", Padding=modelgen.SAME, StrideH=1, StrideW=1,
         DepthMultiplier=1)
    return m.build([x], [y])


def _pool_too_much_work():
    """A 64x64 max pooling over a 64x64x32 input with SAME padding: 2^29 element operations in one command."""
    return modelgen.pool_model("MAX_POOL_2D", (1, 64, 64, 32), (64, 64), (1, 1), modelgen.SAME, (0.05, 0))


def _conv_kernel_too_large():
    return modelgen.conv_model((1, 80, 8, 4), np.ones((4, 65, 1, 4), np.int8), np.zeros(4, np.int32), (0.05, 0),
                               0.02, (0.1, 0), padding=modelgen.VALID)


def _add_shift_out_of_range():
    return modelgen.binary_model("ADD", (1, 4), (1, 4), (1, 4), (1.0, 0), (1.0, 0), (1e-17, 0))


def _conv_requant_out_of_range():
    return modelgen.conv_model((1, 4, 4, 4), np.ones((4, 1, 1, 4), np.int8), np.zeros(4, np.int32), (1e6, 0),
                               1e6, (1e-9, 0))


def _transpose_conv_kernel_too_large():
    return modelgen.transpose_conv_model((1, 2, 2, 4), np.ones((4, 65, 1, 4), np.int8), np.zeros(4, np.int32),
                                         (0.05, 0), 0.02, (0.1, 0), stride=(1, 1), padding=modelgen.VALID)


def _transpose_conv_channels_differ():
    """A TRANSPOSE_CONV whose output has other channels than it has filters."""
    m = modelgen.ModelBuilder()
    shape = m.const(np.asarray((1, 8, 8, 6), np.int32), "int32")
    w = m.const(np.ones((4, 3, 3, 8)), "int8", scale=0.02, zero_point=0)
    x = m.tensor((1, 4, 4, 8), "int8", 0.05, 0)
    y = m.tensor((1, 8, 8, 6), "int8", 0.1, 0)
    m.op("TRANSPOSE_CONV", [shape, w, x], [y], "TransposeConvOptions", Padding=modelgen.SAME, StrideH=2, StrideW=2)
    return m.build([x], [y])


def _transpose_conv_16x8_shift_too_large():
    """A 16x8 layer whose requantization shift is 17: its 64-bit requantization allows at most 14."""
    return modelgen.transpose_conv_model((1, 2, 2, 4), np.ones((4, 3, 3, 4), np.int8), np.zeros(4, np.int64),
                                         (1.0, 0), 1.0, (1e-5, 0), dtype="int16")


def _sub_shift_out_of_range():
    return modelgen.binary_model("SUB", (1, 4), (1, 4), (1, 4), (1.0, 0), (1.0, 0), (1e-17, 0))


def _resize_nearest_too_large():
    """An 8 MiB nearest-neighbour upsampling: one GATHER_HW operand beyond the NPU's 4 MiB."""
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 512, 512, 8), "int8", 0.05, 0)
    size = m.const(np.asarray((1024, 1024), np.int32), "int32")
    y = m.tensor((1, 1024, 1024, 8), "int8", 0.05, 0)
    m.op("RESIZE_NEAREST_NEIGHBOR", [x, size], [y], "ResizeNearestNeighborOptions")
    return m.build([x], [y])


def _relu_too_large():
    """An 8 MiB pointwise activation: one TABLE operand beyond 4 MiB."""
    return modelgen.unary_model("RELU", (1, 1024, 1024, 8), (0.05, 0), (0.05, 0))


def _transpose_too_large():
    """An 8 MiB TRANSPOSE: strided DMA operands beyond 4 MiB."""
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 1024, 1024, 8), "int8", 0.05, 0)
    perm = m.const(np.asarray((0, 2, 1, 3), np.int32), "int32")
    y = m.tensor((1, 1024, 1024, 8), "int8", 0.05, 0)
    m.op("TRANSPOSE", [x, perm], [y], "TransposeOptions")
    return m.build([x], [y])


# code -> (model builder, or None). Each model's op would reach the code on the NPU; partitioning refuses it by a
# named constraint (not only by the last-resort check that lowers the op and validates its commands).
MODELS = {
    R.ERR_BAD_SHAPE: [_pool_channels_differ, _conv_channels_differ, _depthwise_filter_batch,
                      _transpose_conv_channels_differ],
    R.ERR_TOO_LARGE: [_pool_too_much_work, _resize_nearest_too_large, _relu_too_large, _transpose_too_large],
    R.ERR_BAD_PARAM: [_conv_kernel_too_large, _transpose_conv_kernel_too_large],
    R.ERR_BAD_QUANT: [_add_shift_out_of_range, _conv_requant_out_of_range, _sub_shift_out_of_range,
                      _transpose_conv_16x8_shift_too_large],
}


def _patch(table: bytes, command: int, offset: int, fmt: str, *values) -> bytes:
    data, pos = bytearray(table), R.TABLE_HEADER_BYTES
    for _ in range(command):
        pos += struct.unpack_from("<H", data, pos + 2)[0]
    struct.pack_into(fmt, data, pos + offset, *values)
    return bytes(data)


def _conv_at(table: bytes) -> int:
    """Index of the table's first CONV2D command (KWS's first layer, after the DMAs that pad its input)."""
    return next(k for k, c in enumerate(C.decode(table)) if type(c) is C.Conv2D)


# code -> a change to KWS's first NPU table (its first CONV2D, and the DWCONV2D after it) that reaches it.
TABLES = {
    R.ERR_TABLE_MAGIC: lambda t: b"XTBL" + t[4:],
    R.ERR_TABLE_VERSION: lambda t: t[:4] + b"\x02\x00" + t[6:],
    R.ERR_TABLE_SIZE: lambda t: t + bytes(8),
    R.ERR_BAD_OPCODE: lambda t: _patch(t, _conv_at(t) + 1, 0, "<B", 0x7E),
    R.ERR_CMD_SIZE: lambda t: _patch(t, _conv_at(t) + 1, 2, "<H", 144),
    R.ERR_BAD_REGION: lambda t: _patch(t, _conv_at(t) + 1, 8, "<B", 9),
    # output channels != weights' channels
    R.ERR_BAD_SHAPE: lambda t: _patch(t, _conv_at(t) + 1, 40 + 8 + 6, "<H", 7),
    R.ERR_BAD_PARAM: lambda t: _patch(t, _conv_at(t), 120, "<H", 0),  # stride 0
    R.ERR_ADDRESS_RANGE: lambda t: _patch(t, _conv_at(t), 8 + 4, "<I", 0xFFFFFF00),
    R.ERR_TOO_LARGE: lambda t: _patch(_patch(t, _conv_at(t), 8 + 8, "<4H", 1, 1024, 1024, 8), _conv_at(t), 8 + 16,
                                      "<4I", 1024 * 1024 * 8, 1024 * 8, 8, 1),  # an 8 MiB input
    R.ERR_BAD_QUANT: None,  # below: an ADD field (static) and a channel record (read at run time)
    R.ERR_NO_END: lambda t: t[:8] + struct.pack("<I", struct.unpack_from("<I", t, 8)[0] - 1) + t[12:],
    R.ERR_BAD_WEIGHTS: None,  # below: a compressed stream that does not decode
    R.ERR_BAD_INDEX: None,  # below: a GATHER_HW index map naming a row outside its source
}

# code -> why no compiled table can reach it (the test checks what can be checked of the argument).
UNREACHABLE = {
    R.ERR_BUS: "every descriptor lies in its region (weights blob or arena, the proof checks it) and the driver "
               "points region 0 at the blob in flash and region 1 at the arena in SRAM, both mapped; outputs go "
               "to the arena only (writable)",
    R.ERR_ABORTED: "only CTRL.RESET during a run ends it so; the driver writes RESET only after its poll limit "
                   "(a time-out, reported as EDGESDK_NPU_ERR_TIMEOUT), never a table",
    R.ERR_NO_BUS: "the model's own state: START with no bus attached; every emulator and Renode binding attaches one",
    R.ERR_NO_MEMORY: "the host failing to allocate a buffer the limits bound (an operand is at most 4 MiB)",
}


@pytest.fixture(scope="module")
def kws_npu():
    return compile_model(model_path("kws"), BuildOptions(target="npu,c"))


def _proof_refuses(compiled, table: bytes, fragment: str) -> None:
    original = compiled.executor.target_data["npu"][0].data
    compiled.executor.target_data["npu"][0].data = table
    try:
        with pytest.raises(VerificationError) as err:
            verify_build(compiled)
        assert fragment in str(err.value), str(err.value)
    finally:
        compiled.executor.target_data["npu"][0].data = original


ALL_CODES = sorted(code for code in R.ERROR_NAMES if code != R.ERR_NONE)


def test_every_error_code_is_covered():
    covered = set(MODELS) | set(TABLES) | set(UNREACHABLE)
    assert covered == set(ALL_CODES), sorted(R.error_name(c) for c in set(ALL_CODES) - covered)


@pytest.mark.parametrize("code", ALL_CODES, ids=[R.error_name(c) for c in ALL_CODES])
def test_npu_error_is_refused_at_build_time_or_unreachable(code, kws_npu, tmp_path):
    name = R.error_name(code)
    for make in MODELS.get(code, []):
        try:
            op, path = _op(make(), tmp_path)
        except ModelError:  # the op layer refuses the file itself (an inconsistent op): refused at build time
            with pytest.raises(ModelError):
                compile_model(tmp_path / "m.tflite", BuildOptions(target="npu"))
            continue
        assert _naive_error(op) == code, (make.__name__, R.error_name(_naive_error(op)))
        ok, reason = NPU_SUPPORT.check(op)
        assert not ok, make.__name__
        assert not reason.startswith("constraint_commands_accepted"), (make.__name__, reason)
        with pytest.raises(UnsupportedOpError):  # nothing else may take it: the NPU is the only target
            compile_model(path, BuildOptions(target="npu"))
    table = kws_npu.executor.target_data["npu"][0].data
    verify_build(kws_npu)
    assert validate.check_table(table)[0] == R.ERR_NONE
    if TABLES.get(code) is not None:
        bad = TABLES[code](table)
        assert validate_table(bad, (0x20000000, 0x80000000))[0] == code  # the C model agrees it is this error
        _proof_refuses(kws_npu, bad, f"with {name} at")
    elif code == R.ERR_BAD_QUANT:
        add = C.encode([C.Add(C.TensorDesc.dense(1, 0, (1, 1, 1, 4)), C.TensorDesc.dense(1, 0, (1, 1, 1, 4)),
                              C.TensorDesc.dense(1, 0, (1, 1, 1, 4)), input1_shift=31), C.End()])
        assert validate_table(add)[0] == code
        _proof_refuses(kws_npu, add, "with BAD_QUANT at command 0")
        ref = _first_conv(table).params
        blob = kws_npu.executor.blobs["npu_weights"].data
        saved = bytes(blob[ref.offset:ref.offset + 12])
        struct.pack_into("<i", blob, ref.offset + 4, -1)  # channel 0's multiplier: a run would stop here
        try:
            with pytest.raises(VerificationError, match="multiplier -1"):
                verify_build(kws_npu)
        finally:
            blob[ref.offset:ref.offset + 12] = saved
    elif code == R.ERR_BAD_WEIGHTS:  # a compressed stream whose header says one byte more than its tensor
        conv = next(c for c in C.decode(table) if isinstance(c, C.Conv2D) and c.weight_stream_bytes)
        blob = kws_npu.executor.blobs["npu_weights"].data
        saved = bytes(blob[conv.weights.offset:conv.weights.offset + 8])
        struct.pack_into("<I", blob, conv.weights.offset + 4, struct.unpack_from("<I", saved, 4)[0] + 1)
        try:
            with pytest.raises(VerificationError, match="does not decode to the"):
                verify_build(kws_npu)
        finally:
            blob[conv.weights.offset:conv.weights.offset + 8] = saved
    elif code == R.ERR_BAD_INDEX:
        _bad_index_map_is_refused(kws_npu, table)
    else:
        assert code in UNREACHABLE or code in MODELS


def _first_conv(table: bytes):
    """The table's first convolution command (KWS's first layer comes after the DMA that pads its input)."""
    return next(c for c in C.decode(table) if isinstance(c, C.Conv2D))


def _bad_index_map_is_refused(compiled, table: bytes) -> None:
    """A GATHER_HW over KWS's first convolution's input (its 10 kernel rows folded into channels: a 25-row
    view of the padded input) whose row map (in the blob, where its channel records were) names rows 0..9,
    then 0xFFFF: the NPU would stop with BAD_INDEX, the proof refuses it."""
    from edgesdk.targets.npu.hw.model import run_table

    conv = _first_conv(table)
    src = conv.input
    dst = C.TensorDesc.dense(1, conv.output.offset, (1, 11, 2, src.shape[3]))
    gather = C.encode([C.GatherHW(src, dst, conv.params), C.End()])
    blob = compiled.executor.blobs["npu_weights"].data
    saved = bytes(blob[conv.params.offset:conv.params.offset + 26])
    struct.pack_into("<13H", blob, conv.params.offset, *range(10), 0xFFFF, 0, 1)
    try:
        assert validate_table(gather)[0] == R.ERR_NONE  # only the map's content is wrong: found when it runs
        flash, sram = 0x20000000, 0x80000000
        run = run_table(gather, {flash: bytearray(blob), sram: bytearray(compiled.plan.arena_bytes)}, [flash, sram])
        assert run.error_code == R.ERR_BAD_INDEX
        _proof_refuses(compiled, gather, "index map names row(s) [65535]")
    finally:
        blob[conv.params.offset:conv.params.offset + 26] = saved


def test_the_issue_model_is_refused_before_codegen(tmp_path):
    """The item 8 model: a pool 8 -> 4 channels. The op layer refuses it as a malformed model (exit code 2) before
    any target sees it, instead of firmware that always fails."""
    path = tmp_path / "m.tflite"
    path.write_bytes(_pool_channels_differ())
    with pytest.raises(ModelError, match="pools 8 input channels into 4 output channels") as refused:
        compile_model(path, BuildOptions(target="npu,c"))
    assert refused.value.exit_code == 2


# -- 3. the build-time proof covers the commands of format 1.2 ---------------------------------------------
# Corpus models (tests/models/ops) whose NPU tables hold every command kind of version 1.2, int8 and int16.
PROOF_MODELS = ("conv_3x3_same_int16", "transpose_conv_s2_valid_bias_int8", "transpose_conv_s2_same_int16",
                "sub_bcast_ch_int16", "minimum_bcast_both_int8", "maximum_same4d_int16", "logistic_rank4_int8",
                "prelu_channel_int8", "resize_nearest_x2_int8", "transpose_nhwc_nchw_int16",
                "strided_slice_neg_stride_int8", "concat_axis1_3in_int8", "split_last_int16", "pad_hw_int8")


def _source(command):
    """The (first) input descriptor of a command."""
    return next(getattr(command, f) for f in ("input", "input1", "src") if hasattr(command, f))


def _kind(command) -> str:
    return f"{type(command).__name__} {'int16' if _source(command).dtype == R.DTYPE_INT16 else 'int8'}"


def _param_ref_field(command):
    return {C.Table: "table", C.GatherHW: "maps"}.get(type(command), "params" if isinstance(command, C.Conv2D) else None)


def _output_field(command) -> str:
    return "dst" if isinstance(command, (C.DmaCopy, C.GatherHW)) else "output"


def _refused(compiled, index: int, table: bytes) -> str:
    """The proof's message for the build with its table `index` replaced ("" if the proof passes)."""
    tables = compiled.executor.target_data["npu"]
    original, tables[index].data = tables[index].data, table
    try:
        verify_build(compiled)
        return ""
    except VerificationError as err:
        return str(err)
    finally:
        tables[index].data = original


@pytest.fixture(scope="module")
def proof_builds():
    builds = {}
    for name in PROOF_MODELS:
        builds[name] = compile_model(corpus.CORPUS / f"{name}.tflite", BuildOptions(target="npu,c"))
    return builds


def test_the_proof_passes_and_refuses_every_new_command_kind(proof_builds):
    """Each 1.2 command of real builds passes the proof; moved past its region (its output, its table, index
    maps or channel records) it is refused, naming the command."""
    kinds, negative_strides = set(), 0
    for name, compiled in proof_builds.items():
        counts = verify_build(compiled)
        assert counts["npu_commands"] > 1, name
        arena = compiled.plan.arena_bytes
        blob = len(compiled.executor.blobs["npu_weights"].data) if "npu_weights" in compiled.executor.blobs else 0
        for index, table in enumerate(compiled.executor.target_data["npu"]):
            commands = C.decode(table.data)
            for number, command in enumerate(commands[:-1]):
                kinds.add(_kind(command))
                out = _output_field(command)
                negative_strides += any(s < 0 for s in _source(command).strides)
                moved = dataclasses.replace(command, **{out: dataclasses.replace(getattr(command, out), offset=arena)})
                bad = C.encode(commands[:number] + [moved] + commands[number + 1:])
                assert f"command {number}" in _refused(compiled, index, bad), (name, number, command)
                ref = _param_ref_field(command)
                if ref is not None:
                    moved = dataclasses.replace(command, **{ref: C.ParamRef(0, blob)})
                    bad = C.encode(commands[:number] + [moved] + commands[number + 1:])
                    assert f"command {number}" in _refused(compiled, index, bad), (name, number, ref)
    want = {"Conv2D int16", "TransposeConv2D int8", "TransposeConv2D int16", "Sub int16", "Minimum int8",
            "Maximum int16", "Table int8", "Table int16", "GatherHW int8", "DmaCopy int8", "DmaCopy int16"}
    assert want <= kinds, sorted(want - kinds)
    assert negative_strides > 0  # STRIDED_SLICE with a negative stride walks its source backwards


MODEL_CODES = [c for c in ALL_CODES if c in MODELS]


@pytest.mark.parametrize("code", MODEL_CODES, ids=[R.error_name(c) for c in MODEL_CODES])
def test_the_generic_constraint_alone_refuses_what_the_npu_would(code, tmp_path):
    """The named constraints refuse each model above first; `constraint_commands_accepted` must refuse it on its own
    too, whatever named rule a later change relaxes: it lowers the op and runs the NPU's static checks (or, for
    errors only a run finds, the op cannot even be lowered into a table the checks accept)."""
    from edgesdk.targets.npu.supported import constraint_commands_accepted

    refused = 0
    for make in MODELS[code]:
        try:
            op, _ = _op(make(), tmp_path)
        except ModelError:
            continue  # the op layer refuses the file itself
        ok, reason = constraint_commands_accepted(op, ("ref", "tflm"))
        if make in RECORDS_READ_AT_RUN_TIME:  # not in the table: the named rule and the proof's record check
            assert not ok or not NPU_SUPPORT.check(op)[0], make.__name__
            continue
        assert not ok, (make.__name__, R.error_name(code))
        refused += 1
    assert refused, R.error_name(code)


# Per-channel records live in the weights blob, which the NPU reads while it runs: a static check of the table
# cannot see them. constraint_requant_representable refuses such ops, and the proof checks every record written.
RECORDS_READ_AT_RUN_TIME = {_conv_requant_out_of_range, _transpose_conv_16x8_shift_too_large}
