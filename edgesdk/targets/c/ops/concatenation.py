"""CONCATENATION on the host: edgesdk_concatenation copies each input's slice of every outer row."""

from __future__ import annotations

import math

from .. import supported as rules
from ..calls import PointerList
from ..emit import Emit, c_op, footprint
from ..proof import require


@c_op("CONCATENATION", constraints=[rules.int8_quantized_activations, rules.concatenation_shared_quantization],
      headers=("edgesdk_concatenation.h",), sources=("edgesdk_concatenation.c",))
def emit_concatenation(e: Emit):
    y, axis = e.op.outputs[0], e.op.attrs["axis"]
    inputs = [t for t in e.op.inputs if t is not None]
    element = y.nbytes // max(y.num_elements, 1)
    outer = math.prod(int(d) for d in y.shape[:axis])
    inner = math.prod(int(d) for d in y.shape[axis + 1:])
    slices = [int(t.shape[axis]) * inner * element for t in inputs]
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
