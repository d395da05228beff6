"""The C model of NPU-1: arithmetic against straightforward numpy implementations, slices and broadcasting,
the timing model against the PERF counters, registers, and robustness (every error code with its command
index; random and mutated tables never crash). Also: the firmware driver compiles warning-free for rv32."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgesdk.board import load_board
from edgesdk.ir.quant import multiply_by_quantized_multiplier
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import registers as R
from edgesdk.targets.npu.hw import timing as T
from edgesdk.targets.npu.hw.model import BytearrayBus, NpuDevice, board_memory_classes, read_result, run_table, validate_table

from edgesdk.board import load_board as _load_board  # noqa: E402
from edgesdk.targets.npu.hw.model import board_memory_classes as _board_memory_classes  # noqa: E402

BOARD_CLASSES = _board_memory_classes(_load_board("riscv-npu"))  # the NPU's view of riscv-npu's memories

REPO = Path(__file__).resolve().parents[1]
FLASH, SRAM = 0x20000000, 0x80000000
ROUNDINGS = {R.ROUNDING_DOUBLE: "double", R.ROUNDING_SINGLE: "single"}


# -- memory helpers ---------------------------------------------------------------------------------------------
class Memory:
    """A flash blob (region 0) and an SRAM arena (region 1) that tests fill, as the compiler would."""

    def __init__(self, sram_bytes: int = 1 << 16):
        self.flash = bytearray()
        self.sram = bytearray(sram_bytes)
        self.sram_used = 0

    def const(self, data: bytes) -> int:
        self.flash += bytes(-len(self.flash) % 16)
        offset = len(self.flash)
        self.flash += data
        return offset

    def arena(self, data: bytes | int) -> int:
        size = data if isinstance(data, int) else len(data)
        offset = self.sram_used
        if not isinstance(data, int):
            self.sram[offset:offset + size] = data
        self.sram_used += (size + 15) // 16 * 16
        return offset

    def read(self, offset: int, shape) -> np.ndarray:
        n = int(np.prod(shape))
        return np.frombuffer(bytes(self.sram[offset:offset + n]), np.int8).reshape(shape)

    def run(self, commands, device=None):
        table = C.encode(commands)
        return run_table(table, {FLASH: self.flash + bytes(16), SRAM: self.sram}, [FLASH, SRAM], read_only=[FLASH],
                         device=device, memory_classes=BOARD_CLASSES)


def rand_i8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


# -- numpy references ------------------------------------------------------------------------------------------
def requant(acc, mult, shift, rounding: int) -> np.ndarray:
    """Per element (and per channel along the last axis) through the Python arithmetic of edgesdk.ir.quant."""
    acc = np.asarray(acc, np.int64)
    mult = np.broadcast_to(np.asarray(mult, np.int64), acc.shape)
    shift = np.broadcast_to(np.asarray(shift, np.int64), acc.shape)
    fn = np.frompyfunc(lambda a, m, s: multiply_by_quantized_multiplier(int(a), int(m), int(s), ROUNDINGS[rounding]), 3, 1)
    return fn(acc, mult, shift).astype(np.int64)


def wrap32(x) -> np.ndarray:
    return ((np.asarray(x, np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def ref_conv(x, w, bias, mult, shift, cmd, depthwise=False):
    """acc = sum((x + in_off) * (w + w_off)) over valid taps; requant per channel; + out_off; clamp."""
    n, oh, ow, oc = cmd.output.shape
    kh, kw = w.shape[1], w.shape[2]
    sh, sw, dh, dw = cmd.stride_h, cmd.stride_w, cmd.dilation_h, cmd.dilation_w
    xo = x.astype(np.int64) + cmd.input_offset
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.zeros((n, max(need_h, cmd.pad_top + x.shape[1]), max(need_w, cmd.pad_left + x.shape[2]), x.shape[3]), np.int64)
    xp[:, cmd.pad_top:cmd.pad_top + x.shape[1], cmd.pad_left:cmd.pad_left + x.shape[2], :] = xo  # padding adds 0
    wo = w.astype(np.int64) + cmd.weight_offset
    acc = np.zeros((n, oh, ow, oc), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, ky * dh:ky * dh + (oh - 1) * sh + 1:sh, kx * dw:kx * dw + (ow - 1) * sw + 1:sw, :]
            if depthwise:
                acc += patch[..., np.arange(oc) // cmd.depth_multiplier] * wo[0, ky, kx, :]
            else:
                acc += np.einsum("nhwc,oc->nhwo", patch, wo[:, ky, kx, :])
    acc = wrap32(acc + np.asarray(bias, np.int64))
    out = requant(acc, mult, shift, cmd.rounding) + cmd.output_offset
    return np.clip(out, cmd.act_min, cmd.act_max).astype(np.int8)


def ref_pool(x, cmd, is_max: bool):
    n, oh, ow, c = cmd.output.shape
    out = np.zeros((n, oh, ow, c), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * cmd.stride_h - cmd.pad_top, ox * cmd.stride_w - cmd.pad_left
            win = x[:, max(y0, 0):max(min(y0 + cmd.filter_h, x.shape[1]), 0), max(x0, 0):max(min(x0 + cmd.filter_w, x.shape[2]), 0), :].astype(np.int64)
            if is_max:
                out[:, oy, ox, :] = win.max(axis=(1, 2))
                continue
            count = win.shape[1] * win.shape[2]
            s = win.sum(axis=(1, 2))
            if cmd.floor_rounding:
                out[:, oy, ox, :] = np.floor_divide(s + count // 2, count)
            else:  # half away from zero (C truncating division)
                out[:, oy, ox, :] = np.sign(s) * ((np.abs(s) + count // 2) // count)
    return np.clip(out, cmd.act_min, cmd.act_max).astype(np.int8)


def ref_add(x1, x2, cmd):
    a = wrap32((x1.astype(np.int64) + cmd.input1_offset) << cmd.left_shift)
    b = wrap32((x2.astype(np.int64) + cmd.input2_offset) << cmd.left_shift)
    s = wrap32(requant(a, cmd.input1_multiplier, cmd.input1_shift, cmd.rounding)
               + requant(b, cmd.input2_multiplier, cmd.input2_shift, cmd.rounding))
    out = requant(s, cmd.output_multiplier, cmd.output_shift, cmd.rounding) + cmd.output_offset
    return np.clip(out, cmd.act_min, cmd.act_max).astype(np.int8)


def ref_mul(x1, x2, cmd):
    p = (x1.astype(np.int64) + cmd.input1_offset) * (x2.astype(np.int64) + cmd.input2_offset)
    out = requant(p, cmd.output_multiplier, cmd.output_shift, cmd.rounding) + cmd.output_offset
    return np.clip(out, cmd.act_min, cmd.act_max).astype(np.int8)


def channel_params(rng, channels):
    bias = rng.integers(-5000, 5000, channels)
    mult = rng.integers(1 << 30, (1 << 31) - 1, channels)
    shift = rng.integers(-12, -6, channels)
    return bias, mult, shift


# -- arithmetic ------------------------------------------------------------------------------------------------
CONV_CASES = [
    # in shape, (cout, kh, kw), stride, dilation, pad top/left, weight offset
    ((1, 9, 9, 5), (8, 3, 3), (1, 1), (1, 1), (1, 1), 0),
    ((1, 11, 10, 3), (4, 3, 2), (2, 3), (2, 1), (2, 1), 0),
    ((2, 7, 7, 17), (9, 1, 1), (1, 1), (1, 1), (0, 0), -12),  # uint8-style nonzero weight zero point
    ((1, 49, 10, 1), (6, 10, 4), (2, 2), (1, 1), (4, 1), 0),  # the KWS first layer's geometry
]


@pytest.mark.parametrize("rounding", [R.ROUNDING_DOUBLE, R.ROUNDING_SINGLE])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_matches_numpy(case, rounding):
    in_shape, (cout, kh, kw), (sh, sw), (dh, dw), (pt, pl), w_off = case
    rng = np.random.default_rng(hash((case, rounding)) % 2**32)
    n, h, w_, cin = in_shape
    oh = (h + pt - (kh - 1) * dh - 1) // sh + 1 + (1 if pt else 0)
    ow = (w_ + pl - (kw - 1) * dw - 1) // sw + 1 + (1 if pl else 0)
    oh, ow = min(oh, (h - 1 + pt) // sh + 1), min(ow, (w_ - 1 + pl) // sw + 1)
    x, w = rand_i8(rng, in_shape), rand_i8(rng, (cout, kh, kw, cin))
    bias, mult, shift = channel_params(rng, cout)
    m = Memory()
    cmd = C.Conv2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), in_shape), C.TensorDesc.dense(1, m.arena(n * oh * ow * cout), (n, oh, ow, cout)),
                   C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape), C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift))),
                   input_offset=int(rng.integers(-128, 128)), weight_offset=w_off, output_offset=int(rng.integers(-128, 128)),
                   act_min=-100, act_max=120, stride_h=sh, stride_w=sw, dilation_h=dh, dilation_w=dw, pad_top=pt,
                   pad_left=pl, rounding=rounding)
    result = m.run([cmd, C.End()])
    assert result.ok, result
    want = ref_conv(x, w, bias, mult, shift, cmd)
    np.testing.assert_array_equal(m.read(cmd.output.offset, want.shape), want)
    assert result.macs == n * oh * ow * cout * kh * kw * cin


@pytest.mark.parametrize("depth_multiplier", [1, 3])
@pytest.mark.parametrize("rounding", [R.ROUNDING_DOUBLE, R.ROUNDING_SINGLE])
def test_depthwise_matches_numpy(depth_multiplier, rounding):
    rng = np.random.default_rng(depth_multiplier * 10 + rounding)
    in_shape, cout = (1, 10, 9, 6), 6 * depth_multiplier
    x, w = rand_i8(rng, in_shape), rand_i8(rng, (1, 3, 3, cout))
    bias, mult, shift = channel_params(rng, cout)
    m = Memory()
    out_shape = (1, 5, 5, cout)
    cmd = C.DepthwiseConv2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), in_shape), C.TensorDesc.dense(1, m.arena(int(np.prod(out_shape))), out_shape),
                            C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape), C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift))),
                            input_offset=7, output_offset=-3, stride_h=2, stride_w=2, pad_top=0, pad_left=1,
                            depth_multiplier=depth_multiplier, rounding=rounding, act_min=-128, act_max=127)
    assert m.run([cmd, C.End()]).ok
    np.testing.assert_array_equal(m.read(cmd.output.offset, out_shape), ref_conv(x, w, bias, mult, shift, cmd, depthwise=True))


def round_half_away(r) -> np.ndarray:
    return np.where(r >= 0, np.floor(r + 0.5), -np.floor(-r + 0.5)).astype(np.int64)


def test_fp64_rounding_matches_numpy():
    """Rounding 2: round(acc * scale) in IEEE double, halves away from zero (LiteRT's reference FC)."""
    rng = np.random.default_rng(8)
    x, w = rand_i8(rng, (3, 1, 1, 40)), rand_i8(rng, (6, 1, 1, 40))
    bias = rng.integers(-4000, 4000, 6)
    bias[0] = 1  # with the dyadic scale 2^-6 below, odd sums are exact halves: single/double round them up
    scales = np.concatenate([[2.0 ** -6], rng.uniform(1e-4, 5e-3, 5)])
    m = Memory()
    cmd = C.Conv2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape), C.TensorDesc.dense(1, m.arena(18), (3, 1, 1, 6)),
                   C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape),
                   C.ParamRef(0, m.const(C.pack_channel_params_fp64(bias, scales))), input_offset=3, output_offset=-2,
                   rounding=R.ROUNDING_FP64)
    assert m.run([cmd, C.End()]).ok
    acc = np.einsum("nc,oc->no", x.reshape(3, 40).astype(np.int64) + 3, w.reshape(6, 40).astype(np.int64)) + bias
    want = np.clip(round_half_away(acc * scales) - 2, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(m.read(cmd.output.offset, (3, 6)), want)


@pytest.mark.parametrize("bad_scale", [float("nan"), float("inf"), -0.5])
def test_fp64_rejects_bad_scales(bad_scale):
    m = Memory()
    commands = valid_commands(m)
    commands[1].rounding = R.ROUNDING_FP64
    commands[1].params = C.ParamRef(0, m.const(C.pack_channel_params_fp64([0] * 8, [0.01] * 7 + [bad_scale])))
    result = m.run(commands)
    assert (result.error_code, result.error_command) == (R.ERR_BAD_QUANT, 1)


def test_fp64_rounding_only_in_conv_commands():
    m = Memory()
    x = C.TensorDesc.dense(1, 0, (1, 2, 2, 4))
    add = C.Add(x, x, C.TensorDesc.dense(1, 64, (1, 2, 2, 4)), rounding=R.ROUNDING_FP64)
    result = m.run([add, C.End()])
    assert (result.error_code, result.error_command) == (R.ERR_BAD_PARAM, 0)


def test_per_tensor_params_apply_one_record_to_all_channels():
    rng = np.random.default_rng(3)
    x, w = rand_i8(rng, (1, 4, 4, 8)), rand_i8(rng, (5, 1, 1, 8))
    m = Memory()
    cmd = C.Conv2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape), C.TensorDesc.dense(1, m.arena(80), (1, 4, 4, 5)),
                   C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape), C.ParamRef(0, m.const(C.pack_channel_params([100], [1 << 30], [-7]))),
                   per_tensor_params=True)
    assert m.run([cmd, C.End()]).ok
    want = ref_conv(x, w, [100] * 5, [1 << 30] * 5, [-7] * 5, cmd)
    np.testing.assert_array_equal(m.read(cmd.output.offset, want.shape), want)


