"""`--rounding ort` on the host: the ops whose ONNX Runtime arithmetic has a kernel of its own
(edgesdk/kernels/edgesdk_ort.c) or is a table (edgesdk_lut_s8).

The op layer's ort data (edgesdk/ops/ort.py) selects the kernel; CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED
and MEAN keep their usual kernels with rounding EDGESDK_ROUNDING_F32, MAX_POOL_2D, RESHAPE, TRANSPOSE and
DEQUANTIZE compute exactly what ONNX Runtime computes with their usual ones. emit_ort_layer is tried first
(edgesdk/targets/c/codegen.py); TFLite's constraints of the types below do not apply to their ort kernels
(edgesdk/targets/c/supported.py).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from ..calls import PointerList
from ..emit import Emit, footprint
from ..proof import positive, require
from .elementwise import sized

HEADERS = ("edgesdk_ort.h", "edgesdk_lut.h")
SOURCES = ("edgesdk_ort.c", "edgesdk_lut.c")
# Op types whose ort data goes to the kernels here (the others keep their TFLite kernels).
KERNEL_TYPES = ("ADD", "MUL", "AVERAGE_POOL_2D", "CONCATENATION", "LOGISTIC", "RELU", "RELU6", "RELU_N1_TO_1",
                "QUANTIZE")


def uses_ort_kernel(op) -> bool:
    if "ort" not in op.attrs or "relax_function" in op.attrs:
        return False
    from ....ops import ort as ort_data  # here: the C target's rules import this module in every build

    return op.type in KERNEL_TYPES or (op.type in ort_data.FLOAT_LAYER_TYPES and not op.attrs["ort"].fused)


def int8_per_tensor(op):
    """Activation inputs and outputs are int8 (float32 for QuantizeLinear's input), quantized per tensor"""
    tensors = [t for t in op.inputs + op.outputs if t is not None and not (op.type == "QUANTIZE" and t.dtype == "float32")]
    bad = [f"{t.name}: {t.dtype}" for t in tensors
           if t.dtype != "int8" or t.quant is None or t.quant.scale.size != 1]
    return not bad, ", ".join(bad)


CONSTRAINTS = [int8_per_tensor]


def emit_ort_layer(e: Emit):
    """The layer of an op whose ort data has a kernel here, else None (the op's usual emitter runs)."""
    emitter = _emitters().get(type(e.data))
    return emitter(e) if emitter is not None else None


def _steps(e: Emit) -> tuple:
    a, b, y = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0]
    return (0 if a.num_elements == 1 and y.num_elements != 1 else 1), (0 if b.num_elements == 1 and y.num_elements != 1 else 1)


def emit_add(e: Emit):
    d, (a, b), y = e.data, e.op.inputs[:2], e.op.outputs[0]
    a_step, b_step = _steps(e)
    fields = {"size": y.num_elements, "a_step": a_step, "b_step": b_step, "inner": d.inner,
              "inner_table": e.float32s("inner_table", d.inner_table), "outer_ratio": float(d.outer_ratio),
              "act_min": d.act_min, "act_max": d.act_max}
    e.call("edgesdk_ort_add_s8", e.params("edgesdk_ort_add_params", fields), e.tensor(a), e.tensor(b), e.arena(y))
    e.layer.note = "ONNX Runtime's QLinearAdd (uint8, AVX2 fused multiply-adds)"
    return e.layer


def emit_mul(e: Emit):
    d, (a, b), y = e.data, e.op.inputs[:2], e.op.outputs[0]
    a_step, b_step = _steps(e)
    fields = {"size": y.num_elements, "a_step": a_step, "b_step": b_step, "a_zero_point": d.a_zero_point,
              "b_zero_point": d.b_zero_point, "ratio": float(d.ratio), "output_zero_point_u8": float(d.output_zero_point_u8),
              "act_min": d.act_min, "act_max": d.act_max}
    e.call("edgesdk_ort_mul_s8", e.params("edgesdk_ort_mul_params", fields), e.tensor(a), e.tensor(b), e.arena(y))
    e.layer.note = "ONNX Runtime's QLinearMul (uint8)"
    return e.layer


