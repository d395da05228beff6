"""QUANTIZE and DEQUANTIZE on the host: float32 -> int8, requantization int8 -> int8, the exact uint8 <-> int8
edge conversions, and int8 -> float32."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint
from .elementwise import sized

CONVERSIONS = {"uint8_to_int8": ("edgesdk_convert_u8_s8", "uint8 -> int8"),
               "int8_to_uint8": ("edgesdk_convert_s8_u8", "int8 -> uint8")}


@c_op("QUANTIZE", constraints=[rules.quantize_types], headers=("edgesdk_quantize.h",), sources=("edgesdk_quantize.c",))
def emit_quantize(e: Emit):
    x, y, d = e.op.inputs[0], e.op.outputs[0], e.data
    n = x.num_elements
    if d.kind == "from_float":
        params = e.params("edgesdk_quantize_f32_params", {"size": n, "scale": d.scale, "zero_point": d.output_zero_point})
        e.call("edgesdk_quantize_f32_s8", params, e.tensor(x), e.arena(y))
        e.layer.note = "float32 -> int8"
    elif d.kind in CONVERSIONS:
        kernel, e.layer.note = CONVERSIONS[d.kind]
        e.call(kernel, e.int(n), e.tensor(x), e.arena(y))
    else:
        fields = {"size": n, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
                  "multiplier": d.multiplier, "shift": d.shift, "rounding": e.rounding(d.rounding)}
        params = e.params("edgesdk_requantize_params", fields)
        e.call("edgesdk_requantize_s8", params, e.tensor(x), e.arena(y))
        e.layer.note = "requantize"
    return e.layer


@c_op("DEQUANTIZE", constraints=[rules.dequantize_types], headers=("edgesdk_dequantize.h",),
      sources=("edgesdk_dequantize.c",))
def emit_dequantize(e: Emit):
    x, y = e.op.inputs[0], e.op.outputs[0]
    params = e.params("edgesdk_dequantize_params", {"size": x.num_elements, "scale": float(x.quant.scale[0]),
                                                    "zero_point": int(x.quant.zero_point[0])})
    e.call("edgesdk_dequantize_s8_f32", params, e.tensor(x), e.arena(y))
    e.layer.note = "int8 -> float32"
    return e.layer


footprint("edgesdk_quantize_f32_s8")(sized(4, 1))
footprint("edgesdk_requantize_s8")(sized(1, 1))
footprint("edgesdk_dequantize_s8_f32")(sized(1, 4))