@pytest.mark.parametrize("is_max, floor_rounding, padded", [(True, False, True), (False, False, True), (False, True, True),
                                                            (False, False, False)])
def test_pooling_matches_numpy(is_max, floor_rounding, padded):
    rng = np.random.default_rng(int(is_max) + 2 * int(floor_rounding))
    x = rand_i8(rng, (2, 9, 8, 20))
    out_shape = (2, 5, 4, 20) if padded else (2, 3, 3, 20)
    m = Memory()
    fields = dict(input=C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape),
                  output=C.TensorDesc.dense(1, m.arena(int(np.prod(out_shape))), out_shape), filter_h=3, filter_w=2,
                  stride_h=2, stride_w=2, pad_top=1 if padded else 0, pad_left=1 if padded else 0, act_min=-90, act_max=110)
    cmd = C.MaxPool2D(**fields) if is_max else C.AvgPool2D(**fields, floor_rounding=floor_rounding)
    assert m.run([cmd, C.End()]).ok
    np.testing.assert_array_equal(m.read(cmd.output.offset, out_shape), ref_pool(x, cmd, is_max))


def test_average_rounding_modes_differ_on_negative_halves():
    m = Memory()
    x = np.array([-3, -2, 3, 2], np.int8).reshape(1, 2, 2, 1)  # pairs: sums -5 and 5 over n = 2
    cmds = [C.AvgPool2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape), C.TensorDesc.dense(1, 64 + 16 * i, (1, 2, 1, 1)),
                        filter_h=1, filter_w=2, stride_h=1, stride_w=2, floor_rounding=bool(i)) for i in range(2)]
    assert m.run(cmds + [C.End()]).ok
    assert m.read(64, 2).tolist() == [-3, 3]  # -2.5 -> -3 (half away from zero), 2.5 -> 3
    assert m.read(80, 2).tolist() == [-2, 3]  # floor((sum + 1) / 2): -2.5 -> -2, 2.5 -> 3