def emit_float_binary(e: Emit):
    d, (a, b), y = e.data, e.op.inputs[:2], e.op.outputs[0]
    a_step, b_step = _steps(e)
    operation = "EDGESDK_ORT_FLOAT_MUL" if e.op.type == "MUL" else "EDGESDK_ORT_FLOAT_ADD"
    fields = {"size": y.num_elements, "a_step": a_step, "b_step": b_step, "operation": e.macro(operation),
              "a_table": e.float32s("a_dequantized", d.a_table), "b_table": e.float32s("b_dequantized", d.b_table),
              "output_scale": float(d.output_scale), "output_zero_point": d.output_zero_point,
              "act_min": d.act_min, "act_max": d.act_max}
    params = e.params("edgesdk_ort_float_binary_params", fields)
    e.call("edgesdk_ort_float_binary_s8", params, e.tensor(a), e.tensor(b), e.arena(y))
    e.layer.note = f"ONNX Runtime's float32 {e.op.type.capitalize()} between DequantizeLinear and QuantizeLinear"
    return e.layer


def emit_average_pool(e: Emit):
    d, x, y, a = e.data, e.op.inputs[0], e.op.outputs[0], e.op.attrs
    fields = {"batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "channels": x.shape[3],
              "out_h": y.shape[1], "out_w": y.shape[2], "filter_h": a["filter_h"], "filter_w": a["filter_w"],
              "stride_h": a["stride_h"], "stride_w": a["stride_w"], "pad_top": a["pad_top"], "pad_left": a["pad_left"],
              "is_global": int(d.is_global), "dequantized": e.float32s("dequantized", d.dequantized),
              "output_scale": float(d.output_scale), "output_zero_point_u8": float(d.output_zero_point_u8),
              "input_zero_point": d.input_zero_point, "output_zero_point": int(y.quant.zero_point[0]),
              "global_scale": float(d.global_scale)}
    params = e.params("edgesdk_ort_average_pool_params", fields)
    e.call("edgesdk_ort_average_pool_s8", params, e.tensor(x), e.arena(y))
    e.layer.note = ("ONNX Runtime's QLinearAveragePool, global path (integer sum)" if d.is_global else
                    "ONNX Runtime's QLinearAveragePool (float32 sums)")
    return e.layer


def emit_table(e: Emit):
    d, x, y = e.data, e.op.inputs[0], e.op.outputs[0]
    params = e.params("edgesdk_lut_params", {"size": x.num_elements, "table": e.const("table", d.table, "int8_t")})
    e.call("edgesdk_lut_s8", params, e.tensor(x), e.arena(y))
    e.layer.note = f"table lookup ({d.what}, as ONNX Runtime computes it)"
    return e.layer


def emit_quantize(e: Emit):
    d, x, y = e.data, e.op.inputs[0], e.op.outputs[0]
    params = e.params("edgesdk_ort_quantize_params", {"size": x.num_elements, "scale": float(d.scale),
                                                      "zero_point": d.zero_point})
    e.call("edgesdk_ort_quantize_f32_s8", params, e.tensor(x), e.arena(y))
    e.layer.note = "ONNX Runtime's QuantizeLinear (round half to even)"
    return e.layer


def emit_concatenation(e: Emit):
    d, y, axis = e.data, e.op.outputs[0], e.op.attrs["axis"]
    inputs = [t for t in e.op.inputs if t is not None]
    outer = math.prod(int(v) for v in y.shape[:axis])
    inner = math.prod(int(v) for v in y.shape[axis + 1:])
    slices = [int(t.shape[axis]) * inner for t in inputs]
    tables = [t for t in d.tables if t is not None]
    index, k = [], 0
    for table in d.tables:
        index.append(-1 if table is None else k)
        k += table is not None
    fields = {"outer": outer, "num_inputs": len(inputs), "slice_bytes": e.int32s("slice_bytes", slices),
              "table_index": e.int32s("table_index", index),
              "tables": e.const("tables", np.concatenate(tables), "int8_t") if tables else e.null("int8_t")}
    params = e.params("edgesdk_ort_concatenation_params", fields)
    e.call("edgesdk_ort_concatenation", params, e.pointer_list(inputs), e.arena(y))
    e.layer.note = f"ONNX Runtime's QLinearConcat, {len(inputs)} inputs ({len(tables)} requantized by table), axis {axis}"
    return e.layer


