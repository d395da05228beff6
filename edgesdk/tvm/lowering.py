"""Long-tail ops: a Relax function -> one plain C function for the host core, through TVM's TE/TIR.

edgesdk's host kernels are hand-written for the ops that matter for speed. Everything else that arrives
through TVM (an elementwise op with no kernel, a layout transpose, an int8 op written as dequantize -> float
op -> quantize) keeps its Relax description and is lowered here instead:

    Relax function --LegalizeOps--> TE/TOPI PrimFuncs --FuseOps/FuseTIR--> one PrimFunc
      --compute_inline--> one loop nest --TIR lowering (no packed API)--> C source (TVM's C codegen)

TVM's `c` target normally wraps every function in the tvm-ffi packed calling convention
(`__tvm_ffi_<name>(self, args, num_args, result)` with DLTensor arguments, argument checks and error
strings), which needs the tvm-ffi headers and runtime. Firmware has none of that, so the last step replaces
the MakePackedAPI pass by `_plain_c_signature`: each buffer parameter becomes a typed data pointer, and the
C codegen then prints `void name(int8_t* a, int8_t* b, ...)`. The only things that code still needs are
fixed-width integer types, <math.h> and TVM's export macro: edgesdk_tvm_shim.h, the bare-metal shim.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..dataclass_cache import dataclass
from ..errors import UnsupportedOpError

SHIM_HEADER = "edgesdk_tvm_shim.h"
SHIM_PATH = Path(__file__).resolve().parent / SHIM_HEADER
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "float32": "float"}
# Runtime services a lowered function may call; none exists on bare metal (the shim provides none).
_RUNTIME_CALLS = ("TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace", "TVMBackendParallelLaunch",
                  "TVMFFIErrorSetRaisedFromCStr", "__tvm_ffi_")


@dataclass
class LoweredFunction:
    """One long-tail op as C: `prototype;` goes to a header, `source` to a .c file."""

    name: str
    prototype: str
    source: str  # the function definition only (no includes)
    params: list  # C parameter types, in call order (inputs then output)
    arg_order: list  # for each C input parameter, the index of the Relax function parameter it receives


def lower_relax_function(func, name: str) -> LoweredFunction:
    """Lower a Relax function (its params: the op's inputs; its result: the op's output) to a C function.

    The C function takes input pointers (in the order `arg_order` gives, as indices of the Relax params:
    TVM orders them by first use) then the output pointer, and returns nothing.
    """
    import tvm
    from tvm import relax

    mod = tvm.IRModule({"main": func})
    mod = tvm.transform.Sequential([
        relax.transform.LegalizeOps(),  # each Relax op -> its TOPI/TE compute as a PrimFunc
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DeadCodeElimination(),
    ])(mod)
    prim_funcs = [f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    if len(prim_funcs) != 1:
        raise UnsupportedOpError(
            f"The long-tail op '{name}' lowers to {len(prim_funcs)} TIR functions; edgesdk lowers ops that fuse into "
            "exactly one loop nest (elementwise and data-movement ops). Split the op in the model or add a host kernel.")
    arg_order = _call_arguments(mod["main"], func)
    prim = _inline_stages(prim_funcs[0]).with_attr("global_symbol", name)
    source = _tir_to_c(prim, name)
    params = [_param_c_type(p) for p in prim.params]
    prototype = f"void {name}({', '.join(f'{t} *' for t in params)})"
    return LoweredFunction(name, prototype, source, params, arg_order)


def _call_arguments(main, original) -> list:
    """The call_tir argument list of the lowered main, as indices into the original function's params."""
    bindings = [b for block in main.body.blocks for b in block.bindings]
    calls = [b.value for b in bindings if getattr(getattr(b.value, "op", None), "name", "") == "relax.call_tir"]
    if len(bindings) != 1 or len(calls) != 1:
        raise UnsupportedOpError(
            "A long-tail op did not lower to a single TIR call (it needs Relax-level work besides the loop nest).")
    names = [p.name for p in main.params]
    order = []
    for arg in calls[0].args[1].fields:
        if arg.name not in names:
            raise UnsupportedOpError("A long-tail op's TIR function reads something other than the op's inputs.")
        order.append(names.index(arg.name))
    if len(main.params) != len(original.params):
        raise RuntimeError("LegalizeOps changed the number of function parameters")
    return order


