"""MEAN and SUM on the host (int8, int16, float32) over any set of axes of up to 6 dimensions; the reductions'
shared constraints, params and footprint (REDUCE_MAX/MIN/ANY/ALL: reduce.py)."""

from __future__ import annotations

from ..calls import C_TYPE_BYTES
from ..emit import Emit, c_op, footprint
from ..proof import prod, require, shift_checks
from .pad import MAX_DIMS, pad6

REDUCE_HEADERS = ("edgesdk_reduce.h",)
SUFFIX = {"int8": "s8", "int16": "s16", "float32": "f32", "bool": "b"}


def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def reduce_quantized_or_float(op):
    """Input and output are int8 or int16 quantized per tensor (int16 with zero points 0), or both float32"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype == y.dtype == "float32":
        return True, ""
    if x.dtype != y.dtype or x.dtype not in ("int8", "int16") or not (_per_tensor(x) and _per_tensor(y)):
        return False, f"{x.dtype} -> {y.dtype}"
    if x.dtype == "int16" and (x.quant.zp0 != 0 or y.quant.zp0 != 0):
        return False, f"int16 zero points {x.quant.zp0}, {y.quant.zp0}"
    return True, ""


def reduce_constant_axes(op):
    """Axes are constant"""
    return "axes" in op.attrs, "axes are computed at run time"


def reduce_no_empty_dims(op):
    """The input has no zero-size dimension"""
    x = op.inputs[0]
    return all(d >= 1 for d in x.shape), f"input shape {list(x.shape)}"


def reduce_shape_fields(x, axes) -> dict:
    rank = len(x.shape)
    return {"in_shape": pad6(x.shape, 1), "reduce": [0] * (MAX_DIMS - rank) + [int(k in axes) for k in range(rank)]}


def emit_reduction(e: Emit, kernel: str, *, quantized: bool, init_from_first: bool = False):
    """One call of `kernel` over the op's reduced axes: edgesdk_mean_params (quantized MEAN/SUM) or
    edgesdk_reduce_params."""
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    fields = reduce_shape_fields(x, d.axes)
    if quantized:
        fields.update({"input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
                       "multiplier": d.multiplier, "shift": d.shift, "rounding": e.rounding(d.rounding),
                       "bytes_as_uint8": int(d.bytes_as_uint8)})
        if d.rounding == "f32":  # --rounding ort: QLinearGlobalAveragePool's float32 scale
            fields["scale_f32"] = float(d.scale)
        params = e.params("edgesdk_mean_params", fields)
    else:
        fields["init_from_first"] = int(init_from_first)
        params = e.params("edgesdk_reduce_params", fields)
    e.call(kernel, params, e.tensor(x), e.arena(y))
    e.layer.note = f"over axes {sorted(d.axes)}"
    return e.layer


@c_op("MEAN", "SUM", constraints=[reduce_quantized_or_float, reduce_constant_axes, reduce_no_empty_dims],
      headers=("edgesdk_mean.h", *REDUCE_HEADERS), sources=("edgesdk_mean.c", "edgesdk_reduce.c"))
def emit_mean_or_sum(e: Emit):
    x = e.op.inputs[0]
    kernel = f"edgesdk_{e.op.type.lower()}_{SUFFIX[x.dtype]}"
    # LiteRT's float SUM over every dim starts from the first element (ReduceAllDims); TFLite Micro and MEAN
    # start from 0.0f.
    first = e.op.type == "SUM" and e.data.all_dims and e.mode == "ref"
    return emit_reduction(e, kernel, quantized=x.dtype != "float32", init_from_first=first)


def reduction_footprint(element_bytes: int):
    def rule(call, op) -> list:
        p, x, y = call.args
        shape, reduce = [int(v) for v in p["in_shape"]], [int(v) for v in p["reduce"]]
        ok = len(shape) == len(reduce) == MAX_DIMS and all(d >= 1 for d in shape) and all(r in (0, 1) for r in reduce)
        checks = require(ok, f"input shape {shape} / reduced axes {reduce} invalid") + shift_checks(p)
        kept = prod(d for d, r in zip(shape, reduce) if not r)
        return checks or [(x, element_bytes * prod(shape), "input"), (y, element_bytes * kept, "output")]
    return rule


for _kernel, _ctype in (("s8", "int8_t"), ("s16", "int16_t"), ("f32", "float")):
    footprint(f"edgesdk_mean_{_kernel}", f"edgesdk_sum_{_kernel}")(reduction_footprint(C_TYPE_BYTES[_ctype]))
