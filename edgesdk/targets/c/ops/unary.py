"""Single-input elementwise ops on the host: ABS, NEG, SQUARE, SQRT, RSQRT, EXP, LOG, FLOOR, CEIL, ROUND,
ELU, LEAKY_RELU, ZEROS_LIKE, CAST (edgesdk/kernels/edgesdk_unary.c), int8 table lookups (edgesdk_lut.c) and
int16 interpolated table lookups (edgesdk_lut_s16)."""

from __future__ import annotations

from ..calls import Const
from ..emit import Emit, c_op, footprint
from ..proof import positive, require, shift_checks
from .elementwise import sized

UNARY_FILES = dict(headers=("edgesdk_unary.h",), sources=("edgesdk_unary.c",))
TABLE_FILES = dict(headers=("edgesdk_unary.h", "edgesdk_lut.h"), sources=("edgesdk_unary.c", "edgesdk_lut.c"))
# float32 transcendental functions: glibc's algorithms (edgesdk_mathf.c) beside the tables
MATHF_FILES = dict(headers=("edgesdk_unary.h", "edgesdk_lut.h", "edgesdk_mathf.h", "edgesdk_mathf_exceptions.h"),
                   sources=("edgesdk_unary.c", "edgesdk_lut.c", "edgesdk_mathf.c"))
MATHF_KERNELS = {"EXP": "edgesdk_exp_f32", "LOG": "edgesdk_log_f32", "SIN": "edgesdk_sin_f32",
                 "COS": "edgesdk_cos_f32", "ELU": "edgesdk_elu_f32", "TANH": "edgesdk_tanh_f32",
                 "LOGISTIC": "edgesdk_logistic_f32"}
INT16_TABLE_ENTRIES = 513


# -- constraints --------------------------------------------------------------------------------------------

def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1 and t.quant.zero_point.size >= 1


def _io(op):
    return op.inputs[0], op.outputs[0]


def _dtypes(op) -> str:
    x, y = _io(op)
    return f"{x.dtype} -> {y.dtype}"


def _same_type(op) -> bool:
    x, y = _io(op)
    return x.dtype == y.dtype


def _quantized_ok(op, dtypes=("int8", "int16"), int16_zero_points=True) -> tuple:
    """(ok, detail) for a quantized op: per-tensor int8/int16 in and out, int16 zero points 0."""
    x, y = _io(op)
    if not (_same_type(op) and x.dtype in dtypes and _per_tensor(x) and _per_tensor(y)):
        return False, f"{_dtypes(op)}, {'per-tensor quantized' if _per_tensor(x) else 'not per-tensor quantized'}"
    if x.dtype == "int16" and int16_zero_points and (x.quant.zp0 != 0 or y.quant.zp0 != 0):
        return False, f"int16 zero points {x.quant.zp0} and {y.quant.zp0}"
    return True, ""


def _float32(op) -> bool:
    x, y = _io(op)
    return x.dtype == "float32" and y.dtype == "float32"


def float32_tensors(op):
    """Input and output are float32"""
    return _float32(op), _dtypes(op)


def abs_types(op):
    """float32, int32, or int8/int16 quantized per tensor (int16: zero points 0), the same type in and out"""
    x, _ = _io(op)
    if _float32(op) or (_same_type(op) and x.dtype == "int32"):
        return True, ""
    return _quantized_ok(op)


def neg_types(op):
    """float32, int32 or int64, the same type in and out"""
    x, _ = _io(op)
    return _same_type(op) and x.dtype in ("float32", "int32", "int64"), _dtypes(op)


def float32_or_int8_int16(op):
    """float32, or int8/int16 quantized per tensor (int16: zero points 0), the same type in and out"""
    if _float32(op):
        return True, ""
    return _quantized_ok(op)


def table_ops_types(op):
    """float32, or int8/int16 quantized per tensor (int16: zero points 0), the same type in and out"""
    return float32_or_int8_int16(op)


