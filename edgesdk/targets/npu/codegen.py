"""NPU codegen: one NPU region (consecutive IR ops) -> the commands of one NPU-1 command table.

`lower_ops(ops, ctx)` returns the commands in op order, ending with `End`. The context places data:
  ctx.arena_offset(tensor) -> int          offset of an activation tensor in region 1 (SRAM arena)
  _weights_blob(ctx).add(data, align=16, label="") -> int   offset of constant bytes in region 0 (flash blob)
  ctx.rounding_for(op) -> "double" | "single" | "fp64"   requantization the compiler chose for op
                                                   (fp64, LiteRT's reference FULLY_CONNECTED: conv commands only)
Every multiplier is computed with edgesdk.ir.quant the way TFLite's Prepare functions compute it, so the
NPU's output equals the reference kernels' bit for bit.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOpError
from ...ir.quant import activation_range, quantize_multiplier
from ...ir.rounding import conv_effective_scales, fully_connected_effective_scales
from ...npu import registers as R
from ...npu import cmdtable as C
from ...npu import weight_codec
from .supported import ADD_LEFT_SHIFT, NPU_SUPPORT, add_parameters, mul_parameters
from ...ops.stripes import groups_by_op
from .stripes import lower_group
from .tables import WEIGHTS_BLOB

WEIGHTS_REGION = 0  # constants blob in flash (ctx.blob(WEIGHTS_BLOB), edgesdk_npu_weights)
ARENA_REGION = 1  # activation arena in SRAM


def _weights_blob(ctx):
    return ctx.blob(WEIGHTS_BLOB)


def lower_ops(ops, ctx) -> list:
    """Commands for one NPU region, in order, ending with the completion command."""
    commands = []
    groups = groups_by_op(ctx.plan.cascades if ctx.plan is not None else ())  # run in stripes (stripes.py)
    for op in ops:
        ok, reason = NPU_SUPPORT.check(op)
        if not ok:
            raise UnsupportedOpError(f"{op.location} cannot run on the NPU: {reason}. Assign it to the 'c' target.")
        if op not in groups:
            commands.extend(LOWERINGS[op.type](op, ctx))
        elif op is groups[op].ops[0]:
            commands.extend(lower_group(groups[op], ctx, lambda member: LOWERINGS[member.type](member, ctx)))
    commands.append(C.End(note="end of NPU region"))
    return commands


# -- operands ------------------------------------------------------------------------------------------------
def _operand(t, ctx, shape=None) -> C.TensorDesc:
    """Dense descriptor of a tensor: constants go to the weights blob, activations live in the arena."""
    shape = C.to_nhwc(t.shape if shape is None else shape)
    if t.is_const:
        offset = _weights_blob(ctx).add(np.ascontiguousarray(t.data, dtype=np.int8).tobytes(), 16, t.name)
        return C.TensorDesc.dense(WEIGHTS_REGION, offset, shape)
    return C.TensorDesc.dense(ARENA_REGION, ctx.arena_offset(t), shape)


def _conv_weights(w, ctx, shape=None, op=None) -> dict:
    """The weights fields of a conv command: a compressed stream when that is smaller (weight_codec.py).

    Fewer flash bytes is fewer cycles wherever the flash fetch bounds the command, and the decode is never
    slower than the fetch of the dense bytes; a tuning schedule may switch it per layer
    (CodegenOptions.layer_choice).
    """
    data = np.ascontiguousarray(w.data, dtype=np.int8).tobytes()
    compress = ctx.layer_choice(op, "compress_weights", True) if op is not None else True
    stream = weight_codec.compress_if_smaller(data) if compress else None
    if stream is None:
        return dict(weights=_operand(w, ctx, shape))
    offset = _weights_blob(ctx).add(stream, 16, f"{w.name} (compressed)")
    desc = C.TensorDesc.dense(WEIGHTS_REGION, offset, C.to_nhwc(w.shape if shape is None else shape))
    return dict(weights=desc, weight_stream_bytes=len(stream))


def _broadcast_operand(t, out_shape, ctx) -> C.TensorDesc:
    """`t` read with the output's shape: size-1 dimensions that the output expands get stride 0."""
    dense = _operand(t, ctx)
    out_nhwc = C.to_nhwc(out_shape)
    strides = tuple(0 if d == 1 and o > 1 else s for d, o, s in zip(dense.shape, out_nhwc, dense.strides))
    return C.TensorDesc(dense.region, dense.offset, out_nhwc, strides)


