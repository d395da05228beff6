"""NPU-1 command tables: dataclasses for commands and tensor descriptors, binary encode/decode.

The binary format (little endian, versioned) is specified in docs/npu-datasheet.md; the C model
(edgesdk/targets/npu/hw/model/npu_model.c) is the executable definition. `encode(commands)` builds a whole table
(header + commands, the last one `End`), `decode(data)` parses one back into the same dataclasses.
"""

from __future__ import annotations

import functools
import itertools
import struct
from typing import ClassVar

from . import registers as R
from ....dataclass_cache import dataclass, field, fields

_HEADER = struct.Struct("<IHHII")  # magic, version major, minor, number of commands, table bytes
_CMD_HEADER = struct.Struct("<BBHHH")  # opcode, rounding, size, flags, reserved
_DESC = struct.Struct("<BBHI4H4i")  # region, dtype, reserved, offset, shape[4], strides[4] (signed)
_PARAM_REF = struct.Struct("<B3xI")  # region, 3 reserved bytes, offset
# offsets, act range (low bytes), strides, dilations, pads, depth mult., act range high bytes (int16 outputs)
_CONV_TAIL = struct.Struct("<hhhbb7HBB")
_POOL_TAIL = struct.Struct("<6HbbBB")  # filter h/w, stride h/w, pad top/left, act min/max, their high bytes
_ELT_TAIL = struct.Struct("<hhhbb6iBBB5x")  # offsets, act range, 3 multiplier/shift pairs, left shift, high bytes
_TABLE_TAIL = struct.Struct("<HHI")  # table count, reserved, reserved

ROUNDING_CODES = {"double": R.ROUNDING_DOUBLE, "single": R.ROUNDING_SINGLE, "fp64": R.ROUNDING_FP64}


class CommandTableError(ValueError):
    """A table that cannot be encoded or decoded (a compiler bug or a corrupt table, not a user error)."""


DTYPE_CODES = {"int8": R.DTYPE_INT8, "int16": R.DTYPE_INT16}
DTYPE_RANGES = {R.DTYPE_INT8: (-128, 127), R.DTYPE_INT16: (-32768, 32767)}


def dtype_code(dtype) -> int:
    """'int8'/'int16' (IR tensor types) or 0/1 -> the descriptor's dtype field."""
    if dtype in DTYPE_CODES:
        return DTYPE_CODES[dtype]
    if dtype in R.DTYPE_BYTES:
        return int(dtype)
    raise CommandTableError(f"the NPU has no {dtype} operands (it has {', '.join(DTYPE_CODES)})")


def act_fields(act_min: int, act_max: int, dtype: int) -> tuple:
    """The clamp as encoded: (low byte of min, of max) as i8, then the high bytes (int16 outputs; 0 for int8)."""
    if dtype == R.DTYPE_INT8:
        return act_min, act_max, 0, 0
    return (_signed8(act_min & 0xFF), _signed8(act_max & 0xFF), (act_min >> 8) & 0xFF, (act_max >> 8) & 0xFF)


def act_value(low: int, high: int, dtype: int) -> int:
    """A clamp bound from its encoded bytes (inverse of act_fields); int8 outputs require a zero high byte."""
    if dtype == R.DTYPE_INT8:
        if high:
            raise CommandTableError(f"an int8 output's clamp has high byte {high:#04x} (must be 0)")
        return low
    value = (low & 0xFF) | (high << 8)
    return value - 0x10000 if value & 0x8000 else value


def _signed8(v: int) -> int:
    return v - 0x100 if v & 0x80 else v


def rounding_code(rounding) -> int:
    """'double'/'single'/'fp64' (the compiler's names, edgesdk.ir.rounding) or 0/1/2 -> the rounding field."""
    if rounding in ROUNDING_CODES:
        return ROUNDING_CODES[rounding]
    if rounding in ROUNDING_CODES.values():
        return int(rounding)
    raise CommandTableError(f"the NPU has no rounding {rounding!r} (it has {', '.join(ROUNDING_CODES)})")