@pytest.mark.parametrize("rounding", [R.ROUNDING_DOUBLE, R.ROUNDING_SINGLE])
@pytest.mark.parametrize("shape2", [(1, 4, 6, 8), (1, 1, 1, 8), (1, 4, 1, 1)])
def test_add_and_mul_match_numpy_with_broadcasting(rounding, shape2):
    rng = np.random.default_rng(len(shape2) + sum(shape2) + rounding)
    out_shape = (1, 4, 6, 8)
    x1, x2 = rand_i8(rng, out_shape), rand_i8(rng, shape2)
    m = Memory()
    d1 = C.TensorDesc.dense(1, m.arena(x1.tobytes()), out_shape)
    dense2 = C.TensorDesc.dense(1, m.arena(x2.tobytes()), shape2)
    d2 = C.TensorDesc(1, dense2.offset, out_shape, tuple(0 if a == 1 and b > 1 else s for a, b, s in zip(shape2, out_shape, dense2.strides)))
    add = C.Add(d1, d2, C.TensorDesc.dense(1, m.arena(192), out_shape), input1_offset=5, input2_offset=-7, output_offset=3,
                act_min=-120, act_max=100, input1_multiplier=1518500250, input1_shift=-1, input2_multiplier=1173000000,
                input2_shift=-2, output_multiplier=1652000000, output_shift=-18, left_shift=20, rounding=rounding)
    mul = C.Mul(d1, d2, C.TensorDesc.dense(1, m.arena(192), out_shape), input1_offset=5, input2_offset=-7, output_offset=3,
                output_multiplier=1300000000, output_shift=-7, rounding=rounding)
    result = m.run([add, mul, C.End()])
    assert result.ok
    x2b = np.broadcast_to(x2, out_shape)
    np.testing.assert_array_equal(m.read(add.output.offset, out_shape), ref_add(x1, x2b, add))
    np.testing.assert_array_equal(m.read(mul.output.offset, out_shape), ref_mul(x1, x2b, mul))
    assert result.sram_read_bytes == 2 * (x1.size + x2.size)  # a broadcast operand is read once


def test_slices_of_larger_tensors_in_and_out():
    """A conv reads channels 4..11 of a [1,6,6,16] tensor and writes channels 8..15 of a [1,6,6,24] one."""
    rng = np.random.default_rng(11)
    big = rand_i8(rng, (1, 6, 6, 16))
    w = rand_i8(rng, (8, 3, 3, 8))
    bias, mult, shift = channel_params(rng, 8)
    m = Memory()
    big_off = m.arena(big.tobytes())
    out_off = m.arena(6 * 6 * 24)
    before = bytes(m.sram)
    src = C.TensorDesc(1, big_off + 4, (1, 6, 6, 8), (576, 96, 16, 1))
    dst = C.TensorDesc(1, out_off + 8, (1, 6, 6, 8), (864, 144, 24, 1))
    cmd = C.Conv2D(src, dst, C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape),
                   C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift))), input_offset=1, pad_top=1, pad_left=1)
    assert m.run([cmd, C.End()]).ok
    out = m.read(out_off, (1, 6, 6, 24))
    np.testing.assert_array_equal(out[..., 8:16], ref_conv(big[..., 4:12], w, bias, mult, shift, cmd))
    assert not out[..., :8].any() and not out[..., 16:].any()  # the rest of the output tensor is untouched
    assert bytes(m.sram[:out_off]) == before[:out_off]


def test_dma_copy_strided_and_broadcast():
    rng = np.random.default_rng(5)
    x = rand_i8(rng, (1, 4, 5, 6))
    row = rand_i8(rng, (6,))
    m = Memory()
    x_off, row_off = m.arena(x.tobytes()), m.const(row.tobytes())
    out_off = m.arena(4 * 5 * 12)
    cmds = [C.DmaCopy(C.TensorDesc.dense(1, x_off, x.shape), C.TensorDesc(1, out_off, x.shape, (240, 60, 12, 1))),
            C.DmaCopy(C.TensorDesc(0, row_off, x.shape, (0, 0, 0, 1)), C.TensorDesc(1, out_off + 6, x.shape, (240, 60, 12, 1))),
            C.End()]
    result = m.run(cmds)
    assert result.ok and result.flash_read_bytes == 6
    out = m.read(out_off, (1, 4, 5, 12))
    np.testing.assert_array_equal(out[..., :6], x)
    np.testing.assert_array_equal(out[..., 6:], np.broadcast_to(row, x.shape))


# -- timing --------------------------------------------------------------------------------------------------
def mixed_table(m: Memory, rng) -> list:
    x = rand_i8(rng, (1, 12, 12, 19))
    x_off = m.arena(x.tobytes())
    w = m.const(rand_i8(rng, (21, 3, 3, 19)).tobytes())
    dw = m.const(rand_i8(rng, (1, 3, 3, 21)).tobytes())
    bias, mult, shift = channel_params(rng, 21)
    p = m.const(C.pack_channel_params(bias, mult, shift))
    a = C.TensorDesc.dense(1, m.arena(12 * 12 * 21), (1, 12, 12, 21))
    b = C.TensorDesc.dense(1, m.arena(6 * 6 * 21), (1, 6, 6, 21))
    c = C.TensorDesc.dense(1, m.arena(3 * 3 * 21), (1, 3, 3, 21))
    d = C.TensorDesc.dense(1, m.arena(3 * 3 * 21), (1, 3, 3, 21))
    return [
        C.Conv2D(C.TensorDesc.dense(1, x_off, x.shape), a, C.TensorDesc.dense(0, w, (21, 3, 3, 19)), C.ParamRef(0, p), pad_top=1, pad_left=1),
        C.DepthwiseConv2D(a, b, C.TensorDesc.dense(0, dw, (1, 3, 3, 21)), C.ParamRef(0, p), stride_h=2, stride_w=2, rounding=1),
        C.MaxPool2D(b, c, filter_h=2, filter_w=2, stride_h=2, stride_w=2),
        C.AvgPool2D(b, d, filter_h=2, filter_w=2, stride_h=2, stride_w=2),
        C.Add(c, C.TensorDesc(1, d.offset, d.shape, (0, 0, 0, 1)), d, input1_multiplier=1 << 30, input2_multiplier=1 << 30,
              output_multiplier=1 << 30, output_shift=-20),
        C.Mul(c, d, c, output_multiplier=1 << 30, output_shift=-8),
        C.DmaCopy(C.TensorDesc.dense(0, w, (1, 1, 7, 9)), C.TensorDesc.dense(1, m.arena(63), (1, 1, 7, 9))),
        C.End(),
    ]