def emit_float_conv(e: Emit):
    d, x, y, a = e.data, e.op.inputs[0], e.op.outputs[0], e.op.attrs
    fields = {"batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
              "out_h": y.shape[1], "out_w": y.shape[2], "out_c": y.shape[3],
              "filter_h": e.op.inputs[1].shape[1], "filter_w": e.op.inputs[1].shape[2],
              "stride_h": a["stride_h"], "stride_w": a["stride_w"], "dilation_h": a.get("dilation_h", 1),
              "dilation_w": a.get("dilation_w", 1), "pad_top": a["pad_top"], "pad_left": a["pad_left"],
              "groups": d.groups, "fma_chain": int(d.fma_chain), "dequantized": e.float32s("dequantized", d.dequantized),
              "filter": e.float32s("filter", d.filter), "bias": e.float32s("bias", d.bias),
              "output_scale": float(d.output_scale), "output_zero_point": d.output_zero_point,
              "act_min": d.act_min, "act_max": d.act_max}
    params = e.params("edgesdk_ort_float_conv_params", fields)
    e.call("edgesdk_ort_float_conv_s8", params, e.tensor(x), e.arena(y))
    order = "fused multiply-add chain (SGEMM)" if d.fma_chain else "runs of four products (SGEMM M=1 kernel)"
    e.layer.note = f"ONNX Runtime's float32 Conv between DequantizeLinear and QuantizeLinear, MLAS order: {order}"
    return e.layer


@cache
def _fc_orders() -> dict:
    """MLAS summation order (the op layer's ort data) -> (its edgesdk_ort.h macro, how it sums)."""
    from ....ops import ort as ort_data

    return {ort_data.SUM_FMA_CHAIN: ("EDGESDK_ORT_SUM_FMA_CHAIN", "fused multiply-add chain (SGEMM)"),
            ort_data.SUM_M1: ("EDGESDK_ORT_SUM_M1", "runs of four products (SGEMM M=1 kernel)"),
            ort_data.SUM_M1_TRANSPOSED: ("EDGESDK_ORT_SUM_M1_TRANSPOSED",
                                         "eight lanes and a reduction tree (SGEMM M=1 transposed-B kernel)")}


def emit_float_fc(e: Emit):
    d, x, y = e.data, e.op.inputs[0], e.op.outputs[0]
    macro, order = _fc_orders()[d.order]
    fields = {"rows": x.shape[0], "depth": x.shape[1], "units": y.shape[-1], "order": e.macro(macro),
              "bias_first": int(d.bias_first), "dequantized": e.float32s("dequantized", d.dequantized),
              "weights": e.float32s("weights", d.weights), "bias": e.float32s("bias", d.bias),
              "output_scale": float(d.output_scale), "output_zero_point": d.output_zero_point,
              "act_min": d.act_min, "act_max": d.act_max}
    params = e.params("edgesdk_ort_float_fc_params", fields)
    e.call("edgesdk_ort_float_fc_s8", params, e.tensor(x), e.arena(y))
    e.layer.note = (f"ONNX Runtime's float32 {e.op.attrs['ort'].kernel} between DequantizeLinear and QuantizeLinear, "
                    f"MLAS order: {order}")
    return e.layer


@cache
def _emitters() -> dict:
    """The op layer's ort data type -> its layer's emitter (built on first use: only --rounding ort loads the
    op layer's ONNX Runtime arithmetic, edgesdk/ops/ort.py)."""
    from ....ops import ort as ort_data

    return {ort_data.OrtFloatConvData: emit_float_conv, ort_data.OrtFloatFullyConnectedData: emit_float_fc,
            ort_data.OrtAddData: emit_add, ort_data.OrtMulData: emit_mul,
            ort_data.OrtFloatBinaryData: emit_float_binary, ort_data.OrtAveragePoolData: emit_average_pool,
            ort_data.OrtTableData: emit_table, ort_data.OrtQuantizeData: emit_quantize,
            ort_data.OrtConcatData: emit_concatenation}


# -- footprints ---------------------------------------------------------------------------------------------------

def binary_footprint(call, op) -> list:
    """Two inputs read at i * step (step 0: one element), the output written for every i; float tables of 256."""
    p, a, b, y = call.args
    checks = positive(p, "size") + require(p["a_step"] in (0, 1) and p["b_step"] in (0, 1), "steps must be 0 or 1")
    if checks:
        return checks
    tables = [(p[k], 4 * 256, f"{k}[256]") for k in ("inner_table", "a_table", "b_table") if k in p.fields]
    n = p["size"]
    return tables + [(a, n if p["a_step"] else 1, "input 1"), (b, n if p["b_step"] else 1, "input 2"), (y, n, "output")]


