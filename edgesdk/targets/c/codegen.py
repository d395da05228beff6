"""Host C codegen: one IR op -> a call into the C kernel library (edgesdk/kernels/).

`emit_op(op, ctx)` returns a `CStep`: the C statements of this layer. Constants (weights, per-channel
multipliers, the op's params struct) go to file scope through `ctx`. Every integer constant is computed
here exactly as TFLite's Prepare() computes it (edgesdk.ir.quant), so the kernels only do the Eval()
arithmetic. The ctx interface (implemented by edgesdk.aot.executor.CCodegenContext):

    ctx.tensor_ptr(tensor) -> C expression of the tensor's typed pointer
    ctx.const_array(name_hint, array, ctype) -> symbol of a const array in flash
    ctx.declare(c_text)                       -> add a file-scope declaration
    ctx.symbol(name_hint) -> unique C identifier
    ctx.rounding_for(op) -> "double" | "single" | "fp64" | "lut"   (edgesdk.ir.rounding)
    ctx.rounding_mode -> "ref" | "tflm"   (which reference the constants must reproduce)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import UnsupportedOpError
from ...ir import quant
from ...ir import rounding as rounding_rules
from ...ir.rounding import ROUNDING_FP64, ROUNDING_LUT
from ...tune.active import layer_choice
from . import lut

MAX_DIMS = 6
ROUNDING_C = {"double": "EDGESDK_ROUNDING_DOUBLE", "single": "EDGESDK_ROUNDING_SINGLE",
              ROUNDING_FP64: "EDGESDK_ROUNDING_FP64"}
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "float32": "float"}


@dataclass
class CStep:
    comment: str
    code: str


def emit_op(op, ctx) -> CStep:
    emitter = _EMITTERS.get(op.type)
    if emitter is None and "relax_function" in op.attrs:  # long-tail op: lowered through TVM (tvm_lowered.py)
        from .tvm_lowered import emit_tvm_lowered as emitter
    if emitter is None:
        raise UnsupportedOpError(f"The C target has no kernel for {op.type} ({op.location}).")
    return emitter(op, ctx)


# -- helpers -------------------------------------------------------------------------------------------

def _ptr(ctx, tensor) -> str:
    return ctx.tensor_ptr(tensor)


def _c_value(value) -> str:
    """A C initializer for a params field: ints, floats (exact hex), nested dicts, or raw C text."""
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f".{k} = {_c_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(_c_value(v) for v in value) + "}"
    if isinstance(value, (float, np.floating)):
        return _float_literal(float(np.float32(value)))
    return str(int(value))


class _Raw:
    def __init__(self, text: str):
        self.text = text


def _float_literal(value: float) -> str:
    """An exact float32 C literal (hex float with an f suffix)."""
    return float(np.float32(value)).hex() + "f"


def _params(ctx, op, ctype: str, fields: dict) -> str:
    """Declare `static const <ctype> <sym> = {...};` and return `&<sym>`."""
    symbol = ctx.symbol(f"{op.type.lower()}_{op.index if op.index >= 0 else 'edge'}_params")
    body = ",\n".join(f"    .{k} = {_c_value(v)}" for k, v in fields.items())
    ctx.declare(f"static const {ctype} {symbol} = {{\n{body}\n}};")
    return f"&{symbol}"


def _int32_array(ctx, op, what: str, values) -> _Raw:
    symbol = ctx.const_array(f"{op.type.lower()}_{op.index}_{what}", np.asarray(values, dtype=np.int32), "int32_t")
    return _Raw(symbol)


def _double_array(ctx, op, what: str, values) -> _Raw:
    """A const double array with exact hex literals (declared directly: ctx.const_array knows no double)."""
    symbol = ctx.symbol(f"{op.type.lower()}_{op.index}_{what}")
    items = ", ".join(float(v).hex() for v in values)
    ctx.declare(f"static const double {symbol}[{len(values)}] = {{{items}}};")
    return _Raw(symbol)


def _rounding(ctx, op) -> str:
    return ctx.rounding_for(op)


def _rounding_c(rounding: str) -> _Raw:
    return _Raw(ROUNDING_C[rounding])


def _mode(ctx) -> str:
    return getattr(ctx, "rounding_mode", "ref")


def _scale(t) -> float:
    return float(t.quant.scale[0])


def _zp(t) -> int:
    return int(t.quant.zero_point[0])


def _activation_range(op, out) -> tuple:
    return quant.activation_range(op.attrs.get("activation", "NONE"), _scale(out), _zp(out))


def _multipliers(scales) -> tuple:
    pairs = [quant.quantize_multiplier(float(s)) for s in scales]
    return [m for m, _ in pairs], [s for _, s in pairs]


def _bias(ctx, op, tensor) -> str:
    if tensor is None:
        return "(const int32_t *)0"
    return ctx.const_array(f"{op.type.lower()}_{op.index}_bias", tensor.data.astype(np.int32), "int32_t")


def _weights(ctx, op, values) -> str:
    """The filter as a const int8 array (values already in the layout the chosen kernel reads)."""
    return ctx.const_array(f"{op.type.lower()}_{op.index}_weights", np.ascontiguousarray(values).reshape(-1), "int8_t")


def _conv_effective_scales(op, x, w, y, channels: int) -> list:
    """Per-output-channel real multipliers (edgesdk.ir.rounding.conv_effective_scales)."""
    return rounding_rules.conv_effective_scales(op)


def _filter_offset(op, w) -> int:
    """-filter zero point. TFLite's int8 convolutions ignore it (int8 filters are symmetric); its uint8
    kernels and every per-tensor FULLY_CONNECTED apply it."""
    if w.quant.zero_point.size != 1:
        return 0
    if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D") and not op.uint8_semantics:
        return 0
    return -int(w.quant.zero_point[0])


def _step(op, call: str, comment: str = "") -> CStep:
    return CStep(comment, call)


# -- convolutions ----------------------------------------------------------------------------------------

def _emit_conv2d(op, ctx) -> CStep:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    a = op.attrs
    out_c = y.shape[3]
    mults, shifts = _multipliers(_conv_effective_scales(op, x, w, y, out_c))
    act_min, act_max = _activation_range(op, y)
    fields = {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2], "out_c": out_c,
        "filter_h": w.shape[1], "filter_w": w.shape[2], "filter_in_c": w.shape[3],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "dilation_h": a.get("dilation_h", 1), "dilation_w": a.get("dilation_w", 1),
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
        "input_offset": -_zp(x), "filter_offset": _filter_offset(op, w), "output_offset": _zp(y),
        "act_min": act_min, "act_max": act_max,
        "multiplier": None, "shift": None,
        "rounding": _rounding_c(_rounding(ctx, op)),
        "blocked": 0,
    }
    weights, bias = w.data.astype(np.int8), _bias_values(b, out_c)
    why_not = fast_conv_obstacle(fields, _rounding(ctx, op), weights, bias, mults, shifts)
    if why_not is None:
        shifts = _fast_shifts(mults, shifts)
        fields.update(_flat_pointwise(fields), blocked=1)
        bias = fold_input_offset(bias, weights.reshape(out_c, -1), fields["input_offset"])
        weights = block_channels(weights.reshape(out_c, -1), CONV_BLOCK)
    fields["multiplier"] = _int32_array(ctx, op, "multiplier", mults)
    fields["shift"] = _int32_array(ctx, op, "shift", shifts)
    params = _params(ctx, op, "edgesdk_conv2d_params", fields)
    bias_c = _bias_array(ctx, op, b, bias, fields["blocked"])
    call = f"edgesdk_conv2d_s8({params}, {_ptr(ctx, x)}, {_weights(ctx, op, weights)}, {bias_c}, {_ptr(ctx, y)});"
    kind = "blocked" if fields["blocked"] else f"reference loops: {why_not}"
    return _step(op, call, f"{w.shape[1]}x{w.shape[2]} conv, {x.shape[3]}->{out_c} channels, {kind}")


# -- the fast kernels' preconditions and data layout (edgesdk_conv2d.h, edgesdk_mac.h) ----------------------

CONV_BLOCK = 8  # output channels per register block of edgesdk_conv2d_blocked.c
CONV_PATCH_MAX = 1024  # EDGESDK_CONV_PATCH_MAX
FAST_ACC_LIMIT = 1 << 31  # the fast kernels accumulate in int32 from the folded bias: no sum may overflow


def _bias_values(b, channels: int) -> np.ndarray:
    return np.zeros(channels, np.int64) if b is None else b.data.astype(np.int64).reshape(-1)


def _bias_array(ctx, op, b, values, folded: int) -> str:
    if not folded:
        return _bias(ctx, op, b)
    return ctx.const_array(f"{op.type.lower()}_{op.index}_bias_folded", np.asarray(values, np.int32), "int32_t")


def fold_input_offset(bias, weights_2d, input_offset: int) -> np.ndarray:
    """bias[o] + input_offset * sum_k w[o][k]: the input offset taken out of the inner loop (exact)."""
    return np.asarray(bias, np.int64) + int(input_offset) * weights_2d.astype(np.int64).sum(axis=1)


def accumulator_bound(bias_folded, weights_2d) -> int:
    """Largest |bias' + sum_k w[o][k] * x[k]| over int8 inputs x, over all output channels o."""
    reach = 128 * np.abs(weights_2d.astype(np.int64)).sum(axis=1)
    return int(np.max(np.abs(np.asarray(bias_folded, np.int64)) + reach, initial=0))


