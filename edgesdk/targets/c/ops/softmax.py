"""SOFTMAX on the host: edgesdk_softmax_s8 (gemmlowp fixed point, TFLite's reference int8 softmax)."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from ..proof import positive


@c_op("SOFTMAX", constraints=[rules.int8_quantized_activations, rules.softmax_output_quantization,
                              rules.softmax_positive_beta, rules.softmax_input_scale_in_range],
      headers=("edgesdk_softmax.h",), sources=("edgesdk_softmax.c",))
def emit_softmax(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    fields = {"rows": d.rows, "depth": d.depth, "input_multiplier": d.input_multiplier,
              "input_left_shift": d.input_left_shift, "diff_min": d.diff_min, "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_softmax_params", fields)
    return e.call("edgesdk_softmax_s8", params, e.tensor(x), e.arena(y))


@footprint("edgesdk_softmax_s8")
def softmax_footprint(call, op) -> list:
    p, x, y = call.args
    return positive(p, "rows", "depth") or [(x, p["rows"] * p["depth"], "input"), (y, p["rows"] * p["depth"], "output")]