# -- operands ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TensorDesc:
    """An int8 or int16 tensor in memory: element [n,h,w,c] at REGION_BASE[region] + offset + sum(index[i] *
    strides[i]).

    Strides are in bytes and signed: a stride of 0 repeats one element along that dimension (broadcast), a
    negative one walks backwards; a slice of a larger tensor is a descriptor with the larger tensor's strides.
    """

    region: int
    offset: int
    shape: tuple  # (N, H, W, C)
    strides: tuple  # bytes per step of N, H, W, C
    dtype: int = R.DTYPE_INT8

    @classmethod
    def dense(cls, region: int, offset: int, shape, dtype=R.DTYPE_INT8) -> "TensorDesc":
        """A contiguous NHWC tensor; shapes of rank < 4 are padded with leading 1s."""
        shape = to_nhwc(shape)
        code = dtype_code(dtype)
        size = R.DTYPE_BYTES[code]
        _, h, w, c = shape  # dense_strides(shape) times the element size, spelled out (built for every operand)
        # the fields set as with_fields sets a copy's (~500 descriptors a compile; the frozen __init__ sets each
        # through object.__setattr__, a third of this function's time)
        desc = object.__new__(cls)
        desc.__dict__.update(region=region, offset=offset, shape=shape,
                             strides=(h * w * c * size, w * c * size, c * size, size), dtype=code)
        return desc

    @property
    def element_bytes(self) -> int:
        return R.DTYPE_BYTES[self.dtype]

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def compact_bytes(self) -> int:
        """Bytes the NPU reads for this operand: broadcast (stride 0) dimensions are read once."""
        n, h, w, c = self.shape
        sn, sh, sw, sc = self.strides
        return (R.DTYPE_BYTES[self.dtype] * (n if sn else 1) * (h if sh else 1) * (w if sw else 1)
                * (c if sc else 1))

    def encode(self) -> bytes:
        return _DESC.pack(self.region, self.dtype, 0, self.offset, *self.shape, *self.strides)

    @classmethod
    def decode(cls, data: bytes, pos: int) -> "TensorDesc":
        region, dtype, _reserved, offset, *rest = _DESC.unpack_from(data, pos)
        return cls(region, offset, tuple(rest[:4]), tuple(rest[4:]), dtype)


def to_nhwc(shape) -> tuple:
    shape = tuple(map(int, shape))
    rank = len(shape)
    if rank == 4:
        return shape
    if rank > 4:
        raise CommandTableError(f"shape {list(shape)} has rank > 4")
    return (1,) * (4 - rank) + shape


def dense_strides(shape) -> tuple:
    n, h, w, c = shape
    return (h * w * c, w * c, c, 1)


@dataclass(frozen=True)
class ParamRef:
    """Where a conv's per-channel records {int32 bias, int32 multiplier, int32 shift} start."""

    region: int
    offset: int

    def encode(self) -> bytes:
        return _PARAM_REF.pack(self.region, self.offset)

    @classmethod
    def decode(cls, data: bytes, pos: int) -> "ParamRef":
        return cls(*_PARAM_REF.unpack_from(data, pos))


def pack_channel_params(bias, multipliers, shifts, wide: bool = False) -> bytes:
    """The channel-parameter array a ParamRef points at, rounding 0 or 1: 12 bytes per output channel (int32
    bias), or 16 (`wide`, 16x8 layers: int64 bias)."""
    if not len(bias) == len(multipliers) == len(shifts):
        raise CommandTableError("bias, multipliers and shifts differ in length")
    record = "<" + ("qii" if wide else "iii") * len(bias)  # one call: '<' packs records back to back, unpadded
    fields = list(itertools.chain.from_iterable(zip(bias, multipliers, shifts)))
    try:
        return struct.pack(record, *fields)  # integers (Python's or numpy's) as they are
    except struct.error:  # anything else (a float holding an integer) as int() makes it, or int()'s own error
        return struct.pack(record, *(int(v) for v in fields))


