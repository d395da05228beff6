"""Host C target, long tail: ops with no hand-written kernel, lowered through Apache TVM to C.

Ops imported through TVM (edgesdk/tvm/relax_import.py) that match no edgesdk pattern keep their Relax
subgraph in `op.attrs["relax_function"]`: a transpose inserted for NCHW -> NHWC, an int8 SUB written as
dequantize -> subtract -> quantize, a float EXP, ... This module is the C target's codegen for them: TVM
lowers the subgraph (LegalizeOps -> TE/TIR -> C, edgesdk/tvm/lowering.py) into one plain C function, the
executor step calls it with arena pointers, and `tvm_sources` puts the functions into OUT/src/
model_tvm.c with the bare-metal shim header. docs/tvm-interop.md lists the ops that go this way.
"""

from __future__ import annotations

import importlib.util
import math

from ...importer.names import c_identifier
from ...tvm import LONG_TAIL_TYPES
from .calls import C_TYPE_BYTES, Cast, Const

C_TYPES = {"int8": "int8_t", "int32": "int32_t", "float32": "float"}
SOURCE, HEADER = "model_tvm.c", "model_tvm.h"


def tvm_available() -> bool:
    return importlib.util.find_spec("tvm") is not None


def lowered_through_tvm(op):
    """The op was imported through TVM (it carries its Relax subgraph) and apache-tvm is installed to lower it to C"""
    if "relax_function" not in op.attrs:
        return False, "no Relax subgraph: only ops imported through TVM are lowered by TVM"
    if not tvm_available():
        return False, "apache-tvm is not installed (pip install 'edgesdk[tvm]')"
    return True, ""


def int8_or_float32_tensors(op):
    """Activations are int8 quantized per tensor, or float32"""
    bad = [f"{t.name} ({t.dtype})" for t in op.inputs + op.outputs if t is not None and not t.is_const
           and not (t.dtype == "float32" or (t.dtype == "int8" and t.quant is not None and t.quant.scale.size == 1))]
    return not bad, f"unsupported: {', '.join(bad)}" if bad else ""


LONG_TAIL_SUPPORT = {op_type: [int8_or_float32_tensors, lowered_through_tvm]
                     for op_type in sorted(set(LONG_TAIL_TYPES.values()))}


def emit_tvm_lowered(op, ctx):
    """The executor step: one call of the TVM-generated function with the op's arena slots."""
    from ...ctext import describe_op
    from .calls import Cast
    from .emit import Emit

    e = Emit(op, ctx)
    lowered = lowered_function(op)
    args = []
    for index, ctype in zip(lowered.arg_order, lowered.params):
        tensor = op.inputs[index]
        if tensor.is_const:  # exact float constants (scales) travel as const arrays, not C literals
            symbol = ctx.const_array(f"{lowered.name}_{tensor.name}", tensor.data, ctype, describe_op(op))
            args.append(Cast(Const(symbol, ctype, tensor.data.reshape(-1)), ctype))
        else:
            args.append(e.arena(tensor))
    args.append(e.arena(op.outputs[0]))
    e.call(lowered.name, *args)
    ctx.include(HEADER)
    e.layer.note = f"lowered through TVM: {', '.join(op.attrs.get('relax_ops', []))}"
    return e.layer


def tvm_lowered_footprint(call, op) -> list:
    """A TVM-lowered function. TVM derives its loops from the types of the op's Relax function (LegalizeOps/
    TOPI -> TIR), so it touches at most each parameter's whole tensor as that function types it -- the byte
    extent prod(shape) x element size, the result type for the output pointer -- and nothing else. Each
    argument must have room for its parameter's extent: an arena pointer is the slot of one of the op's tensors
    and the extent lies inside one live buffer, a constant array holds at least the extent."""
    from .calls import Arena

    extents = _tvm_extents(op)
    if isinstance(extents, str):
        return [extents]
    args = [a.arg if isinstance(a, Cast) else a for a in call.args]
    if len(args) != len(extents):
        return [f"{len(args)} arguments for the {len(extents)} parameters of the lowered function"]
    slots = {t for t in op.inputs + op.outputs if t is not None and not t.is_const}
    accesses = []
    for arg, (nbytes, what) in zip(args, extents):
        if isinstance(arg, Arena) and arg.tensor not in slots:
            accesses.append(f"pointer edgesdk_arena + {arg.offset} is not one of the op's tensors")
        elif isinstance(arg, (Arena, Const)):
            accesses.append((arg, nbytes, what))
        else:
            accesses.append(f"argument {arg!r} is neither an arena slot nor a constant")
    return accesses


