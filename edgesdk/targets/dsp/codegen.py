"""DSP codegen: one region's IR ops -> a serialized subgraph (blob.py) that the host runtime interprets.

Nothing here emits kernel calls: each op becomes a node with an opcode, its tensors (arena slots, or
constant operands stored in the blob) and a parameter record whose integers are computed exactly as
TFLite's Prepare() computes them (the same functions the host C target uses, edgesdk.ir.quant/rounding),
so the DSP's kernels only do the Eval() arithmetic.
"""

from __future__ import annotations


import numpy as np

from ...errors import UnsupportedOpError
from ...ir import quant
from ...ir import rounding as rounding_rules
from ...ir.rounding import ROUNDING_LUT
from ...ops import tables as lut
from ...ops.broadcast import broadcast_geometry as broadcast_shape
from ...ops.sigmoid import fixed_point_table, sigmoid_input_rescale
from ...ops.softmax import softmax_constants
from . import registers as R
from .blob import LOCATION_ARENA, LOCATION_BLOB, BlobBuilder, BlobNode, BlobTensor

ROUNDING_CODES = {"double": 0, "single": 1}  # EDGESDK_ROUNDING_DOUBLE / _SINGLE (edgesdk_arith.h)
ADD_LEFT_SHIFT = 20


def build_region(ops: list, ctx) -> BlobBuilder:
    """The blob of one DSP region. `ctx` gives arena_offset(t), rounding_for(op) and rounding_mode; an
    arena_offset of None (cost estimates before planning) means "not placed yet"."""
    builder = BlobBuilder()
    for op in ops:
        emit = _EMITTERS.get(op.type)
        if emit is None:
            raise UnsupportedOpError(f"The DSP target has no kernel for {op.type} ({op.location}).")
        node = emit(op, ctx, builder)
        if node is not None:
            node.label = f"layer {op.index}: {op.type}"
            node.op_index = op.index
            builder.add(node)
    return builder


# -- tensors -------------------------------------------------------------------------------------------------

def _scale(t) -> float:
    return float(t.quant.scale[0])


def _zp(t) -> int:
    return int(t.quant.zero_point[0])


def _tensor(builder: BlobBuilder, ctx, t) -> int:
    """The blob's index of IR tensor `t`: an arena slot, or (a constant operand) bytes in the blob."""
    def make():
        scale, zp = (_scale(t), _zp(t)) if t.quant is not None else (0.0, 0)
        if t.is_const:
            data = np.ascontiguousarray(t.data.astype(np.int8)).tobytes()
            return BlobTensor(LOCATION_BLOB, builder.const(data), t.nbytes, tuple(t.shape), scale, zp, t.name)
        return BlobTensor(LOCATION_ARENA, ctx.arena_offset(t) or 0, t.nbytes, tuple(t.shape), scale, zp, t.name)

    return builder.tensor(t, make)


def _node(builder, ctx, op, opcode: int, fields: dict, inputs: list) -> BlobNode:
    names = R.RECORD_FIELDS[opcode]
    if tuple(fields) != names:
        raise AssertionError(f"{R.OPCODE_NAMES[opcode]} record fields {tuple(fields)} != {names}")
    return BlobNode(opcode, tuple(_tensor(builder, ctx, t) for t in inputs), _tensor(builder, ctx, op.outputs[0]),
                    list(fields.values()))


def _rounding(ctx, op) -> int:
    rounding = ctx.rounding_for(op)
    if rounding not in ROUNDING_CODES:
        raise UnsupportedOpError(f"The DSP cannot requantize {op.type} ({op.location}) with '{rounding}' rounding "
                                 "(it implements double and single rounding only).")
    return ROUNDING_CODES[rounding]


def _activation_range(op) -> tuple:
    y = op.outputs[0]
    return quant.activation_range(op.attrs.get("activation", "NONE"), _scale(y), _zp(y))


