"""NPU codegen: each IR op -> its NPU-1 commands (`LOWERINGS`, op type -> lowering); a whole region is lowered by
region.lower_ops. The context places data:
  ctx.arena_offset(tensor) -> int          offset of an activation tensor in region 1 (SRAM arena)
  _weights_blob(ctx).add(data, align=16, label="") -> int   offset of constant bytes in region 0 (flash blob)
  ctx.rounding_for(op) -> "double" | "single" | "fp64"   requantization the compiler chose for op
                                                   (fp64, LiteRT's reference FULLY_CONNECTED: conv commands only)
  ctx.rounding_mode -> "ref" | "tflm"              the reference the build follows (default "ref")
  ctx.scratch_offset(op) -> int                    offset of op's scratch (NpuTarget.scratch_bytes) in region 1
  ctx.board                                        the board (None: every memory at the default bandwidth)
Every multiplier is computed with edgesdk.ir.quant the way TFLite's Prepare functions compute it (most come from
the op layer, edgesdk.ops.prepared, which the host C target uses too), so the NPU's output equals the reference
kernels' bit for bit. Tensors are int8 or int16 (16x8 layers: int16 activations, int8 weights, int64 bias).
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOpError
from ...ir.quant import quantize_multipliers
from ...ir.rounding import conv_effective_scales, fully_connected_effective_scales
from .hw import registers as R
from .hw import cmdtable as C
from .hw import weight_codec
from ...ops import prepared
from ...ops.activation import activation_range
from . import fold, movement, pointwise
from .hw import timing
from ..api import compile_memo
from .shapes import collapse_broadcast
from .tables import WEIGHTS_BLOB

WEIGHTS_REGION = 0  # constants blob in flash (ctx.blob(WEIGHTS_BLOB), edgesdk_npu_weights)
ARENA_REGION = 1  # activation arena in SRAM


def _weights_blob(ctx):
    return ctx.blob(WEIGHTS_BLOB)


def board_memory(board) -> timing.MemoryMap:
    """The timing model's memories of `board` (MemoryMap.for_board; the datasheet's default without a board),
    made once per compile: the cascade search's pricing, the fold choices and the codegen each ask for it, and
    it is never changed."""
    maps = compile_memo("npu-memory-maps")  # id(board) -> (board, its map): the board kept, so its id stays its own
    known = maps.get(id(board))
    if known is None or known[0] is not board:
        known = maps[id(board)] = (board, timing.MemoryMap.for_board(board) if board is not None else timing.MemoryMap())
    return known[1]


# -- operands ------------------------------------------------------------------------------------------------
NUMPY_DTYPES = {"int8": np.int8, "int16": np.dtype("<i2")}


def mode_of(ctx) -> str:
    """The reference the build follows: "ref" (LiteRT) or "tflm"."""
    return str(getattr(ctx, "rounding_mode", "ref"))


def _operand(t, ctx, shape=None) -> C.TensorDesc:
    """Dense descriptor of a tensor: constants go to the weights blob, activations live in the arena."""
    shape = t.shape if shape is None else shape  # (TensorDesc.dense pads it to NHWC)
    if t.is_const:
        data = np.ascontiguousarray(t.data, dtype=NUMPY_DTYPES[t.dtype]).tobytes()
        offset = _weights_blob(ctx).add(data, 16, t.name)
        return C.TensorDesc.dense(WEIGHTS_REGION, offset, shape, t.dtype)
    return C.TensorDesc.dense(ARENA_REGION, ctx.arena_offset(t), shape, t.dtype)


def _conv_weights(w, ctx, shape=None, op=None) -> dict:
    """The weights fields of a conv command: a compressed stream when that is smaller (weight_codec.py).

    Fewer flash bytes is fewer cycles wherever the flash fetch bounds the command, and the decode is never
    slower than the fetch of the dense bytes; a tuning schedule may switch it per layer
    (CodegenOptions.layer_choice).
    """
    data = weight_bytes(w)
    return _placed_weights(data, _weight_stream(data, ctx, op, owner=w), w.shape if shape is None else shape, w.name,
                           ctx)


def weight_bytes(w) -> bytes:
    """The dense int8 bytes of weight tensor `w`, made once per compile while `w.data` stays the same array (the
    build lowers a layer several times, and a streams memo lookup by the same bytes object skips re-hashing)."""
    memo = compile_memo("npu-weight-bytes")  # tensor -> (its data array, the bytes)
    known = memo.get(w)
    if known is None or known[0] is not w.data:
        known = memo[w] = (w.data, np.ascontiguousarray(w.data, dtype=np.int8).tobytes())
    return known[1]


def _weight_stream(data: bytes, ctx, op=None, owner=None) -> bytes | None:
    """The compressed stream of a weight layout when it is smaller and the layer may be compressed, else None;
    `owner` (the weight tensor) keeps the answer for the build's later lowerings of the same bytes, and a
    layout of no tensor (a folded kernel) is remembered by its bytes for the rest of the compile."""
    compress = ctx.layer_choice(op, "compress_weights", True) if op is not None else True
    if not compress:
        return None
    streams = compile_memo("npu-weight-streams")  # raw bytes -> stream or None
    if data not in streams:
        streams[data] = weight_codec.compress_if_smaller(data, owner=owner)
    return streams[data]


def _placed_weights(data: bytes, stream: bytes | None, shape, name: str, ctx) -> dict:
    """The weights fields of a conv command for dense int8 bytes `data` (or their compressed `stream`)."""
    if stream is None:
        offset = _weights_blob(ctx).add(data, 16, name)
        return dict(weights=C.TensorDesc.dense(WEIGHTS_REGION, offset, shape))
    offset = _weights_blob(ctx).add(stream, 16, f"{name} (compressed)")
    return dict(weights=C.TensorDesc.dense(WEIGHTS_REGION, offset, shape), weight_stream_bytes=len(stream))


def _broadcast_operand(t, in4, out4, ctx) -> C.TensorDesc:
    """`t` (read as shape `in4`, the same bytes) with the output's shape `out4`: size-1 dimensions that the
    output expands get stride 0."""
    dense = _operand(t, ctx, in4)
    strides = tuple(0 if d == 1 and o > 1 else s for d, o, s in zip(in4, out4, dense.strides))
    return C.TensorDesc(dense.region, dense.offset, tuple(out4), strides, dense.dtype)


def elementwise_operands(op, ctx) -> tuple:
    """(input 1, input 2, output) descriptors of a broadcasting elementwise op in four dimensions (shapes.py)."""
    x1, x2, y = op.inputs[0], op.inputs[1], op.outputs[0]
    view = collapse_broadcast(y.shape, [x1.shape, x2.shape])
    if view is None:
        raise UnsupportedOpError(f"{op.location}: its broadcast does not fit the NPU's four dimensions. Assign it "
                                 "to the 'c' target.")
    out4, (in1, in2) = view
    return _broadcast_operand(x1, in1, out4, ctx), _broadcast_operand(x2, in2, out4, ctx), _operand(y, ctx, out4)


def _rounding(op, ctx, allow_fp64: bool = False) -> int:
    name = ctx.rounding_for(op)
    code = C.rounding_code(name) if name in C.ROUNDING_CODES else None
    if code is None or (code == R.ROUNDING_FP64 and not allow_fp64):
        raise UnsupportedOpError(f"{op.location} needs the '{name}' requantization rounding, which the NPU's "
                                 f"{op.type} cannot do. Assign it to the 'c' target.")
    return code


def _act_range(op) -> tuple:
    """The fused activation's clamp in the output's type (CalculateActivationRangeQuantized), worked out once per
    compile for each op (it depends on the op alone; the support check, the pricing and the codegen lower it)."""
    ranges = compile_memo("npu-activation-ranges")  # op -> (act_min, act_max)
    if op not in ranges:
        ranges[op] = activation_range(op)
    return ranges[op]


def _note(op) -> str:
    """The listing comment of an op's commands; a cascade's stripe commands keep it as their prefix
    (tables.note_layer reads the op back)."""
    return f"op #{op.index} {op.type} -> {op.outputs[0].name}"


# -- convolution and fully connected --------------------------------------------------------------------------
def conv_channel_scales(op, rounding: str) -> list:
    """Real requantization scale per output channel, derived exactly as the reference derives it.

    The host C target uses the same functions (edgesdk/ir/rounding.py), so an NPU layer and a CPU layer
    can never start from different constants (e.g. uint8 convolutions multiply the scales in float32).
    """
    if op.type == "FULLY_CONNECTED":
        return fully_connected_effective_scales(op, rounding)
    return conv_effective_scales(op)


def conv_bias(op) -> list:
    b = op.inputs[2] if len(op.inputs) > 2 else None
    return b.data.reshape(-1).astype(np.int64).tolist() if b is not None else [0] * op.outputs[0].shape[-1]


def conv_channel_params(op, rounding: str) -> tuple:
    """(bias, multipliers, shifts) per output channel (roundings double and single)."""
    multipliers, shifts = quantized_multipliers(conv_channel_scales(op, rounding))
    return conv_bias(op), multipliers, shifts


def quantized_multipliers(scales) -> tuple:
    """quantize_multipliers(scales) (a list or an array of doubles), worked out once per compile for the same
    scales: the support check (supported.constraint_requant_representable) asks for the shifts of the scales
    the lowering packs."""
    real = np.asarray(scales, np.float64).reshape(-1)
    memo = compile_memo("npu-quantized-multipliers")  # the scales' bytes -> ([M], [shift])
    key = real.tobytes()
    if key not in memo:
        memo[key] = quantize_multipliers(real)
    return memo[key]


def _conv_common(op, ctx) -> dict:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    rounding = _rounding(op, ctx, allow_fp64=True)
    rounding_name = ctx.rounding_for(op)
    wide = x.dtype == "int16"  # 16x8: int64 bias in 16-byte records
    # a static-check probe places no constants (its records would be those of its own rounding, which a
    # FULLY_CONNECTED of LiteRT's fp64 rounding never uses): only the reference to them is checked
    params = b"" if getattr(ctx, "probing", False) else _channel_records(op, rounding_name,
                                                                         rounding == R.ROUNDING_FP64, wide)
    act_min, act_max = _act_range(op)
    return dict(
        params=C.ParamRef(WEIGHTS_REGION, _weights_blob(ctx).add(params, 4, f"{y.name} channel params")),
        input_offset=-x.quant.zp0, weight_offset=-w.quant.zp0, output_offset=y.quant.zp0,
        act_min=act_min, act_max=act_max, rounding=rounding, note=_note(op))


def _channel_records(op, rounding_name: str, fp64: bool, wide: bool) -> bytes:
    """The packed per-channel records (bias, multiplier, shift; or bias, scale) of a conv op, worked out once per
    compile for its rounding and record width: the partitioner's check, the cascade search's pricing and the
    codegen each lower the op, and the records depend on nothing else (not on the layout or stripes)."""
    records = compile_memo("npu-channel-records")  # (op, rounding, fp64, wide) -> bytes
    key = (op, rounding_name, fp64, wide)
    if key not in records:
        if fp64:
            records[key] = C.pack_channel_params_fp64(conv_bias(op), conv_channel_scales(op, rounding_name), wide)
        else:
            records[key] = C.pack_channel_params(*conv_channel_params(op, rounding_name), wide=wide)
    return records[key]


def _spatial(op) -> dict:
    a = op.attrs
    return dict(stride_h=a["stride_h"], stride_w=a["stride_w"], dilation_h=a.get("dilation_h", 1),
                dilation_w=a.get("dilation_w", 1), pad_top=a["pad_top"], pad_left=a["pad_left"])


def lower_conv2d(op, ctx) -> list:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    return [C.Conv2D(input=_operand(x, ctx), output=_operand(y, ctx), **_conv_weights(w, ctx, op=op),
                     **_conv_common(op, ctx), **_spatial(op))]


def lower_conv2d_whole(op, ctx) -> list:
    """CONV_2D outside a cascade: its ordinary command, or the same sums with a kernel axis folded into the
    channels (fold.py) when the timing model finds that cheaper; NpuTarget.scratch_bytes asks the same
    question (conv_fold) before the memory plan."""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    common = _conv_common(op, ctx)
    choice, streams = conv_fold(op, ctx, common)
    if choice is None:
        return [C.Conv2D(input=_operand(x, ctx), output=_operand(y, ctx), **_conv_weights(w, ctx, op=op), **common,
                         **_spatial(op))]
    data = weight_bytes(w) if choice.axis == "w" else fold.folded_weights(op, choice).tobytes()  # (W: the same bytes)
    stream = streams[choice.axis] if choice.axis in streams else _weight_stream(data, ctx, op)
    layout = _placed_weights(data, stream, fold.folded_weights_shape(op, choice),
                             w.name if choice.axis == "w" else f"{w.name} (kernel rows as channels)", ctx)
    conv = C.Conv2D(input=_operand(x, ctx), output=_operand(y, ctx), **common, **_spatial(op),
                    weights=C.TensorDesc.dense(WEIGHTS_REGION, layout["weights"].offset, w.shape),
                    weight_stream_bytes=layout.get("weight_stream_bytes", 0))
    pad = (WEIGHTS_REGION, _weights_blob(ctx).add(np.int8(x.quant.zp0).tobytes(), 1, f"{x.name} zero point")) \
        if choice.padded else (WEIGHTS_REGION, 0)
    return fold.lower(op, choice, fold.Placement(conv, layout, ctx.scratch_offset(op), pad))


def conv_fold(op, ctx, common: dict | None = None) -> tuple:
    """(the fold.Fold for `op` or None, {axis: compressed stream or None of each folded weight layout}: empty when
    the choice was made earlier in the compile, for the scratch sizes or the cascade search's pricing)."""
    if not fold.candidates(op):
        return None, {}
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    common = common if common is not None else _conv_common(op, ctx)
    # the choice depends on the op, its requantization, whether its weights may be compressed and the board's
    # memories (fold.choose: not on where the operands are in them)
    choices = compile_memo("npu-conv-folds")
    key = (op, common["rounding"], ctx.layer_choice(op, "compress_weights", True), id(ctx.board))
    if key in choices:
        return choices[key], {}
    streams = {}

    def stream_bytes(data) -> int:
        axis = "w" if data.shape == w.shape else "h"
        if axis not in streams:
            streams[axis] = _weight_stream(weight_bytes(w) if axis == "w" else data.tobytes(), ctx, op)
        return len(streams[axis]) if streams[axis] is not None else 0

    plain = C.Conv2D(input=_operand(x, ctx), output=_operand(y, ctx), **common, **_spatial(op),
                     weights=C.TensorDesc.dense(WEIGHTS_REGION, 0, w.shape),
                     weight_stream_bytes=stream_bytes(w.data))  # (its shape: the weights as they are)
    choices[key] = fold.choose(op, plain, stream_bytes, board_memory(ctx.board))
    return choices[key], streams


def lower_depthwise_conv2d(op, ctx) -> list:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    return [C.DepthwiseConv2D(input=_operand(x, ctx), output=_operand(y, ctx), **_conv_weights(w, ctx, op=op),
                              depth_multiplier=op.attrs.get("depth_multiplier", 1), **_conv_common(op, ctx),
                              **_spatial(op))]


def lower_fully_connected(op, ctx) -> list:
    """A 1x1 convolution over [rows, 1, 1, in] with weights [out, 1, 1, in]."""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    out_features, in_features = w.shape
    rows = x.num_elements // in_features
    return [C.Conv2D(input=_operand(x, ctx, (rows, 1, 1, in_features)),
                     output=_operand(y, ctx, (rows, 1, 1, out_features)),
                     **_conv_weights(w, ctx, (out_features, 1, 1, in_features), op), **_conv_common(op, ctx))]


def lower_transpose_conv(op, ctx) -> list:
    """TRANSPOSE_CONV: the TRANSPOSE_CONV2D command (inputs: output shape, OHWI weights, input, bias), TFLite's
    padding as the leading pad, constants from the op layer (an int32 accumulator for int8, int64 for 16x8)."""
    w, x, y = op.inputs[1], op.inputs[2], op.outputs[0]
    b = op.inputs[3] if len(op.inputs) > 3 else None
    d = prepared(op, mode_of(ctx))
    bias = b.data.reshape(-1).astype(np.int64).tolist() if b is not None else [0] * y.shape[-1]
    records = C.pack_channel_params(bias, d.multipliers, d.shifts, wide=x.dtype == "int16")
    a = op.attrs
    return [C.TransposeConv2D(
        input=_operand(x, ctx), output=_operand(y, ctx), **_conv_weights(w, ctx, op=op),
        params=C.ParamRef(WEIGHTS_REGION, _weights_blob(ctx).add(records, 4, f"{y.name} channel params")),
        input_offset=d.input_offset, weight_offset=d.filter_offset, output_offset=d.output_offset,
        act_min=d.act_min, act_max=d.act_max, stride_h=a["stride_h"], stride_w=a["stride_w"], pad_top=a["pad_top"],
        pad_left=a["pad_left"], rounding=_rounding(op, ctx), note=_note(op))]


# -- pooling -----------------------------------------------------------------------------------------------------
def _pool_fields(op, ctx) -> dict:
    a = op.attrs
    act_min, act_max = _act_range(op)
    return dict(input=_operand(op.inputs[0], ctx), output=_operand(op.outputs[0], ctx), filter_h=a["filter_h"],
                filter_w=a["filter_w"], stride_h=a["stride_h"], stride_w=a["stride_w"], pad_top=a["pad_top"],
                pad_left=a["pad_left"], act_min=act_min, act_max=act_max, note=_note(op))


def lower_average_pool(op, ctx) -> list:
    # TFLite's uint8 kernel rounds (sum + n/2) / n on non-negative sums: a floor division after the shift.
    return [C.AvgPool2D(**_pool_fields(op, ctx), floor_rounding=bool(op.uint8_semantics))]


def lower_max_pool(op, ctx) -> list:
    return [C.MaxPool2D(**_pool_fields(op, ctx))]


# -- elementwise -------------------------------------------------------------------------------------------------
def _elementwise_fields(op, ctx) -> dict:
    x1, x2, y = op.inputs[0], op.inputs[1], op.outputs[0]
    act_min, act_max = _act_range(op)
    input1, input2, output = elementwise_operands(op, ctx)
    return dict(input1=input1, input2=input2, output=output, input1_offset=-x1.quant.zp0, input2_offset=-x2.quant.zp0,
                output_offset=y.quant.zp0, act_min=act_min, act_max=act_max, rounding=_rounding(op, ctx),
                note=_note(op))


def lower_add(op, ctx) -> list:
    """ADD (and SUB): TFLite's general quantized path, constants from the op layer (left shift 20 for int8,
    15 for int16)."""
    d = prepared(op, mode_of(ctx))
    if not hasattr(d, "input1_multiplier"):
        raise UnsupportedOpError(f"{op.location} takes LiteRT's power-of-two int16 path, which the NPU does not "
                                 "implement. Assign it to the 'c' target.")
    command = C.Sub if op.type == "SUB" else C.Add
    return [command(**_elementwise_fields(op, ctx), input1_multiplier=d.input1_multiplier,
                    input1_shift=d.input1_shift, input2_multiplier=d.input2_multiplier, input2_shift=d.input2_shift,
                    output_multiplier=d.output_multiplier, output_shift=d.output_shift, left_shift=d.left_shift)]


def lower_mul(op, ctx) -> list:
    d = prepared(op, mode_of(ctx))  # TFLite's MUL Prepare: one multiplier for s1 * s2 / s_out
    return [C.Mul(**_elementwise_fields(op, ctx), output_multiplier=d.output_multiplier, output_shift=d.output_shift)]


def lower_minimum_maximum(op, ctx) -> list:
    """TFLite's MINIMUM/MAXIMUM compare the stored values: no offsets, no requantization, the full range."""
    input1, input2, output = elementwise_operands(op, ctx)
    lo, hi = C.DTYPE_RANGES[output.dtype]
    command = C.Minimum if op.type == "MINIMUM" else C.Maximum
    return [command(input1, input2, output, act_min=lo, act_max=hi, note=_note(op))]


# -- pointwise activations -----------------------------------------------------------------------------------------
def lower_pointwise(op, ctx) -> list:
    """A pointwise activation (RELU family, LOGISTIC, TANH, LEAKY_RELU, PRELU, ...): one TABLE command whose
    table(s) hold the op's value for every input code (pointwise.py); PRELU with per-channel alpha gets one
    table per channel."""
    x, y = pointwise.activation_input(op), op.outputs[0]
    shape = pointwise.table_view(y.shape)
    if getattr(ctx, "probing", False):  # a static-check probe: only the tables' size matters
        count = pointwise.channel_constants(op)
        entries = R.TABLE_ENTRIES_INT16 if x.dtype == "int16" else R.TABLE_ENTRIES_INT8
        data = bytes(count * entries * (2 if x.dtype == "int16" else 1))
    else:
        try:
            values, count = pointwise.tables(op, mode_of(ctx))
        except ValueError as exc:
            raise UnsupportedOpError(f"{op.location} cannot run on the NPU: {exc}. Assign it to the 'c' target.") \
                from None
        data = C.pack_table(values, x.dtype)
    offset = _weights_blob(ctx).add(data, 4, f"{y.name} table")
    return [C.Table(_operand(x, ctx, shape), _operand(y, ctx, shape), C.ParamRef(WEIGHTS_REGION, offset),
                    table_count=count, note=_note(op))]


# -- data movement -----------------------------------------------------------------------------------------------
def lower_resize_nearest(op, ctx) -> list:
    """RESIZE_NEAREST_NEIGHBOR: one GATHER_HW through the source row and column of every output row and column,
    which the op layer computes as TFLite's kernel does (align corners, half-pixel centres, float32 scales)."""
    x, y = op.inputs[0], op.outputs[0]
    d = prepared(op, mode_of(ctx))
    offset = _weights_blob(ctx).add(C.pack_gather_maps(d.rows, d.cols), 2, f"{y.name} row and column maps")
    return [C.GatherHW(_operand(x, ctx), _operand(y, ctx), C.ParamRef(WEIGHTS_REGION, offset), note=_note(op))]


def lower_reshape(op, ctx) -> list:
    """RESHAPE, EXPAND_DIMS, SQUEEZE: no command when the memory planner aliased input and output; else a flat
    copy."""
    x, y = op.inputs[0], op.outputs[0]
    if not x.is_const and ctx.arena_offset(x) == ctx.arena_offset(y):
        return []
    return _copies(movement.flat_box(y.num_elements), _base(x, ctx), ctx.arena_offset(y), y.dtype, _note(op))


def _base(t, ctx) -> tuple:
    """(region, byte offset) of a tensor's first element: a constant in the weights blob, else the arena."""
    if t.is_const:
        data = np.ascontiguousarray(t.data, dtype=NUMPY_DTYPES[t.dtype]).tobytes()
        return WEIGHTS_REGION, _weights_blob(ctx).add(data, 16, t.name)
    return ARENA_REGION, ctx.arena_offset(t)


def _copies(box, src: tuple, dst_offset: int, dtype: str, note: str) -> list:
    """DMA_COPY commands of one movement box (movement.py) from `src` (region, byte offset) to the arena."""
    parts = movement.chunks(box)
    if parts is None:
        raise UnsupportedOpError(f"{note}: a copy does not fit the NPU's descriptors. Assign it to the 'c' target.")
    size = R.DTYPE_BYTES[C.dtype_code(dtype)]
    commands = []
    for dims, src_elem, dst_elem in parts:
        shape = tuple(count for count, _, _ in dims)
        source = C.TensorDesc(src[0], src[1] + src_elem * size, shape, tuple(s * size for _, s, _ in dims),
                              C.dtype_code(dtype))
        target = C.TensorDesc(ARENA_REGION, dst_offset + dst_elem * size, shape, tuple(d * size for _, _, d in dims),
                              C.dtype_code(dtype))
        commands.append(C.DmaCopy(source, target, note=note))
    return commands


def lower_movement(op, ctx) -> list:
    """TRANSPOSE, SLICE, STRIDED_SLICE, SPLIT, PAD, REVERSE_V2, ...: the op layer's AxisMap (one per output) as
    strided copies (movement.py), after one fill of the output with the pad value where the map pads."""
    maps = movement.op_maps(op, prepared(op, mode_of(ctx)))
    x = movement.moved_input(op)
    if maps is None or x is None:
        raise UnsupportedOpError(f"{op.location} moves data by values known only at run time. Assign it to the "
                                 "'c' target.")
    src = _base(x, ctx)
    commands = []
    for y, axis_map in maps:
        fill, boxes = movement.map_boxes(axis_map)
        if fill:
            value = np.asarray([axis_map.pad_value], dtype=NUMPY_DTYPES[y.dtype]).tobytes()
            pad = (WEIGHTS_REGION, _weights_blob(ctx).add(value, 2, f"{y.name} pad value"))
            commands += _copies(movement.fill_box(axis_map.out_shape), pad, ctx.arena_offset(y), y.dtype,
                                f"{_note(op)} (padding of '{y.name}')")
        for box in boxes:
            commands += _copies(box, src, ctx.arena_offset(y), y.dtype, f"{_note(op)} -> '{y.name}'")
    return commands


def lower_concatenation(op, ctx) -> list:
    """CONCATENATION and PACK: each input copied into its slice of the output (raw values: TFLite does not
    rescale int8 or int16 concatenations)."""
    y = op.outputs[0]
    boxes = movement.placement_boxes([x.shape for x in op.inputs], op.attrs["axis"], y.shape)
    commands = []
    for x, box in zip(op.inputs, boxes):
        commands += _copies(box, _base(x, ctx), ctx.arena_offset(y), y.dtype, f"{_note(op)} (input '{x.name}')")
    return commands


LOWERINGS = {
    **{op_type: lower_pointwise for op_type in pointwise.POINTWISE_TYPES},
    "CONV_2D": lower_conv2d,
    "DEPTHWISE_CONV_2D": lower_depthwise_conv2d,
    "FULLY_CONNECTED": lower_fully_connected,
    "TRANSPOSE_CONV": lower_transpose_conv,
    "AVERAGE_POOL_2D": lower_average_pool,
    "MAX_POOL_2D": lower_max_pool,
    "ADD": lower_add,
    "SUB": lower_add,
    "MUL": lower_mul,
    "MINIMUM": lower_minimum_maximum,
    "MAXIMUM": lower_minimum_maximum,
    "RESHAPE": lower_reshape,
    "EXPAND_DIMS": lower_reshape,
    "SQUEEZE": lower_reshape,
    "RESIZE_NEAREST_NEIGHBOR": lower_resize_nearest,
    "CONCATENATION": lower_concatenation,
    "PACK": lower_concatenation,
    **{op_type: lower_movement for op_type in movement.MOVEMENT_TYPES},
}

# Ops run whole (not in a cascade, whose stripes need one command per op) may lower to several commands.
WHOLE_LOWERINGS = {"CONV_2D": lower_conv2d_whole}
