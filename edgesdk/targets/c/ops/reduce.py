"""REDUCE_MAX, REDUCE_MIN (int8, int16, float32) and REDUCE_ANY, REDUCE_ALL (bool) on the host."""

from __future__ import annotations

from ..calls import C_TYPE_BYTES
from ..emit import Emit, c_op, footprint
from .mean import (REDUCE_HEADERS, SUFFIX, emit_reduction, reduce_constant_axes, reduce_no_empty_dims,
                   reduction_footprint)


def max_min_types(op):
    """Input and output are int8 or int16 with the same per-tensor quantization, or both float32"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == y.dtype == "float32":
        return True, ""
    if x.dtype != y.dtype or x.dtype not in ("int8", "int16") or x.quant is None or y.quant is None:
        return False, f"{x.dtype} -> {y.dtype}"
    same = (x.quant.scale.size == y.quant.scale.size == 1 and float(x.quant.scale[0]) == float(y.quant.scale[0])
            and x.quant.zp0 == y.quant.zp0)
    return same, f"{x.name} and {y.name} are quantized differently"


def bool_tensors(op):
    """Input and output are bool"""
    x, y = op.inputs[0], op.outputs[0]
    return x.dtype == y.dtype == "bool", f"{x.dtype} -> {y.dtype}"


@c_op("REDUCE_MAX", "REDUCE_MIN", constraints=[max_min_types, reduce_constant_axes, reduce_no_empty_dims],
      headers=REDUCE_HEADERS, sources=("edgesdk_reduce.c",))
def emit_reduce_max_min(e: Emit):
    x = e.op.inputs[0]
    kernel = f"edgesdk_{e.op.type.lower()}_{SUFFIX[x.dtype]}"
    # LiteRT reducing every dim starts from the first element (ReduceAllDims): only a NaN can tell.
    return emit_reduction(e, kernel, quantized=False, init_from_first=e.data.all_dims and e.mode == "ref")


@c_op("REDUCE_ANY", "REDUCE_ALL", constraints=[bool_tensors, reduce_constant_axes, reduce_no_empty_dims],
      headers=REDUCE_HEADERS, sources=("edgesdk_reduce.c",))
def emit_reduce_any_all(e: Emit):
    return emit_reduction(e, f"edgesdk_{e.op.type.lower()}_b", quantized=False)


for _kernel, _ctype in (("s8", "int8_t"), ("s16", "int16_t"), ("f32", "float")):
    footprint(f"edgesdk_reduce_max_{_kernel}", f"edgesdk_reduce_min_{_kernel}")(
        reduction_footprint(C_TYPE_BYTES[_ctype]))
footprint("edgesdk_reduce_any_b", "edgesdk_reduce_all_b")(reduction_footprint(1))
