"""Kernel folding: a convolution with few input channels (an image's 3, a spectrogram's 1) fills more of the
MAC array when the taps of one kernel axis become input channels.

The MAC array takes 16 input channels per cycle (docs/npu-datasheet.md section 6), so a 3-channel input
wastes 13 of 16 lanes on every tap and a 1-channel one 15. A tensor descriptor may overlap itself: over an
NHWC input, the view [N, H, OW, KW*C] with strides (s_N, s_H, stride_w*C, 1) holds at output column ow the
KW*C contiguous bytes of that column's window, so a convolution with kernel [KH, 1] over KW*C channels
computes the same sums ("W fold"; its OHWI weights are the same bytes, read as [O, KH, 1, KW*C]). With one
input channel the rows can be folded the same way ("H fold": channel k of the view is row k of the window,
channel stride = row stride; the weights are re-laid [O, 1, KW, KH]). The sums are exact integers, so the
order of their terms does not matter: the output is bit-exact.

The NPU pads spatial axes only, so a folded axis' padding must be real bytes:
* padded copy: DMA the input into a scratch buffer with the input zero point in the padding (a padded tap
  then contributes (zp - zp) * w = 0, as the reference skips it), one folded convolution over the copy;
* interior and edges (W fold only): the output columns whose windows lie inside the input in one folded
  convolution over the input itself, the few edge columns in the ordinary command into scratch, then
  copied into place (the edges are written last, so an output that overlaps its input, as the memory
  planner allows, is still read before it is written).

Inside a cascade group (stripes.py) a stripe of such a convolution folds its W taps the same way, interior
and edges, over the stripe's input rows (`stripe_commands`): the edges are written straight into the output
rows, whose stripe buffer overlaps no input, so a stripe needs no scratch.

`choose(op, ...)` prices every candidate with the timing model (hw/timing.py) and takes the cheapest, but
any candidate within SCRATCH_TOLERANCE of it that needs less scratch (arena bytes) first.
"""

from __future__ import annotations

import numpy as np

from ...dataclass_cache import dataclass
from .hw import cmdtable as C
from .hw import registers as R
from .hw import timing, validate

WEIGHTS_REGION, ARENA_REGION = 0, 1
SCRATCH_TOLERANCE = 1.10  # accept up to 10 % more cycles for less scratch (arena bytes are the scarcer)


@dataclass(frozen=True)
class Fold:
    axis: str  # "w": the KW taps join the channels; "h": the KH taps (one input channel only)
    padded: bool  # a padded copy in scratch (else: interior columns folded, edge columns as they are)

    def describe(self) -> str:
        how = "over a padded copy" if self.padded else "interior columns, edge columns unfolded"
        return f"{self.axis.upper()} taps folded into channels, {how}"


