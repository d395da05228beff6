"""QUANTIZE and DEQUANTIZE on the host: float32 -> int8/int16, requantization between int8, int16 and int32, the
exact uint8 <-> int8 edge conversions, and int8/int16 -> float32."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .elementwise import sized

SHORT = {"int8": "s8", "int16": "s16", "int32": "s32"}
BYTES = {"int8": 1, "int16": 2, "int32": 4}


def requantize_kernel(in_dtype: str, out_dtype: str) -> str:
    """edgesdk_requantize_<in>_<out>, or _<in> when the types are the same."""
    a, b = SHORT[in_dtype], SHORT[out_dtype]
    return f"edgesdk_requantize_{a}" if a == b else f"edgesdk_requantize_{a}_{b}"


CONVERSIONS = {"uint8_to_int8": ("edgesdk_convert_u8_s8", "uint8 -> int8"),
               "int8_to_uint8": ("edgesdk_convert_s8_u8", "int8 -> uint8")}


@c_op("QUANTIZE", constraints=[rules.quantize_types], headers=("edgesdk_quantize.h",), sources=("edgesdk_quantize.c",))
def emit_quantize(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    n = x.num_elements
    if d.kind == "from_float":
        params = e.params("edgesdk_quantize_f32_params", {"size": n, "scale": d.scale, "zero_point": d.output_zero_point})
        e.call(f"edgesdk_quantize_f32_{SHORT[y.dtype]}", params, e.tensor(x), e.arena(y))
        e.layer.note = f"float32 -> {y.dtype}"
    elif d.kind in CONVERSIONS:
        kernel, e.layer.note = CONVERSIONS[d.kind]
        e.call(kernel, e.int(n), e.tensor(x), e.arena(y))
    else:
        fields = {"size": n, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
                  "multiplier": d.multiplier, "shift": d.shift, "rounding": e.rounding(d.rounding)}
        params = e.params("edgesdk_requantize_params", fields)
        e.call(requantize_kernel(x.dtype, y.dtype), params, e.tensor(x), e.arena(y))
        e.layer.note = "requantize" if x.dtype == y.dtype else f"requantize {x.dtype} -> {y.dtype}"
    return e.layer


@c_op("DEQUANTIZE", constraints=[rules.dequantize_types], headers=("edgesdk_dequantize.h",),
      sources=("edgesdk_dequantize.c",))
def emit_dequantize(e: Emit):
    x, y = e.op.inputs[0], e.op.outputs[0]
    params = e.params("edgesdk_dequantize_params", {"size": x.num_elements, "scale": float(x.quant.scale[0]),
                                                    "zero_point": int(x.quant.zero_point[0])})
    e.call(f"edgesdk_dequantize_{SHORT[x.dtype]}_f32", params, e.tensor(x), e.arena(y))
    e.layer.note = f"{x.dtype} -> float32"
    return e.layer


for _out in ("int8", "int16"):
    footprint(f"edgesdk_quantize_f32_{SHORT[_out]}")(sized(4, BYTES[_out]))
    footprint(f"edgesdk_dequantize_{SHORT[_out]}_f32")(sized(BYTES[_out], 4))
for _in, _out in {(a, b) for a in SHORT for b in SHORT}:
    footprint(requantize_kernel(_in, _out))(sized(BYTES[_in], BYTES[_out]))