def test_timing_model_matches_perf_counters():
    m = Memory()
    commands = mixed_table(m, np.random.default_rng(0))
    result = m.run(commands)
    assert result.ok, result
    classes = board_memory_classes(load_board("riscv-npu"))
    ranges = [(base, size, T.MemoryClass(kind, bw)) for base, size, kind, bw in classes]
    for memory in (T.MemoryMap.for_addresses(ranges, [FLASH, SRAM]), T.MemoryMap.for_board(load_board("riscv-npu"))):
        cost = T.table_cost(commands, memory)
        assert cost.cycles == result.cycles
        assert (cost.macs, cost.sram_read_bytes, cost.flash_read_bytes, cost.write_bytes) == \
            (result.macs, result.sram_read_bytes, result.flash_read_bytes, result.write_bytes)
    assert result.commands == len(commands)
    assert result.flash_read_bytes > 0 and result.sram_read_bytes > 0


def test_timing_formulas_and_lower_bound():
    memory = T.MemoryMap.for_board(load_board("riscv-npu"))
    conv = C.Conv2D(C.TensorDesc.dense(1, 0, (1, 8, 8, 16)), C.TensorDesc.dense(1, 4096, (1, 8, 8, 8)),
                    C.TensorDesc.dense(0, 0, (8, 1, 1, 16)), C.ParamRef(0, 256))
    cost = T.command_cost(conv, memory)
    assert cost.macs == 64 * 8 * 16 and cost.compute_cycles == 64  # full lanes: 128 MACs per cycle
    # SRAM 8 B/cycle: 1024 in + 512 out; flash 1 B/cycle: 128 weights + 96 params
    assert cost.memory_cycles == 1024 // 8 + 128 + 96 + 512 // 8
    assert cost.cycles == R.CMD_OVERHEAD_CYCLES + cost.memory_cycles
    assert cost.lower_bound_cycles == cost.memory_cycles and cost.efficiency < 1
    thin = C.Conv2D(C.TensorDesc.dense(1, 0, (1, 8, 8, 1)), C.TensorDesc.dense(1, 4096, (1, 8, 8, 9)),
                    C.TensorDesc.dense(0, 0, (9, 1, 1, 1)), C.ParamRef(0, 256))
    thin_cost = T.command_cost(thin, memory)
    assert thin_cost.compute_cycles == 64 * 2  # 1 of 16 input lanes, 9 of 16 output lanes used
    assert T.command_cost(C.End(), memory).cycles == R.CMD_OVERHEAD_CYCLES


# -- registers -------------------------------------------------------------------------------------------------
def test_identification_irq_and_reset():
    m = Memory()
    with NpuDevice() as dev:
        assert dev.reg_read(R.REG_ID) == R.ID_VALUE and dev.reg_read(R.REG_VERSION) == R.VERSION_VALUE
        assert m.run([C.End()], device=dev).ok
        assert dev.reg_read(R.REG_IRQ_STATUS) == R.IRQ_DONE and not dev.irq_pending()
        dev.reg_write(R.REG_IRQ_ENABLE, R.IRQ_DONE | R.IRQ_ERROR)
        assert dev.irq_pending()
        dev.reg_write(R.REG_IRQ_CLEAR, R.IRQ_DONE)
        assert not dev.irq_pending() and dev.reg_read(R.REG_IRQ_STATUS) == 0
        assert dev.reg_read(R.reg_region_base(1)) == SRAM and dev.reg_read(R.REG_PERF_COMMANDS) == 1
        dev.reg_write(R.REG_CTRL, R.CTRL_RESET)
        assert [dev.reg_read(r) for r in (R.REG_STATUS, R.REG_IRQ_ENABLE, R.reg_region_base(1), R.REG_PERF_CYCLES_LO)] == [0] * 4
        dev.reg_write(R.REG_CTRL, R.CTRL_START)  # no bus-mapped table at CMD_BASE 0 with size 0
        result = read_result(dev)
        assert result.error_code == R.ERR_TABLE_SIZE and result.error_command == R.NO_COMMAND
        assert result.irq_status == R.IRQ_ERROR


# -- errors ----------------------------------------------------------------------------------------------------
def valid_commands(m: Memory) -> list:
    rng = np.random.default_rng(1)
    x = C.TensorDesc.dense(1, m.arena(rand_i8(rng, (1, 4, 4, 8)).tobytes()), (1, 4, 4, 8))
    y = C.TensorDesc.dense(1, m.arena(128), (1, 4, 4, 8))
    w = C.TensorDesc.dense(0, m.const(rand_i8(rng, (8, 1, 1, 8)).tobytes()), (8, 1, 1, 8))
    p = C.ParamRef(0, m.const(C.pack_channel_params([0] * 8, [1 << 30] * 8, [-3] * 8)))
    return [C.DmaCopy(x, y), C.Conv2D(x, y, w, p), C.MaxPool2D(x, y), C.End()]


def with_field(cmds, index, **changes):
    cmds = list(cmds)
    cmds[index] = type(cmds[index])(**{**vars(cmds[index]), **changes})
    return cmds


def desc_with(d, **changes):
    return C.TensorDesc(**{**vars(d), **changes})


def patch(table: bytes, pos: int, data: bytes) -> bytes:
    return table[:pos] + data + table[pos + len(data):]


CONV_AT = 16 + 72  # byte position of command 1 (Conv2D) in valid_commands' table

TABLE_ERRORS = [
    ("bad magic", lambda t: patch(t, 0, b"XXXX"), R.ERR_TABLE_MAGIC, R.NO_COMMAND),
    ("bad version", lambda t: patch(t, 4, b"\x02\x00"), R.ERR_TABLE_VERSION, R.NO_COMMAND),
    ("header size differs", lambda t: patch(t, 12, (len(t) + 4).to_bytes(4, "little")), R.ERR_TABLE_SIZE, R.NO_COMMAND),
    ("too few commands counted", lambda t: patch(t, 8, (3).to_bytes(4, "little")), R.ERR_NO_END, 2),
    ("unknown opcode", lambda t: patch(t, CONV_AT, b"\x7e"), R.ERR_BAD_OPCODE, 1),
    ("command size", lambda t: patch(t, CONV_AT + 2, (140).to_bytes(2, "little")), R.ERR_CMD_SIZE, 1),
    ("rounding field", lambda t: patch(t, CONV_AT + 1, b"\x03"), R.ERR_BAD_PARAM, 1),
    ("reserved bits", lambda t: patch(t, CONV_AT + 134, b"\x01"), R.ERR_BAD_PARAM, 1),
    ("descriptor dtype", lambda t: patch(t, CONV_AT + 9, b"\x01"), R.ERR_BAD_PARAM, 1),
]


@pytest.mark.parametrize("name, mutate, code, index", TABLE_ERRORS, ids=[e[0] for e in TABLE_ERRORS])
def test_table_errors_report_code_and_index(name, mutate, code, index):
    m = Memory()
    table = mutate(C.encode(valid_commands(m)))
    snapshot = bytes(m.sram)
    result = run_table(table, {FLASH: m.flash + bytes(16), SRAM: m.sram}, [FLASH, SRAM], read_only=[FLASH], memory_classes=BOARD_CLASSES)
    assert (result.error_code, result.error_command) == (code, index), result
    assert result.status & R.STATUS_ERROR and result.irq_status == R.IRQ_ERROR
    assert bytes(m.sram) == snapshot  # validation fails before any command writes memory