def pack_channel_params_fp64(bias, scales, wide: bool = False) -> bytes:
    """Channel records for rounding FP64: int32 (int64 when `wide`) bias, then the real scale as a binary64."""
    if len(bias) != len(scales):
        raise CommandTableError("bias and scales differ in length")
    fields = [0] * (2 * len(bias))  # one pack call for every record, as pack_channel_params (AD: ~1,700 channels)
    fields[0::2] = map(int, bias)
    fields[1::2] = map(float, scales)
    return struct.pack("<" + ("qd" if wide else "id") * len(bias), *fields)


def pack_table(values, dtype) -> bytes:
    """A TABLE command's table: 256 int8 entries in TFLite's order (entry (uint8)x holds f(x)), or 513 int16
    ones (base values of x = -32768 + 128 i, and one more for the last interpolation)."""
    code = dtype_code(dtype)
    values = [int(v) for v in values]
    count = R.TABLE_ENTRIES_INT16 if code == R.DTYPE_INT16 else R.TABLE_ENTRIES_INT8
    if len(values) % count:
        raise CommandTableError(f"a table of {len(values)} entries is not a whole number of {count}-entry tables")
    return struct.pack(f"<{len(values)}{'h' if code == R.DTYPE_INT16 else 'b'}", *values)


def pack_gather_maps(rows, cols) -> bytes:
    """A GATHER_HW command's maps: the source row of each destination row, then the source column of each
    destination column, u16 each."""
    values = [int(v) for v in list(rows) + list(cols)]
    return struct.pack(f"<{len(values)}H", *values)


# -- commands ------------------------------------------------------------------------------------------------
@dataclass
class Command:
    """Base of all commands; `note` is a comment for listings (not encoded).

    A command with no fields of its own (TransposeConv2D, Sub, Minimum, Maximum) is not decorated again: it
    inherits its parent's generated `__init__`, `__repr__` and `__eq__`, which go by the instance's class, so
    it behaves as a dataclass of the same fields; each decoration would build them anew with `exec` at import
    (~0.4 ms of every fresh process's start-up)."""

    opcode: ClassVar[int] = 0
    size: ClassVar[int] = 0

    def flags(self) -> int:
        return 0

    def rounding_field(self) -> int:
        return 0

    def encode_body(self) -> bytes:
        return b""

    def encode(self) -> bytes:
        body = self.encode_body()
        data = _CMD_HEADER.pack(self.opcode, self.rounding_field(), self.size, self.flags(), 0) + body
        if len(data) != self.size:
            raise CommandTableError(f"{type(self).__name__} encodes to {len(data)} bytes, expected {self.size}")
        return data


@dataclass
class End(Command):
    """Completion: the table ends successfully, STATUS.DONE and IRQ_STATUS.DONE are set."""

    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_END
    size: ClassVar[int] = R.CMD_BYTES_END

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        return cls()


@dataclass
class DmaCopy(Command):
    """dst[n,h,w,c] = src[n,h,w,c]; same shapes (zero source strides broadcast)."""

    src: TensorDesc
    dst: TensorDesc
    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_DMA_COPY
    size: ClassVar[int] = R.CMD_BYTES_DMA_COPY

    def encode_body(self) -> bytes:
        return self.src.encode() + self.dst.encode()

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        return cls(TensorDesc.decode(data, pos + 8), TensorDesc.decode(data, pos + 40))


