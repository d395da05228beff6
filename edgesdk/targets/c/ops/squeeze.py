"""EXPAND_DIMS and SQUEEZE on the host: like RESHAPE, nothing when the memory plan aliases output and input,
else a byte copy (edgesdk_reshape)."""

from __future__ import annotations

from ..emit import Emit, c_op
from .shape_common import data_tensor_types


@c_op("EXPAND_DIMS", "SQUEEZE", constraints=[data_tensor_types],
      headers=("edgesdk_reshape.h",), sources=("edgesdk_reshape.c",))
def emit_squeeze(e: Emit):
    x, y = e.op.inputs[0], e.op.outputs[0]
    src, dst = e.tensor(x), e.arena(y)
    if not x.is_const and src.offset == dst.offset:
        e.layer.aliased = True
        e.layer.note = "aliased, no copy"
        return e.layer
    e.call("edgesdk_reshape", e.int(y.nbytes), src, dst)
    e.layer.note = "copy"
    return e.layer
