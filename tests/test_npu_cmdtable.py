"""NPU-1 command-table format: encode/decode round trip, datasheet byte offsets, framing errors, and the
register numbers of registers.py against the C headers (npu_model.h, npu_driver.h)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import registers as R

REPO = Path(__file__).resolve().parents[1]


def desc(region, offset, shape, strides=None):
    shape = C.to_nhwc(shape)
    return C.TensorDesc(region, offset, shape, strides or C.dense_strides(shape))


def sample_commands() -> list:
    """One command of every opcode, every field away from its default."""
    x = desc(1, 64, (1, 9, 7, 5), (1000, 100, 10, 1))
    y = desc(1, 4096, (1, 5, 4, 8))
    return [
        C.DmaCopy(desc(0, 16, (2, 3, 4, 5)), desc(1, 128, (2, 3, 4, 5), (0x10000, 512, 64, 2))),
        C.Conv2D(x, y, desc(0, 32, (8, 3, 2, 5)), C.ParamRef(0, 1024), input_offset=17, weight_offset=-140,
                 output_offset=-9, act_min=-100, act_max=99, stride_h=2, stride_w=3, dilation_h=4, dilation_w=5,
                 pad_top=6, pad_left=7, rounding=R.ROUNDING_SINGLE, per_tensor_params=True),
        C.DepthwiseConv2D(desc(1, 0, (1, 9, 9, 4)), desc(1, 512, (1, 5, 5, 12)), desc(0, 64, (1, 3, 3, 12)),
                          C.ParamRef(2, 12), input_offset=-3, output_offset=5, stride_h=2, stride_w=2, pad_top=1,
                          pad_left=1, depth_multiplier=3),
        C.MaxPool2D(x, y, filter_h=3, filter_w=2, stride_h=2, stride_w=1, pad_top=1, pad_left=1, act_min=-5, act_max=6),
        C.AvgPool2D(x, y, filter_h=25, filter_w=5, stride_h=25, stride_w=5, floor_rounding=True),
        C.Add(x, desc(1, 7, (1, 9, 7, 5), (0, 0, 0, 1)), x, input1_offset=128, input2_offset=-127, output_offset=-128,
              act_min=0, act_max=127, input1_multiplier=1 << 30, input1_shift=-1, input2_multiplier=1234567890,
              input2_shift=-3, output_multiplier=2000000000, output_shift=-20, left_shift=20,
              rounding=R.ROUNDING_SINGLE),
        C.Mul(x, x, y, input1_offset=1, input2_offset=2, output_offset=3, output_multiplier=1 << 30, output_shift=-8),
        C.End(),
    ]


def test_round_trip_every_opcode():
    commands = sample_commands()
    data = C.encode(commands)
    decoded = C.decode(data)
    assert decoded == commands
    assert [type(c) for c in decoded] == [type(c) for c in commands]
    assert C.encode(decoded) == data


def test_commands_without_fields_of_their_own_behave_as_their_parents_dataclass():
    """TransposeConv2D, Sub, Minimum and Maximum are not decorated again (cmdtable.Command): their fields,
    constructor, repr, equality and round trip are their parent's, under their own name and opcode."""
    import dataclasses

    x = desc(1, 64, (1, 9, 7, 5))
    for child, parent, kwargs in [
            (C.TransposeConv2D, C.Conv2D, dict(input=x, output=x, weights=desc(0, 32, (8, 3, 2, 5)),
                                               params=C.ParamRef(0, 1024), stride_h=2, stride_w=2)),
            (C.Sub, C.Add, dict(input1=x, input2=x, output=x, input1_multiplier=1 << 30, left_shift=20)),
            (C.Minimum, C.Mul, dict(input1=x, input2=x, output=x, output_offset=3)),
            (C.Maximum, C.Mul, dict(input1=x, input2=x, output=x, act_min=-5))]:
        assert dataclasses.is_dataclass(child) and child.opcode != parent.opcode
        assert [f.name for f in dataclasses.fields(child)] == [f.name for f in dataclasses.fields(parent)]
        a, b = child(**kwargs), parent(**kwargs)
        assert repr(a) == child.__name__ + repr(b)[len(parent.__name__):]
        assert a == child(**kwargs) and a != b and a != dataclasses.replace(a, output_offset=7)
        assert dataclasses.replace(a, note="x") == a  # note does not compare, as in the parent
        assert C.decode(C.encode([a, C.End()])) == [a, C.End()]


