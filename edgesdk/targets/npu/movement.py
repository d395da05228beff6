"""Data movement as strided DMA: the copies that move a tensor the way an AxisMap (edgesdk/ops/axis_map.py) says.

The op layer describes TRANSPOSE, SLICE, STRIDED_SLICE, SPLIT, PAD, REVERSE_V2, MIRROR_PAD, DEPTH_TO_SPACE, ... as
per-dimension maps from output index to input offset. Each dimension's map splits into maximal runs that are
either padding or affine (start + i * step, the step possibly negative or 0); the cartesian product of the runs of
all dimensions is a set of boxes, and each box is one strided copy: a DMA_COPY whose source descriptor walks the
input with the runs' steps and whose destination is a slice of the output. Padding is one fill of the whole
output first (a one-element source repeated through zero strides), then the copies. CONCATENATION and PACK place
each input in a slice of the output the same way.

A box has any number of dimensions; a descriptor has four of at most 65535 elements. `chunks` merges contiguous
dimensions, splits long ones and loops over what is left outside four dimensions, one command per iteration.
`MAX_COMMANDS` bounds the commands of one op (a constraint refuses more).
"""

from __future__ import annotations

from itertools import product

import numpy as np

from ...dataclass_cache import dataclass
from .hw import registers as R

# ops.axis_map (PAD, element_strides) is imported in the functions that lower a movement op: a build without
# one does not load the op layer's AxisMap (fresh-process start-up).

# The op layer describes these as AxisMaps (edgesdk/ops/axis_map.py): strided DMA copies.
MOVEMENT_TYPES = ("TRANSPOSE", "SLICE", "STRIDED_SLICE", "SPLIT", "SPLIT_V", "UNPACK", "PAD", "PADV2", "REVERSE_V2",
                  "MIRROR_PAD", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "BATCH_TO_SPACE_ND", "BROADCAST_TO")
MAX_COMMANDS = 256  # DMA commands one op may take (each costs the fixed command overhead)
DIMS = 4


@dataclass(frozen=True)
class Box:
    """One strided copy, in elements: per dimension (count, source step, destination step), outermost first;
    `src` None fills the box with the pad value."""

    dims: tuple
    src: int | None
    dst: int


def runs(entries) -> list:
    """A map dimension as maximal runs (start index, count, first entry or None for padding, step)."""
    from ...ops.axis_map import PAD

    result, i, n = [], 0, len(entries)
    while i < n:
        if entries[i] == PAD:
            j = i
            while j < n and entries[j] == PAD:
                j += 1
            result.append((i, j - i, None, 0))
        else:
            j = i + 1
            step = entries[j] - entries[i] if j < n and entries[j] != PAD else 0
            while j < n and entries[j] != PAD and entries[j] - entries[j - 1] == step:
                j += 1
            result.append((i, j - i, int(entries[i]), int(step)))
        i = j
    return result


def map_boxes(axis_map) -> tuple:
    """(whether the output needs a fill with the pad value first, the copy boxes) of an AxisMap."""
    from ...ops.axis_map import element_strides

    m = axis_map.simplified()
    out_strides = element_strides(m.out_shape)
    per_dim = [runs(entries) for entries in m.maps]
    fill = any(first is None for dim in per_dim for _, _, first, _ in dim)
    boxes = []
    for combo in product(*per_dim):
        if any(first is None for _, _, first, _ in combo):
            continue  # padding: the fill wrote it
        dims = tuple((count, step, stride) for (_, count, _, step), stride in zip(combo, out_strides))
        src = m.base + sum(first for _, _, first, _ in combo)
        dst = sum(start * stride for (start, _, _, _), stride in zip(combo, out_strides))
        boxes.append(Box(dims, src, dst))
    return fill, boxes


def fill_box(out_shape) -> Box:
    """The whole output, from one repeated element."""
    from ...ops.axis_map import element_strides

    dims = tuple((int(n), 0, s) for n, s in zip(out_shape, element_strides(out_shape)))
    return Box(dims or ((1, 0, 1),), None, 0)


