"""The elementwise family on the host: shared constraints and footprints, and the emitters of MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, DIV, FLOOR_DIV and FLOOR_MOD (edgesdk_elementwise.c, edgesdk_squared_difference.c,
edgesdk_div.c). ADD, SUB, MUL, the comparisons, the logical ops, SELECT_V2, PRELU and ADD_N have modules of their
own that use the helpers here.
"""

from __future__ import annotations

from ....ops import prepared
from ....ops.binary import PlainData
from ....ops.broadcast import broadcast_geometry
from .. import supported as rules
from ..calls import C_TYPE_BYTES
from ..emit import Emit, c_op, footprint
from ..proof import prod, require, shift_checks

ELEMENTWISE_H, ELEMENTWISE_C = "edgesdk_elementwise.h", "edgesdk_elementwise.c"
SUFFIX = {"int8": "s8", "int16": "s16", "int32": "i32", "float32": "f32", "bool": "b"}
QUANTIZED = ("int8", "int16")


# -- constraints -------------------------------------------------------------------------------------------------

def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def dtype_problem(tensors, allowed, quantized=QUANTIZED) -> str:
    """Why `tensors` are not all of one dtype in `allowed`, quantized per tensor if in `quantized` ("": they are)."""
    tensors = [t for t in tensors if t is not None]
    dtypes = sorted({t.dtype for t in tensors})
    if len(dtypes) != 1:
        return f"mixed types {', '.join(dtypes)}"
    if dtypes[0] not in allowed:
        return f"{dtypes[0]} tensors"
    if dtypes[0] in quantized:
        bad = [t.name for t in tensors if not _per_tensor(t)]
        if bad:
            return f"not quantized per tensor: {', '.join(bad)}"
    return ""


def _all(op):
    return [*op.inputs, *op.outputs]


def arithmetic_types(op):
    """Tensors are all int8 or all int16 (quantized per tensor), all float32 or all int32"""
    problem = dtype_problem(_all(op), ("int8", "int16", "float32", "int32"))
    return not problem, problem


def div_types(op):
    """Tensors are all int8 (quantized per tensor), all float32 or all int32"""
    problem = dtype_problem(_all(op), ("int8", "float32", "int32"))
    return not problem, problem


def stored_value_types(op):
    """Tensors are all int8, int16, int32 or float32 (compared as stored)"""
    problem = dtype_problem(_all(op), ("int8", "int16", "int32", "float32"), quantized=())
    return not problem, problem


def float_or_int32_types(op):
    """Tensors are all float32 or all int32"""
    problem = dtype_problem(_all(op), ("float32", "int32"))
    return not problem, problem


def int16_zero_points_zero(op):
    """int16 tensors have zero point 0 (TFLite's int16 kernels require it)"""
    bad = [t.name for t in _all(op) if t is not None and t.dtype == "int16" and t.quant is not None
           and any(int(z) != 0 for z in t.quant.zero_point)]
    return not bad, f"nonzero zero point: {', '.join(bad)}"


def output_rescale_below_one(op):
    """The quantized output rescale (twice the larger input scale over the output scale, with the left shift) is below 1"""
    # TFLite's QuantizeMultiplierSmallerThanOneExp aborts from 1 on: both references refuse such a model (TFLite
    # Micro's int16 SQUARED_DIFFERENCE, which takes any multiplier, excepted).
    if op.type == "SQUARED_DIFFERENCE" and op.outputs[0].dtype == "int16":
        return True, ""
    values = [getattr(prepared(op, mode), "real_output_multiplier", None) for mode in ("ref", "tflm")]
    bad = [v for v in values if v is not None and not v < 1.0]
    return not bad, f"output rescale {bad[0]:.6g}" if bad else ""


def supported_activation(op):
    """The fused activation is NONE, RELU, RELU6 or RELU_N1_TO_1"""
    return rules.supported_fused_activation(op)


# -- footprints --------------------------------------------------------------------------------------------------

def _element_bytes(arg) -> int:
    return C_TYPE_BYTES[arg.ctype]