def test_table_header_layout():
    data = C.encode(sample_commands())
    magic, major, minor, count, total = struct.unpack_from("<IHHII", data, 0)
    assert data[:4] == b"NTBL" and magic == R.TABLE_MAGIC
    assert (major, minor) == (R.VERSION_MAJOR, R.VERSION_MINOR)
    assert count == len(sample_commands()) and total == len(data)


def test_command_sizes_match_datasheet():
    sizes = {C.End: 8, C.DmaCopy: 72, C.Conv2D: 136, C.DepthwiseConv2D: 136, C.MaxPool2D: 88, C.AvgPool2D: 88,
             C.Add: 144, C.Mul: 144}
    for cmd in sample_commands():
        assert len(cmd.encode()) == sizes[type(cmd)]


def test_conv_field_offsets_match_datasheet():
    conv = sample_commands()[1]
    b = conv.encode()
    assert b[0] == R.OP_CONV2D and b[1] == R.ROUNDING_SINGLE
    assert struct.unpack_from("<HHH", b, 2) == (136, R.FLAG_PER_TENSOR_PARAMS, 0)
    # input descriptor at 8: region, dtype, reserved, offset, shape, strides
    assert struct.unpack_from("<BBHI4H4I", b, 8) == (1, 0, 0, 64, 1, 9, 7, 5, 1000, 100, 10, 1)
    assert struct.unpack_from("<I", b, 40 + 4)[0] == 4096  # output offset
    assert struct.unpack_from("<4H", b, 72 + 8) == (8, 3, 2, 5)  # weights shape
    assert struct.unpack_from("<B3xI", b, 104) == (0, 1024)  # params ref
    assert struct.unpack_from("<hhhbb", b, 112) == (17, -140, -9, -100, 99)
    assert struct.unpack_from("<8H", b, 120) == (2, 3, 4, 5, 6, 7, 1, 0)


def test_elementwise_and_pool_field_offsets_match_datasheet():
    add = sample_commands()[5].encode()
    assert struct.unpack_from("<hhhbb", add, 104) == (128, -127, -128, 0, 127)
    assert struct.unpack_from("<6i", add, 112) == (1 << 30, -1, 1234567890, -3, 2000000000, -20)
    assert add[136] == 20 and add[137:144] == bytes(7)
    pool = sample_commands()[4].encode()
    assert struct.unpack_from("<6Hbb", pool, 72) == (25, 5, 25, 5, 0, 0, -128, 127)
    assert struct.unpack_from("<H", pool, 4)[0] == R.FLAG_AVG_FLOOR


def test_encode_requires_end_last():
    body = sample_commands()[:-1]
    with pytest.raises(C.CommandTableError):
        C.encode(body)
    with pytest.raises(C.CommandTableError):
        C.encode([C.End()] + sample_commands())


def test_encode_rejects_out_of_range_fields():
    conv = sample_commands()[1]
    conv.act_min = -129
    with pytest.raises(C.CommandTableError):
        C.encode([conv, C.End()])


@pytest.mark.parametrize("mutate, message", [
    (lambda d: b"XXXX" + d[4:], "magic"),
    (lambda d: d[:4] + struct.pack("<H", 2) + d[6:], "version"),
    (lambda d: d + b"\0" * 8, "bytes"),
    (lambda d: d[:16] + b"\x7f" + d[17:], "opcode"),
    (lambda d: d[:18] + struct.pack("<H", 80) + d[20:], "size"),
])
def test_decode_rejects_bad_framing(mutate, message):
    data = C.encode(sample_commands())
    with pytest.raises(C.CommandTableError, match=message):
        C.decode(mutate(data))