@dataclass
class Conv2D(Command):
    """out = clamp(requant(sum((x + input_offset) * (w + weight_offset)) + bias) + output_offset).

    weights: [C_out, KH, KW, C_in] (OHWI). A fully connected layer is a 1x1 Conv2D over [N, 1, 1, K].
    weight_stream_bytes > 0: the weights are a compressed stream of that many bytes at the weights offset
    (edgesdk/targets/npu/hw/weight_codec.py) that decodes to the dense tensor; the descriptor's stride words carry
    the stream size instead of strides (flag COMPRESSED_WEIGHTS).
    """

    input: TensorDesc
    output: TensorDesc
    weights: TensorDesc
    params: ParamRef
    input_offset: int = 0
    weight_offset: int = 0
    output_offset: int = 0
    act_min: int = -128
    act_max: int = 127
    stride_h: int = 1
    stride_w: int = 1
    dilation_h: int = 1
    dilation_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    rounding: int = R.ROUNDING_DOUBLE
    per_tensor_params: bool = False
    weight_stream_bytes: int = 0
    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_CONV2D
    size: ClassVar[int] = R.CMD_BYTES_CONV

    depth_multiplier_field: ClassVar[bool] = False

    def flags(self) -> int:
        return ((R.FLAG_PER_TENSOR_PARAMS if self.per_tensor_params else 0) |
                (R.FLAG_COMPRESSED_WEIGHTS if self.weight_stream_bytes else 0))

    def rounding_field(self) -> int:
        return self.rounding

    def _weights_field(self) -> TensorDesc:
        """The weights descriptor as encoded: compressed, its stride words are (stream bytes, 0, 0, 0)."""
        if not self.weight_stream_bytes:
            return self.weights
        return TensorDesc(self.weights.region, self.weights.offset, self.weights.shape,
                          (self.weight_stream_bytes, 0, 0, 0), self.weights.dtype)

    def _depth_multiplier(self) -> int:
        return 1

    def encode_body(self) -> bytes:
        lo_min, lo_max, hi_min, hi_max = act_fields(self.act_min, self.act_max, self.output.dtype)
        tail = _CONV_TAIL.pack(self.input_offset, self.weight_offset, self.output_offset, lo_min, lo_max,
                               self.stride_h, self.stride_w, self.dilation_h, self.dilation_w, self.pad_top,
                               self.pad_left, self._depth_multiplier(), hi_min, hi_max)
        return self.input.encode() + self.output.encode() + self._weights_field().encode() + self.params.encode() + tail

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        (in_off, w_off, out_off, lo_min, lo_max, sh, sw, dh, dw, pt, pl, dm, hi_min, hi_max) = \
            _CONV_TAIL.unpack_from(data, pos + 112)
        output = TensorDesc.decode(data, pos + 40)
        kwargs = dict(input_offset=in_off, weight_offset=w_off, output_offset=out_off,
                      act_min=act_value(lo_min, hi_min, output.dtype), act_max=act_value(lo_max, hi_max, output.dtype),
                      stride_h=sh, stride_w=sw, dilation_h=dh, dilation_w=dw, pad_top=pt,
                      pad_left=pl, rounding=rounding, per_tensor_params=bool(flags & R.FLAG_PER_TENSOR_PARAMS))
        if cls.depth_multiplier_field:
            kwargs["depth_multiplier"] = dm
        elif dm != 1:
            raise CommandTableError(f"{cls.__name__} at byte {pos} has depth multiplier field {dm} (must be 1)")
        weights = TensorDesc.decode(data, pos + 72)
        if flags & R.FLAG_COMPRESSED_WEIGHTS:
            stream_bytes, *rest = weights.strides
            if any(rest) or stream_bytes <= 0:
                raise CommandTableError(f"compressed weights at byte {pos} have stride words {weights.strides}")
            kwargs["weight_stream_bytes"] = stream_bytes
            weights = TensorDesc.dense(weights.region, weights.offset, weights.shape)
        return cls(TensorDesc.decode(data, pos + 8), output, weights, ParamRef.decode(data, pos + 104), **kwargs)


@dataclass
class DepthwiseConv2D(Conv2D):
    """Depthwise: output channel oc reads input channel oc // depth_multiplier; weights [1, KH, KW, C_out]."""

    depth_multiplier: int = 1
    opcode: ClassVar[int] = R.OP_DEPTHWISE_CONV2D
    depth_multiplier_field: ClassVar[bool] = True

    def _depth_multiplier(self) -> int:
        return self.depth_multiplier


class TransposeConv2D(Conv2D):  # no fields of its own (see Command)
    """The transposed convolution: input pixel (iy, ix) adds (x + input_offset) * (w[oc, ky, kx, :] +
    weight_offset) to output (iy * stride_h - pad_top + ky, ix * stride_w - pad_left + kx); then bias,
    requantization, offset and clamp as Conv2D. Weights [C_out, KH, KW, C_in]; no dilation."""

    opcode: ClassVar[int] = R.OP_TRANSPOSE_CONV2D