def block_channels(weights_2d, block: int) -> np.ndarray:
    """[out][taps] -> blocks of `block` outputs stored [tap][block], then the remaining outputs as they were."""
    out, taps = weights_2d.shape
    full = out // block * block
    head = weights_2d[:full].reshape(out // block, block, taps).transpose(0, 2, 1).reshape(-1)
    return np.concatenate([head, weights_2d[full:].reshape(-1)]).astype(np.int8)


def _fast_shifts(mults, shifts) -> list:
    """Channels with a zero multiplier (zero scale) give 0 for any shift; use -1 so all shifts are right shifts."""
    return [-1 if m == 0 else s for m, s in zip(mults, shifts)]


def fast_conv_obstacle(fields: dict, rounding: str, weights, bias, mults, shifts) -> str | None:
    """Why edgesdk_conv2d_s8_blocked cannot run this CONV_2D (None: it can)."""
    f = fields
    if f["dilation_h"] != 1 or f["dilation_w"] != 1:
        return "dilation"
    if f["filter_in_c"] != f["in_c"]:
        return "grouped convolution"
    taps = f["filter_h"] * f["filter_w"] * f["in_c"]
    if taps > CONV_PATCH_MAX and not _windows_inside(f):
        return f"filter window of {taps} bytes with padding"
    return fast_requant_obstacle(f, rounding, weights.reshape(f["out_c"], -1), bias, mults, shifts)


def fast_requant_obstacle(f: dict, rounding: str, weights_2d, bias, mults, shifts, fp64_ok: bool = False) -> str | None:
    """The conditions every fast kernel shares: a requantization it implements (edgesdk_requant_right:
    "double" with right shifts; edgesdk_requantize_fp64_window, FULLY_CONNECTED only: "fp64" with shifts <= -2
    and a window <= 2^30), no filter zero point, and no int32 overflow when accumulating from the folded bias."""
    folded = fold_input_offset(bias, weights_2d, f["input_offset"])
    bound = accumulator_bound(folded, weights_2d)
    if rounding == "double":
        if any(m != 0 and not -31 <= s <= -1 for m, s in zip(mults, shifts)):
            return "left shift in the requantization"
    elif rounding == ROUNDING_FP64 and fp64_ok:
        if any(m <= 0 or not -31 <= s <= -2 for m, s in zip(mults, shifts)):
            return "requantization scale outside the integer fast path"
        if fp64_window(bound) > 1 << 30:
            return "accumulator too large for the integer fast path"
    else:
        return f"rounding {rounding}"
    if f["filter_offset"] != 0:
        return "filter zero point"
    if bound >= FAST_ACC_LIMIT:
        return "accumulator may overflow int32"
    return None


def _windows_inside(f: dict) -> bool:
    """Every filter window of the convolution lies inside the input (no padding is ever read)."""
    last_y = (f["out_h"] - 1) * f["stride_h"] - f["pad_top"] + f["filter_h"]
    last_x = (f["out_w"] - 1) * f["stride_w"] - f["pad_left"] + f["filter_w"]
    return f["pad_top"] == 0 and f["pad_left"] == 0 and last_y <= f["in_h"] and last_x <= f["in_w"]


def _flat_pointwise(f: dict) -> dict:
    """A 1x1, stride-1, unpadded convolution is the same over 1 x (H*W) pixels: one long row pairs up pixels
    across image rows (no odd pixel per row)."""
    if (f["filter_h"], f["filter_w"], f["stride_h"], f["stride_w"]) != (1, 1, 1, 1) or not _windows_inside(f):
        return {}
    if (f["in_h"], f["in_w"]) != (f["out_h"], f["out_w"]):
        return {}
    pixels = f["in_h"] * f["in_w"]
    return {"in_h": 1, "in_w": pixels, "out_h": 1, "out_w": pixels}


def _emit_depthwise_conv2d(op, ctx) -> CStep:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    a = op.attrs
    out_c = y.shape[3]
    mults, shifts = _multipliers(_conv_effective_scales(op, x, w, y, out_c))
    act_min, act_max = _activation_range(op, y)
    fields = {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2], "out_c": out_c,
        "depth_multiplier": out_c // x.shape[3],
        "filter_h": w.shape[1], "filter_w": w.shape[2],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "dilation_h": a.get("dilation_h", 1), "dilation_w": a.get("dilation_w", 1),
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
        "input_offset": -_zp(x), "filter_offset": _filter_offset(op, w), "output_offset": _zp(y),
        "act_min": act_min, "act_max": act_max,
        "multiplier": None, "shift": None,
        "rounding": _rounding_c(_rounding(ctx, op)),
        "sliding": 0,
    }
    weights, bias = w.data.astype(np.int8), _bias_values(b, out_c)
    per_channel = weights.reshape(-1, out_c).T  # [channel][fy * filter_w + fx]
    why_not = fast_depthwise_obstacle(fields, _rounding(ctx, op), per_channel, bias, mults, shifts)
    if why_not is None:
        shifts = _fast_shifts(mults, shifts)
        fields["sliding"] = 1
        bias = fold_input_offset(bias, per_channel, fields["input_offset"])
        weights = per_channel
    fields["multiplier"] = _int32_array(ctx, op, "multiplier", mults)
    fields["shift"] = _int32_array(ctx, op, "shift", shifts)
    params = _params(ctx, op, "edgesdk_depthwise_conv2d_params", fields)
    bias_c = _bias_array(ctx, op, b, bias, fields["sliding"])
    call = (f"edgesdk_depthwise_conv2d_s8({params}, {_ptr(ctx, x)}, {_weights(ctx, op, weights)}, {bias_c}, "
            f"{_ptr(ctx, y)});")
    kind = "sliding" if fields["sliding"] else f"reference loops: {why_not}"
    return _step(op, call, f"{w.shape[1]}x{w.shape[2]} depthwise, {out_c} channels, {kind}")


