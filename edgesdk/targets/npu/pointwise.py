"""Pointwise activations as TABLE commands: the op's value for every input code, tabulated at build time.

An int8 pointwise op is exactly a 256-entry table, whatever its arithmetic. An int16 one is a TABLE only where
TFLite's 513-entry interpolation (docs/npu-datasheet.md, TABLE) reproduces it on all 65,536 inputs; TFLite builds
its own int16 GELU, EXP, LOG and RSQRT tables in that form, and piecewise-linear ops with kinks on the 128-code
grid fit too. The values come from the host C target's kernel for the op, run on the host over every input code
(the C target's Target.host_library: the same generated call the firmware gets, with the op layer's constants
for the build's rounding mode) -- so the NPU's table and the host's arithmetic cannot disagree, and every op the host
runs bit-exactly (LiteRT's float32-built tables, TFLite Micro's fixed point, PRELU's two multipliers...) is
tabulated without an NPU-specific formula.

Per-channel constants (PRELU's alpha along the channel axis) give one table per channel.
"""

from __future__ import annotations

import weakref

import numpy as np

from ...ir.graph import Op, Tensor
from .hw import registers as R
from .shapes import MAX_DIMS

# Op types whose output element depends on the input element at the same position only (PRELU: and on its
# channel's constant alpha). The NPU takes those of them the op layer defines.
POINTWISE_TYPES = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU",
                   "PRELU", "ELU", "GELU", "EXP", "LOG", "ABS", "NEG", "SQRT", "RSQRT", "SQUARE", "QUANTIZE")
INT16_SEGMENT = 128  # inputs per interpolation segment of an int16 table (7 fractional bits)
HOST_TARGET = "c"  # the target whose kernels the tables tabulate (Target.host_library): the host's arithmetic

_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # op -> {mode: values per input code}


class HostKernelError(ValueError):
    """The host C target cannot compute the op (no kernel for its types, or it refuses it in this mode)."""


def activation_input(op):
    """The op's one non-constant input (None if every input is a constant, as in an inlined IF branch that
    quantizes a constant)."""
    return next((t for t in op.inputs if t is not None and not t.is_const), None)


def channel_constants(op) -> int:
    """How many channels carry their own constants: PRELU's alpha length along the last axis, else 1."""
    if op.type != "PRELU":
        return 1
    return int(op.inputs[1].shape[-1]) if len(op.inputs[1].shape) else 1


def alpha_problem(op) -> str:
    """Why PRELU's alpha is not a per-channel (or single) constant ("" when it is)."""
    x, alpha = op.inputs[0], op.inputs[1]
    if not alpha.is_const:
        return f"alpha '{alpha.name}' is computed at run time"
    shape = tuple(alpha.shape)
    if len(shape) > len(x.shape) or any(d != 1 for d in shape[:-1]):
        return f"alpha {list(shape)} varies along other axes than the channels of {list(x.shape)}"
    if channel_constants(op) > 1 and len(x.shape) < 2:
        return "per-channel alpha on a rank-1 input"
    return ""


def codes(dtype: str) -> np.ndarray:
    """Every value of the type, in increasing order."""
    info = np.iinfo(np.int8 if dtype == "int8" else np.int16)
    return np.arange(info.min, info.max + 1, dtype=np.int64)


def _probe_op(op, count: int, channels: int):
    """The op over a probe input of every code (per channel): shape (..., count) or (..., count, channels)."""
    x, y = activation_input(op), op.outputs[0]
    rank = max(len(x.shape), 1)
    shape = (1,) * (rank - 1) + (count,) if channels == 1 else (1,) * (rank - 2) + (count, channels)
    px = Tensor(-1, f"{x.name} (every code)", shape, x.dtype, x.quant, orig_dtype=x.orig_dtype)
    py = Tensor(-2, f"{y.name} (table)", shape, y.dtype, y.quant, orig_dtype=y.orig_dtype)
    inputs = [px if t is x else t for t in op.inputs]
    return Op(op.index, op.type, inputs, [py], dict(op.attrs), op.uint8_semantics), px