def elu_types(op):
    """float32, or int8 quantized per tensor"""
    if _float32(op):
        return True, ""
    return _quantized_ok(op, dtypes=("int8",))


def mathf_call(e: Emit):
    """A float32 transcendental kernel (edgesdk_mathf.c)."""
    x, y = _io(e.op)
    e.call(MATHF_KERNELS[e.op.type], _size_params(e), e.tensor(x), e.arena(y))
    e.layer.note = "glibc's float32 algorithm"
    return e.layer


def leaky_relu_types(op):
    """float32, or int8/int16 quantized per tensor (int16: zero points 0), the same type in and out"""
    return float32_or_int8_int16(op)


def zeros_like_types(op):
    """Input and output have the same element type and size (quantization is ignored: the output is all 0)"""
    x, y = _io(op)
    return _same_type(op) and x.num_elements == y.num_elements, _dtypes(op)


CAST_TYPES = {"float32": 0, "int8": 1, "int16": 3, "int32": 4, "int64": 5, "bool": 6}
CAST_BYTES = {"float32": 4, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "bool": 1}


def cast_types(op):
    """Casts between float32, int8, int16, int32, int64 and bool (not uint8)"""
    x, y = _io(op)
    ok = x.dtype in CAST_TYPES and y.dtype in CAST_TYPES and x.orig_dtype != "uint8" and y.orig_dtype != "uint8"
    return ok, _dtypes(op) if ok or x.orig_dtype != "uint8" else "uint8 -> ..."


# -- emitters -----------------------------------------------------------------------------------------------

def _size_params(e: Emit):
    return e.params("edgesdk_unary_params", {"size": e.op.inputs[0].num_elements})


def _table_call(e: Emit, note: str):
    """An int8 table (edgesdk_lut_s8) or an int16 interpolated table (edgesdk_lut_s16) from the op layer."""
    x, y = _io(e.op)
    table = e.data.table
    if x.dtype == "int8":
        params = e.params("edgesdk_lut_params", {"size": x.num_elements, "table": e.const("table", table, "int8_t")})
        e.call("edgesdk_lut_s8", params, e.tensor(x), e.arena(y))
    else:
        params = e.params("edgesdk_lut16_params", {"size": x.num_elements,
                                                   "table": e.const("table", table, "int16_t")})
        e.call("edgesdk_lut_s16", params, e.tensor(x), e.arena(y))
    e.layer.note = note
    return e.layer


FLOAT_KERNELS = {"NEG": "edgesdk_neg_f32", "SQUARE": "edgesdk_square_f32", "FLOOR": "edgesdk_floor_f32",
                 "CEIL": "edgesdk_ceil_f32", "ROUND": "edgesdk_round_f32", "SQRT": "edgesdk_sqrt_f32",
                 "RSQRT": "edgesdk_rsqrt_f32", "ABS": "edgesdk_abs_f32"}


@c_op("ABS", constraints=[abs_types], **UNARY_FILES)
def emit_abs(e: Emit):
    x, y = _io(e.op)
    if x.dtype in ("float32", "int32"):
        kernel = "edgesdk_abs_f32" if x.dtype == "float32" else "edgesdk_abs_i32"
        return e.call(kernel, _size_params(e), e.tensor(x), e.arena(y))
    d = e.data
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
              "needs_rescale": int(d.needs_rescale), "multiplier": d.multiplier, "shift": d.shift,
              "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_abs_params", fields)
    return e.call("edgesdk_abs_s8" if x.dtype == "int8" else "edgesdk_abs_s16", params, e.tensor(x), e.arena(y))


@c_op("NEG", constraints=[neg_types], **UNARY_FILES)
def emit_neg(e: Emit):
    x, y = _io(e.op)
    kernel = {"float32": "edgesdk_neg_f32", "int32": "edgesdk_neg_i32", "int64": "edgesdk_neg_i64"}[x.dtype]
    return e.call(kernel, _size_params(e), e.tensor(x), e.arena(y))