def fast_depthwise_obstacle(fields: dict, rounding: str, per_channel, bias, mults, shifts) -> str | None:
    """Why edgesdk_depthwise_conv2d_s8_sliding cannot run this DEPTHWISE_CONV_2D (None: it can)."""
    f = fields
    if (f["filter_h"], f["filter_w"]) != (3, 3):
        return f"{f['filter_h']}x{f['filter_w']} filter"
    if f["stride_h"] != f["stride_w"] or f["stride_w"] not in (1, 2):
        return f"stride {f['stride_h']}x{f['stride_w']}"
    if f["dilation_h"] != 1 or f["dilation_w"] != 1:
        return "dilation"
    if f["depth_multiplier"] != 1:
        return f"depth multiplier {f['depth_multiplier']}"
    return fast_requant_obstacle(f, rounding, per_channel, bias, mults, shifts)


def _emit_fully_connected(op, ctx) -> CStep:
    """LiteRT requantizes in double precision with double(s_in) * double(s_w) / double(s_out) (also for
    uint8); TFLite Micro uses the integer multiplier of the same double-precision scale."""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    out_depth, in_depth = w.shape
    rounding = _rounding(ctx, op)
    scales = rounding_rules.fully_connected_effective_scales(op, rounding)
    act_min, act_max = _activation_range(op, y)
    fields = {
        "batches": x.num_elements // in_depth, "in_depth": in_depth, "out_depth": out_depth,
        "input_offset": -_zp(x), "filter_offset": _filter_offset(op, w), "output_offset": _zp(y),
        "act_min": act_min, "act_max": act_max,
    }
    mults, shifts = _multipliers(scales)  # with fp64 too: the kernel's exact integer fast path uses them
    weights, bias = w.data.astype(np.int8), _bias_values(b, out_depth)
    why_not = fast_fully_connected_obstacle(fields, rounding, weights, bias, mults, shifts)
    layout = None
    if why_not is None:
        bias = fold_input_offset(bias, weights, fields["input_offset"])
        paired = layer_choice(op, "fc_paired", FC_PAIRED_WEIGHTS)  # a tuning schedule may switch it per layer
        layout = FC_PAIRED if paired and int(weights.min(initial=0)) >= -127 else FC_BLOCKED
        weights = pair_fully_connected(weights) if layout == FC_PAIRED else block_fully_connected(weights)
    fields.update(multiplier=_int32_array(ctx, op, "multiplier", mults), shift=_int32_array(ctx, op, "shift", shifts))
    no_scale = _Raw("(const double *)0")
    fields["scale"] = _double_array(ctx, op, "scale", scales) if rounding == ROUNDING_FP64 else no_scale
    fields["rounding"] = _rounding_c(rounding)
    fields["blocked"] = _Raw(FC_LAYOUT_C[layout]) if layout else 0
    fields["per_tensor"] = int(len(set(zip(mults, shifts, scales))) == 1)
    fields["fp64_window"] = fp64_window(accumulator_bound(bias, w.data.reshape(out_depth, -1))) if (
        layout and rounding == ROUNDING_FP64) else 0
    params = _params(ctx, op, "edgesdk_fully_connected_params", fields)
    bias_c = _bias_array(ctx, op, b, bias, int(layout is not None))
    call = (f"edgesdk_fully_connected_s8({params}, {_ptr(ctx, x)}, {_weights(ctx, op, weights)}, {bias_c}, "
            f"{_ptr(ctx, y)});")
    kind = {FC_BLOCKED: "blocked", FC_PAIRED: "paired"}.get(layout, f"reference loops: {why_not}")
    return _step(op, call, f"{in_depth}->{out_depth}, {kind}")