def evaluate(ops, mode: str) -> None:
    """Run each op's host kernel over every input code (one host library for all of them) into the cache."""
    from ...errors import EdgesdkError
    from .. import get_target

    pending = [op for op in ops if mode not in _TABLES.get(op, {})]
    if not pending:
        return
    host_target = get_target(HOST_TARGET)
    host = host_target.support
    probes = []
    for op in pending:
        ok, reason = host.check(op, (mode,))
        if not ok:
            _TABLES.setdefault(op, {})[mode] = HostKernelError(reason)
            continue
        values = codes(activation_input(op).dtype)
        channels = channel_constants(op)
        probe, px = _probe_op(op, values.size, channels)
        probes.append((op, probe, px, values, channels))
    if not probes:
        return
    try:
        library = host_target.host_library([p for _, p, _, _, _ in probes], mode)
        if library is None:
            raise EdgesdkError(f"target '{HOST_TARGET}' computes nothing on the host")
    except EdgesdkError as exc:  # e.g. the emitter refuses this mode
        for op, *_ in probes:
            _TABLES.setdefault(op, {})[mode] = HostKernelError(str(exc).splitlines()[0])
        return
    for op, probe, px, values, channels in probes:
        data = np.broadcast_to(values[:, None], (values.size, channels)).reshape(px.shape)
        (out,) = library.run(probe, {px: data})
        _TABLES.setdefault(op, {})[mode] = np.asarray(out, np.int64).reshape(values.size, channels).T.copy()


def values_per_code(op, mode: str) -> np.ndarray:
    """[channels, codes] outputs of the op for every input code in increasing order (HostKernelError if the host
    cannot compute them)."""
    evaluate([op], mode)
    result = _TABLES[op][mode]
    if isinstance(result, Exception):
        raise result
    return result


def int8_tables(values: np.ndarray) -> np.ndarray:
    """[channels, 256] in TFLite's order: entry (uint8)x holds f(x)."""
    tables = np.empty_like(values)
    tables[:, codes("int8") & 0xFF] = values
    return tables


def _lookup16(lut: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The TABLE command's int16 interpolation (TFLite's LUTLookup) for every x."""
    index = 256 + (x >> 7)
    slope = ((lut[index + 1] - lut[index] + 32768) % 65536) - 32768
    return ((lut[index] + ((slope * (x & 0x7F) + 64) >> 7) + 32768) % 65536) - 32768


def int16_table(f: np.ndarray) -> tuple:
    """(513 entries, inputs the interpolation misses) for one channel's values f over every int16 code: entry i is
    f(-32768 + 128 i); the last entry is the one that makes the last segment exact, if any does."""
    x = codes("int16")
    lut = np.empty(R.TABLE_ENTRIES_INT16, np.int64)
    lut[:512] = f[::INT16_SEGMENT]
    last = int(f[-1] - lut[511])  # the last input needs (slope * 127 + 64) >> 7 == last
    center = round(last * 128 / 127)
    for slope in sorted(range(center - 2, center + 3), key=lambda s: abs(s - center)):
        lut[512] = ((lut[511] + slope + 32768) % 65536) - 32768
        if np.array_equal(_lookup16(lut, x[-INT16_SEGMENT:]), f[-INT16_SEGMENT:]):
            break
    misses = int(np.count_nonzero(_lookup16(lut, x) != f))
    return lut, misses


def tables(op, mode: str) -> tuple:
    """(table values in command order, table count) of the op's TABLE command under `mode`; ValueError when an
    int16 table cannot reproduce the op (HostKernelError when the host cannot compute it)."""
    values = values_per_code(op, mode)
    if activation_input(op).dtype == "int8":
        return int8_tables(values).reshape(-1), values.shape[0]
    result = []
    for c, f in enumerate(values):
        lut, misses = int16_table(f)
        if misses:
            raise ValueError(f"the 513-entry interpolated table misses {misses} of 65536 int16 inputs"
                             + (f" (channel {c})" if values.shape[0] > 1 else ""))
        result.append(lut)
    return np.concatenate(result), values.shape[0]


def table_view(shape) -> tuple | None:
    """The op's tensors as the TABLE command's four dimensions, the channels last (leading dimensions merge);
    None when a merged dimension exceeds 65535."""
    shape = tuple(int(d) for d in shape) or (1,)
    if len(shape) > MAX_DIMS:
        lead = int(np.prod(shape[:len(shape) - MAX_DIMS + 1]))
        shape = (lead,) + shape[len(shape) - MAX_DIMS + 1:]
    shape = (1,) * (MAX_DIMS - len(shape)) + shape
    return shape if all(1 <= d <= R.MAX_DIM for d in shape) else None