def broadcast_extent(s: dict, strides) -> int:
    """Elements of one input a broadcast walk reads (-1 when the strides are negative)."""
    shape = [int(v) for v in s["out_shape"]]
    if not s["broadcast"]:
        return s["size"]
    if any(int(v) < 0 for v in strides):
        return -1
    return sum((d - 1) * int(st) for d, st in zip(shape, strides)) + 1


def shape_checks(s: dict) -> list:
    shape = [int(v) for v in s["out_shape"]]
    return require(all(d >= 1 for d in shape) and s["size"] == prod(shape) and s["size"] >= 1,
                   f"output shape {shape} does not hold {s['size']} elements")


def binary_footprint(call, op) -> list:
    """EDGESDK_BINARY_KERNEL (edgesdk_elementwise.h): the walk of p->shape; each pointer's element size is its own
    C type's (comparisons read int32/float and write bool bytes; PRELU's alpha is int8 under int16 inputs)."""
    p, a, b, y = call.args
    s = p["shape"]
    checks = shape_checks(s) + shift_checks(p)
    if checks:
        return checks
    return [(a, _element_bytes(a) * broadcast_extent(s, s["in1_strides"]), "input 1"),
            (b, _element_bytes(b) * broadcast_extent(s, s["in2_strides"]), "input 2"),
            (y, _element_bytes(y) * s["size"], "output")]


# -- emission helpers ---------------------------------------------------------------------------------------------

NAN_FIRST, NAN_SECOND, NAN_LARGER = 0, 1, 2  # EDGESDK_NAN_* (edgesdk_elementwise.h)


def nan_rule(op, mode: str, broadcast: bool) -> int:
    """Which NaN a float32 result carries when both operands are NaN, as the references' x86-64 builds compute it
    (measured, tests/test_ops_elementwise.py): the compilers swapped the operands of some commutative operations,
    and TFLite Micro's fmodf follows x87's larger-significand rule."""
    if op.type == "ADD":
        return NAN_SECOND if mode == "ref" or broadcast else NAN_FIRST
    if op.type == "MUL":
        return NAN_SECOND
    if op.type == "FLOOR_MOD" and mode == "tflm":
        return NAN_LARGER
    return NAN_FIRST


def plain_params(e: Emit, d: PlainData, a, b, y):
    """The params of a float32 / int32 ADD, SUB, MUL or DIV: the walk and the activation clamp."""
    shape = broadcast_geometry(a, b, y)
    if d.dtype != "float32":
        return e.params("edgesdk_binary_i32_params", {"shape": shape, "act_min": d.act_min, "act_max": d.act_max})
    return e.params("edgesdk_binary_f32_params", {"shape": shape, "act_min": d.act_min, "act_max": d.act_max,
                                                  "nan_rule": nan_rule(e.op, e.mode, bool(shape["broadcast"]))})


def shape_params(e: Emit, a, b, y):
    shape = broadcast_geometry(a, b, y)
    return e.params("edgesdk_binary_params", {"shape": shape, "nan_rule": nan_rule(e.op, e.mode, bool(shape["broadcast"]))})


# -- MAXIMUM, MINIMUM ----------------------------------------------------------------------------------------------

@c_op("MAXIMUM", "MINIMUM", constraints=[stored_value_types, rules.broadcastable_inputs],
      headers=(ELEMENTWISE_H,), sources=(ELEMENTWISE_C,))
def emit_maximum_minimum(e: Emit):
    a, b, y = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0]
    kernel = f"edgesdk_{e.op.type.lower()}_{SUFFIX[y.dtype]}"
    return e.call(kernel, shape_params(e, a, b, y), e.tensor(a), e.tensor(b), e.arena(y))


# -- SQUARED_DIFFERENCE -------------------------------------------------------------------------------------------

@c_op("SQUARED_DIFFERENCE", constraints=[arithmetic_types, int16_zero_points_zero, output_rescale_below_one,
                                         rules.broadcastable_inputs],
      headers=("edgesdk_squared_difference.h", ELEMENTWISE_H),
      sources=("edgesdk_squared_difference.c", ELEMENTWISE_C))
