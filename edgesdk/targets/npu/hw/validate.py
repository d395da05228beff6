"""The NPU's static table check, in Python: which error (if any) NPU-1 reports before it runs a table.

A run first reads the whole table and checks every command statically (docs/npu-datasheet.md, "Two
passes"): framing, fields, shapes, address ranges and limits -- errors TABLE_MAGIC .. TOO_LARGE, NO_END and
the BAD_QUANT of elementwise fields. `check_table(data, region_bases)` returns the (error code, command index)
that pass reports, (ERR_NONE, None) if the table passes it. It mirrors `validate_table` and `check_command`
of edgesdk/targets/npu/hw/model/npu_model.c line by line (the C model stays the executable definition;
tests/test_npu_validate.py compares the two on random and mutated tables through the model's
`npu_validate_table`).

What only execution can find is not here: BUS (unmapped addresses), BAD_QUANT of per-channel records,
BAD_WEIGHTS and BAD_INDEX (data in memory: the build-time proof, edgesdk/verify.py, checks the blob's records,
decodes every compressed stream and reads every index map), ABORTED, NO_BUS and NO_MEMORY (the host or the
driver, never a table).
"""

from __future__ import annotations

import struct

from . import registers as R

U32_MAX = 0xFFFFFFFF
N, H, W, C = range(4)
_CONV_OPS = (R.OP_CONV2D, R.OP_DEPTHWISE_CONV2D, R.OP_TRANSPOSE_CONV2D)
_ELTWISE_OPS = (R.OP_ADD, R.OP_MUL, R.OP_SUB, R.OP_MIN, R.OP_MAX)
_OPCODE_BYTES = {R.OP_END: R.CMD_BYTES_END, R.OP_DMA_COPY: R.CMD_BYTES_DMA_COPY,
                 R.OP_GATHER_HW: R.CMD_BYTES_GATHER_HW, R.OP_MAX_POOL: R.CMD_BYTES_POOL,
                 R.OP_AVG_POOL: R.CMD_BYTES_POOL, R.OP_TABLE: R.CMD_BYTES_TABLE,
                 **{op: R.CMD_BYTES_CONV for op in _CONV_OPS}, **{op: R.CMD_BYTES_ELEMENTWISE for op in _ELTWISE_OPS}}


_DESC = struct.Struct("<BBHI4H4i")  # region, dtype, reserved, offset, shape, strides (signed)


class _Desc:
    __slots__ = ("region", "dtype", "reserved", "offset", "shape", "stride")

    def __init__(self, data: bytes, pos: int):
        fields = _DESC.unpack_from(data, pos)  # (one unpack: a table check reads thousands of descriptors)
        self.region, self.dtype, self.reserved, self.offset = fields[:4]
        self.shape, self.stride = fields[4:8], fields[8:]

    @property
    def stride_word(self) -> tuple:
        """The stride words unsigned (a compressed weights descriptor carries its stream size in them)."""
        return tuple(s & U32_MAX for s in self.stride)


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _dtype_bytes(dtype: int) -> int:
    return 2 if dtype == R.DTYPE_INT16 else 1


def _compact_bytes(d: _Desc) -> int:
    n, h, w, c = d.shape
    sn, sh, sw, sc = d.stride
    return (n if sn else 1) * (h if sh else 1) * (w if sw else 1) * (c if sc else 1) * _dtype_bytes(d.dtype)


def check_desc(d: _Desc, bases, is_output: bool) -> int:
    """Region, format, shape and address range (lowest and highest byte) of one descriptor (C: check_desc)."""
    if d.region >= R.NUM_REGIONS:
        return R.ERR_BAD_REGION
    if d.dtype > R.DTYPE_INT16 or d.reserved != 0:
        return R.ERR_BAD_PARAM
    low = bases[d.region] + d.offset
    high = low + _dtype_bytes(d.dtype) - 1
    for n, s in zip(d.shape, d.stride):
        if n == 0:
            return R.ERR_BAD_SHAPE
        if is_output and n > 1 and s == 0:
            return R.ERR_BAD_PARAM
        extent = (n - 1) * s
        if extent < 0:
            low += extent
        else:
            high += extent
    if low < 0 or high > U32_MAX:
        return R.ERR_ADDRESS_RANGE
    if _compact_bytes(d) > R.MAX_OPERAND_BYTES:
        return R.ERR_TOO_LARGE
    return R.ERR_NONE


