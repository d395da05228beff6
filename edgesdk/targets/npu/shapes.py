"""Tensor shapes as NPU-1 descriptors see them: four dimensions (N, H, W, C) of at most 65535 each.

Elementwise ops of any rank fit when their broadcast shapes collapse to four dimensions: dimensions of size 1
in the output are dropped, and neighbours merge when every input either has both (they are contiguous in it)
or broadcasts both (stride 0 over the merged run). `collapse_broadcast` computes that view; the constraint
and the lowering use the same function, so what the constraint accepts is what the codegen emits.
"""

from __future__ import annotations

from .hw import registers as R

MAX_DIMS = 4


def _classes(out_shape, in_shape) -> list:
    """Per output dimension: True when the input has it (size equal to the output's), False when it broadcasts."""
    padded = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    return [int(i) == int(o) for i, o in zip(padded, out_shape)]


def collapse_broadcast(out_shape, in_shapes) -> tuple | None:
    """(output shape, [input shape as read]) in four dimensions, inputs broadcast by size-1 dimensions; None
    when the broadcast needs more dimensions or a merged one exceeds 65535. A shape of rank <= 4 is kept as it
    is (its W and C lanes set the vector engine's cost); a higher rank drops the output's size-1 dimensions,
    then merges neighbours, outermost first, until four remain. The input shapes returned hold 1 where the
    input repeats (the lowering gives those dimensions stride 0)."""
    if len(out_shape) <= MAX_DIMS:
        lead = (1,) * (MAX_DIMS - len(out_shape))
        out4 = lead + tuple(int(d) for d in out_shape)
        ins4 = [lead + tuple(int(d) if c else 1 for d, c in zip(out_shape, _classes(out_shape, s))) for s in in_shapes]
        return out4, ins4
    classes = [_classes(out_shape, s) for s in in_shapes]
    dims = [(int(out_shape[i]), tuple(c[i] for c in classes)) for i in range(len(out_shape)) if int(out_shape[i]) > 1]
    while len(dims) > MAX_DIMS:
        pair = next((i for i in range(len(dims) - 1) if dims[i][1] == dims[i + 1][1]), None)
        if pair is None:
            return None
        dims[pair:pair + 2] = [(dims[pair][0] * dims[pair + 1][0], dims[pair][1])]
    if any(size > R.MAX_DIM for size, _ in dims):
        return None
    dims = [(1, tuple(True for _ in in_shapes))] * (MAX_DIMS - len(dims)) + dims
    out4 = tuple(size for size, _ in dims)
    ins4 = [tuple(size if key[k] else 1 for size, key in dims) for k in range(len(in_shapes))]
    return out4, ins4


def broadcasts(in_shape, out_shape) -> bool:
    """NumPy's rule: `in_shape` (of no higher rank) broadcasts to `out_shape`."""
    if len(in_shape) > len(out_shape):
        return False
    padded = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    return all(a == b or a == 1 for a, b in zip(padded, out_shape))