COMMAND_ERRORS = [
    ("region index", lambda c: with_field(c, 1, input=desc_with(c[1].input, region=8)), R.ERR_BAD_REGION, 1),
    ("zero dimension", lambda c: with_field(c, 0, src=desc_with(c[0].src, shape=(1, 0, 4, 8)), dst=desc_with(c[0].dst, shape=(1, 0, 4, 8))), R.ERR_BAD_SHAPE, 0),
    ("dma shapes differ", lambda c: with_field(c, 0, dst=C.TensorDesc.dense(1, 512, (1, 4, 8, 4))), R.ERR_BAD_SHAPE, 0),
    ("conv channels differ", lambda c: with_field(c, 1, weights=desc_with(c[1].weights, shape=(8, 1, 1, 7))), R.ERR_BAD_SHAPE, 1),
    ("output too large for input", lambda c: with_field(c, 2, output=C.TensorDesc.dense(1, 512, (1, 5, 4, 8))), R.ERR_BAD_SHAPE, 2),
    ("zero stride", lambda c: with_field(c, 1, stride_h=0), R.ERR_BAD_PARAM, 1),
    ("kernel too large", lambda c: with_field(c, 2, filter_h=300), R.ERR_BAD_PARAM, 2),
    ("padding beyond kernel", lambda c: with_field(c, 2, pad_top=1), R.ERR_BAD_PARAM, 2),
    ("activation range", lambda c: with_field(c, 1, act_min=5, act_max=4), R.ERR_BAD_PARAM, 1),
    ("output zero stride", lambda c: with_field(c, 0, dst=desc_with(c[0].dst, strides=(128, 32, 0, 1))), R.ERR_BAD_PARAM, 0),
    ("address overflow", lambda c: with_field(c, 0, src=desc_with(c[0].src, offset=0x7FFFFFF0)), R.ERR_ADDRESS_RANGE, 0),
    ("absurd shape", lambda c: with_field(c, 0, src=C.TensorDesc(1, 0, (1, 65535, 65535, 1), (0, 0, 1, 0)), dst=C.TensorDesc(1, 0, (1, 65535, 65535, 1), (65535, 1, 0, 0))), R.ERR_BAD_PARAM, 0),
    ("operand too large", lambda c: with_field(c, 0, src=C.TensorDesc.dense(1, 0, (1, 1024, 1024, 8)), dst=C.TensorDesc.dense(1, 0, (1, 1024, 1024, 8))), R.ERR_TOO_LARGE, 0),
    ("dma outside mapped memory", lambda c: with_field(c, 0, dst=desc_with(c[0].dst, offset=0x100000)), R.ERR_BUS, 0),
    ("write to flash", lambda c: with_field(c, 2, output=desc_with(c[2].output, region=0)), R.ERR_BUS, 2),
    ("params outside memory", lambda c: with_field(c, 1, params=C.ParamRef(0, 0x00F00000)), R.ERR_BUS, 1),
]


@pytest.mark.parametrize("name, mutate, code, index", COMMAND_ERRORS, ids=[e[0] for e in COMMAND_ERRORS])
def test_command_errors_report_code_and_index(name, mutate, code, index):
    m = Memory()
    commands = mutate(valid_commands(m))
    result = run_table(C.encode(commands), {FLASH: m.flash + bytes(16), SRAM: m.sram}, [FLASH, SRAM], read_only=[FLASH], memory_classes=BOARD_CLASSES)
    assert (result.error_code, result.error_command) == (code, index), result
    assert result.commands == (index if code == R.ERR_BUS else 0)  # static errors stop before command 0 runs


def test_bad_quant_params_from_memory():
    m = Memory()
    commands = valid_commands(m)
    commands[1].params = C.ParamRef(0, m.const(C.pack_channel_params([0] * 8, [1 << 30] * 7 + [-5], [-3] * 8)))
    assert (m.run(commands).error_code, m.run(commands).error_command) == (R.ERR_BAD_QUANT, 1)
    commands[1].params = C.ParamRef(0, m.const(C.pack_channel_params([0] * 8, [1 << 30] * 8, [-3] * 7 + [31])))
    assert m.run(commands).error_code == R.ERR_BAD_QUANT


def test_no_bus_and_oversized_table():
    with NpuDevice() as dev:
        dev.reg_write(R.REG_CMD_SIZE, 64)
        dev.reg_write(R.REG_CTRL, R.CTRL_START)
        assert read_result(dev).error_code == R.ERR_NO_BUS
    m = Memory()
    table = C.encode(valid_commands(m))
    with NpuDevice() as dev:
        bus = BytearrayBus({0x10000: bytearray(table) + bytearray(R.MAX_TABLE_BYTES)})
        dev.set_bus(bus.read, bus.write)
        dev.reg_write(R.REG_CMD_BASE, 0x10000)
        dev.reg_write(R.REG_CMD_SIZE, R.MAX_TABLE_BYTES + 16)
        dev.reg_write(R.REG_CTRL, R.CTRL_START)
        assert read_result(dev).error_code == R.ERR_TABLE_SIZE
        assert not any(kind == "r" for kind, *_ in bus.log)  # rejected before reading anything


def test_reset_during_run_aborts_with_command_index():
    m = Memory()
    table = C.encode(valid_commands(m))
    windows = {FLASH: m.flash + bytes(16), SRAM: m.sram, 0xF0000000: bytearray(table)}
    with NpuDevice() as dev:
        bus = BytearrayBus(windows)

        def write_then_reset(ctx, addr, src, length):
            status = bus.write(ctx, addr, src, length)
            if len([k for k, *_ in bus.log if k == "w"]) == 2:  # during command 1's write back
                dev.reg_write(R.REG_STATUS, 0)  # read-only: ignored
                assert dev.reg_read(R.REG_STATUS) == R.STATUS_BUSY
                dev.reg_write(R.REG_CTRL, R.CTRL_START)  # ignored while running
                dev.reg_write(R.REG_CTRL, R.CTRL_RESET)
            return status

        dev.set_bus(bus.read, write_then_reset)
        for i, base in enumerate([FLASH, SRAM]):
            dev.reg_write(R.reg_region_base(i), base)
        dev.reg_write(R.REG_CMD_BASE, 0xF0000000)
        dev.reg_write(R.REG_CMD_SIZE, len(table))
        dev.reg_write(R.REG_CTRL, R.CTRL_START)
        result = read_result(dev)
        assert (result.error_code, result.error_command) == (R.ERR_ABORTED, 1)
        assert dev.reg_read(R.REG_CMD_SIZE) == 0  # the reset itself took effect
        # the device works normally afterwards
        assert m.run(valid_commands(Memory()), device=dev).ok


def test_random_and_mutated_tables_never_crash():
    """Random bytes and single-field mutations of a valid table: always DONE or a documented error."""
    rng = np.random.default_rng(2024)
    m = Memory()
    table = bytearray(C.encode(valid_commands(m)[:-1] + mixed_table(m, rng)))
    count = len(valid_commands(Memory())) - 1 + 8
    known = set(R.ERROR_NAMES)
    outcomes = set()
    with NpuDevice() as dev:
        for trial in range(400):
            t = bytearray(table)
            if trial % 4 == 0:
                t = bytearray(rng.integers(0, 256, int(rng.integers(0, 600)), dtype=np.uint8).tobytes())
            else:
                for _ in range(int(rng.integers(1, 4))):
                    pos = int(rng.integers(16 if trial % 4 != 1 else 0, len(t)))
                    t[pos] = int(rng.integers(0, 256)) if trial % 2 else t[pos] ^ (1 << int(rng.integers(0, 8)))
            sram = bytearray(m.sram)
            result = run_table(bytes(t), {FLASH: m.flash + bytes(16), SRAM: sram}, [FLASH, SRAM], read_only=[FLASH], device=dev, memory_classes=BOARD_CLASSES)
            assert result.ok or (result.status & R.STATUS_ERROR and result.error_code in known), result
            assert result.ok or result.error_command == R.NO_COMMAND or result.error_command < count
            outcomes.add(result.error_name)
    assert len(outcomes) >= 6, outcomes  # the mutations reach many different checks