def _act_range(act_min: int, act_max: int) -> int:
    return R.ERR_NONE if act_min <= act_max else R.ERR_BAD_PARAM


def _act_value(low_i8: int, high_u8: int, dtype: int) -> int:
    """C: act_value -- the i8 field, or for an int16 output the i16 value with its high byte."""
    if dtype == R.DTYPE_INT16:
        u = (low_i8 & 0xFF) | (high_u8 << 8)
        return u - 0x10000 if u & 0x8000 else u
    return low_i8


def _act_high_bad(out: _Desc, high_bytes: int) -> bool:
    """C: check_act_high -- an int8 output's clamp has no high bytes."""
    return out.dtype == R.DTYPE_INT8 and high_bytes != 0


def _shift_ok(shift: int) -> bool:
    return R.MIN_SHIFT <= shift <= R.MAX_SHIFT


def check_window(in_size: int, out_size: int, kernel: int, stride: int, dilation: int, pad: int) -> int:
    """The window rule along one axis (C: check_window)."""
    if pad > (kernel - 1) * dilation:
        return R.ERR_BAD_PARAM
    if (out_size - 1) * stride > in_size - 1 + pad:
        return R.ERR_BAD_SHAPE
    return R.ERR_NONE


def check_transposed_window(in_size: int, out_size: int, kernel: int, stride: int, pad: int) -> int:
    """The transposed window rule along one axis (C: check_transposed_window)."""
    if pad > kernel - 1:
        return R.ERR_BAD_PARAM
    if out_size + pad > in_size * stride + kernel - 1:
        return R.ERR_BAD_SHAPE
    return R.ERR_NONE


def _conv_ops(opcode: int, i, o, k) -> int:
    taps = k[H] * k[W]
    if opcode == R.OP_DEPTHWISE_CONV2D:
        return _prod(o) * taps
    if opcode == R.OP_TRANSPOSE_CONV2D:
        return i[N] * i[H] * i[W] * taps * k[C] * o[C]
    return _prod(o) * taps * k[C]


def _check_compressed(w: _Desc, bases) -> int:
    stream_bytes = w.stride_word[0]
    rest = w.stride_word[1] | w.stride_word[2] | w.stride_word[3]
    if w.region >= R.NUM_REGIONS:
        return R.ERR_BAD_REGION
    if w.dtype != R.DTYPE_INT8 or w.reserved != 0 or rest != 0 or stream_bytes < R.WEIGHT_STREAM_HEADER_BYTES:
        return R.ERR_BAD_PARAM
    if any(n == 0 for n in w.shape):
        return R.ERR_BAD_SHAPE
    if bases[w.region] + w.offset + stream_bytes - 1 > U32_MAX:
        return R.ERR_ADDRESS_RANGE
    if _prod(w.shape) > R.MAX_OPERAND_BYTES or stream_bytes > R.MAX_OPERAND_BYTES:
        return R.ERR_TOO_LARGE
    return R.ERR_NONE


def _check_param_ref(data: bytes, pos: int, nbytes: int, bases) -> int:
    """C: check_param_ref of the 8-byte reference at `pos` covering `nbytes` bytes."""
    region, res0, res1, offset = struct.unpack_from("<BBHI", data, pos)
    if region >= R.NUM_REGIONS:
        return R.ERR_BAD_REGION
    if res0 | (res1 << 8):
        return R.ERR_BAD_PARAM
    if bases[region] + offset + nbytes - 1 > U32_MAX:
        return R.ERR_ADDRESS_RANGE
    return R.ERR_NONE


