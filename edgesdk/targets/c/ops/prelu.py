"""PRELU on the host (edgesdk_prelu.c): int8 / int16 inputs with an int8 alpha, and float32."""

from __future__ import annotations

from ....ops.broadcast import broadcast_geometry
from ..emit import Emit, c_op, footprint
from ..proof import shift_checks
from .binary import SUFFIX, binary_footprint, dtype_problem, shape_params


def prelu_types(op):
    """Input and output are int8 or int16 quantized per tensor with an int8 alpha quantized per tensor, or all float32"""
    x, alpha, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if x.dtype == "float32":
        problem = dtype_problem([x, alpha, y], ("float32",))
    else:
        problem = dtype_problem([x, y], ("int8", "int16")) or dtype_problem([alpha], ("int8",))
    return not problem, problem


@c_op("PRELU", constraints=[prelu_types], headers=("edgesdk_prelu.h",), sources=("edgesdk_prelu.c",))
def emit_prelu(e: Emit):
    x, alpha, y, d = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0], e.data
    if x.dtype == "float32":
        return e.call("edgesdk_prelu_f32", shape_params(e, x, alpha, y), e.tensor(x), e.tensor(alpha), e.arena(y))
    fields = {"shape": broadcast_geometry(x, alpha, y),
              "input_offset": d.input_offset, "alpha_offset": d.alpha_offset, "output_offset": d.output_offset,
              "output_multiplier_1": d.output_multiplier_1, "output_shift_1": d.output_shift_1,
              "output_multiplier_2": d.output_multiplier_2, "output_shift_2": d.output_shift_2,
              "act_min": d.act_min, "act_max": d.act_max, "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_prelu_params", fields)
    return e.call(f"edgesdk_prelu_{SUFFIX[x.dtype]}", params, e.tensor(x), e.tensor(alpha), e.arena(y))


@footprint("edgesdk_prelu_s8", "edgesdk_prelu_s16", "edgesdk_prelu_f32")
def prelu_footprint(call, op) -> list:
    """The broadcast walk of input and alpha; the two requantization shifts in [-31, 30]."""
    return shift_checks(call.args[0], keys=("output_shift_1", "output_shift_2")) or binary_footprint(call, op)
