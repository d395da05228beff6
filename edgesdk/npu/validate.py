"""The NPU's static table check, in Python: which error (if any) NPU-1 reports before it runs a table.

A run first reads the whole table and checks every command statically (docs/npu-datasheet.md, "Two
passes"): framing, fields, shapes, address ranges and limits -- errors TABLE_MAGIC .. TOO_LARGE, NO_END and
the BAD_QUANT of ADD/MUL fields. `check_table(data, region_bases)` returns the (error code, command index)
that pass reports, (ERR_NONE, None) if the table passes it. It mirrors `validate_table` and `check_command`
of edgesdk/npu/model/npu_model.c line by line (the C model stays the executable definition;
tests/test_npu_validate.py compares the two on random and mutated tables through the model's
`npu_validate_table`).

What only execution can find is not here: BUS (unmapped addresses), BAD_QUANT of per-channel records and
BAD_WEIGHTS (both are data in memory: the build-time proof, edgesdk/verify.py, checks the blob's records
and decodes every compressed stream), ABORTED, NO_BUS and NO_MEMORY (the host or the driver, never a table).
"""

from __future__ import annotations

import struct

from . import registers as R

U32_MAX = 0xFFFFFFFF
N, H, W, C = range(4)
_OPCODE_BYTES = {R.OP_END: R.CMD_BYTES_END, R.OP_DMA_COPY: R.CMD_BYTES_DMA_COPY, R.OP_CONV2D: R.CMD_BYTES_CONV,
                 R.OP_DEPTHWISE_CONV2D: R.CMD_BYTES_CONV, R.OP_MAX_POOL: R.CMD_BYTES_POOL,
                 R.OP_AVG_POOL: R.CMD_BYTES_POOL, R.OP_ADD: R.CMD_BYTES_ELEMENTWISE, R.OP_MUL: R.CMD_BYTES_ELEMENTWISE}


class _Desc:
    __slots__ = ("region", "dtype", "reserved", "offset", "shape", "stride")

    def __init__(self, data: bytes, pos: int):
        self.region, self.dtype, self.reserved, self.offset = struct.unpack_from("<BBHI", data, pos)
        self.shape = struct.unpack_from("<4H", data, pos + 8)
        self.stride = struct.unpack_from("<4I", data, pos + 16)


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _compact_bytes(d: _Desc) -> int:
    return _prod(1 if s == 0 else n for n, s in zip(d.shape, d.stride))


def check_desc(d: _Desc, bases, is_output: bool) -> int:
    """Region, format, shape and address range of one tensor descriptor (C: check_desc)."""
    if d.region >= R.NUM_REGIONS:
        return R.ERR_BAD_REGION
    if d.dtype != R.DTYPE_INT8 or d.reserved != 0:
        return R.ERR_BAD_PARAM
    last = bases[d.region] + d.offset
    for n, s in zip(d.shape, d.stride):
        if n == 0:
            return R.ERR_BAD_SHAPE
        if is_output and n > 1 and s == 0:
            return R.ERR_BAD_PARAM
        last += (n - 1) * s
    if last > U32_MAX:
        return R.ERR_ADDRESS_RANGE
    if _compact_bytes(d) > R.MAX_OPERAND_BYTES:
        return R.ERR_TOO_LARGE
    return R.ERR_NONE


def _act_range(act_min: int, act_max: int) -> int:
    return R.ERR_NONE if act_min <= act_max else R.ERR_BAD_PARAM


def _shift_ok(shift: int) -> bool:
    return R.MIN_SHIFT <= shift <= R.MAX_SHIFT


def check_window(in_size: int, out_size: int, kernel: int, stride: int, dilation: int, pad: int) -> int:
    """The window rule along one axis (C: check_window)."""
    if pad > (kernel - 1) * dilation:
        return R.ERR_BAD_PARAM
    if (out_size - 1) * stride > in_size - 1 + pad:
        return R.ERR_BAD_SHAPE
    return R.ERR_NONE


