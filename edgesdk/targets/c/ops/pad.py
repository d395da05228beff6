"""PAD and PADV2 on the host: int8 with edgesdk_pad_s8 over up to 6 dimensions (memset and row copies), the other
types (int16, int32, int64, float32, bool) with the op layer's AxisMap walked by edgesdk_gather_axes."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import prod, require
from ....ops.pad import paddings_of
from .shape_common import data_tensor_types, emit_gather_axes

MAX_DIMS = 6


def pad6(values, fill) -> list:
    values = [int(v) for v in values]
    return [fill] * (MAX_DIMS - len(values)) + values


def pad_constant(op):
    """Paddings are constant; the pad value is PADV2's constant of the input's type, else the output zero point"""
    if paddings_of(op) is None:
        return False, "paddings are computed at run time"
    value = op.inputs[2] if len(op.inputs) > 2 else None
    if value is not None and not value.is_const:
        return False, "pad value is not constant"
    if value is not None and value.dtype != op.inputs[0].dtype:
        return False, f"pad value is {value.dtype}, the input {op.inputs[0].dtype} (TFLite refuses it too)"
    return True, ""


@c_op("PAD", "PADV2", constraints=[data_tensor_types, pad_constant],
      headers=("edgesdk_pad.h", "edgesdk_gather_axes.h"), sources=("edgesdk_pad.c", "edgesdk_gather_axes.c"))
def emit_pad(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    if y.dtype != "int8":
        emit_gather_axes(e, d.axes, x, y, "pad")
        e.layer.note = f"pad value {d.pad_value}"
        return e.layer
    fields = {"in_shape": pad6(x.shape, 1), "out_shape": pad6(y.shape, 1), "pad_before": pad6(d.pad_before, 0),
              "pad_value": d.pad_value}
    params = e.params("edgesdk_pad_params", fields)
    return e.call("edgesdk_pad_s8", params, e.tensor(x), e.arena(y))


@footprint("edgesdk_pad_s8")
def pad_footprint(call, op) -> list:
    p, x, y = call.args
    ins, outs, before = ([int(v) for v in p[k]] for k in ("in_shape", "out_shape", "pad_before"))
    ok = all(i >= 1 and o >= 1 and b >= 0 and i + b <= o for i, o, b in zip(ins, outs, before))
    return require(ok, f"input {ins} padded by {before} does not fit output {outs}") or [
        (x, prod(ins), "input"), (y, prod(outs), "output")]