def fp64_window(acc_bound: int) -> int:
    """edgesdk_requantize_fp64_window's window: a power of two >= B/2 + B * 2^-22 + 2 for accumulators |acc| <= B."""
    need = acc_bound // 2 + (acc_bound >> 22) + 2
    return 1 << max(need - 1, 0).bit_length()


def fast_fully_connected_obstacle(fields: dict, rounding: str, weights, bias, mults, shifts) -> str | None:
    """Why edgesdk_fully_connected_s8_blocked cannot run this FULLY_CONNECTED (None: it can)."""
    return fast_requant_obstacle(fields, rounding, weights, bias, mults, shifts, fp64_ok=True)


FC_BLOCKED, FC_PAIRED = 1, 2
FC_LAYOUT_C = {FC_BLOCKED: "EDGESDK_FC_BLOCKED", FC_PAIRED: "EDGESDK_FC_PAIRED"}
# The paired layout stores two weights per 32-bit word: FULLY_CONNECTED weights take twice the flash, and the
# layer ~2.4 instead of ~3.1 instructions per MAC (edgesdk_fully_connected_blocked.c). False: int8 blocks only.
FC_PAIRED_WEIGHTS = True
FC_PAIR_BLOCK = 8  # unit pairs per register block (PAIRS in the kernel)


def pair_fully_connected(weights) -> np.ndarray:
    """[out][in] int8 -> the bytes of EDGESDK_FC_PAIRED's int32 words w[a] + 65536 * w[a + 1] (see the header)."""
    out, depth = weights.shape
    w = weights.astype(np.int64)
    if out % 2:
        w = np.concatenate([w, np.zeros((1, depth), np.int64)])
    words = (w[0::2] + 65536 * w[1::2]).T  # [tap][pair]
    pairs = words.shape[1]
    parts = []
    for start in range(0, pairs, FC_PAIR_BLOCK):
        block = words[:, start:start + FC_PAIR_BLOCK]
        if block.shape[1] < FC_PAIR_BLOCK:  # the remaining pairs, one by one
            parts += [words[:, j:j + 1] for j in range(start, pairs)]
            break
        parts.append(block)
    return np.concatenate([part.reshape(-1) for part in parts]).astype("<i4").view(np.int8)


