"""MEAN on the host: edgesdk_mean_s8 over any set of axes of up to 6 dimensions."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import prod, require, shift_checks
from .pad import MAX_DIMS, pad6


@c_op("MEAN", constraints=[rules.int8_quantized_activations, rules.mean_constant_axes],
      headers=("edgesdk_mean.h",), sources=("edgesdk_mean.c",))
def emit_mean(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    rank = len(x.shape)
    fields = {
        "in_shape": pad6(x.shape, 1),
        "reduce": [0] * (MAX_DIMS - rank) + [int(k in d.axes) for k in range(rank)],
        "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
        "multiplier": d.multiplier, "shift": d.shift,
        "rounding": e.rounding(d.rounding),
    }
    params = e.params("edgesdk_mean_params", fields)
    e.call("edgesdk_mean_s8", params, e.tensor(x), e.arena(y))
    e.layer.note = f"over axes {sorted(d.axes)}"
    return e.layer


@footprint("edgesdk_mean_s8")
def mean_footprint(call, op) -> list:
    p, x, y = call.args
    shape, reduce = [int(v) for v in p["in_shape"]], [int(v) for v in p["reduce"]]
    ok = all(d >= 1 for d in shape) and all(r in (0, 1) for r in reduce)
    checks = require(ok, f"input shape {shape} / reduced axes {reduce} invalid") + shift_checks(p)
    kept = prod(d for d, r in zip(shape, reduce) if not r)
    return checks or [(x, prod(shape), "input"), (y, kept, "output")]
