"""Elementwise broadcasting (numpy rules, TFLite's ProcessBroadcastShapes): checks and the walk's geometry."""

from __future__ import annotations

from .base import op_error

MAX_DIMS = 6


def broadcasts_to(shapes, out_shape) -> bool:
    rank = len(out_shape)
    for shape in shapes:
        if len(shape) > rank:
            return False
        padded = (1,) * (rank - len(shape)) + tuple(shape)
        if any(d != o and d != 1 for d, o in zip(padded, out_shape)):
            return False
    full = [max(((1,) * (rank - len(s)) + tuple(s))[k] for s in shapes) for k in range(rank)]
    return all(f == o or (f == 1 and o == 1) for f, o in zip(full, out_shape))


def require_broadcast(op, inputs=None) -> None:
    """The inputs have equal shapes or broadcast to the output's shape."""
    inputs = [t for t in (inputs if inputs is not None else op.inputs) if t is not None]
    y = op.outputs[0]
    if not broadcasts_to([tuple(t.shape) for t in inputs], tuple(y.shape)):
        raise op_error(op, f"inputs {[list(t.shape) for t in inputs]} do not broadcast to the output {list(y.shape)}")


def broadcast_geometry(a, b, y) -> dict:
    """The walk of a two-input elementwise kernel: shapes right-aligned and padded to MAX_DIMS, each input's
    element strides with 0 along its broadcast dimensions (edgesdk_broadcast_shape in the kernel library, and
    the DSP's serialized form)."""
    def pad(shape):
        shape = tuple(int(d) for d in shape)
        return (1,) * (MAX_DIMS - len(shape)) + shape

    sa, sb, sy = pad(a.shape), pad(b.shape), pad(y.shape)

    def strides(shape):
        result, stride = [0] * MAX_DIMS, 1
        for d in range(MAX_DIMS - 1, -1, -1):
            result[d] = 0 if shape[d] == 1 and sy[d] != 1 else stride
            stride *= shape[d]
        return result

    return {"broadcast": int(sa != sb), "size": y.num_elements, "out_shape": list(sy),
            "in1_strides": strides(sa), "in2_strides": strides(sb)}
