"""Host C codegen: one IR op -> a HostLayer of kernel calls into the C kernel library (edgesdk/kernels/).

The per-op emitters live in edgesdk/targets/c/ops/ and read the op's build-time data from the op layer
(edgesdk/ops): every integer constant is computed there exactly as TFLite's Prepare() computes it, so the
kernels only do the Eval() arithmetic. What the context (edgesdk.aot.executor.CodegenContext) gives them:

    ctx.arena_offset(tensor) -> the tensor's offset in the arena
    ctx.const_array(name_hint, array, ctype) -> symbol of a const array in flash
    ctx.declare(c_text)                       -> add a file-scope declaration (the params structs)
    ctx.symbol(name_hint) -> unique C identifier
    ctx.rounding_mode -> "ref" | "tflm"   (which reference the constants must reproduce)
"""

from __future__ import annotations

from ...errors import UnsupportedOpError
from .calls import C_TYPES, HostLayer, render_layer  # noqa: F401  (C_TYPES: the dtype -> C type table)
from .emit import Emit, c_op_entry


def emit_layer(op, ctx) -> HostLayer:
    """The structured C code of one layer."""
    entry = c_op_entry(op.type)
    if "relax_function" in op.attrs:  # long-tail op imported through TVM: lowered by TVM (tvm_lowered.py)
        from .tvm_lowered import emit_tvm_lowered

        return emit_tvm_lowered(op, ctx)
    if entry is None:
        raise UnsupportedOpError(f"The C target has no kernel for {op.type} ({op.location}).")
    e = Emit(op, ctx)
    if e.mode == "ort":  # ONNX Runtime's own kernels where its arithmetic differs (ops/ort.py)
        from .ops.ort import emit_ort_layer

        layer = emit_ort_layer(e)
        if layer is not None:
            return layer
    return entry.emit(e)


def emit_op(op, ctx) -> str:
    """The C statements of one layer (rendered from emit_layer)."""
    return render_layer(emit_layer(op, ctx))


def scratch_bytes(op, mode: str) -> int:
    """Arena scratch the op's kernel needs while it runs (0 for most)."""
    entry = c_op_entry(op.type)
    return entry.scratch(op, mode) if entry is not None and entry.scratch is not None else 0