@dataclass
class _Pool(Command):
    input: TensorDesc
    output: TensorDesc
    filter_h: int = 1
    filter_w: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    act_min: int = -128
    act_max: int = 127
    size: ClassVar[int] = R.CMD_BYTES_POOL

    def encode_body(self) -> bytes:
        lo_min, lo_max, hi_min, hi_max = act_fields(self.act_min, self.act_max, self.output.dtype)
        tail = _POOL_TAIL.pack(self.filter_h, self.filter_w, self.stride_h, self.stride_w, self.pad_top,
                               self.pad_left, lo_min, lo_max, hi_min, hi_max)
        return self.input.encode() + self.output.encode() + tail

    @classmethod
    def _decode_fields(cls, data, pos) -> dict:
        fh, fw, sh, sw, pt, pl, lo_min, lo_max, hi_min, hi_max = _POOL_TAIL.unpack_from(data, pos + 72)
        output = TensorDesc.decode(data, pos + 40)
        return dict(input=TensorDesc.decode(data, pos + 8), output=output,
                    filter_h=fh, filter_w=fw, stride_h=sh, stride_w=sw, pad_top=pt, pad_left=pl,
                    act_min=act_value(lo_min, hi_min, output.dtype), act_max=act_value(lo_max, hi_max, output.dtype))


@dataclass
class MaxPool2D(_Pool):
    """Max over the window's valid (non-padding) taps, then clamp."""

    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_MAX_POOL

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        return cls(**cls._decode_fields(data, pos))


@dataclass
class AvgPool2D(_Pool):
    """Average over the valid taps (n of them): int8 rule, or floor((sum + n/2) / n) with floor_rounding."""

    floor_rounding: bool = False
    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_AVG_POOL

    def flags(self) -> int:
        return R.FLAG_AVG_FLOOR if self.floor_rounding else 0

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        return cls(**cls._decode_fields(data, pos), floor_rounding=bool(flags & R.FLAG_AVG_FLOOR))


@dataclass
class _Elementwise(Command):
    input1: TensorDesc
    input2: TensorDesc
    output: TensorDesc
    input1_offset: int = 0
    input2_offset: int = 0
    output_offset: int = 0
    act_min: int = -128
    act_max: int = 127
    output_multiplier: int = 0
    output_shift: int = 0
    rounding: int = R.ROUNDING_DOUBLE
    size: ClassVar[int] = R.CMD_BYTES_ELEMENTWISE

    def rounding_field(self) -> int:
        return self.rounding

    def _input_scaling(self) -> tuple:
        return (0, 0, 0, 0, 0)  # input1 multiplier, shift, input2 multiplier, shift, left shift

    def encode_body(self) -> bytes:
        m1, s1, m2, s2, left = self._input_scaling()
        lo_min, lo_max, hi_min, hi_max = act_fields(self.act_min, self.act_max, self.output.dtype)
        tail = _ELT_TAIL.pack(self.input1_offset, self.input2_offset, self.output_offset, lo_min, lo_max,
                              m1, s1, m2, s2, self.output_multiplier, self.output_shift, left, hi_min, hi_max)
        return self.input1.encode() + self.input2.encode() + self.output.encode() + tail

    @classmethod
    def _decode_fields(cls, data, pos, rounding) -> tuple:
        (o1, o2, oo, lo_min, lo_max, m1, s1, m2, s2, mo, so, left, hi_min, hi_max) = _ELT_TAIL.unpack_from(data, pos + 104)
        output = TensorDesc.decode(data, pos + 72)
        common = dict(input1=TensorDesc.decode(data, pos + 8), input2=TensorDesc.decode(data, pos + 40),
                      output=output, input1_offset=o1, input2_offset=o2, output_offset=oo,
                      act_min=act_value(lo_min, hi_min, output.dtype), act_max=act_value(lo_max, hi_max, output.dtype),
                      output_multiplier=mo, output_shift=so, rounding=rounding)
        return common, (m1, s1, m2, s2, left)