footprint("edgesdk_ort_add_s8", "edgesdk_ort_mul_s8", "edgesdk_ort_float_binary_s8")(binary_footprint)
footprint("edgesdk_ort_quantize_f32_s8")(sized(4, 1))


@footprint("edgesdk_ort_average_pool_s8")
def average_pool_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "batches", "in_h", "in_w", "channels", "out_h", "out_w", "filter_h", "filter_w",
                      "stride_h", "stride_w")
    checks += require(p["pad_top"] >= 0 and p["pad_left"] >= 0, "negative padding")
    if checks:
        return checks
    # Every window keeps at least one tap inside the input (no division by zero): its first row/column start
    # below the input's end and its end after 0.
    last_y, last_x = (p["out_h"] - 1) * p["stride_h"] - p["pad_top"], (p["out_w"] - 1) * p["stride_w"] - p["pad_left"]
    checks += require(last_y < p["in_h"] and last_x < p["in_w"] and p["filter_h"] > p["pad_top"]
                      and p["filter_w"] > p["pad_left"], "a pooling window lies entirely in the padding")
    image = p["in_h"] * p["in_w"] * p["channels"]
    return checks + [(p["dequantized"], 4 * 256, "dequantized[256]"), (x, p["batches"] * image, "input"),
                     (y, p["batches"] * p["out_h"] * p["out_w"] * p["channels"], "output")]


@footprint("edgesdk_ort_concatenation")
def concatenation_footprint(call, op) -> list:
    p, inputs, y = call.args
    if not isinstance(inputs, PointerList):
        return ["the input list is not a local pointer array"]
    slices = [int(v) for v in p["slice_bytes"].values]
    index = [int(v) for v in p["table_index"].values]
    tables = 0 if p["tables"].__class__.__name__ == "Null" else len(p["tables"].values) // 256
    checks = require(p["outer"] >= 1 and p["num_inputs"] == len(inputs.items) == len(slices) == len(index)
                     and all(s >= 0 for s in slices) and all(-1 <= k < tables for k in index),
                     "inputs, slice sizes and table indexes disagree")
    accesses = [(x, p["outer"] * s, f"input {i}") for i, (x, s) in enumerate(zip(inputs.items, slices))]
    if tables:
        accesses.append((p["tables"], 256 * tables, f"tables[{256 * tables}]"))
    return checks or accesses + [(p["slice_bytes"], 4 * len(slices), "slice sizes"),
                                 (p["table_index"], 4 * len(index), "table indexes"),
                                 (y, p["outer"] * sum(slices), "output")]


@footprint("edgesdk_ort_float_conv_s8")
def float_conv_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "filter_h", "filter_w",
                      "stride_h", "stride_w", "dilation_h", "dilation_w", "groups")
    if checks:
        return checks
    checks = require(p["pad_top"] >= 0 and p["pad_left"] >= 0, "negative padding")
    checks += require(p["in_c"] % p["groups"] == 0 and p["out_c"] % p["groups"] == 0,
                      "channels are not a multiple of the groups")
    # Every tap read is checked against the input's bounds by the kernel; the filter and bias are read whole.
    k = (p["in_c"] // p["groups"]) * p["filter_h"] * p["filter_w"]
    return checks + [(p["dequantized"], 4 * 256, "dequantized[256]"), (p["filter"], 4 * p["out_c"] * k, "filter"),
                     (p["bias"], 4 * p["out_c"], "bias"), (x, p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
                     (y, p["batches"] * p["out_h"] * p["out_w"] * p["out_c"], "output")]


@footprint("edgesdk_ort_float_fc_s8")
def float_fc_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "rows", "depth", "units")
    if checks:
        return checks
    n = p["depth"] * p["units"]
    return [(p["dequantized"], 4 * 256, "dequantized[256]"), (p["weights"], 4 * n, "weights"),
            (p["bias"], 4 * p["units"], "bias"), (x, p["rows"] * p["depth"], "input"),
            (y, p["rows"] * p["units"], "output")]