def block_fully_connected(weights) -> np.ndarray:
    """[out][in] -> blocks of 16 units [in][16], one block of 8 if 8 or more remain, then the rest [unit][in]."""
    out = weights.shape[0]
    sixteen = out // 16 * 16
    eight = sixteen + (8 if out - sixteen >= 8 else 0)
    parts = [block_channels(weights[:sixteen], 16), block_channels(weights[sixteen:eight], 8),
             weights[eight:].reshape(-1)]
    return np.concatenate(parts).astype(np.int8)


# -- elementwise binary -----------------------------------------------------------------------------------

def broadcast_shape(a, b, y) -> dict:
    """edgesdk_broadcast_shape for inputs a, b and output y (shapes right-aligned, padded to MAX_DIMS, per-input
    element strides, 0 along broadcast dimensions); the DSP target serializes the same fields."""
    def pad(shape):
        shape = tuple(int(d) for d in shape)
        return (1,) * (MAX_DIMS - len(shape)) + shape

    sa, sb, sy = pad(a.shape), pad(b.shape), pad(y.shape)
    broadcast = sa != sb

    def strides(shape):
        result, stride = [0] * MAX_DIMS, 1
        for d in range(MAX_DIMS - 1, -1, -1):
            result[d] = 0 if shape[d] == 1 and sy[d] != 1 else stride
            stride *= shape[d]
        return result

    return {"broadcast": int(broadcast), "size": y.num_elements, "out_shape": list(sy),
            "in1_strides": strides(sa), "in2_strides": strides(sb)}


def _emit_add(op, ctx) -> CStep:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    left_shift = 20
    twice_max = 2.0 * float(max(np.float32(_scale(a)), np.float32(_scale(b))))
    real1 = float(np.float32(_scale(a))) / twice_max
    real2 = float(np.float32(_scale(b))) / twice_max
    real_out = twice_max / (float(1 << left_shift) * float(np.float32(_scale(y))))
    (m1, s1), (m2, s2), (mo, so) = (quant.quantize_multiplier(r) for r in (real1, real2, real_out))
    act_min, act_max = _activation_range(op, y)
    fields = {
        "shape": broadcast_shape(a, b, y),
        "input1_offset": -_zp(a), "input2_offset": -_zp(b), "output_offset": _zp(y),
        "left_shift": left_shift,
        "input1_multiplier": m1, "input1_shift": s1, "input2_multiplier": m2, "input2_shift": s2,
        "output_multiplier": mo, "output_shift": so,
        "act_min": act_min, "act_max": act_max,
        "rounding": _rounding_c(_rounding(ctx, op)),
    }
    rounding = _rounding(ctx, op)
    tables = [add_input_table(-_zp(t), left_shift, m, s, rounding) for t, m, s in ((a, m1, s1), (b, m2, s2))]
    fields["input1_table"] = _int32_array(ctx, op, "input1_table", tables[0])
    fields["input2_table"] = _int32_array(ctx, op, "input2_table", tables[1])
    reach = sum(int(np.max(np.abs(t))) for t in tables)
    fields["fast_output"] = int(rounding == "double" and -31 <= so <= -1 and reach < FAST_ACC_LIMIT)
    params = _params(ctx, op, "edgesdk_add_params", fields)
    return _step(op, f"edgesdk_add_s8({params}, {_ptr(ctx, a)}, {_ptr(ctx, b)}, {_ptr(ctx, y)});")


def add_input_table(input_offset: int, left_shift: int, multiplier: int, shift: int, rounding: str) -> np.ndarray:
    """ADD's rescaled input for each int8 value x (index x + 128), exactly as the kernel would compute it."""
    return np.array([quant.multiply_by_quantized_multiplier((x + input_offset) << left_shift, multiplier, shift,
                                                            rounding) for x in range(-128, 128)], np.int64)


def _emit_mul(op, ctx) -> CStep:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    m, s = quant.quantize_multiplier(rounding_rules.mul_effective_scale(op, _mode(ctx)))
    act_min, act_max = _activation_range(op, y)
    fields = {
        "shape": broadcast_shape(a, b, y),
        "input1_offset": -_zp(a), "input2_offset": -_zp(b), "output_offset": _zp(y),
        "output_multiplier": m, "output_shift": s,
        "act_min": act_min, "act_max": act_max,
        "rounding": _rounding_c(_rounding(ctx, op)),
    }
    params = _params(ctx, op, "edgesdk_mul_params", fields)
    return _step(op, f"edgesdk_mul_s8({params}, {_ptr(ctx, a)}, {_ptr(ctx, b)}, {_ptr(ctx, y)});")


# -- pooling ----------------------------------------------------------------------------------------------

