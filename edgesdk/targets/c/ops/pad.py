"""PAD and PADV2 on the host: edgesdk_pad_s8 over up to 6 dimensions."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import prod, require

MAX_DIMS = 6


def pad6(values, fill) -> list:
    values = [int(v) for v in values]
    return [fill] * (MAX_DIMS - len(values)) + values


@c_op("PAD", "PADV2", constraints=[rules.int8_quantized_activations, rules.pad_constant_zero_point],
      headers=("edgesdk_pad.h",), sources=("edgesdk_pad.c",))
def emit_pad(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
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