def emit_squared_difference(e: Emit):
    a, b, y, d = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0], e.data
    if y.dtype in ("float32", "int32"):
        return e.call(f"edgesdk_squared_difference_{SUFFIX[y.dtype]}", shape_params(e, a, b, y), e.tensor(a),
                      e.tensor(b), e.arena(y))
    fields = {"shape": broadcast_geometry(a, b, y),
              "input1_offset": d.input1_offset, "input2_offset": d.input2_offset, "output_offset": d.output_offset,
              "left_shift": d.left_shift,
              "input1_multiplier": d.input1_multiplier, "input1_shift": d.input1_shift,
              "input2_multiplier": d.input2_multiplier, "input2_shift": d.input2_shift,
              "output_multiplier": d.output_multiplier, "output_shift": d.output_shift,
              "act_min": d.act_min, "act_max": d.act_max, "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_squared_difference_params", fields)
    e.call(f"edgesdk_squared_difference_{SUFFIX[y.dtype]}", params, e.tensor(a), e.tensor(b), e.arena(y))
    if y.dtype == "int16" and e.mode == "ref":
        e.layer.note = "TFLite Micro's int16 arithmetic (LiteRT has no int16 SQUARED_DIFFERENCE)"
    return e.layer


# -- DIV ------------------------------------------------------------------------------------------------------------

def div_multiplier_range(op):
    """int8 DIV's multiplier s_a / (s_b s_y) lies in [2^-26, 2^21) (its combined shift stays in TFLite's range)"""
    d = prepared(op, "ref")
    if op.outputs[0].dtype != "int8" or d is None or isinstance(d, PlainData):
        return True, ""
    return -25 <= d.output_shift <= 21, f"multiplier shift {d.output_shift}"


@c_op("DIV", constraints=[div_types, supported_activation, div_multiplier_range, rules.broadcastable_inputs],
      headers=("edgesdk_div.h", ELEMENTWISE_H), sources=("edgesdk_div.c", ELEMENTWISE_C))
def emit_div(e: Emit):
    a, b, y, d = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0], e.data
    if isinstance(d, PlainData):
        return e.call(f"edgesdk_div_{SUFFIX[y.dtype]}", plain_params(e, d, a, b, y), e.tensor(a), e.tensor(b),
                      e.arena(y))
    fields = {"shape": broadcast_geometry(a, b, y),
              "input1_offset": d.input1_offset, "input2_offset": d.input2_offset, "output_offset": d.output_offset,
              "output_multiplier": d.output_multiplier, "output_shift": d.output_shift,
              "act_min": d.act_min, "act_max": d.act_max}
    return e.call("edgesdk_div_s8", e.params("edgesdk_div_params", fields), e.tensor(a), e.tensor(b), e.arena(y))


# -- FLOOR_DIV, FLOOR_MOD ----------------------------------------------------------------------------------------------

@c_op("FLOOR_DIV", "FLOOR_MOD", constraints=[float_or_int32_types, rules.broadcastable_inputs],
      headers=(ELEMENTWISE_H,), sources=(ELEMENTWISE_C,))
def emit_floor_div_mod(e: Emit):
    a, b, y = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0]
    kernel = f"edgesdk_{e.op.type.lower()}_{SUFFIX[y.dtype]}"
    return e.call(kernel, shape_params(e, a, b, y), e.tensor(a), e.tensor(b), e.arena(y))


PLAIN_KERNELS = [f"edgesdk_{op}_{t}" for op in ("add", "sub", "mul", "div") for t in ("f32", "i32")]
SHAPE_KERNELS = ([f"edgesdk_{op}_{t}" for op in ("maximum", "minimum") for t in ("s8", "s16", "i32", "f32")]
                 + [f"edgesdk_{op}_{t}" for op in ("squared_difference", "floor_div", "floor_mod")
                    for t in ("f32", "i32")])
footprint(*PLAIN_KERNELS, *SHAPE_KERNELS, "edgesdk_squared_difference_s8", "edgesdk_squared_difference_s16",
          "edgesdk_div_s8")(binary_footprint)