def test_dense_descriptor_and_compact_bytes():
    d = C.TensorDesc.dense(1, 0, (3, 4))
    assert d.shape == (1, 1, 3, 4) and d.strides == (12, 12, 4, 1)
    assert d.compact_bytes == 12
    assert desc(1, 0, (1, 8, 8, 16), (0, 0, 0, 1)).compact_bytes == 16


def test_rounding_codes_match_arith_header():
    header = (REPO / "edgesdk" / "kernels" / "edgesdk_arith.h").read_text()
    assert f"EDGESDK_ROUNDING_DOUBLE {R.ROUNDING_DOUBLE}" in header
    assert f"EDGESDK_ROUNDING_SINGLE {R.ROUNDING_SINGLE}" in header
    assert f"EDGESDK_ROUNDING_FP64 {R.ROUNDING_FP64}" in header
    assert [C.rounding_code(n) for n in ("double", "single", "fp64")] == [R.ROUNDING_DOUBLE, R.ROUNDING_SINGLE, R.ROUNDING_FP64]
    with pytest.raises(C.CommandTableError):
        C.rounding_code("lut")


def test_describe_lists_commands():
    lines = C.describe(sample_commands())
    assert len(lines) == len(sample_commands()) and lines[1].startswith("Conv2D(input=r1+64[1, 9, 7, 5]")
    assert "floor_rounding=True" in lines[4]


# -- register numbers: registers.py is the Python source, the C headers must agree ----------------------------
DEFINE = re.compile(r"^#define\s+(\w+)\s+\(?(-?(?:0x[0-9A-Fa-f]+|\d+))u?\)?\s*(?:/\*.*)?$", re.M)


def c_defines(path: Path, prefix: str) -> dict:
    return {m.group(1)[len(prefix):]: int(m.group(2), 0) for m in DEFINE.finditer(path.read_text())
            if m.group(1).startswith(prefix)}


def test_model_header_matches_registers_py():
    defines = c_defines(REPO / "edgesdk" / "targets" / "npu" / "hw" / "model" / "npu_model.h", "NPU_")
    assert len(defines) > 80
    missing = [name for name in defines if not hasattr(R, name)]
    assert not missing, f"npu_model.h defines without a registers.py constant: {missing}"
    wrong = {name: (value, getattr(R, name)) for name, value in defines.items() if getattr(R, name) != value}
    assert not wrong, f"npu_model.h differs from registers.py: {wrong}"
    python_ints = {k for k, v in vars(R).items() if k.isupper() and isinstance(v, int)}
    assert python_ints <= set(defines), f"registers.py constants missing in npu_model.h: {python_ints - set(defines)}"


def test_driver_header_matches_registers_py():
    defines = c_defines(REPO / "edgesdk" / "targets" / "npu" / "hal" / "npu_driver.h", "EDGESDK_NPU_")
    hardware = {k: v for k, v in defines.items() if k.startswith(("REG_", "CTRL_", "STATUS_", "IRQ_", "ID_", "VERSION_", "NUM_"))}
    assert len(hardware) >= 20
    wrong = {k: (v, getattr(R, k, None)) for k, v in hardware.items() if getattr(R, k, None) != v}
    assert not wrong, f"npu_driver.h differs from registers.py: {wrong}"


def test_error_codes_are_named_and_distinct():
    codes = {v for k, v in vars(R).items() if k.startswith("ERR_")}
    assert codes == set(R.ERROR_NAMES)
    assert all(0 <= c <= 0xFF for c in codes)
    assert R.error_name(R.ERR_BUS) == "BUS"