@dataclass
class Add(_Elementwise):
    """TFLite int8 ADD: each input (x + offset) << left_shift, rescaled, summed, rescaled, offset, clamped."""

    input1_multiplier: int = 0
    input1_shift: int = 0
    input2_multiplier: int = 0
    input2_shift: int = 0
    left_shift: int = 20
    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_ADD

    def _input_scaling(self) -> tuple:
        return (self.input1_multiplier, self.input1_shift, self.input2_multiplier, self.input2_shift, self.left_shift)

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        common, (m1, s1, m2, s2, left) = cls._decode_fields(data, pos, rounding)
        return cls(**common, input1_multiplier=m1, input1_shift=s1, input2_multiplier=m2, input2_shift=s2,
                   left_shift=left)


class Sub(Add):  # no fields of its own (see Command)
    """TFLite's SUB: as ADD, the rescaled input 2 subtracted instead of added."""

    opcode: ClassVar[int] = R.OP_SUB


@dataclass
class Mul(_Elementwise):
    """TFLite MUL: requant((x1 + offset1) * (x2 + offset2)) + output_offset, clamped."""

    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_MUL

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        common, scaling = cls._decode_fields(data, pos, rounding)
        if any(scaling):
            raise CommandTableError(f"{cls.__name__} at byte {pos} has nonzero ADD-only fields {scaling}")
        return cls(**common)


class Minimum(Mul):  # no fields of its own (see Command)
    """min(x1 + offset1, x2 + offset2) + output_offset, clamped (TFLite's MINIMUM compares stored values:
    offsets 0). The multiplier fields are unused."""

    opcode: ClassVar[int] = R.OP_MIN


class Maximum(Mul):  # no fields of its own (see Command)
    """max(x1 + offset1, x2 + offset2) + output_offset, clamped (offsets 0 for TFLite's MAXIMUM)."""

    opcode: ClassVar[int] = R.OP_MAX


@dataclass
class Table(Command):
    """out = table[c](x), elementwise: int8 through 256 entries (entry (uint8)x), int16 through 513 entries
    interpolated as TFLite's LUTLookup. `table_count` 1 (one table) or C (table c for channel c), back to back."""

    input: TensorDesc
    output: TensorDesc
    table: ParamRef
    table_count: int = 1
    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_TABLE
    size: ClassVar[int] = R.CMD_BYTES_TABLE

    def encode_body(self) -> bytes:
        return self.input.encode() + self.output.encode() + self.table.encode() + _TABLE_TAIL.pack(self.table_count, 0, 0)

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        count, reserved, reserved2 = _TABLE_TAIL.unpack_from(data, pos + 80)
        if reserved or reserved2:
            raise CommandTableError(f"TABLE at byte {pos} has nonzero reserved fields")
        return cls(TensorDesc.decode(data, pos + 8), TensorDesc.decode(data, pos + 40), ParamRef.decode(data, pos + 72),
                   count)


@dataclass
class GatherHW(Command):
    """dst[n, y, x, c] = src[n, rows[y], cols[x], c]: rows and columns through index maps (u16 each, rows then
    columns, at `maps`): nearest-neighbour resampling."""

    src: TensorDesc
    dst: TensorDesc
    maps: ParamRef
    note: str = field(default="", compare=False)
    opcode: ClassVar[int] = R.OP_GATHER_HW
    size: ClassVar[int] = R.CMD_BYTES_GATHER_HW

    def encode_body(self) -> bytes:
        return self.src.encode() + self.dst.encode() + self.maps.encode()

    @classmethod
    def decode_body(cls, data, pos, rounding, flags):
        return cls(TensorDesc.decode(data, pos + 8), TensorDesc.decode(data, pos + 40), ParamRef.decode(data, pos + 72))


COMMAND_TYPES = {cls.opcode: cls for cls in (End, DmaCopy, GatherHW, Conv2D, DepthwiseConv2D, TransposeConv2D,
                                             MaxPool2D, AvgPool2D, Add, Mul, Sub, Minimum, Maximum, Table)}