def _pool_fields(op) -> dict:
    x, y = op.inputs[0], op.outputs[0]
    a = op.attrs
    act_min, act_max = _activation_range(op, y)
    return {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "channels": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2],
        "filter_h": a["filter_h"], "filter_w": a["filter_w"],
        "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
        "act_min": act_min, "act_max": act_max,
        "uint8_rounding": int(bool(op.uint8_semantics)) if op.type == "AVERAGE_POOL_2D" else 0,
    }


def _emit_average_pool2d(op, ctx) -> CStep:
    params = _params(ctx, op, "edgesdk_pool2d_params", _pool_fields(op))
    a = op.attrs
    return _step(op, f"edgesdk_average_pool2d_s8({params}, {_ptr(ctx, op.inputs[0])}, {_ptr(ctx, op.outputs[0])});",
                 f"{a['filter_h']}x{a['filter_w']} average")


def _emit_max_pool2d(op, ctx) -> CStep:
    params = _params(ctx, op, "edgesdk_pool2d_params", _pool_fields(op))
    a = op.attrs
    return _step(op, f"edgesdk_max_pool2d_s8({params}, {_ptr(ctx, op.inputs[0])}, {_ptr(ctx, op.outputs[0])});",
                 f"{a['filter_h']}x{a['filter_w']} max")


# -- shape ops ----------------------------------------------------------------------------------------------

