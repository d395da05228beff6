"""STRIDED_SLICE: begin/end/strides per dimension with begin, end, ellipsis, new-axis and shrink-axis masks and
the `offset` option (end relative to begin), negative indices and strides.

Build-time data: the AxisMap of the walk. `--rounding ref` follows LiteRT (tflite/kernels/strided_slice.cc:
BuildStridedSliceParams expands the ellipsis and inserts new axes, then StartForAxis/EndForAxis clamp each
dimension); `--rounding tflm` follows TFLite Micro, which ignores the ellipsis and new-axis masks and the offset
option and reads one begin/end/stride per input dimension: a model whose slice TFLite Micro would read
differently (and then refuse, its output shape check failing) is refused for tflm. begin, end and strides must
be constant (TFLite Micro requires it; a shape computed from constants is folded first)."""

from __future__ import annotations

from . import register
from .axis_map import AxisMap, constant_ints, require_shape, strided
from .base import OpDef, Operands, op_error
from ..errors import UnsupportedOpError


def _bit(mask: int, i: int) -> bool:
    return bool(mask & (1 << i)) if i >= 0 else False


def _effective_params(op, begin, end, strides, opts: dict, rank: int) -> tuple:
    """LiteRT's BuildStridedSliceParams: per effective dimension (input dimensions with the ellipsis expanded
    and new axes inserted) start, stop, stride, the masks, and the effective input shape."""
    shape = [int(d) for d in op.inputs[0].shape]
    begin_count = len(begin)
    ellipsis_mask, new_axis_mask = int(opts["ellipsis_mask"]), int(opts["new_axis_mask"])
    num_add_axis = sum(1 for i in range(begin_count) if not _bit(ellipsis_mask, i) and _bit(new_axis_mask, i))
    dims = rank + num_add_axis
    eff_ellipsis, eff_new = 0, 0
    ellipsis_start, expanded = dims, 0
    i = 0
    while i < dims:
        if _bit(ellipsis_mask, i):
            ellipsis_start = i
            ellipsis_end = max(i + 1, min(i + 1 + num_add_axis + rank - begin_count, dims))
            expanded = ellipsis_end - ellipsis_start - 1
            while i < ellipsis_end:
                eff_ellipsis |= 1 << i
                i += 1
            continue
        if _bit(new_axis_mask, i - expanded):
            eff_new |= 1 << i
        i += 1
    starts, stops, steps = [0] * dims, [0] * dims, [1] * dims
    begin_mask = end_mask = shrink_mask = 0
    eff_shape = [1] * dims
    added_ellipsis = added_axes = 0

    def input_dim(k):
        if not 0 <= k < rank:
            raise op_error(op, f"has masks {opts} that do not fit a rank-{rank} input")
        return shape[k]

    for i in range(dims):
        if _bit(eff_ellipsis, i):
            added_ellipsis = max(0, i - ellipsis_start)
            begin_mask |= 1 << i
            end_mask |= 1 << i
            eff_shape[i] = input_dim(i - added_axes)
        elif _bit(eff_new, i):
            starts[i], stops[i] = 0, 1
            eff_shape[i] = 1
            added_axes += 1
        elif i >= begin_count + expanded:
            begin_mask |= 1 << i
            end_mask |= 1 << i
            eff_shape[i] = input_dim(i - added_axes)
        else:
            k = i - added_ellipsis
            starts[i], stops[i], steps[i] = begin[k], end[k], strides[k]
            for mask, name in ((1, "begin_mask"), (2, "end_mask"), (4, "shrink_axis_mask")):
                if _bit(int(opts[name]), k):
                    if mask == 1:
                        begin_mask |= 1 << i
                    elif mask == 2:
                        end_mask |= 1 << i
                    else:
                        shrink_mask |= 1 << i
            eff_shape[i] = input_dim(i - added_axes)
    return starts, stops, steps, begin_mask, end_mask, shrink_mask, eff_shape


def _clamp(v: int, lo: int, hi: int) -> int:
    return hi if hi < v else (lo if v < lo else v)