def _inline_stages(prim):
    """Inline every intermediate stage (dequantize, the op, ...) into the final one: no scratch buffers."""
    from tvm import s_tir

    sch = s_tir.Schedule(prim)
    blocks = sch.get_child_blocks(sch.get_sblock("root"))
    for block in blocks[:-1]:
        try:
            sch.compute_inline(block)
        except Exception:  # a reduction or a stage read twice with different indices: keep it as a loop
            try:
                sch.reverse_compute_inline(block)
            except Exception:
                pass
    return sch.mod["main"]


_C_MATH_REGISTERED = []


def _register_c_math() -> None:
    """TVM 0.27's `c` target has no lowering for tirx.fabs (abs of a float): map it to C's fabsf/fabs."""
    if _C_MATH_REGISTERED:
        return
    from tvm import tirx

    def fabs(call):
        dtype = str(call.args[0].ty.dtype)
        return tirx.call_pure_extern(dtype, "fabsf" if dtype == "float32" else "fabs", call.args[0])

    tirx.op.register_intrin_lowering("tirx.fabs", "c", f=fabs, level=100)
    _C_MATH_REGISTERED.append(True)


def _tir_to_c(prim, name: str) -> str:
    """TVM's s_tir lowering for a CPU, without MakePackedAPI, then TVM's C codegen."""
    import tvm
    from tvm import s_tir, tirx
    from tvm.target import Target

    _register_c_math()
    target = Target("c")
    mod = tvm.IRModule({name: prim})
    mod = tirx.transform.BindTarget(target.with_host(target))(mod)
    S, X = s_tir.transform, tirx.transform
    mod = tvm.ir.transform.Sequential([
        S.CanonicalizeLoop(), S.LowerInitBlock(), S.PlanAndUpdateBufferAllocationLocation(),
        S.ConvertBlocksToOpaque(), S.CompactBufferAllocation(), S.LowerMatchBuffer(), S.StmtSimplify(),
        S.LowerOpaqueBlock(), X.FlattenBuffer(), X.NarrowDataType(32), S.LoopPartition(), X.StorageRewrite(),
        X.StmtSimplify(), X.RemoveNoOp(), X.VerifyMemory(), X.AnnotateEntryFunc(),
    ])(mod)
    mod = tvm.IRModule({name: _plain_c_signature(mod[name])})
    mod = tvm.ir.transform.Sequential([X.LowerTVMBuiltin(), X.LowerIntrin()])(mod)
    text = tvm.get_global_func("target.build.c")(mod, target).inspect_source()
    return _function_definition(text, name)


def _plain_c_signature(prim):
    """Buffer parameters -> typed data pointers, each declaring its buffer at the top of the body.

    This is what MakePackedAPI would do minus the DLTensor unpacking: the shapes are static, so the pointer
    is all the function needs.
    """
    import tvm
    from tvm import tirx

    pointers, declarations = [], []
    for buffer in prim.params:
        pointer = tirx.Var(f"{buffer.name}_data", tvm.ir.PointerType(buffer.ty.dtype))
        pointers.append(pointer)
        declarations.append(tirx.DeclBuffer(buffer, data=pointer))
    return tirx.PrimFunc(pointers, tirx.SeqStmt(declarations + [prim.body]), attrs=prim.attrs)


def _param_c_type(buffer) -> str:
    return C_TYPES[str(buffer.ty.dtype)]


def _function_definition(text: str, name: str) -> str:
    """Keep only `void name(...) { ... }` from the C codegen's output.

    Dropped: the tvm-ffi includes, the library context pointer and the auto-generated `__tvm_ffi_main`
    entry (packed-API glue, meaningless without the tvm-ffi runtime). TVM_DLL stays: the shim defines it.
    """
    start = re.search(rf"^TVM_DLL void {re.escape(name)}\(.*\) \{{$", text, re.M)
    if start is None:
        raise RuntimeError(f"TVM's C codegen produced no definition of {name}:\n{text[:2000]}")
    depth, pos = 0, start.end() - 1
    for pos in range(start.end() - 1, len(text)):
        depth += {"{": 1, "}": -1}.get(text[pos], 0)
        if depth == 0:
            break
    body = text[start.start():pos + 1]
    used = [call for call in _RUNTIME_CALLS if call in body]
    if used:
        raise UnsupportedOpError(
            f"The long-tail op '{name}' needs TVM runtime services ({', '.join(used)}) that bare-metal firmware "
            "does not have (its lowering allocates a workspace or calls the packed API).")
    return body + "\n"


def shim_header_text() -> str:
    return SHIM_PATH.read_text()