def _rounding(op, ctx, allow_fp64: bool = False) -> int:
    name = ctx.rounding_for(op)
    code = C.rounding_code(name) if name in C.ROUNDING_CODES else None
    if code is None or (code == R.ROUNDING_FP64 and not allow_fp64):
        raise UnsupportedOpError(f"{op.location} needs the '{name}' requantization rounding, which the NPU's "
                                 f"{op.type} cannot do. Assign it to the 'c' target.")
    return code


def _act_range(op) -> tuple:
    y = op.outputs[0]
    return activation_range(op.attrs.get("activation", "NONE"), y.quant.scale0, y.quant.zp0)


def _note(op) -> str:
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
    pairs = [quantize_multiplier(scale) for scale in conv_channel_scales(op, rounding)]
    return conv_bias(op), [m for m, _ in pairs], [s for _, s in pairs]


def _conv_common(op, ctx) -> dict:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    rounding = _rounding(op, ctx, allow_fp64=True)
    rounding_name = ctx.rounding_for(op)
    if rounding == R.ROUNDING_FP64:
        params = C.pack_channel_params_fp64(conv_bias(op), conv_channel_scales(op, rounding_name))
    else:
        params = C.pack_channel_params(*conv_channel_params(op, rounding_name))
    act_min, act_max = _act_range(op)
    return dict(
        params=C.ParamRef(WEIGHTS_REGION, _weights_blob(ctx).add(params, 4, f"{y.name} channel params")),
        input_offset=-x.quant.zp0, weight_offset=-w.quant.zp0, output_offset=y.quant.zp0,
        act_min=act_min, act_max=act_max, rounding=rounding, note=_note(op))


def _spatial(op) -> dict:
    a = op.attrs
    return dict(stride_h=a["stride_h"], stride_w=a["stride_w"], dilation_h=a.get("dilation_h", 1),
                dilation_w=a.get("dilation_w", 1), pad_top=a["pad_top"], pad_left=a["pad_left"])


def lower_conv2d(op, ctx) -> list:
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    return [C.Conv2D(input=_operand(x, ctx), output=_operand(y, ctx), **_conv_weights(w, ctx, op=op),
                     **_conv_common(op, ctx), **_spatial(op))]


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
    return dict(input1=_broadcast_operand(x1, y.shape, ctx), input2=_broadcast_operand(x2, y.shape, ctx),
                output=_operand(y, ctx), input1_offset=-x1.quant.zp0, input2_offset=-x2.quant.zp0,
                output_offset=y.quant.zp0, act_min=act_min, act_max=act_max, rounding=_rounding(op, ctx),
                note=_note(op))


def lower_add(op, ctx) -> list:
    m1, s1, m2, s2, mo, so = add_parameters(op)
    return [C.Add(**_elementwise_fields(op, ctx), input1_multiplier=m1, input1_shift=s1, input2_multiplier=m2,
                  input2_shift=s2, output_multiplier=mo, output_shift=so, left_shift=ADD_LEFT_SHIFT)]


def lower_mul(op, ctx) -> list:
    mo, so = mul_parameters(op, ctx.rounding_mode)
    return [C.Mul(**_elementwise_fields(op, ctx), output_multiplier=mo, output_shift=so)]


# -- data movement -----------------------------------------------------------------------------------------------
def lower_reshape(op, ctx) -> list:
    """No command when the memory planner aliased input and output; else one contiguous copy."""
    x, y = op.inputs[0], op.outputs[0]
    if not x.is_const and ctx.arena_offset(x) == ctx.arena_offset(y):
        return []
    return [C.DmaCopy(_operand(x, ctx, y.shape), _operand(y, ctx), note=_note(op))]


def lower_concatenation(op, ctx) -> list:
    """One DMA per input into its slice of the output (same quantization, so a plain copy)."""
    y = op.outputs[0]
    out = _operand(y, ctx)
    axis = op.attrs["axis"] + (4 - len(y.shape))
    commands, position = [], 0
    for x in op.inputs:
        src = _operand(x, ctx)
        dst = C.TensorDesc(out.region, out.offset + position * out.strides[axis], src.shape, out.strides)
        commands.append(C.DmaCopy(src, dst, note=f"{_note(op)} (input '{x.name}')"))
        position += src.shape[axis]
    return commands


LOWERINGS = {
    "CONV_2D": lower_conv2d,
    "DEPTHWISE_CONV_2D": lower_depthwise_conv2d,
    "FULLY_CONNECTED": lower_fully_connected,
    "AVERAGE_POOL_2D": lower_average_pool,
    "MAX_POOL_2D": lower_max_pool,
    "ADD": lower_add,
    "MUL": lower_mul,
    "RESHAPE": lower_reshape,
    "CONCATENATION": lower_concatenation,
}