def _check_conv_shapes(depthwise: bool, depth_multiplier: int, i, o, k) -> int:
    if i[N] != o[N]:
        return R.ERR_BAD_SHAPE
    if depthwise:
        if depth_multiplier < 1 or k[N] != 1 or k[C] != o[C] or i[C] * depth_multiplier != o[C]:
            return R.ERR_BAD_SHAPE
    else:
        if depth_multiplier != 1:
            return R.ERR_BAD_PARAM
        if k[N] != o[C] or k[C] != i[C]:
            return R.ERR_BAD_SHAPE
    return R.ERR_NONE


def _check_conv(data: bytes, pos: int, opcode: int, flags: int, bases) -> int:
    inp, out, w = _Desc(data, pos + 8), _Desc(data, pos + 40), _Desc(data, pos + 72)
    (_in_off, _w_off, _out_off, act_lo_min, act_lo_max, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left,
     depth_multiplier, reserved) = struct.unpack_from("<hhhbb8H", data, pos + 112)
    act_min = _act_value(act_lo_min, reserved & 0xFF, out.dtype)
    act_max = _act_value(act_lo_max, reserved >> 8, out.dtype)
    compressed = bool(flags & R.FLAG_COMPRESSED_WEIGHTS)
    err = check_desc(inp, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    err = _check_compressed(w, bases) if compressed else check_desc(w, bases, False)
    if err:
        return err
    if (flags & ~(R.FLAG_PER_TENSOR_PARAMS | R.FLAG_COMPRESSED_WEIGHTS) or _act_high_bad(out, reserved)
            or inp.dtype != out.dtype or w.dtype != R.DTYPE_INT8):
        return R.ERR_BAD_PARAM
    records = 1 if flags & R.FLAG_PER_TENSOR_PARAMS else out.shape[C]
    record_bytes = R.CHANNEL_PARAM_BYTES_WIDE if inp.dtype == R.DTYPE_INT16 else R.CHANNEL_PARAM_BYTES
    err = _check_param_ref(data, pos + 104, records * record_bytes, bases)
    if err:
        return err
    i, o, k = inp.shape, out.shape, w.shape
    err = _check_conv_shapes(opcode == R.OP_DEPTHWISE_CONV2D, depth_multiplier, i, o, k)
    if err:
        return err
    kh, kw = k[H], k[W]
    if (kh > R.MAX_KERNEL or kw > R.MAX_KERNEL or not 1 <= stride_h <= R.MAX_STRIDE
            or not 1 <= stride_w <= R.MAX_STRIDE or not 1 <= dil_h <= R.MAX_DILATION
            or not 1 <= dil_w <= R.MAX_DILATION):
        return R.ERR_BAD_PARAM
    if opcode == R.OP_TRANSPOSE_CONV2D:
        if dil_h != 1 or dil_w != 1:
            return R.ERR_BAD_PARAM
        err = (check_transposed_window(i[H], o[H], kh, stride_h, pad_top)
               or check_transposed_window(i[W], o[W], kw, stride_w, pad_left))
    else:
        err = (check_window(i[H], o[H], kh, stride_h, dil_h, pad_top)
               or check_window(i[W], o[W], kw, stride_w, dil_w, pad_left))
    err = err or _act_range(act_min, act_max)
    if err:
        return err
    return R.ERR_TOO_LARGE if _conv_ops(opcode, i, o, k) > R.MAX_OPS_PER_COMMAND else R.ERR_NONE


def _check_pool(data: bytes, pos: int, opcode: int, flags: int, bases) -> int:
    inp, out = _Desc(data, pos + 8), _Desc(data, pos + 40)
    fh, fw, sh, sw, pad_top, pad_left, lo_min, lo_max, reserved = struct.unpack_from("<6HbbH", data, pos + 72)
    act_min, act_max = _act_value(lo_min, reserved & 0xFF, out.dtype), _act_value(lo_max, reserved >> 8, out.dtype)
    allowed = R.FLAG_AVG_FLOOR if opcode == R.OP_AVG_POOL else 0
    err = check_desc(inp, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    if flags & ~allowed or _act_high_bad(out, reserved) or inp.dtype != out.dtype:
        return R.ERR_BAD_PARAM
    if inp.shape[N] != out.shape[N] or inp.shape[C] != out.shape[C]:
        return R.ERR_BAD_SHAPE
    if (not 1 <= fh <= R.MAX_POOL_FILTER or not 1 <= fw <= R.MAX_POOL_FILTER or not 1 <= sh <= R.MAX_STRIDE
            or not 1 <= sw <= R.MAX_STRIDE):
        return R.ERR_BAD_PARAM
    err = (check_window(inp.shape[H], out.shape[H], fh, sh, 1, pad_top)
           or check_window(inp.shape[W], out.shape[W], fw, sw, 1, pad_left) or _act_range(act_min, act_max))
    if err:
        return err
    return R.ERR_TOO_LARGE if _prod(out.shape) * fh * fw > R.MAX_OPS_PER_COMMAND else R.ERR_NONE


def _check_eltwise(data: bytes, pos: int, flags: int, bases) -> int:
    in1, in2, out = _Desc(data, pos + 8), _Desc(data, pos + 40), _Desc(data, pos + 72)
    (_o1, _o2, _oo, lo_min, lo_max, m1, s1, m2, s2, mo, so, left_shift, act_high) = \
        struct.unpack_from("<hhhbb6iBH", data, pos + 104)
    act_min, act_max = _act_value(lo_min, act_high & 0xFF, out.dtype), _act_value(lo_max, act_high >> 8, out.dtype)
    reserved = any(data[pos + 139:pos + R.CMD_BYTES_ELEMENTWISE])
    err = check_desc(in1, bases, False) or check_desc(in2, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    if (flags != 0 or reserved or _act_high_bad(out, act_high) or left_shift > R.MAX_LEFT_SHIFT
            or in1.dtype != out.dtype or in2.dtype != out.dtype):
        return R.ERR_BAD_PARAM
    if in1.shape != out.shape or in2.shape != out.shape:
        return R.ERR_BAD_SHAPE
    if m1 < 0 or m2 < 0 or mo < 0 or not (_shift_ok(s1) and _shift_ok(s2) and _shift_ok(so)):
        return R.ERR_BAD_QUANT
    err = _act_range(act_min, act_max)
    if err:
        return err
    return R.ERR_TOO_LARGE if _prod(out.shape) > R.MAX_OPS_PER_COMMAND else R.ERR_NONE


def _check_dma(data: bytes, pos: int, flags: int, bases) -> int:
    src, dst = _Desc(data, pos + 8), _Desc(data, pos + 40)
    err = check_desc(src, bases, False) or check_desc(dst, bases, True)
    if err:
        return err
    if flags != 0 or src.dtype != dst.dtype:
        return R.ERR_BAD_PARAM
    return R.ERR_NONE if src.shape == dst.shape else R.ERR_BAD_SHAPE


def _check_table(data: bytes, pos: int, flags: int, bases) -> int:
    inp, out = _Desc(data, pos + 8), _Desc(data, pos + 40)
    count, res0, res1 = struct.unpack_from("<HHI", data, pos + 80)
    err = check_desc(inp, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    if flags != 0 or res0 or res1 or inp.dtype != out.dtype:
        return R.ERR_BAD_PARAM
    if inp.shape != out.shape or count not in (1, out.shape[C]):
        return R.ERR_BAD_SHAPE
    entries = R.TABLE_ENTRIES_INT16 if inp.dtype == R.DTYPE_INT16 else R.TABLE_ENTRIES_INT8
    err = _check_param_ref(data, pos + 72, count * entries * _dtype_bytes(inp.dtype), bases)
    if err:
        return err
    return R.ERR_TOO_LARGE if _prod(out.shape) > R.MAX_OPS_PER_COMMAND else R.ERR_NONE


def _check_gather(data: bytes, pos: int, flags: int, bases) -> int:
    src, dst = _Desc(data, pos + 8), _Desc(data, pos + 40)
    err = check_desc(src, bases, False) or check_desc(dst, bases, True)
    if err:
        return err
    if flags != 0 or src.dtype != dst.dtype:
        return R.ERR_BAD_PARAM
    if src.shape[N] != dst.shape[N] or src.shape[C] != dst.shape[C]:
        return R.ERR_BAD_SHAPE
    err = _check_param_ref(data, pos + 72, 2 * (dst.shape[H] + dst.shape[W]), bases)
    if err:
        return err
    return R.ERR_TOO_LARGE if _prod(dst.shape) > R.MAX_OPS_PER_COMMAND else R.ERR_NONE


def check_command(data: bytes, pos: int, bases) -> int:
    """The static checks of the (framed) command at `pos` (C: check_command)."""
    opcode, rounding, _size, flags, reserved = struct.unpack_from("<BBHHH", data, pos)
    conv = opcode in _CONV_OPS
    if rounding > (R.ROUNDING_FP64 if conv else R.ROUNDING_SINGLE) or reserved != 0:
        return R.ERR_BAD_PARAM
    if conv:
        return _check_conv(data, pos, opcode, flags, bases)
    if opcode in _ELTWISE_OPS:
        return _check_eltwise(data, pos, flags, bases)
    if opcode == R.OP_END:
        return R.ERR_NONE if flags == 0 else R.ERR_BAD_PARAM
    if opcode == R.OP_DMA_COPY:
        return _check_dma(data, pos, flags, bases)
    if opcode == R.OP_GATHER_HW:
        return _check_gather(data, pos, flags, bases)
    if opcode in (R.OP_MAX_POOL, R.OP_AVG_POOL):
        return _check_pool(data, pos, opcode, flags, bases)
    if opcode == R.OP_TABLE:
        return _check_table(data, pos, flags, bases)
    return R.ERR_BAD_OPCODE


def check_table(data, region_bases=(), table_addr: int = 0) -> tuple:
    """(error code, command index or None) of the NPU's static pass over the table `data` run with these
    region bases (missing ones are 0) from `table_addr`; (ERR_NONE, None) if the table passes it."""
    data = bytes(data)
    bases = (list(region_bases) + [0] * R.NUM_REGIONS)[:R.NUM_REGIONS]
    size = len(data)
    if size < R.TABLE_HEADER_BYTES + R.CMD_BYTES_END or size > R.MAX_TABLE_BYTES or table_addr + size - 1 > U32_MAX:
        return R.ERR_TABLE_SIZE, None
    magic, major, _minor, count, total = struct.unpack_from("<IHHII", data, 0)
    if magic != R.TABLE_MAGIC:
        return R.ERR_TABLE_MAGIC, None
    if major != R.VERSION_MAJOR:
        return R.ERR_TABLE_VERSION, None
    if total != size or not 1 <= count <= R.MAX_COMMANDS:
        return R.ERR_TABLE_SIZE, None
    pos = R.TABLE_HEADER_BYTES
    for index in range(count):
        remaining = size - pos
        if remaining < R.CMD_HEADER_BYTES:
            return R.ERR_TABLE_SIZE, index
        opcode, _rounding, cmd_size = struct.unpack_from("<BBH", data, pos)
        expected = _OPCODE_BYTES.get(opcode)
        if expected is None:
            return R.ERR_BAD_OPCODE, index
        if cmd_size != expected or expected > remaining:
            return R.ERR_CMD_SIZE, index
        err = check_command(data, pos, bases)
        if not err and (opcode == R.OP_END) != (index == count - 1):
            err = R.ERR_NO_END
        if err:
            return err, index
        pos += cmd_size
    return (R.ERR_NONE, None) if pos == size else (R.ERR_TABLE_SIZE, None)