@c_op("SQUARE", "FLOOR", "CEIL", "ROUND", constraints=[float32_tensors], **UNARY_FILES)
def emit_float_only(e: Emit):
    x, y = _io(e.op)
    if e.op.type in ("FLOOR", "CEIL"):
        # a signalling NaN: glibc's floorf/ceilf (LiteRT) quiet it, TFLite Micro returns it unchanged
        params = e.params("edgesdk_floor_params", {"size": x.num_elements, "quiet_nan": int(e.mode != "tflm")})
        return e.call(FLOAT_KERNELS[e.op.type], params, e.tensor(x), e.arena(y))
    return e.call(FLOAT_KERNELS[e.op.type], _size_params(e), e.tensor(x), e.arena(y))


@c_op("SQRT", constraints=[float32_or_int8_int16], **TABLE_FILES)
def emit_sqrt(e: Emit):
    x, y = _io(e.op)
    if x.dtype == "float32":
        return e.call("edgesdk_sqrt_f32", _size_params(e), e.tensor(x), e.arena(y))
    if x.dtype == "int8":
        return _table_call(e, "table lookup")
    fields = {"size": x.num_elements, "input_scale": x.quant.scale0, "input_zero_point": x.quant.zp0,
              "output_scale": y.quant.scale0, "output_zero_point": y.quant.zp0}
    e.call("edgesdk_sqrt_s16", e.params("edgesdk_sqrt_q_params", fields), e.tensor(x), e.arena(y))
    e.layer.note = "float32 arithmetic"
    return e.layer


@c_op("RSQRT", constraints=[float32_or_int8_int16], **TABLE_FILES)
def emit_rsqrt(e: Emit):
    x, y = _io(e.op)
    if x.dtype == "float32":
        return e.call("edgesdk_rsqrt_f32", _size_params(e), e.tensor(x), e.arena(y))
    d = e.data
    if hasattr(d, "table"):
        return _table_call(e, "table lookup")
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
              "multiplier": d.multiplier, "shift": d.shift, "rounding": e.rounding(d.rounding)}
    e.call("edgesdk_rsqrt_s16", e.params("edgesdk_rsqrt_params", fields), e.tensor(x), e.arena(y))
    e.layer.note = "fixed point (TFLite Micro)"
    return e.layer


@c_op("EXP", "LOG", constraints=[table_ops_types], **MATHF_FILES)
def emit_exp_log(e: Emit):
    return mathf_call(e) if _float32(e.op) else _table_call(e, "table lookup")


@c_op("ELU", constraints=[elu_types], **MATHF_FILES)
def emit_elu(e: Emit):
    return mathf_call(e) if _float32(e.op) else _table_call(e, "table lookup")


@c_op("SIN", "COS", constraints=[float32_tensors], **MATHF_FILES)
def emit_sin_cos(e: Emit):
    return mathf_call(e)


@c_op("LEAKY_RELU", constraints=[leaky_relu_types], **UNARY_FILES)
def emit_leaky_relu(e: Emit):
    x, y = _io(e.op)
    d = e.data
    if x.dtype == "float32":
        params = e.params("edgesdk_leaky_relu_f32_params", {"size": x.num_elements, "alpha": d.alpha})
        return e.call("edgesdk_leaky_relu_f32", params, e.tensor(x), e.arena(y))
    fields = {"size": x.num_elements, "input_zero_point": d.input_zero_point, "output_zero_point": d.output_zero_point,
              "identity_multiplier": d.identity_multiplier, "identity_shift": d.identity_shift,
              "alpha_multiplier": d.alpha_multiplier, "alpha_shift": d.alpha_shift,
              "alpha_negative": int(d.alpha_negative), "rounding": e.rounding(d.rounding)}
    params = e.params("edgesdk_leaky_relu_params", fields)
    kernel = "edgesdk_leaky_relu_s8" if x.dtype == "int8" else "edgesdk_leaky_relu_s16"
    return e.call(kernel, params, e.tensor(x), e.arena(y))