def with_fields(command, **changes):
    """dataclasses.replace for the commands (plain dataclasses: no __post_init__, no init=False fields, so a copy
    of the fields is what replace's __init__ call builds), without its per-field checks: the cascade search builds
    commands for every stripe shape it prices."""
    fields_now = command.__dict__
    if not changes.keys() <= fields_now.keys():
        raise TypeError(f"{type(command).__name__} has no field {sorted(changes.keys() - fields_now.keys())}")
    copy = object.__new__(type(command))
    copy.__dict__.update(fields_now)
    copy.__dict__.update(changes)
    return copy


# -- tables ----------------------------------------------------------------------------------------------------
def encode(commands) -> bytes:
    """A complete table: header + commands. The last command must be End (and only the last)."""
    commands = list(commands)
    if not commands or not isinstance(commands[-1], End):
        raise CommandTableError("a command table must end with End")
    if any(isinstance(c, End) for c in commands[:-1]):
        raise CommandTableError("End may only be the last command")
    try:
        body = b"".join(c.encode() for c in commands)
    except struct.error as exc:
        raise CommandTableError(f"a command field is out of range: {exc}") from None
    total = R.TABLE_HEADER_BYTES + len(body)
    if total > R.MAX_TABLE_BYTES or len(commands) > R.MAX_COMMANDS:
        raise CommandTableError(f"table of {len(commands)} commands / {total} bytes exceeds the NPU limits")
    return _HEADER.pack(R.TABLE_MAGIC, R.VERSION_MAJOR, R.VERSION_MINOR, len(commands), total) + body


def decode(data: bytes) -> list:
    """Parse a table back into commands; raises CommandTableError on framing errors."""
    data = bytes(data)
    if len(data) < R.TABLE_HEADER_BYTES:
        raise CommandTableError(f"table of {len(data)} bytes is shorter than its header")
    magic, major, _minor, count, total = _HEADER.unpack_from(data, 0)
    if magic != R.TABLE_MAGIC:
        raise CommandTableError(f"bad table magic {magic:#010x}")
    if major != R.VERSION_MAJOR:
        raise CommandTableError(f"table format version {major} (this NPU executes {R.VERSION_MAJOR})")
    if total != len(data):
        raise CommandTableError(f"header says {total} bytes, table has {len(data)}")
    pos, commands = R.TABLE_HEADER_BYTES, []
    for i in range(count):
        if pos + R.CMD_HEADER_BYTES > len(data):
            raise CommandTableError(f"command {i} starts past the end of the table")
        opcode, rounding, size, flags, _reserved = _CMD_HEADER.unpack_from(data, pos)
        cls = COMMAND_TYPES.get(opcode)
        if cls is None:
            raise CommandTableError(f"command {i} has unknown opcode {opcode:#04x}")
        if size != cls.size or pos + size > len(data):
            raise CommandTableError(f"command {i} ({cls.__name__}) has size {size}, expected {cls.size}")
        commands.append(cls.decode_body(data, pos, rounding, flags))
        pos += size
    if pos != len(data):
        raise CommandTableError(f"{len(data) - pos} bytes after the last command")
    return commands


@functools.lru_cache(maxsize=None)
def _listed_fields(cls) -> tuple:
    """The fields a listing line shows, in order: all but the note (per command class, fixed at import)."""
    return tuple(f.name for f in fields(cls) if f.name != "note")


def describe(cmd):
    """A listing line for a command (opcode name and fields, descriptors abbreviated); a list for a list."""
    if isinstance(cmd, (list, tuple)):
        return [describe(c) for c in cmd]
    parts = []
    for name in _listed_fields(type(cmd)):
        value = getattr(cmd, name)
        kind = type(value)  # (exact types: neither descriptor nor reference has subclasses)
        if kind is TensorDesc:
            value = f"r{value.region}+{value.offset}{list(value.shape)}" + ("i16" if value.dtype == R.DTYPE_INT16 else "")
        elif kind is ParamRef:
            value = f"r{value.region}+{value.offset}"
        parts.append(f"{name}={value}")
    text = f"{type(cmd).__name__}({', '.join(parts)})"
    return f"{text}  # {cmd.note}" if cmd.note else text
