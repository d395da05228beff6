"""PACK on the host: the CONCATENATION kernel (edgesdk_concatenation), each input one slice of every outer row.

Bytes are copied: TFLite Micro packs inputs quantized differently from the output unchanged, LiteRT refuses
them (docs/rounding.md)."""

from __future__ import annotations

import math

from ..emit import Emit, c_op
from .shape_common import data_tensor_types


@c_op("PACK", constraints=[data_tensor_types],
      headers=("edgesdk_concatenation.h",), sources=("edgesdk_concatenation.c",))
def emit_pack(e: Emit):
    y, axis = e.op.outputs[0], e.op.attrs["axis"]
    element = y.nbytes // max(y.num_elements, 1)
    outer = math.prod(int(d) for d in y.shape[:axis])
    slices = [math.prod(int(d) for d in t.shape[axis:]) * element for t in e.op.inputs]
    params = e.params("edgesdk_concatenation_params",
                      {"outer": outer, "num_inputs": len(slices), "slice_bytes": e.int32s("slice_bytes", slices)})
    e.call("edgesdk_concatenation", params, e.pointer_list(e.op.inputs), e.arena(y))
    e.layer.note = f"{len(slices)} inputs, axis {axis}"
    return e.layer
