"""CONCATENATION on the host: edgesdk_concatenation copies each input's slice of every outer row."""

from __future__ import annotations

import math

from ..calls import PointerList
from ..emit import Emit, c_op, footprint
from ..proof import require
from .shape_common import data_tensor_types


def _same_quant(a, b) -> bool:
    return (a.quant is not None and b.quant is not None and a.quant.scale.size == b.quant.scale.size == 1
            and float(a.quant.scale[0]) == float(b.quant.scale[0])
            and int(a.quant.zero_point[0]) == int(b.quant.zero_point[0]))


def concatenation_quantization(op):
    """No fused activation; int8 inputs share the output's scale and zero point, int16 inputs and output have zero point 0 (bytes are copied, as both references do)"""
    y = op.outputs[0]
    if op.attrs.get("activation", "NONE") != "NONE":
        return False, f"fused activation {op.attrs['activation']}"
    if y.dtype == "int8" and (y.quant is not None or any(t.quant is not None for t in op.inputs)):
        bad = [t.name for t in op.inputs if not _same_quant(t, y)]
        return not bad, f"{', '.join(bad)} quantized differently from the output"
    if y.dtype == "int16":
        bad = [t.name for t in (*op.inputs, y) if t.quant is not None and any(int(z) != 0 for z in t.quant.zero_point)]
        return not bad, f"{', '.join(bad)} have a nonzero zero point"
    return True, ""


@c_op("CONCATENATION", constraints=[data_tensor_types, concatenation_quantization],
      headers=("edgesdk_concatenation.h",), sources=("edgesdk_concatenation.c",))
def emit_concatenation(e: Emit):
    y, axis = e.op.outputs[0], e.op.attrs["axis"]
    inputs = [t for t in e.op.inputs if t is not None]
    element = y.nbytes // max(y.num_elements, 1)
    outer = math.prod(int(d) for d in y.shape[:axis])
    inner = math.prod(int(d) for d in y.shape[axis + 1:])
    slices = [(int(t.shape[axis]) if t.shape else 1) * inner * element for t in inputs]  # scalars: one each
    fields = {"outer": outer, "num_inputs": len(inputs), "slice_bytes": e.int32s("slice_bytes", slices)}
    params = e.params("edgesdk_concatenation_params", fields)
    e.call("edgesdk_concatenation", params, e.pointer_list(inputs), e.arena(y))
    e.layer.note = f"{len(inputs)} inputs, axis {axis}"
    return e.layer


@footprint("edgesdk_concatenation")
def concatenation_footprint(call, op) -> list:
    p, inputs, y = call.args
    if not isinstance(inputs, PointerList):
        return ["the input list is not a local pointer array"]
    slices = [int(v) for v in p["slice_bytes"].values]
    checks = require(p["outer"] >= 1 and p["num_inputs"] == len(inputs.items) == len(slices) and all(s >= 0 for s in slices),
                     f"{p['num_inputs']} inputs, {len(inputs.items)} pointers and {len(slices)} slice sizes disagree")
    return checks or [(x, p["outer"] * s, f"input {i}") for i, (x, s) in enumerate(zip(inputs.items, slices))] + [
        (p["slice_bytes"], 4 * len(slices), "slice sizes"), (y, p["outer"] * sum(slices), "output")]