# -- version 1.2: int16 operands, TRANSPOSE_CONV2D, SUB/MIN/MAX, TABLE, GATHER_HW, signed strides -----------------
def rand_i16(rng, shape) -> np.ndarray:
    return rng.integers(-32768, 32768, shape).astype(np.int16)


def read16(m: Memory, offset: int, shape) -> np.ndarray:
    n = int(np.prod(shape))
    return np.frombuffer(bytes(m.sram[offset:offset + 2 * n]), "<i2").reshape(shape)


def mbqm64(acc, mult, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier(int64_t, ...): the multiplier rounded to 16 bits, one rounding."""
    acc, mult, shift = (np.broadcast_to(np.asarray(v, object), np.shape(acc)) for v in (acc, mult, shift))
    fn = np.frompyfunc(lambda a, m, s: ((int(a) * (((int(m) + (1 << 15)) >> 16) if m < 0x7FFF0000 else 0x7FFF)
                                         + (1 << (14 - int(s)))) >> (15 - int(s))), 3, 1)
    return fn(acc, mult, shift).astype(np.int64)


def channel_params16(rng, channels):
    bias = rng.integers(-(1 << 40), 1 << 40, channels)
    mult = rng.integers(1 << 30, (1 << 31) - 1, channels)
    shift = rng.integers(-22, -14, channels)
    return bias, mult, shift


def test_16x8_conv_and_depthwise_match_numpy():
    """int16 activations, int8 weights, int64 bias in 16-byte records; the int16 clamp's high bytes."""
    rng = np.random.default_rng(16)
    x = rand_i16(rng, (1, 7, 6, 5))
    w, wd = rand_i8(rng, (4, 3, 3, 5)), rand_i8(rng, (1, 3, 3, 10))
    (bias, mult, shift), (bias_d, mult_d, shift_d) = channel_params16(rng, 4), channel_params16(rng, 10)
    m = Memory()
    xd = C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape, "int16")
    conv = C.Conv2D(xd, C.TensorDesc.dense(1, m.arena(2 * 7 * 6 * 4), (1, 7, 6, 4), "int16"),
                    C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape),
                    C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift, wide=True))),
                    pad_top=1, pad_left=1, act_min=-20000, act_max=31000)
    dw = C.DepthwiseConv2D(xd, C.TensorDesc.dense(1, m.arena(2 * 4 * 3 * 10), (1, 4, 3, 10), "int16"),
                           C.TensorDesc.dense(0, m.const(wd.tobytes()), wd.shape),
                           C.ParamRef(0, m.const(C.pack_channel_params(bias_d, mult_d, shift_d, wide=True))),
                           stride_h=2, stride_w=2, pad_top=1, pad_left=1, depth_multiplier=2, act_min=-32768,
                           act_max=32767, rounding=R.ROUNDING_SINGLE)
    result = m.run([conv, dw, C.End()])
    assert result.ok, result
    assert C.decode(C.encode([conv, C.End()]))[0] == conv  # the clamp's high bytes round-trip
    for cmd, weights, b, mu, sh, depthwise in ((conv, w, bias, mult, shift, False), (dw, wd, bias_d, mult_d, shift_d, True)):
        acc = _acc(x, weights, cmd, depthwise) + b
        want = np.clip(mbqm64(acc, mu, sh), cmd.act_min, cmd.act_max)
        np.testing.assert_array_equal(read16(m, cmd.output.offset, cmd.output.shape), want)


def _acc(x, w, cmd, depthwise) -> np.ndarray:
    """sum(x * w) over each window (int64, no offsets), by the int8 reference with a zero requantization path."""
    n, oh, ow, oc = cmd.output.shape
    kh, kw = w.shape[1], w.shape[2]
    xp = np.zeros((n, x.shape[1] + 2 * kh, x.shape[2] + 2 * kw, x.shape[3]), np.int64)
    xp[:, cmd.pad_top:cmd.pad_top + x.shape[1], cmd.pad_left:cmd.pad_left + x.shape[2]] = x
    acc = np.zeros((n, oh, ow, oc), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, ky:ky + (oh - 1) * cmd.stride_h + 1:cmd.stride_h, kx:kx + (ow - 1) * cmd.stride_w + 1:cmd.stride_w]
            if depthwise:
                acc += patch[..., np.arange(oc) // cmd.depth_multiplier] * w[0, ky, kx].astype(np.int64)
            else:
                acc += np.einsum("nhwc,oc->nhwo", patch, w[:, ky, kx].astype(np.int64))
    return acc


def test_16x8_fp64_and_wide_shift_limit():
    rng = np.random.default_rng(17)
    x, w = rand_i16(rng, (2, 1, 1, 30)), rand_i8(rng, (3, 1, 1, 30))
    bias, scales = rng.integers(-(1 << 35), 1 << 35, 3), rng.uniform(1e-6, 1e-4, 3)
    m = Memory()
    out = C.TensorDesc.dense(1, m.arena(12), (2, 1, 1, 3), "int16")
    cmd = C.Conv2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape, "int16"), out,
                   C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape),
                   C.ParamRef(0, m.const(C.pack_channel_params_fp64(bias, scales, wide=True))),
                   rounding=R.ROUNDING_FP64, act_min=-32768, act_max=32767)
    assert m.run([cmd, C.End()]).ok
    acc = np.einsum("nc,oc->no", x.reshape(2, 30).astype(np.int64), w.reshape(3, 30).astype(np.int64)) + bias
    want = np.clip(round_half_away(acc * scales), -32768, 32767)
    np.testing.assert_array_equal(read16(m, out.offset, (2, 3)), want)
    cmd.rounding, cmd.params = R.ROUNDING_DOUBLE, C.ParamRef(0, m.const(C.pack_channel_params([0] * 3, [1 << 30] * 3,
                                                                                          [14, 15, 0], wide=True)))
    result = m.run([cmd, C.End()])  # shift 15: the 64-bit requantization would shift by 0
    assert (result.error_code, result.error_command) == (R.ERR_BAD_QUANT, 0)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_transpose_conv_matches_a_scatter(dtype):
    """Each input pixel adds x * w to the output window at (iy * stride - pad, ix * stride - pad); outputs no
    tap reaches keep the bias alone."""
    rng = np.random.default_rng(18)
    x = rand_i8(rng, (1, 4, 3, 6)) if dtype == "int8" else rand_i16(rng, (1, 4, 3, 6))
    w = rand_i8(rng, (5, 3, 2, 6))
    out_shape, (sh, sw), (pt, pl) = (1, 8, 6, 5), (2, 3), (1, 0)
    m = Memory()
    wide = dtype == "int16"
    bias, mult, shift = channel_params16(rng, 5) if wide else channel_params(rng, 5)
    elem = 2 if wide else 1
    cmd = C.TransposeConv2D(C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape, dtype),
                            C.TensorDesc.dense(1, m.arena(elem * int(np.prod(out_shape))), out_shape, dtype),
                            C.TensorDesc.dense(0, m.const(w.tobytes()), w.shape),
                            C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift, wide=wide))),
                            input_offset=0 if wide else 3, output_offset=0 if wide else -4, stride_h=sh, stride_w=sw,
                            pad_top=pt, pad_left=pl, act_min=-32768 if wide else -128, act_max=32767 if wide else 127)
    result = m.run([cmd, C.End()])
    assert result.ok, result
    full = np.zeros((1, (4 - 1) * sh + 3 + 1, (3 - 1) * sw + 2 + 1, 5), np.int64)
    xo = x.astype(np.int64) + cmd.input_offset
    for iy in range(4):
        for ix in range(3):
            full[0, iy * sh:iy * sh + 3, ix * sw:ix * sw + 2] += np.einsum("c,ohwc->hwo", xo[0, iy, ix], w.astype(np.int64))
    acc = full[:, pt:pt + out_shape[1], pl:pl + out_shape[2]] + bias
    if wide:
        want = np.clip(mbqm64(acc, mult, shift), -32768, 32767)
        got = read16(m, cmd.output.offset, out_shape)
    else:
        want = np.clip(requant(wrap32(acc), mult, shift, cmd.rounding) + cmd.output_offset, -128, 127)
        got = m.read(cmd.output.offset, out_shape)
    np.testing.assert_array_equal(got, want)
    assert result.macs == 4 * 3 * 5 * 3 * 2 * 6  # every input pixel times every tap


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_sub_min_max_and_int16_add_mul_match_numpy(dtype):
    rng = np.random.default_rng(19)
    rand = rand_i8 if dtype == "int8" else rand_i16
    out_shape = (1, 3, 5, 7)
    x1, x2 = rand(rng, out_shape), rand(rng, (1, 1, 5, 1))
    m = Memory()
    elem = x1.itemsize
    d1 = C.TensorDesc.dense(1, m.arena(x1.tobytes()), out_shape, dtype)
    dense2 = C.TensorDesc.dense(1, m.arena(x2.tobytes()), (1, 1, 5, 1), dtype)
    d2 = C.TensorDesc(1, dense2.offset, out_shape, (0, 0, dense2.strides[2], 0), dense2.dtype)
    lo, hi = (-100, 110) if dtype == "int8" else (-30000, 29000)
    left = 20 if dtype == "int8" else 15

    def out():
        return C.TensorDesc.dense(1, m.arena(elem * x1.size), out_shape, dtype)

    scaling = dict(input1_multiplier=1518500250, input1_shift=-1, input2_multiplier=1173000000, input2_shift=-2,
                   output_multiplier=1652000000, output_shift=-left + 2, left_shift=left, act_min=lo, act_max=hi)
    add, sub = C.Add(d1, d2, out(), **scaling), C.Sub(d1, d2, out(), **scaling)
    mul = C.Mul(d1, d2, out(), output_multiplier=1300000000, output_shift=-7 if dtype == "int8" else -15,
                act_min=lo, act_max=hi)
    full = C.DTYPE_RANGES[d1.dtype]
    low, high = C.Minimum(d1, d2, out(), act_min=full[0], act_max=full[1]), C.Maximum(d1, d2, out(), act_min=lo, act_max=hi)
    assert m.run([add, sub, mul, low, high, C.End()]).ok
    a, b = x1.astype(np.int64), np.broadcast_to(x2, out_shape).astype(np.int64)
    read = m.read if dtype == "int8" else functools.partial(read16, m)
    s1 = requant(wrap32(a << left), add.input1_multiplier, add.input1_shift, 0)
    s2 = requant(wrap32(b << left), add.input2_multiplier, add.input2_shift, 0)
    for cmd, combined in ((add, s1 + s2), (sub, s1 - s2)):
        want = np.clip(requant(combined, cmd.output_multiplier, cmd.output_shift, 0), lo, hi)
        np.testing.assert_array_equal(read(cmd.output.offset, out_shape), want)
    np.testing.assert_array_equal(read(mul.output.offset, out_shape),
                                  np.clip(requant(a * b, mul.output_multiplier, mul.output_shift, 0), lo, hi))
    np.testing.assert_array_equal(read(low.output.offset, out_shape), np.minimum(a, b))
    np.testing.assert_array_equal(read(high.output.offset, out_shape), np.clip(np.maximum(a, b), lo, hi))