@c_op("ZEROS_LIKE", constraints=[zeros_like_types], **UNARY_FILES)
def emit_zeros_like(e: Emit):
    y = e.op.outputs[0]
    return e.call("edgesdk_zeros", e.params("edgesdk_zeros_params", {"bytes": y.nbytes}), e.arena(y))


@c_op("CAST", constraints=[cast_types], **UNARY_FILES)
def emit_cast(e: Emit):
    x, y = _io(e.op)
    fields = {"size": x.num_elements, "from_type": CAST_TYPES[x.dtype], "to_type": CAST_TYPES[y.dtype],
              "nan_to_max": int(e.mode != "tflm")}
    e.call("edgesdk_cast", e.params("edgesdk_cast_params", fields), e.tensor(x), e.arena(y))
    e.layer.note = f"{x.dtype} -> {y.dtype}"
    return e.layer


# -- footprints ---------------------------------------------------------------------------------------------

for _kernel, (_in, _out) in {
        "edgesdk_abs_s8": (1, 1), "edgesdk_abs_s16": (2, 2), "edgesdk_abs_i32": (4, 4), "edgesdk_abs_f32": (4, 4),
        "edgesdk_neg_i32": (4, 4), "edgesdk_neg_i64": (8, 8), "edgesdk_neg_f32": (4, 4),
        "edgesdk_square_f32": (4, 4), "edgesdk_sqrt_f32": (4, 4), "edgesdk_rsqrt_f32": (4, 4),
        "edgesdk_sqrt_s16": (2, 2), "edgesdk_floor_f32": (4, 4), "edgesdk_ceil_f32": (4, 4),
        "edgesdk_round_f32": (4, 4), "edgesdk_leaky_relu_s8": (1, 1), "edgesdk_leaky_relu_s16": (2, 2),
        "edgesdk_leaky_relu_f32": (4, 4), "edgesdk_hard_swish_f32": (4, 4),
        **{kernel: (4, 4) for kernel in MATHF_KERNELS.values()}}.items():
    footprint(_kernel)(sized(_in, _out))


@footprint("edgesdk_lut_s16")
def lut16_footprint(call, op) -> list:
    """size int16 inputs and outputs, and the 513-entry int16 table (index 256 + (x >> 7), and the next)."""
    p, x, y = call.args
    table = p["table"]
    checks = positive(p, "size")
    checks += require(isinstance(table, Const) and table.count >= INT16_TABLE_ENTRIES,
                      f"the int16 table must hold {INT16_TABLE_ENTRIES} entries")
    return checks or [(table, 2 * INT16_TABLE_ENTRIES, f"table[{INT16_TABLE_ENTRIES}]"),
                      (x, 2 * p["size"], "input"), (y, 2 * p["size"], "output")]


@footprint("edgesdk_rsqrt_s16")
def rsqrt16_footprint(call, op) -> list:
    """size int16 inputs and outputs; the kernel shifts by shift - 20, which must stay >= -31."""
    p, x, y = call.args
    checks = positive(p, "size") + shift_checks(p)
    checks += require(isinstance(p["shift"], int) and p["shift"] - 20 >= -31,
                      "requantization shift - 20 is below -31 (quantization scales out of range)")
    return checks or [(x, 2 * p["size"], "input"), (y, 2 * p["size"], "output")]


@footprint("edgesdk_zeros")
def zeros_footprint(call, op) -> list:
    p, y = call.args
    return positive(p, "bytes") or [(y, p["bytes"], "output")]


@footprint("edgesdk_cast")
def cast_footprint(call, op) -> list:
    """size elements of the input's and the output's types."""
    p, x, y = call.args
    sizes = {code: CAST_BYTES[name] for name, code in CAST_TYPES.items()}
    checks = positive(p, "size") + shift_checks(p)
    checks += require(p["from_type"] in sizes and p["to_type"] in sizes, "unknown CAST element type")
    return checks or [(x, sizes[p["from_type"]] * p["size"], "input"), (y, sizes[p["to_type"]] * p["size"], "output")]