def flat_box(count: int) -> Box:
    """A contiguous copy of `count` elements (a reshape the memory plan could not alias)."""
    return Box(((int(count), 1, 1),), 0, 0)


def placement_boxes(in_shapes, axis: int, out_shape) -> list:
    """CONCATENATION / PACK: input k, dense, into its slice of the output along `axis` (a PACK input has size 1
    there): one Box per input, in input order."""
    from ...ops.axis_map import element_strides

    out_strides = element_strides(out_shape)
    boxes, position = [], 0
    for shape in in_shapes:
        shape = tuple(int(d) for d in shape)
        if len(shape) < len(out_shape):  # PACK: the new axis has size 1 in the input
            shape = shape[:axis] + (1,) + shape[axis:]
        dims = tuple((n, s, o) for n, s, o in zip(shape, element_strides(shape), out_strides))
        boxes.append(Box(dims, 0, position * out_strides[axis]))
        position += shape[axis]
    return boxes


def _merged(dims: list) -> list:
    """Drop single-element dimensions and merge neighbours contiguous in both source and destination."""
    dims = [d for d in dims if d[0] > 1]
    result = []
    for count, src, dst in dims:
        if result:
            outer = result[-1]
            if outer[1] == src * count and outer[2] == dst * count and outer[0] * count <= R.MAX_DIM:
                result[-1] = (outer[0] * count, src, dst)
                continue
        result.append((count, src, dst))
    return result


def _split_long(dims: list) -> list:
    """A dimension longer than 65535 elements becomes two (outer x inner), when its length factors so."""
    result = []
    for count, src, dst in dims:
        if count <= R.MAX_DIM:
            result.append((count, src, dst))
            continue
        inner = next((f for f in range(R.MAX_DIM, 1, -1) if count % f == 0 and count // f <= R.MAX_DIM), None)
        if inner is None:
            return None
        result += [(count // inner, src * inner, dst * inner), (inner, src, dst)]
    return result


def chunks(box: Box) -> list | None:
    """The box as (dims of at most 4, source offset, destination offset) per command, elements; None when a
    dimension cannot be expressed or it would take more than MAX_COMMANDS commands."""
    dims = _split_long(_merged(list(box.dims)))
    if dims is None:
        return None
    outer, inner = dims[:-DIMS] if len(dims) > DIMS else [], dims[-DIMS:]
    if int(np.prod([count for count, _, _ in outer])) > MAX_COMMANDS:
        return None
    inner = [(1, 0, 0)] * (DIMS - len(inner)) + inner
    result = []
    for index in product(*[range(count) for count, _, _ in outer]):
        src = (box.src or 0) + sum(i * s for i, (_, s, _) in zip(index, outer))
        dst = box.dst + sum(i * d for i, (_, _, d) in zip(index, outer))
        result.append((tuple(inner), src, dst))
    return result


def command_count(boxes, fill: bool, out_shape) -> int | None:
    """DMA commands the boxes take (None when one cannot be expressed)."""
    total = 0
    for box in list(boxes) + ([fill_box(out_shape)] if fill else []):
        parts = chunks(box)
        if parts is None:
            return None
        total += len(parts)
    return total


def op_maps(op, data) -> list:
    """(output tensor, AxisMap) pairs of an op's prepared data (an AxisMap, one per output, or PAD's PadData);
    None when the movement depends on run-time values."""
    from ...ops.axis_map import AxisMap

    if isinstance(data, AxisMap):
        return [(op.outputs[0], data)]
    if isinstance(data, (list, tuple)) and all(isinstance(m, AxisMap) for m in data):
        return list(zip(op.outputs, data))
    axes = getattr(data, "axes", None)
    return [(op.outputs[0], axes)] if isinstance(axes, AxisMap) else None


def moved_input(op):
    """The tensor an AxisMap op moves: its first non-constant input (SPLIT's axis and the other parameters are
    constants)."""
    return next((t for t in op.inputs if t is not None and not t.is_const), None)