@dataclass(frozen=True)
class Geometry:
    n: int
    h: int
    w: int
    c: int
    oh: int
    ow: int
    o: int
    kh: int
    kw: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int

    @classmethod
    def of(cls, op) -> "Geometry":
        n, h, w, c = C.to_nhwc(op.inputs[0].shape)
        _, oh, ow, o = C.to_nhwc(op.outputs[0].shape)
        _, kh, kw, _ = op.inputs[1].shape
        a = op.attrs
        return cls(n, h, w, c, oh, ow, o, kh, kw, a["stride_h"], a["stride_w"], a["pad_top"], a["pad_left"])

    @property
    def pad_right(self) -> int:
        return max(0, (self.ow - 1) * self.stride_w + self.kw - self.pad_left - self.w)

    @property
    def pad_bottom(self) -> int:
        return max(0, (self.oh - 1) * self.stride_h + self.kh - self.pad_top - self.h)

    def interior_columns(self) -> tuple:
        """[lo, hi): the output columns whose windows lie inside the input."""
        lo = -(-self.pad_left // self.stride_w)
        last = self.w - self.kw + self.pad_left
        hi = min(self.ow, last // self.stride_w + 1) if last >= 0 else 0
        return lo, max(lo, hi)


def candidates(op) -> list:
    """The folds that apply to `op` and use more of the MAC array's input lanes."""
    if op.type != "CONV_2D" or op.inputs[0].dtype != "int8" or len(op.inputs[1].shape) != 4:
        return []
    a = op.attrs
    g = Geometry.of(op)
    lanes = R.CONV_IC_LANES
    ceil = lambda x: -(-x // lanes)  # noqa: E731
    found = []
    if a.get("dilation_w", 1) == 1 and g.kw > 1 and ceil(g.kw * g.c) < g.kw * ceil(g.c):
        found.append(Fold("w", True))
        lo, hi = g.interior_columns()
        if hi > lo:
            found.append(Fold("w", False))
    if a.get("dilation_h", 1) == 1 and g.c == 1 and g.kh > 1 and ceil(g.kh) < g.kh:
        found.append(Fold("h", True))
    return found


def scratch_bytes(op, fold: Fold | None) -> int:
    if fold is None:
        return 0
    g = Geometry.of(op)
    if fold.padded and fold.axis == "w":
        return g.n * g.h * (g.pad_left + g.w + g.pad_right) * g.c
    if fold.padded:
        return g.n * (g.pad_top + g.h + g.pad_bottom) * g.w
    lo, hi = g.interior_columns()
    return g.n * g.oh * (lo + g.ow - hi) * g.o


def folded_weights(op, fold: Fold) -> np.ndarray:
    """The weights as the folded command reads them (dense int8, OHWI of the folded kernel)."""
    w = np.ascontiguousarray(op.inputs[1].data, dtype=np.int8)
    if fold.axis == "w":
        return w  # [O, KH, KW, C] is [O, KH, 1, KW*C] byte for byte
    return np.ascontiguousarray(w.reshape(w.shape[0], w.shape[1], w.shape[2]).transpose(0, 2, 1))


def folded_weights_shape(op, fold: Fold) -> tuple:
    o, kh, kw, c = op.inputs[1].shape
    return (o, kh, 1, kw * c) if fold.axis == "w" else (o, 1, kw, kh)


@dataclass
class Placement:
    """Where one lowering's operands are: the op's ordinary command (whole tensors, its weights and records
    placed), the folded kernel's weights fields, the scratch offset and the pad value's (region, offset)."""

    conv: C.Conv2D
    folded_weights: dict  # {"weights": desc, "weight_stream_bytes": n}
    scratch: int
    pad_value: tuple


def lower(op, fold: Fold, place: Placement) -> list:
    """The commands of `op` under `fold` (see the module docstring)."""
    if fold.padded:
        return _padded(op, fold, place)
    return _interior_and_edges(op, place)


def _dense(offset: int, shape: tuple) -> C.TensorDesc:
    return C.TensorDesc.dense(ARENA_REGION, offset, shape)


def _fill(place: Placement, shape: tuple, dst_offset: int, strides: tuple, note: str) -> C.DmaCopy:
    source = C.TensorDesc(place.pad_value[0], place.pad_value[1], shape, (0, 0, 0, 0))
    return C.DmaCopy(source, C.TensorDesc(ARENA_REGION, dst_offset, shape, strides), note=note)


def _padded(op, fold: Fold, place: Placement) -> list:
    g, conv = Geometry.of(op), place.conv
    note = conv.note
    if fold.axis == "w":
        before, after, width = g.pad_left, g.pad_right, g.pad_left + g.w + g.pad_right
        strides = (g.h * width * g.c, width * g.c, g.c, 1)
        margin = lambda count: (g.n, g.h, count, g.c)  # noqa: E731
        step = g.c  # bytes per padded column
        view = C.TensorDesc(ARENA_REGION, place.scratch, (g.n, g.h, g.ow, g.kw * g.c),
                            (strides[0], strides[1], g.stride_w * g.c, 1))
        spatial = dict(stride_w=1, pad_left=0, dilation_w=1)
    else:
        before, after, height = g.pad_top, g.pad_bottom, g.pad_top + g.h + g.pad_bottom
        strides = (height * g.w, g.w, 1, 1)
        margin = lambda count: (g.n, count, g.w, 1)  # noqa: E731
        step = g.w  # bytes per padded row
        view = C.TensorDesc(ARENA_REGION, place.scratch, (g.n, g.oh, g.w, g.kh),
                            (strides[0], g.stride_h * g.w, 1, g.w))
        spatial = dict(stride_h=1, pad_top=0, dilation_h=1)
    commands = []
    if before:
        commands.append(_fill(place, margin(before), place.scratch, strides, f"{note} (leading padding, folded)"))
    if after:
        commands.append(_fill(place, margin(after), place.scratch + (before + (g.w if fold.axis == "w" else g.h))
                              * step, strides, f"{note} (trailing padding, folded)"))
    body = C.TensorDesc(ARENA_REGION, place.scratch + before * step, conv.input.shape, strides)
    commands.append(C.DmaCopy(conv.input, body, note=f"{note} (input into its padded copy)"))
    commands.append(C.with_fields(conv, input=view, **place.folded_weights, **spatial,
                                  note=f"{note} ({fold.describe()})"))
    return commands


def _interior_and_edges(op, place: Placement) -> list:
    g, conv = Geometry.of(op), place.conv
    x, y = conv.input, conv.output
    lo, hi = g.interior_columns()
    edges, commands, copies, offset = [], [], [], place.scratch
    for first, stop in ((0, lo), (hi, g.ow)):
        if stop > first:
            edges.append((first, stop))
    for first, stop in edges:  # the edge columns, unfolded, into scratch
        start = first * g.stride_w - g.pad_left  # input column of the block's first tap
        c0, c1 = max(0, start), min(g.w, (stop - 1) * g.stride_w - g.pad_left + g.kw)
        part = C.TensorDesc(x.region, x.offset + c0 * x.strides[2], (g.n, g.h, c1 - c0, g.c), x.strides)
        shape = (g.n, g.oh, stop - first, g.o)
        commands.append(C.with_fields(conv, input=part, output=_dense(offset, shape), pad_left=c0 - start,
                                      note=f"{conv.note} (output columns {first}..{stop - 1})"))
        target = C.TensorDesc(y.region, y.offset + first * y.strides[2], shape, y.strides)
        copies.append(C.DmaCopy(_dense(offset, shape), target,
                                note=f"{conv.note} (output columns {first}..{stop - 1} into place)"))
        offset += g.n * g.oh * (stop - first) * g.o
    view = C.TensorDesc(x.region, x.offset + (lo * g.stride_w - g.pad_left) * x.strides[2],
                        (g.n, g.h, hi - lo, g.kw * g.c), (x.strides[0], x.strides[1], g.stride_w * x.strides[2], 1))
    interior = C.TensorDesc(y.region, y.offset + lo * y.strides[2], (g.n, g.oh, hi - lo, g.o), y.strides)
    commands.append(C.with_fields(conv, input=view, output=interior, **place.folded_weights, stride_w=1, pad_left=0,
                                  dilation_w=1, note=f"{conv.note} (W taps folded into channels, output columns "
                                                     f"{lo}..{hi - 1})"))
    return commands + copies


def stripe_commands(op, conv: C.Conv2D) -> list:
    """One stripe of `op` in a cascade group (edgesdk/targets/npu/stripes.py), W taps folded: `conv` is the
    stripe's ordinary command (its row ranges and leading padding). The interior output columns in one folded
    command over the overlapping view of the stripe's input rows, the edge columns unfolded, each written
    straight into its columns of the output rows: the caller gives an output that overlaps no input (a
    stripe buffer), so no scratch and no copy. The W fold's weights are the ordinary ones byte for byte (and
    so is their compressed stream), read as [O, KH, 1, KW*C]. Requires Fold("w", False) in candidates(op)."""
    g = Geometry.of(op)
    x, y = conv.input, conv.output
    lo, hi = g.interior_columns()
    commands = []
    for first, stop in ((0, lo), (hi, g.ow)):  # the edge columns, unfolded
        if stop > first:
            start = first * g.stride_w - g.pad_left  # input column of the block's first tap
            c0, c1 = max(0, start), min(g.w, (stop - 1) * g.stride_w - g.pad_left + g.kw)
            part = C.TensorDesc(x.region, x.offset + c0 * x.strides[2], (x.shape[0], x.shape[1], c1 - c0, g.c),
                                x.strides, x.dtype)
            out = C.TensorDesc(y.region, y.offset + first * y.strides[2], (y.shape[0], y.shape[1], stop - first,
                               g.o), y.strides, y.dtype)
            commands.append(C.with_fields(conv, input=part, output=out, pad_left=c0 - start,
                                          note=f"{conv.note} (output columns {first}..{stop - 1})"))
    view = C.TensorDesc(x.region, x.offset + (lo * g.stride_w - g.pad_left) * x.strides[2],
                        (x.shape[0], x.shape[1], hi - lo, g.kw * g.c),
                        (x.strides[0], x.strides[1], g.stride_w * x.strides[2], 1), x.dtype)
    interior = C.TensorDesc(y.region, y.offset + lo * y.strides[2], (y.shape[0], y.shape[1], hi - lo, g.o),
                            y.strides, y.dtype)
    weights = C.TensorDesc.dense(conv.weights.region, conv.weights.offset, folded_weights_shape(op, Fold("w", False)))
    folded = C.with_fields(conv, input=view, output=interior, weights=weights, stride_w=1, pad_left=0, dilation_w=1,
                           note=f"{conv.note} (W taps folded into channels, output columns {lo}..{hi - 1})")
    return [folded] + commands


def cycles(commands, memory) -> int:
    return sum(timing.command_cost(c, memory).cycles for c in commands)


def accepted(commands) -> bool:
    """The NPU's static pass (hw/validate.py) takes the commands: a view within its limits (compact size,
    dimensions), placed at offset 0 of regions at address 0."""
    return validate.check_table(C.encode(list(commands) + [C.End()]))[0] == R.ERR_NONE


def choose(op, conv: C.Conv2D, stream_bytes, memory) -> Fold | None:
    """The fold for `op` (None: its ordinary command), priced by the timing model with placeholder offsets
    (the cost depends on the memories the operands are in, not on where in them). `conv` is the ordinary
    command, `stream_bytes(array)` the compressed size of a weight layout (0: stored dense)."""
    options = [(cycles([conv], memory), 0, None)]
    for fold in candidates(op):
        data = folded_weights(op, fold)
        size = stream_bytes(data)
        weights = dict(weights=C.TensorDesc.dense(WEIGHTS_REGION, 0, folded_weights_shape(op, fold)),
                       weight_stream_bytes=size)
        commands = lower(op, fold, Placement(conv, weights, 0, (WEIGHTS_REGION, 0)))
        if not accepted(commands):
            continue
        options.append((cycles(commands, memory), scratch_bytes(op, fold), fold))
    best = min(cost for cost, _, _ in options)
    affordable = [o for o in options if o[0] <= best * SCRATCH_TOLERANCE]
    return min(affordable, key=lambda o: (o[1], o[0]))[2]