def test_int16_pools_match_numpy():
    rng = np.random.default_rng(20)
    x = rand_i16(rng, (1, 9, 8, 11))
    m = Memory()
    xd = C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape, "int16")
    fields = dict(filter_h=3, filter_w=2, stride_h=2, stride_w=2, pad_top=1, pad_left=1, act_min=-20000, act_max=25000)
    mx = C.MaxPool2D(xd, C.TensorDesc.dense(1, m.arena(2 * 5 * 5 * 11), (1, 5, 5, 11), "int16"), **fields)
    av = C.AvgPool2D(xd, C.TensorDesc.dense(1, m.arena(2 * 5 * 5 * 11), (1, 5, 5, 11), "int16"), **fields)
    assert m.run([mx, av, C.End()]).ok
    for cmd, is_max in ((mx, True), (av, False)):
        want = ref_pool(x.astype(np.int64), cmd, is_max)  # ref_pool clips into int8 storage: compare before it
        raw = read16(m, cmd.output.offset, cmd.output.shape)
        assert np.array_equal(raw.astype(np.int8), want) and raw.min() < -128 and raw.max() > 127


def lut_lookup16(lut, x) -> np.ndarray:
    """TFLite's LUTLookup(int16_t) over an array."""
    x = np.asarray(x, np.int64)
    index = 256 + (x >> 7)
    base = lut[index]
    slope = ((lut[index + 1] - lut[index] + 32768) % 65536) - 32768
    return ((base + ((slope * (x & 0x7F) + 64) >> 7) + 32768) % 65536) - 32768


def test_tables_int8_per_channel_and_int16_interpolated():
    rng = np.random.default_rng(21)
    x8, x16 = rand_i8(rng, (1, 2, 3, 4)), np.arange(-32768, 32768, dtype=np.int16).reshape(1, 1, 256, 256)
    tables8 = rand_i8(rng, (4, 256))
    lut = rng.integers(-32768, 32768, 513).astype(np.int16)
    lut[100:110] = [32767, -32768, 30000, -30000, 0, 1, -1, 32767, 32767, -32768]  # slopes that wrap
    m = Memory(1 << 19)
    t8 = C.Table(C.TensorDesc.dense(1, m.arena(x8.tobytes()), x8.shape), C.TensorDesc.dense(1, m.arena(24), x8.shape),
                 C.ParamRef(0, m.const(C.pack_table(tables8.reshape(-1), "int8"))), table_count=4)
    t16 = C.Table(C.TensorDesc.dense(1, m.arena(x16.tobytes()), x16.shape, "int16"),
                  C.TensorDesc.dense(1, m.arena(2 * x16.size), x16.shape, "int16"),
                  C.ParamRef(0, m.const(C.pack_table(lut, "int16"))))
    result = m.run([t8, t16, C.End()])
    assert result.ok, result
    want8 = tables8[np.arange(4), x8.astype(np.uint8)]  # entry (uint8)x of the channel's table
    np.testing.assert_array_equal(m.read(t8.output.offset, x8.shape), want8)
    np.testing.assert_array_equal(read16(m, t16.output.offset, x16.shape).reshape(-1),
                                  lut_lookup16(lut.astype(np.int64), x16.reshape(-1)))


