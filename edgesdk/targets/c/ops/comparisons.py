"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL on the host (edgesdk_compare.c): quantized int8
inputs (and int16 ones for EQUAL / NOT_EQUAL) rescaled to real units, int32, float32, bool (EQUAL, NOT_EQUAL) and
LiteRT's ordering comparisons of int16 as stored."""

from __future__ import annotations

from ....ops.comparisons import COMPARISONS
from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .binary import SUFFIX, binary_footprint, dtype_problem, shape_params
from ....ops.broadcast import broadcast_geometry


def comparison_types(op):
    """Inputs are both int8 or both int16 (quantized per tensor), int32, float32, or bool (EQUAL, NOT_EQUAL); the output is bool"""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    allowed = ("int8", "int16", "int32", "float32") + (("bool",) if op.type in ("EQUAL", "NOT_EQUAL") else ())
    problem = dtype_problem([a, b], allowed)
    if not problem and y.dtype != "bool":
        problem = f"{y.dtype} output"
    return not problem, problem


def comparison_input_scales(op):
    """Quantized inputs have scales below 1 (TFLite rescales each input by its own scale as a multiplier)"""
    bad = [f"{t.name} ({t.quant.scale0:g})" for t in op.inputs[:2]
           if t.dtype in ("int8", "int16") and t.quant is not None and not t.quant.scale0 < 1.0]
    return not bad, f"scale not below 1: {', '.join(bad)}" if bad else ""


@c_op(*COMPARISONS, constraints=[comparison_types, comparison_input_scales, rules.broadcastable_inputs],
      headers=("edgesdk_compare.h",), sources=("edgesdk_compare.c",))
def emit_comparison(e: Emit):
    a, b, y, d = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0], e.data
    kernel = f"edgesdk_{e.op.type.lower()}_{SUFFIX[a.dtype]}"
    if a.dtype == "int16" and e.op.type not in ("EQUAL", "NOT_EQUAL"):
        # LiteRT's LESS/LESS_EQUAL (and GREATER/GREATER_EQUAL, the same with the inputs swapped) compare int16
        # values as stored, ignoring the quantization; TFLite Micro has no int16 comparisons.
        e.call(kernel + "_stored", shape_params(e, a, b, y), e.tensor(a), e.tensor(b), e.arena(y))
        e.layer.note = "int16 compared as stored (LiteRT)"
        return e.layer
    if a.dtype not in ("int8", "int16"):
        return e.call(kernel, shape_params(e, a, b, y), e.tensor(a), e.tensor(b), e.arena(y))
    fields = {"shape": broadcast_geometry(a, b, y),
              "input1_offset": d.input1_offset, "input2_offset": d.input2_offset, "left_shift": d.left_shift,
              "input1_multiplier": d.input1_multiplier, "input1_shift": d.input1_shift,
              "input2_multiplier": d.input2_multiplier, "input2_shift": d.input2_shift,
              "rounding": e.rounding("double")}
    e.call(kernel, e.params("edgesdk_compare_params", fields), e.tensor(a), e.tensor(b), e.arena(y))
    if a.dtype == "int16" and e.mode == "tflm":
        e.layer.note = "LiteRT's int16 arithmetic (TFLite Micro has no int16 comparisons)"
    return e.layer


footprint(*[f"edgesdk_{op.lower()}_{t}" for op in COMPARISONS for t in ("s8", "s16", "s16_stored", "i32", "f32")],
          "edgesdk_equal_b", "edgesdk_not_equal_b")(binary_footprint)