def _emit_reshape(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    src, dst = _ptr(ctx, x), _ptr(ctx, y)
    if src == dst:
        return CStep("aliased, no copy", "")
    return _step(op, f"edgesdk_reshape({y.nbytes}, {src}, {dst});", "copy")


def _pad6(values, fill) -> list:
    values = [int(v) for v in values]
    return [fill] * (MAX_DIMS - len(values)) + values


def _emit_pad(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    pad_value = _zp(y) if y.quant is not None else 0
    if len(op.inputs) > 2 and op.inputs[2] is not None:
        pad_value = int(op.inputs[2].data.reshape(-1)[0])
    fields = {
        "in_shape": _pad6(x.shape, 1), "out_shape": _pad6(y.shape, 1),
        "pad_before": _pad6([p[0] for p in op.attrs["paddings"]], 0),
        "pad_value": pad_value,
    }
    params = _params(ctx, op, "edgesdk_pad_params", fields)
    return _step(op, f"edgesdk_pad_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});")


def _emit_concatenation(op, ctx) -> CStep:
    y = op.outputs[0]
    axis = op.attrs["axis"]
    inputs = [t for t in op.inputs if t is not None]
    element = y.nbytes // max(y.num_elements, 1)
    outer = int(np.prod(y.shape[:axis], dtype=np.int64))
    inner = int(np.prod(y.shape[axis + 1:], dtype=np.int64))
    slices = [int(t.shape[axis]) * inner * element for t in inputs]
    fields = {"outer": outer, "num_inputs": len(inputs), "slice_bytes": _int32_array(ctx, op, "slice_bytes", slices)}
    params = _params(ctx, op, "edgesdk_concatenation_params", fields)
    array = ctx.symbol(f"concatenation_{op.index}_inputs")
    pointers = ", ".join(f"(const void *){_ptr(ctx, t)}" for t in inputs)
    code = (f"{{\n    const void *const {array}[{len(inputs)}] = {{{pointers}}};\n"
            f"    edgesdk_concatenation({params}, {array}, (void *){_ptr(ctx, y)});\n}}")
    return _step(op, code, f"{len(inputs)} inputs, axis {axis}")


# -- reductions ---------------------------------------------------------------------------------------------

def _mean_multiplier(x, y, count: int) -> tuple:
    """TFLite's QuantizedMeanOrSum: the input/output multiplier with 1/count folded in (integer steps)."""
    m, shift = quant.quantize_multiplier(quant.effective_scale(_scale(x), denominator=_scale(y)))
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return int((m << extra) // count), shift - extra


def _emit_mean(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    rank = len(x.shape)
    axes = set(op.attrs["axes"])
    count = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    m, s = _mean_multiplier(x, y, count)
    fields = {
        "in_shape": _pad6(x.shape, 1),
        "reduce": [0] * (MAX_DIMS - rank) + [int(d in axes) for d in range(rank)],
        "input_zero_point": _zp(x), "output_zero_point": _zp(y),
        "multiplier": m, "shift": s,
        "rounding": _rounding_c(_rounding(ctx, op)),
    }
    params = _params(ctx, op, "edgesdk_mean_params", fields)
    return _step(op, f"edgesdk_mean_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", f"over axes {sorted(axes)}")


# -- softmax and activations --------------------------------------------------------------------------------

SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5


def softmax_input_rescale(input_scale: float, beta: float, rounding: str = "double") -> tuple:
    """(multiplier, left shift) scaling an input difference into Q5.26 (PreprocessSoftmaxScaling)."""
    max_real = float((1 << 30) - 1) if rounding == "single" else float((1 << 31) - 1)
    scaled_diff_one = float(1 << (31 - SOFTMAX_SCALED_DIFF_INTEGER_BITS))
    real = min(float(np.float32(beta)) * float(np.float32(input_scale)) * scaled_diff_one, max_real)
    return quant.quantize_multiplier(real)


def softmax_constants(input_scale: float, beta: float, rounding: str) -> tuple:
    """(input_multiplier, input_left_shift, diff_min) as PreprocessSoftmaxScaling/CalculateInputRadius."""
    m, left_shift = softmax_input_rescale(input_scale, beta, rounding)
    return m, left_shift, -input_radius(SOFTMAX_SCALED_DIFF_INTEGER_BITS, left_shift)


SIGMOID_INPUT_INTEGER_BITS = 4  # TFLite Micro's LOGISTIC/TANH work on the input in Q4.27


def sigmoid_input_rescale(input_scale: float) -> tuple:
    """(multiplier, left shift) scaling a LOGISTIC/TANH input into Q4.27, as TFLite Micro: frexp, not
    QuantizeMultiplier (no fix-up when the fraction rounds to 2^31; x86 turns that into INT32_MIN)."""
    real = float(np.float32(input_scale)) * float(1 << (31 - SIGMOID_INPUT_INTEGER_BITS))
    fraction, left_shift = np.frexp(real)
    multiplier = quant._round_half_away(float(fraction) * float(1 << 31))
    if multiplier == 1 << 31:  # static_cast<int32_t>(2^31) on x86 gives INT32_MIN; kept identical
        multiplier = -(1 << 31)
    return multiplier, int(left_shift)


def input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """TFLite CalculateInputRadius. Undefined (a negative shift in TFLite) for left_shift < 0: the C target's
    constraints (supported.fixed_point_input_scale_in_range) keep such ops away from the codegen."""
    if left_shift < 0:
        raise ValueError(f"input_radius: left shift {left_shift} < 0 (the op's constraints should have refused it)")
    value = 1.0 * ((1 << integer_bits) - 1) * float(1 << (total_signed_bits - integer_bits)) / float(1 << left_shift)
    return int(np.floor(value))


def _emit_softmax(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    rounding = _rounding(ctx, op)
    m, shift, diff_min = softmax_constants(_scale(x), op.attrs.get("beta", 1.0), rounding)
    depth = x.shape[-1]
    fields = {"rows": x.num_elements // depth, "depth": depth, "input_multiplier": m, "input_left_shift": shift,
              "diff_min": diff_min, "rounding": _rounding_c(rounding)}
    params = _params(ctx, op, "edgesdk_softmax_params", fields)
    return _step(op, f"edgesdk_softmax_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});")


def _emit_sigmoid_like(op, ctx) -> CStep:
    """LOGISTIC/TANH: a table (LiteRT) or gemmlowp fixed point (TFLite Micro)."""
    x, y = op.inputs[0], op.outputs[0]
    rounding = _rounding(ctx, op)
    if rounding == ROUNDING_LUT:
        table = lut.tflite_lut(op.type, _scale(x), _zp(x), _scale(y), _zp(y))
        symbol = ctx.const_array(f"{op.type.lower()}_{op.index}_table", table, "int8_t")
        params = _params(ctx, op, "edgesdk_lut_params", {"size": x.num_elements, "table": _Raw(symbol)})
        return _step(op, f"edgesdk_lut_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "table lookup")
    # TFLite Micro: the input rescaled to Q4.27; beyond the radius the output saturates.
    multiplier, left_shift = sigmoid_input_rescale(_scale(x))
    fields = {"size": x.num_elements, "input_zero_point": _zp(x),
              "input_range_radius": input_radius(SIGMOID_INPUT_INTEGER_BITS, left_shift),
              "input_multiplier": multiplier, "input_left_shift": left_shift,
              "rounding": _rounding_c(rounding)}
    params = _params(ctx, op, "edgesdk_sigmoid_params", fields)
    fn = "edgesdk_logistic_s8" if op.type == "LOGISTIC" else "edgesdk_tanh_s8"
    return _step(op, f"{fn}({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "fixed point")


def hard_swish_constants(input_scale: float, output_scale: float) -> dict:
    """HardSwishPrepare's 16-bit multipliers (float32 arithmetic, as TFLite)."""
    f32 = np.float32
    hires_input_scale = f32(f32(1.0) / f32(128.0)) * f32(input_scale)
    reluish_scale = f32(3.0) / f32(32768.0)
    m_out, e_out = quant.quantize_multiplier(float(f32(hires_input_scale / f32(output_scale))))
    m_rel, e_rel = quant.quantize_multiplier(float(f32(hires_input_scale / reluish_scale)))
    return {"output_multiplier_fixedpoint_int16": _down_scale_int16(m_out), "output_multiplier_exponent": e_out,
            "reluish_multiplier_fixedpoint_int16": _down_scale_int16(m_rel), "reluish_multiplier_exponent": e_rel}


def _down_scale_int16(m: int) -> int:
    """TFLite DownScaleInt32ToInt16Multiplier."""
    if m >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1
    return (m + (1 << 15)) >> 16


def _emit_hard_swish(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    consts = hard_swish_constants(_scale(x), _scale(y))
    if consts["output_multiplier_exponent"] > 0:
        raise UnsupportedOpError(
            f"HARD_SWISH at {op.location} has an output scale below input_scale/128; TFLite rejects it too. "
            "Re-quantize the model with a larger output range.")
    fields = {"size": x.num_elements, "input_zero_point": _zp(x), "output_zero_point": _zp(y), **consts}
    params = _params(ctx, op, "edgesdk_hard_swish_params", fields)
    return _step(op, f"edgesdk_hard_swish_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});")


RELU_RANGES = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}


def relu_range(op_type: str, scale: float, zero_point: int) -> tuple:
    """QuantizedReluX's clamp: zp + round(limit / scale) in float32, within int8."""
    lo, hi = RELU_RANGES[op_type]

    def q(v):
        return zero_point + quant._round_half_away(float(np.float32(v) / np.float32(scale)))

    return max(-128, q(lo)), 127 if hi is None else min(127, q(hi))


def _emit_relu(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    tflm = _mode(ctx) == "tflm"
    if tflm and op.type == "RELU6":
        # TFLite Micro's RELU6 clamps the input bytes to [zp, zp + round(6 / scale)] of the *input*
        # quantization and never rescales: an identity requantization (M = 2^30, shift 1) plus that clamp.
        six = _zp(x) + quant._round_half_away(float(np.float32(6.0) / np.float32(_scale(x))))
        fields = {"size": x.num_elements, "input_zero_point": 0, "output_zero_point": 0,
                  "multiplier": 1 << 30, "shift": 1, "act_min": max(-128, _zp(x)), "act_max": max(-128, min(127, six)),
                  "rounding": _rounding_c(_rounding(ctx, op))}
        params = _params(ctx, op, "edgesdk_relu_params", fields)
        return _step(op, f"edgesdk_relu_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "clamp only (TFLite Micro)")
    m, s = quant.quantize_multiplier(rounding_rules.relu_effective_scale(op, _mode(ctx)))
    act_min, act_max = relu_range(op.type, _scale(y), _zp(y))
    fields = {"size": x.num_elements, "input_zero_point": _zp(x), "output_zero_point": _zp(y),
              "multiplier": m, "shift": s, "act_min": act_min, "act_max": act_max,
              "rounding": _rounding_c(_rounding(ctx, op))}
    params = _params(ctx, op, "edgesdk_relu_params", fields)
    return _step(op, f"edgesdk_relu_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});")


# -- quantize / dequantize -----------------------------------------------------------------------------------

def _emit_quantize(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    n = x.num_elements
    if x.dtype == "float32":
        params = _params(ctx, op, "edgesdk_quantize_f32_params", {"size": n, "scale": _scale(y), "zero_point": _zp(y)})
        return _step(op, f"edgesdk_quantize_f32_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "float32 -> int8")
    if x.dtype == "uint8" and y.dtype == "int8" and _is_uint8_edge(x, y):
        return _step(op, f"edgesdk_convert_u8_s8({n}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "uint8 -> int8")
    if x.dtype == "int8" and y.dtype == "uint8" and _is_uint8_edge(y, x):
        return _step(op, f"edgesdk_convert_s8_u8({n}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "int8 -> uint8")
    if x.dtype == "int8" and y.dtype == "int8":
        m, s = quant.quantize_multiplier(quant.effective_scale(_scale(x), denominator=_scale(y)))
        fields = {"size": n, "input_zero_point": _zp(x), "output_zero_point": _zp(y), "multiplier": m, "shift": s,
                  "rounding": _rounding_c(_rounding(ctx, op))}
        params = _params(ctx, op, "edgesdk_requantize_params", fields)
        return _step(op, f"edgesdk_requantize_s8({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "requantize")
    raise UnsupportedOpError(f"QUANTIZE {x.dtype} -> {y.dtype} at {op.location} is not supported by the C target.")


def _is_uint8_edge(u8, s8) -> bool:
    """Same scale, zero points 128 apart: the conversion is exact (flip the top bit)."""
    return (u8.quant is not None and s8.quant is not None and _scale(u8) == _scale(s8)
            and _zp(u8) - 128 == _zp(s8))


def _emit_dequantize(op, ctx) -> CStep:
    x, y = op.inputs[0], op.outputs[0]
    params = _params(ctx, op, "edgesdk_dequantize_params",
                     {"size": x.num_elements, "scale": _scale(x), "zero_point": _zp(x)})
    return _step(op, f"edgesdk_dequantize_s8_f32({params}, {_ptr(ctx, x)}, {_ptr(ctx, y)});", "int8 -> float32")


_EMITTERS = {
    "CONV_2D": _emit_conv2d,
    "DEPTHWISE_CONV_2D": _emit_depthwise_conv2d,
    "FULLY_CONNECTED": _emit_fully_connected,
    "ADD": _emit_add,
    "MUL": _emit_mul,
    "AVERAGE_POOL_2D": _emit_average_pool2d,
    "MAX_POOL_2D": _emit_max_pool2d,
    "RESHAPE": _emit_reshape,
    "SOFTMAX": _emit_softmax,
    "QUANTIZE": _emit_quantize,
    "DEQUANTIZE": _emit_dequantize,
    "PAD": _emit_pad,
    "CONCATENATION": _emit_concatenation,
    "MEAN": _emit_mean,
    "LOGISTIC": _emit_sigmoid_like,
    "TANH": _emit_sigmoid_like,
    "HARD_SWISH": _emit_hard_swish,
    "RELU": _emit_relu,
    "RELU6": _emit_relu,
    "RELU_N1_TO_1": _emit_relu,
}
