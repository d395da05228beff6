"""Separable data movement: the build-time form of TRANSPOSE, SLICE, STRIDED_SLICE, REVERSE_V2, SPLIT, UNPACK,
BROADCAST_TO, MIRROR_PAD, PAD, DEPTH_TO_SPACE, SPACE_TO_DEPTH and BATCH_TO_SPACE_ND.

Each of these ops maps every output coordinate to the input independently per output dimension: output element
(i_0, ..., i_{k-1}) is the input element at flat (row-major) index `base + sum_d maps[d][i_d]`, or the pad value
when some `maps[d][i_d]` is PAD. An `AxisMap` holds those per-dimension tables, computed once at build time from
the op's constant parameters exactly as TFLite's reference kernel walks its input (strided_slice_logic.h's
start/stop clamping, mirror_pad.cc's GetInputDimension, ...). Every target reads the same map: the host C
kernel `edgesdk_gather_axes` walks it (affine dimensions as a start and a step, the others as tables), and
`AxisMap.apply` is the op's numpy value for build-time folding -- one description, so the fold and the kernel
cannot disagree.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass

PAD = -1  # a map entry: this output index lies in the padding


def element_strides(shape) -> list:
    """Row-major element strides of `shape`."""
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= int(shape[d])
    return strides


@dataclass(frozen=True)
class AxisMap:
    in_shape: tuple
    out_shape: tuple
    maps: tuple  # per output dimension: a tuple of input element offsets (>= 0) or PAD
    base: int = 0
    pad_value: object = None  # the pad element (a Python number of the tensor's type), None: nothing is padded

    def __post_init__(self):
        assert len(self.maps) == len(self.out_shape)
        assert all(len(m) == int(n) for m, n in zip(self.maps, self.out_shape))

    @property
    def padded(self) -> bool:
        return any(v == PAD for m in self.maps for v in m)

    def flat_indices(self) -> tuple:
        """(input flat index per output element, mask of padded elements), both of the output's shape."""
        index = np.full(tuple(int(n) for n in self.out_shape), self.base, dtype=np.int64)
        pad = np.zeros(index.shape, dtype=bool)
        rank = len(self.out_shape)
        for d, m in enumerate(self.maps):
            values = np.asarray(m, dtype=np.int64).reshape((1,) * d + (-1,) + (1,) * (rank - d - 1))
            index = index + np.where(values == PAD, 0, values)
            pad = pad | (values == PAD)
        return index, pad

    def apply(self, x: np.ndarray) -> np.ndarray:
        """The op's output for input `x` (numpy, the tensor's dtype): the build-time fold."""
        flat = np.asarray(x).reshape(-1)
        index, pad = self.flat_indices()
        out = flat[np.where(pad, 0, index)] if flat.size else np.zeros(index.shape, dtype=flat.dtype)
        if pad.any():
            out = np.where(pad, np.asarray(self.pad_value, dtype=flat.dtype), out)
        return out.astype(flat.dtype).reshape(index.shape)

    def input_extent(self) -> tuple:
        """(lowest, highest) input flat index the map reads (None when it reads nothing)."""
        low, high = self.base, self.base
        for m in self.maps:
            valid = [v for v in m if v != PAD]
            if not valid:
                return None
            low += min(valid)
            high += max(valid)
        return low, high

    def simplified(self) -> "AxisMap":
        """The same movement over fewer dimensions: size-1 dimensions folded into `base`, neighbours merged when
        the outer one steps by the inner one's whole span (e.g. the untouched trailing dimensions of a slice
        become one contiguous run). Padded dimensions are kept as they are."""
        dims = []
        base = self.base
        for n, m in zip(self.out_shape, self.maps):
            if int(n) == 1 and m[0] != PAD:
                base += m[0]
                continue
            dims.append(list(m))
        merged = []
        for m in dims:
            if merged:
                outer = merged[-1]
                s_out, s_in = _affine_step(outer), _affine_step(m)
                if (s_out is not None and s_in is not None and len(m) > 1 and len(outer) > 1
                        and s_out == s_in * len(m)):
                    merged[-1] = [outer[0] + m[0] + k * s_in for k in range(len(outer) * len(m))]
                    continue
            merged.append(m)
        maps = tuple(tuple(int(v) for v in m) for m in merged)
        out_shape = tuple(len(m) for m in maps)
        return AxisMap(self.in_shape, out_shape, maps, base, self.pad_value)


