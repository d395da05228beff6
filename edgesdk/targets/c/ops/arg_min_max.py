"""ARG_MAX and ARG_MIN on the host: int8 or float32 input, int32 or int64 indices."""

from __future__ import annotations

from ..calls import C_TYPE_BYTES
from ..emit import Emit, c_op, footprint
from ..proof import positive

IN_SUFFIX = {"int8": "s8", "float32": "f32"}
OUT_SUFFIX = {"int32": "i32", "int64": "i64"}


def arg_types(op):
    """The input is int8 quantized per tensor or float32; the indices are int32 or int64"""
    x, y = op.inputs[0], op.outputs[0]
    ok_in = x.dtype == "float32" or (x.dtype == "int8" and x.quant is not None and x.quant.scale.size == 1)
    return ok_in and y.dtype in OUT_SUFFIX, f"{x.dtype} -> {y.dtype}"


def arg_not_empty(op):
    """The input has no zero-size dimension"""
    x = op.inputs[0]
    return all(d >= 1 for d in x.shape), f"input shape {list(x.shape)}"


@c_op("ARG_MAX", "ARG_MIN", constraints=[arg_types, arg_not_empty],
      headers=("edgesdk_arg_min_max.h",), sources=("edgesdk_arg_min_max.c",))
def emit_arg_min_max(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    params = e.params("edgesdk_arg_min_max_params", {"outer": d.outer, "axis_size": d.axis_size, "inner": d.inner,
                                                     "nan_aware": int(d.nan_aware)})
    kernel = f"edgesdk_{e.op.type.lower()}_{IN_SUFFIX[x.dtype]}_{OUT_SUFFIX[y.dtype]}"
    e.call(kernel, params, e.tensor(x), e.arena(y))
    e.layer.note = f"along axis {d.axis}"
    return e.layer


def arg_footprint(in_bytes: int, out_bytes: int):
    def rule(call, op) -> list:
        p, x, y = call.args
        checks = positive(p, "outer", "axis_size", "inner")
        return checks or [(x, in_bytes * p["outer"] * p["axis_size"] * p["inner"], "input"),
                          (y, out_bytes * p["outer"] * p["inner"], "output")]
    return rule


for _op in ("max", "min"):
    for _in, _in_ctype in (("s8", "int8_t"), ("f32", "float")):
        for _out, _out_ctype in (("i32", "int32_t"), ("i64", "int64_t")):
            rule = arg_footprint(C_TYPE_BYTES[_in_ctype], C_TYPE_BYTES[_out_ctype])
            footprint(f"edgesdk_arg_{_op}_{_in}_{_out}")(rule)