def test_gather_rows_and_columns_and_bad_index():
    rng = np.random.default_rng(22)
    x = rand_i16(rng, (2, 3, 5, 4))
    rows, cols = [0, 0, 1, 2, 2, 2, 1], [4, 3, 0, 0]
    m = Memory()
    src = C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape, "int16")
    dst = C.TensorDesc.dense(1, m.arena(2 * 2 * 7 * 4 * 4), (2, 7, 4, 4), "int16")
    gather = C.GatherHW(src, dst, C.ParamRef(0, m.const(C.pack_gather_maps(rows, cols))))
    result = m.run([gather, C.End()])
    assert result.ok
    np.testing.assert_array_equal(read16(m, dst.offset, dst.shape), x[:, rows][:, :, cols])
    bad = C.GatherHW(src, dst, C.ParamRef(0, m.const(C.pack_gather_maps(rows[:-1] + [3], cols))))
    result = m.run([gather, bad, C.End()])
    assert (result.error_code, result.error_command) == (R.ERR_BAD_INDEX, 1)


def test_negative_strides_walk_backwards():
    """A DMA reading channels and rows in reverse (signed strides) and writing an int16 slice."""
    rng = np.random.default_rng(23)
    x = rand_i16(rng, (1, 4, 3, 5))
    m = Memory()
    off = m.arena(x.tobytes())
    dst = C.TensorDesc.dense(1, m.arena(x.nbytes), x.shape, "int16")
    last_row_last_channel = off + 2 * (3 * 3 * 5 + 4)
    src = C.TensorDesc(1, last_row_last_channel, x.shape, (120, -30, 10, -2), R.DTYPE_INT16)
    result = m.run([C.DmaCopy(src, dst), C.End()])
    assert result.ok
    np.testing.assert_array_equal(read16(m, dst.offset, x.shape), x[:, ::-1, :, ::-1])
    below = C.TensorDesc(1, 0, (1, 1, 1, 2), (0, 0, 0, -1))  # its second element would be at arena - 1
    assert validate_table(C.encode([C.DmaCopy(below, dst), C.End()]), (0, 0))[0] == R.ERR_ADDRESS_RANGE


def v12_table(m: Memory, rng) -> list:
    """One of every version 1.2 command (int16 where it exists), for the timing and robustness tests."""
    x = rand_i16(rng, (1, 6, 5, 10))
    xd = C.TensorDesc.dense(1, m.arena(x.tobytes()), x.shape, "int16")
    bias, mult, shift = channel_params16(rng, 9)
    w = m.const(rand_i8(rng, (9, 3, 3, 10)).tobytes())
    p = C.ParamRef(0, m.const(C.pack_channel_params(bias, mult, shift, wide=True)))

    def t16(shape):
        return C.TensorDesc.dense(1, m.arena(2 * int(np.prod(shape))), shape, "int16")

    y = t16((1, 6, 5, 10))
    return [
        C.Conv2D(xd, t16((1, 6, 5, 9)), C.TensorDesc.dense(0, w, (9, 3, 3, 10)), p, pad_top=1, pad_left=1,
                 act_min=-32768, act_max=32767),
        C.TransposeConv2D(xd, t16((1, 12, 10, 9)), C.TensorDesc.dense(0, w, (9, 3, 3, 10)), p, stride_h=2,
                          stride_w=2, pad_top=1, pad_left=1, act_min=-32768, act_max=32767),
        C.AvgPool2D(xd, t16((1, 3, 3, 10)), filter_h=2, filter_w=2, stride_h=2, stride_w=2, act_min=-32768,
                    act_max=32767),
        C.Sub(xd, xd, y, input1_multiplier=1 << 30, input2_multiplier=1 << 30, output_multiplier=1 << 30,
              output_shift=-15, left_shift=15, act_min=-32768, act_max=32767),
        C.Maximum(xd, y, t16((1, 6, 5, 10)), act_min=-32768, act_max=32767),
        C.Table(xd, t16((1, 6, 5, 10)), C.ParamRef(0, m.const(C.pack_table(rand_i16(rng, 513), "int16")))),
        C.GatherHW(xd, t16((1, 12, 10, 10)), C.ParamRef(0, m.const(C.pack_gather_maps(np.arange(12) // 2,
                                                                                      np.arange(10) // 2)))),
        C.DmaCopy(C.TensorDesc(1, xd.offset + 2 * 9, (1, 6, 5, 10), (600, 100, 20, -2), R.DTYPE_INT16), y),
        C.End(),
    ]


def test_timing_model_matches_perf_counters_for_version_1_2_commands():
    m = Memory(1 << 17)
    commands = v12_table(m, np.random.default_rng(24))
    result = m.run(commands)
    assert result.ok, result
    for memory in (T.MemoryMap.for_addresses([(b, s, T.MemoryClass(k, bw)) for b, s, k, bw in BOARD_CLASSES],
                                             [FLASH, SRAM]), T.MemoryMap.for_board(load_board("riscv-npu"))):
        cost = T.table_cost(commands, memory)
        assert cost.cycles == result.cycles
        assert (cost.macs, cost.sram_read_bytes, cost.flash_read_bytes, cost.write_bytes) == \
            (result.macs, result.sram_read_bytes, result.flash_read_bytes, result.write_bytes)


def test_int16_halves_the_lanes_in_the_timing_model():
    memory = T.MemoryMap()
    d8, d16 = (C.TensorDesc.dense(1, 0, (1, 8, 8, 16), t) for t in ("int8", "int16"))
    w = C.TensorDesc.dense(0, 0, (8, 1, 1, 16))
    conv8 = T.command_cost(C.Conv2D(d8, C.TensorDesc.dense(1, 4096, (1, 8, 8, 8)), w, C.ParamRef(0, 0)), memory)
    conv16 = T.command_cost(C.Conv2D(d16, C.TensorDesc.dense(1, 4096, (1, 8, 8, 8), "int16"), w, C.ParamRef(0, 0)), memory)
    assert conv16.compute_cycles == 2 * conv8.compute_cycles and conv16.macs == conv8.macs
    add8, add16 = (T.command_cost(C.Add(d, d, d), memory) for d in (d8, d16))
    assert add16.compute_cycles == 2 * add8.compute_cycles and add16.memory_cycles == 2 * add8.memory_cycles


def test_version_1_2_tables_never_crash_when_mutated():
    rng = np.random.default_rng(25)
    m = Memory(1 << 17)
    table = bytearray(C.encode(v12_table(m, rng)))
    outcomes = set()
    with NpuDevice() as dev:
        for trial in range(300):
            t = bytearray(table)
            for _ in range(int(rng.integers(1, 4))):
                pos = int(rng.integers(16, len(t)))
                t[pos] = int(rng.integers(0, 256)) if trial % 2 else t[pos] ^ (1 << int(rng.integers(0, 8)))
            result = run_table(bytes(t), {FLASH: m.flash + bytes(16), SRAM: bytearray(m.sram)}, [FLASH, SRAM],
                               read_only=[FLASH], device=dev, memory_classes=BOARD_CLASSES)
            assert result.ok or result.error_code in R.ERROR_NAMES, result
            outcomes.add(result.error_name)
    assert len(outcomes) >= 6, outcomes


# -- firmware driver ---------------------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None, reason="RISC-V cross compiler not installed")
def test_driver_compiles_without_warnings_for_rv32(tmp_path):
    (tmp_path / "board.h").write_text("#define BOARD_NPU0_BASE 0x40000000u\n#define BOARD_NPU0_IRQ 8\n")
    cmd = ["riscv64-unknown-elf-gcc", "-march=rv32imac_zicsr", "-mabi=ilp32", "--specs=picolibc.specs", "-O2", "-Wall",
           "-Wextra", "-Werror", f"-I{tmp_path}", f"-I{REPO / 'edgesdk' / 'hal'}", "-c",
           str(REPO / "edgesdk" / "targets" / "npu" / "hal" / "npu_driver.c"), "-o", str(tmp_path / "npu_driver.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