def _check_conv(data: bytes, pos: int, opcode: int, flags: int, bases) -> int:
    depthwise = opcode == R.OP_DEPTHWISE_CONV2D
    inp, out, w = _Desc(data, pos + 8), _Desc(data, pos + 40), _Desc(data, pos + 72)
    p_region, p_res0, p_res1, p_offset = struct.unpack_from("<BBHI", data, pos + 104)
    p_reserved = p_res0 | (p_res1 << 8)
    (_in_off, _w_off, _out_off, act_min, act_max, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left,
     depth_multiplier, reserved) = struct.unpack_from("<hhhbb8H", data, pos + 112)
    compressed = bool(flags & R.FLAG_COMPRESSED_WEIGHTS)
    err = check_desc(inp, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    if compressed:
        stream_bytes, rest = w.stride[0], w.stride[1] | w.stride[2] | w.stride[3]
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
    else:
        err = check_desc(w, bases, False)
        if err:
            return err
    if flags & ~(R.FLAG_PER_TENSOR_PARAMS | R.FLAG_COMPRESSED_WEIGHTS) or reserved != 0:
        return R.ERR_BAD_PARAM
    records = 1 if flags & R.FLAG_PER_TENSOR_PARAMS else out.shape[C]
    if p_region >= R.NUM_REGIONS:
        return R.ERR_BAD_REGION
    if p_reserved != 0:
        return R.ERR_BAD_PARAM
    if bases[p_region] + p_offset + records * R.CHANNEL_PARAM_BYTES - 1 > U32_MAX:
        return R.ERR_ADDRESS_RANGE
    i, o, k = inp.shape, out.shape, w.shape
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
    kh, kw = k[H], k[W]
    if (kh > R.MAX_KERNEL or kw > R.MAX_KERNEL or not 1 <= stride_h <= R.MAX_STRIDE
            or not 1 <= stride_w <= R.MAX_STRIDE or not 1 <= dil_h <= R.MAX_DILATION
            or not 1 <= dil_w <= R.MAX_DILATION):
        return R.ERR_BAD_PARAM
    err = (check_window(i[H], o[H], kh, stride_h, dil_h, pad_top)
           or check_window(i[W], o[W], kw, stride_w, dil_w, pad_left) or _act_range(act_min, act_max))
    if err:
        return err
    ops = _prod(o) * kh * kw * (1 if depthwise else k[C])
    return R.ERR_TOO_LARGE if ops > R.MAX_OPS_PER_COMMAND else R.ERR_NONE


def _check_pool(data: bytes, pos: int, opcode: int, flags: int, bases) -> int:
    inp, out = _Desc(data, pos + 8), _Desc(data, pos + 40)
    fh, fw, sh, sw, pad_top, pad_left, act_min, act_max, reserved = struct.unpack_from("<6HbbH", data, pos + 72)
    allowed = R.FLAG_AVG_FLOOR if opcode == R.OP_AVG_POOL else 0
    err = check_desc(inp, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    if flags & ~allowed or reserved != 0:
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
    (_o1, _o2, _oo, act_min, act_max, m1, s1, m2, s2, mo, so, left_shift) = struct.unpack_from("<hhhbb6iB", data, pos + 104)
    reserved = any(data[pos + 137:pos + R.CMD_BYTES_ELEMENTWISE])
    err = check_desc(in1, bases, False) or check_desc(in2, bases, False) or check_desc(out, bases, True)
    if err:
        return err
    if flags != 0 or reserved or left_shift > R.MAX_LEFT_SHIFT:
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
    if flags != 0:
        return R.ERR_BAD_PARAM
    return R.ERR_NONE if src.shape == dst.shape else R.ERR_BAD_SHAPE


def check_command(data: bytes, pos: int, bases) -> int:
    """The static checks of the (framed) command at `pos` (C: check_command)."""
    opcode, rounding, _size, flags, reserved = struct.unpack_from("<BBHHH", data, pos)
    conv = opcode in (R.OP_CONV2D, R.OP_DEPTHWISE_CONV2D)
    if rounding > (R.ROUNDING_FP64 if conv else R.ROUNDING_SINGLE) or reserved != 0:
        return R.ERR_BAD_PARAM
    if opcode == R.OP_END:
        return R.ERR_NONE if flags == 0 else R.ERR_BAD_PARAM
    if opcode == R.OP_DMA_COPY:
        return _check_dma(data, pos, flags, bases)
    if conv:
        return _check_conv(data, pos, opcode, flags, bases)
    if opcode in (R.OP_MAX_POOL, R.OP_AVG_POOL):
        return _check_pool(data, pos, opcode, flags, bases)
    if opcode in (R.OP_ADD, R.OP_MUL):
        return _check_eltwise(data, pos, flags, bases)
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