def _int32_bytes(values) -> bytes:
    return np.asarray(values, dtype="<i4").tobytes()


# -- ops ----------------------------------------------------------------------------------------------------

def _reshape(op, ctx, builder):
    x, y = op.inputs[0], op.outputs[0]
    src, dst = (None if x.is_const else ctx.arena_offset(x)), ctx.arena_offset(y)  # a constant: copied from the blob
    if src is not None and src == dst:
        return None  # the memory plan aliased input and output: nothing to move
    return _node(builder, ctx, op, R.OP_COPY, {"bytes": y.nbytes}, [x])


def _unary_table(op, ctx) -> np.ndarray:
    """LOGISTIC/TANH as 256 int8 entries in TFLite's order (entry (uint8)x holds op(x)): LiteRT's float32
    table, or TFLite Micro's fixed-point results for every input (the op layer's model of that arithmetic)."""
    x, y = op.inputs[0], op.outputs[0]
    if ctx.rounding_for(op) == ROUNDING_LUT:
        return lut.tflite_lut(op.type, _scale(x), _zp(x), _scale(y), _zp(y))
    _rounding(ctx, op)  # refuses roundings the DSP does not implement
    multiplier, left_shift = sigmoid_input_rescale(_scale(x))
    return fixed_point_table(op.type, _zp(x), multiplier, left_shift, ctx.rounding_for(op))


def _lut(op, ctx, builder):
    table = builder.const(_unary_table(op, ctx).astype(np.int8).tobytes())
    return _node(builder, ctx, op, R.OP_LUT, {"size": op.inputs[0].num_elements, "table_ref": table}, [op.inputs[0]])


def _softmax(op, ctx, builder):
    x = op.inputs[0]
    rounding = _rounding(ctx, op)
    m, shift, diff_min = softmax_constants(_scale(x), op.attrs.get("beta", 1.0), ctx.rounding_for(op))
    depth = int(x.shape[-1])
    fields = {"rows": x.num_elements // depth, "depth": depth, "input_multiplier": m, "input_left_shift": shift,
              "diff_min": diff_min, "rounding": rounding}
    return _node(builder, ctx, op, R.OP_SOFTMAX, fields, [x])


def _pool(op, ctx, builder):
    x, y = op.inputs[0], op.outputs[0]
    a = op.attrs
    act_min, act_max = _activation_range(op)
    average = op.type == "AVERAGE_POOL_2D"
    fields = {"batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "channels": x.shape[3],
              "out_h": y.shape[1], "out_w": y.shape[2], "filter_h": a["filter_h"], "filter_w": a["filter_w"],
              "stride_h": a["stride_h"], "stride_w": a["stride_w"], "pad_top": a["pad_top"], "pad_left": a["pad_left"],
              "act_min": act_min, "act_max": act_max, "uint8_rounding": int(average and bool(op.uint8_semantics))}
    return _node(builder, ctx, op, R.OP_AVERAGE_POOL if average else R.OP_MAX_POOL, fields, [x])


def _filter_offset(op) -> int:
    """-filter zero point: TFLite's int8 depthwise kernel ignores it (symmetric filters); the uint8 one applies it."""
    w = op.inputs[1]
    if w.quant.zero_point.size != 1 or not op.uint8_semantics:
        return 0
    return -int(w.quant.zero_point[0])