def _affine_step(m) -> int | None:
    """The step of a map that is start + i * step with no padding, else None."""
    if any(v == PAD for v in m):
        return None
    if len(m) < 2:
        return 0
    step = m[1] - m[0]
    return step if all(m[i + 1] - m[i] == step for i in range(len(m) - 1)) else None


# -- builders ---------------------------------------------------------------------------------------------------

def identity(shape) -> AxisMap:
    shape = tuple(int(d) for d in shape)
    strides = element_strides(shape)
    return AxisMap(shape, shape, tuple(tuple(i * s for i in range(n)) for n, s in zip(shape, strides)))


def strided(in_shape, starts, counts, steps, keep=None) -> AxisMap:
    """Input dimension d read from `starts[d]` in `counts[d]` steps of `steps[d]` (which may be negative);
    output dimensions are the input's in order, except those with keep[d] False (counted 1, folded into base)."""
    in_shape = tuple(int(d) for d in in_shape)
    strides = element_strides(in_shape)
    keep = keep if keep is not None else [True] * len(in_shape)
    base, maps, out_shape = 0, [], []
    for d, (start, count, step) in enumerate(zip(starts, counts, steps)):
        if not keep[d]:
            base += int(start) * strides[d]
            continue
        maps.append(tuple((int(start) + i * int(step)) * strides[d] for i in range(int(count))))
        out_shape.append(int(count))
    return AxisMap(in_shape, tuple(out_shape), tuple(maps), base)


def transpose(in_shape, perm) -> AxisMap:
    in_shape = tuple(int(d) for d in in_shape)
    strides = element_strides(in_shape)
    maps = tuple(tuple(i * strides[p] for i in range(in_shape[p])) for p in perm)
    return AxisMap(in_shape, tuple(in_shape[p] for p in perm), maps)


def padded(in_shape, pad_before, pad_after, pad_value) -> AxisMap:
    """PAD / PADV2: PAD before and after each dimension's input indices."""
    in_shape = tuple(int(d) for d in in_shape)
    strides = element_strides(in_shape)
    maps = tuple((PAD,) * int(b) + tuple(i * s for i in range(n)) + (PAD,) * int(a)
                 for n, s, b, a in zip(in_shape, strides, pad_before, pad_after))
    return AxisMap(in_shape, tuple(len(m) for m in maps), maps, 0, pad_value)


def broadcast(in_shape, out_shape) -> AxisMap:
    """BROADCAST_TO: input dimensions aligned to the right; a size-1 input dimension repeats."""
    in_shape, out_shape = tuple(int(d) for d in in_shape), tuple(int(d) for d in out_shape)
    lead = len(out_shape) - len(in_shape)
    strides = element_strides(in_shape)
    maps = []
    for d, n in enumerate(out_shape):
        k = d - lead
        if k < 0 or in_shape[k] == 1:
            maps.append((0,) * n)
        else:
            maps.append(tuple(i * strides[k] for i in range(n)))
    return AxisMap(in_shape, out_shape, tuple(maps))


# -- op-layer helpers shared by the data movement ops ---------------------------------------------------------

def require_shape(op, tensor, shape, what: str = "") -> None:
    """The tensor's static shape is the one the op computes (TFLite would resize it; a file that says otherwise
    is inconsistent)."""
    from .base import op_error

    shape = [int(d) for d in shape]
    if list(tensor.shape) != shape:
        raise op_error(op, f"computes {what or 'its output'} '{tensor.name}' as {shape}, but the file declares "
                           f"{list(tensor.shape)}")


def constant_ints(op, k: int):
    """The int64 values of input k when it is a constant tensor (flattened), None when it is computed at run
    time or omitted."""
    t = op.inputs[k] if len(op.inputs) > k else None
    if t is None or not t.is_const:
        return None
    return [int(v) for v in np.asarray(t.data).astype(np.int64).reshape(-1)]


def numpy_scalar(tensor, value):
    """`value` as a Python number of the tensor's type (for pad values)."""
    from ..importer.tflite_importer import NUMPY_TYPES

    return np.asarray(value).astype(NUMPY_TYPES[tensor.dtype]).reshape(-1)[0].item()