def _start_stop(axis_size, start, stop, step, begin_masked, end_masked, shrink, offset) -> tuple:
    """StartForAxis and EndForAxis (tflite/kernels/internal/reference/strided_slice.h)."""
    if start < 0:
        start += axis_size
    start = _clamp(start, 0, axis_size) if step > 0 else _clamp(start, -1, axis_size - 1)
    if begin_masked:
        start = 0 if step > 0 else axis_size - 1
    if shrink:
        return start, (start if start >= axis_size else start + 1)
    end = stop + start if offset else stop
    if end < 0:
        end += axis_size
    end = _clamp(end, 0, axis_size) if step > 0 else _clamp(end, -1, axis_size - 1)
    if end_masked:
        end = axis_size if step > 0 else -1
    return start, end


def strided_slice_map(op, mode: str = "ref") -> AxisMap | None:
    begin, end, strides = (constant_ints(op, k) for k in (1, 2, 3))
    if begin is None or end is None or strides is None:
        return None
    x, y = op.inputs[0], op.outputs[0]
    rank = len(x.shape)
    if not len(begin) == len(end) == len(strides):
        raise op_error(op, f"has {len(begin)} begins, {len(end)} ends and {len(strides)} strides")
    if any(s == 0 for s in strides):
        raise op_error(op, f"has a zero stride {strides}")
    opts = dict(op.attrs)
    offset = bool(opts["offset"])
    if mode == "tflm":
        if len(begin) < rank:
            raise UnsupportedOpError(
                f"STRIDED_SLICE at {op.location} has {len(begin)} begin indices for a rank-{rank} input: TFLite "
                "Micro reads one per input dimension and cannot run it (build with --rounding ref).")
        opts.update(ellipsis_mask=0, new_axis_mask=0)
        offset = False
        begin, end, strides = begin[:rank], end[:rank], strides[:rank]
    starts, stops, steps, begin_mask, end_mask, shrink_mask, eff_shape = _effective_params(
        op, begin, end, strides, opts, rank)
    counts, keep, first = [], [], []
    for i, n in enumerate(eff_shape):
        start, stop = _start_stop(n, starts[i], stops[i], steps[i], _bit(begin_mask, i), _bit(end_mask, i),
                                  _bit(shrink_mask, i), offset)
        step = steps[i]
        count = max(0, -(-(stop - start) // step)) if step > 0 else max(0, -(-(start - stop) // -step))
        shrink = _bit(shrink_mask, i)
        if shrink and count != 1:
            raise op_error(op, f"shrinks dimension {i} at index {starts[i]}, outside its size {n}")
        first.append(start)
        counts.append(count)
        keep.append(not shrink)
    out_shape = [c for c, k in zip(counts, keep) if k]
    if mode == "tflm" and list(y.shape) != out_shape:
        raise UnsupportedOpError(
            f"STRIDED_SLICE at {op.location}: TFLite Micro ignores the ellipsis and new-axis masks and the offset "
            f"option and would slice {out_shape}, not the model's {list(y.shape)}; it cannot run this model "
            "(build with --rounding ref).")
    require_shape(op, y, out_shape)
    if 0 in counts:
        raise op_error(op, f"slices an empty tensor {out_shape}")
    return strided(eff_shape, first, counts, steps, keep)


def _masks_differ_between_references(op) -> bool:
    return bool(op.attrs["ellipsis_mask"] or op.attrs["new_axis_mask"] or op.attrs["offset"])


@register
class StridedSlice(OpDef):
    types = ("STRIDED_SLICE",)
    operands = Operands(inputs=("input", "begin", "end", "strides"))
    options = "StridedSliceOptions"

    def attributes(self, op, options: dict) -> dict:
        return {k: options.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                               "shrink_axis_mask", "offset")}

    def check(self, op) -> None:
        strided_slice_map(op, "ref")

    def prepare(self, op, mode: str):
        return strided_slice_map(op, str(mode))

    def fold(self, op):
        # The two references read the ellipsis/new-axis masks and `offset` differently: such a slice of a
        # constant stays an op and runs the build's reference semantics.
        x = op.inputs[0]
        if not x.is_const or _masks_differ_between_references(op):
            return None
        m = strided_slice_map(op, "ref")
        return [m.apply(x.data)] if m is not None else None