def _depthwise(op, ctx, builder):
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    b = op.inputs[2] if len(op.inputs) > 2 else None
    a = op.attrs
    out_c = int(y.shape[3])
    pairs = [quant.quantize_multiplier(float(s)) for s in rounding_rules.conv_effective_scales(op)]
    act_min, act_max = _activation_range(op)
    fields = {
        "batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "in_c": x.shape[3],
        "out_h": y.shape[1], "out_w": y.shape[2], "out_c": out_c, "depth_multiplier": out_c // int(x.shape[3]),
        "filter_h": w.shape[1], "filter_w": w.shape[2], "stride_h": a["stride_h"], "stride_w": a["stride_w"],
        "dilation_h": a.get("dilation_h", 1), "dilation_w": a.get("dilation_w", 1),
        "pad_top": a["pad_top"], "pad_left": a["pad_left"],
        "input_offset": -_zp(x), "filter_offset": _filter_offset(op), "output_offset": _zp(y),
        "act_min": act_min, "act_max": act_max, "rounding": _rounding(ctx, op),
        "filter_ref": builder.const(np.ascontiguousarray(w.data.astype(np.int8)).tobytes()),  # 1HW(out_c)
        "bias_ref": R.NO_REF if b is None else builder.const(_int32_bytes(b.data.astype(np.int64).reshape(-1))),
        "multiplier_ref": builder.const(_int32_bytes([m for m, _ in pairs])),
        "shift_ref": builder.const(_int32_bytes([s for _, s in pairs])),
    }
    return _node(builder, ctx, op, R.OP_DEPTHWISE_CONV, fields, [x])


def broadcast_fields(a, b, y) -> dict:
    """The kernels' broadcast walk (edgesdk_broadcast_shape, the op layer's broadcast_geometry), as
    the flat record fields the DSP reads."""
    shape = broadcast_shape(a, b, y)
    fields = {"broadcast": shape["broadcast"], "size": shape["size"]}
    fields.update({f"out_shape{d}": v for d, v in enumerate(shape["out_shape"])})
    fields.update({f"in1_stride{d}": v for d, v in enumerate(shape["in1_strides"])})
    fields.update({f"in2_stride{d}": v for d, v in enumerate(shape["in2_strides"])})
    return fields


def add_multipliers(op) -> tuple:
    """TFLite's int8 ADD Prepare: (m1, s1, m2, s2, m_out, s_out) with a left shift of 20 (float32 scales)."""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    s1, s2, so = (float(np.float32(_scale(t))) for t in (a, b, y))
    twice_max = 2.0 * max(s1, s2)
    (m1, sh1), (m2, sh2), (mo, sho) = (quant.quantize_multiplier(r) for r in
                                       (s1 / twice_max, s2 / twice_max, twice_max / (float(1 << ADD_LEFT_SHIFT) * so)))
    return m1, sh1, m2, sh2, mo, sho


def _add(op, ctx, builder):
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    m1, s1, m2, s2, mo, so = add_multipliers(op)
    act_min, act_max = _activation_range(op)
    fields = {**broadcast_fields(a, b, y), "input1_offset": -_zp(a), "input2_offset": -_zp(b), "output_offset": _zp(y),
              "left_shift": ADD_LEFT_SHIFT, "input1_multiplier": m1, "input1_shift": s1, "input2_multiplier": m2,
              "input2_shift": s2, "output_multiplier": mo, "output_shift": so, "act_min": act_min, "act_max": act_max,
              "rounding": _rounding(ctx, op)}
    return _node(builder, ctx, op, R.OP_ADD, fields, [a, b])


def _mul(op, ctx, builder):
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    m, s = quant.quantize_multiplier(rounding_rules.mul_effective_scale(op, ctx.rounding_mode))
    act_min, act_max = _activation_range(op)
    fields = {**broadcast_fields(a, b, y), "input1_offset": -_zp(a), "input2_offset": -_zp(b), "output_offset": _zp(y),
              "output_multiplier": m, "output_shift": s, "act_min": act_min, "act_max": act_max,
              "rounding": _rounding(ctx, op)}
    return _node(builder, ctx, op, R.OP_MUL, fields, [a, b])


_EMITTERS = {
    "RESHAPE": _reshape,
    "LOGISTIC": _lut,
    "TANH": _lut,
    "SOFTMAX": _softmax,
    "AVERAGE_POOL_2D": _pool,
    "MAX_POOL_2D": _pool,
    "DEPTHWISE_CONV_2D": _depthwise,
    "ADD": _add,
    "MUL": _mul,
}