TVM_DTYPE_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "float32": 4,
                   "float64": 8, "bool": 1}


def _tvm_extents(op):
    """[(bytes, what)] per C parameter of the op's lowered function (inputs in call order, then the output),
    from its Relax function's types; or why they cannot be known (a failure text)."""
    lowered, func = op.attrs.get("tvm_lowered"), op.attrs.get("relax_function")
    if lowered is None or func is None:
        return "no lowered TVM function and Relax signature recorded for this op"
    types = [(f"parameter {k} ({func.params[k].name})", func.params[k].ty) for k in lowered.arg_order]
    types.append(("output", func.ret_ty))
    if len(types) != len(lowered.params):
        return f"the lowered function has {len(lowered.params)} parameters for {len(types)} tensors"
    extents = []
    for (what, ty), ctype in zip(types, lowered.params):
        dtype = str(getattr(ty, "dtype", ""))
        try:
            shape = [int(d) for d in ty.shape.values]
        except (AttributeError, TypeError, ValueError):
            return f"{what} has no static tensor shape ({ty})"
        if dtype not in TVM_DTYPE_BYTES or C_TYPE_BYTES.get(ctype) != TVM_DTYPE_BYTES[dtype]:
            return f"{what} is {dtype}, passed as {ctype} *"
        if any(d < 0 for d in shape):
            return f"{what} has a negative dimension {shape}"
        extents.append((math.prod(shape) * TVM_DTYPE_BYTES[dtype], f"{what} {dtype}{shape}"))
    return extents


def lowered_function(op):
    """Lower once per op (the executor's dry run and the real run both ask)."""
    if "tvm_lowered" not in op.attrs:
        from ...tvm.lowering import lower_relax_function

        name = c_identifier(f"tvmgen_{op.type.lower()}_{op.index}", "tvmgen")
        op.attrs["tvm_lowered"] = lower_relax_function(op.attrs["relax_function"], name)
    return op.attrs["tvm_lowered"]


def tvm_sources(layers: list) -> dict:
    """{file name: text}: model_tvm.c/.h and the shim header, when the build has TVM-lowered ops."""
    functions = [layer.op.attrs["tvm_lowered"] for layer in layers if "tvm_lowered" in layer.op.attrs]
    if not functions:
        return {}
    from ...tvm.lowering import SHIM_HEADER, shim_header_text

    guard = "EDGESDK_MODEL_TVM_H"
    prototypes = "\n".join(f"TVM_DLL {f.prototype};" for f in functions)
    bodies = "\n".join(f.source for f in functions)
    return {
        SHIM_HEADER: shim_header_text(),
        HEADER: (f"/* model_tvm.h - long-tail ops lowered through Apache TVM (TE/TIR -> C). Generated by edgesdk. */\n"
                 f"#ifndef {guard}\n#define {guard}\n\n#include \"{SHIM_HEADER}\"\n\n{prototypes}\n\n#endif /* {guard} */\n"),
        SOURCE: ("/*\n * model_tvm.c - long-tail ops lowered through Apache TVM: Relax -> LegalizeOps (TE/TOPI) -> TIR -> C.\n"
                 " * Generated by TVM's C codegen without the packed-API wrapper (edgesdk/tvm/lowering.py). Do not edit.\n"
                 f" */\n#include \"{HEADER}\"\n\n{bodies}"),
    }
