"""QDQ pattern recognition: a matched Relax subgraph -> one op of edgesdk's integer graph IR.

A quantized model arrives from TVM's frontends in "QDQ" form: every integer op is written as
dequantize(int8 inputs) -> float op -> quantize(int8 output), e.g.

    q(relu(add(conv2d(dq(x), dq(W)), dq(b))))      ->  CONV_2D(x, W, b), fused activation RELU

The converters here read such a subgraph (the Relax expression rooted at the quantize, or at the int8
clip TVM's TFLite frontend puts after it) and build the IR op the rest of edgesdk already compiles: TFLite
builtin names, NHWC activations, OHWI/1HWC weights, exact int8/int32 constants with their QuantParams.
The same converters serve two callers:

* the importer (edgesdk/tvm/relax_import.py), which turns a whole Relax function into a Graph;
* the BYOC check functions (edgesdk/tvm/byoc.py), which build the IR op of one pattern match and ask a
  target's constraints whether it would take it -- so TVM's partition equals `edgesdk inspect`'s.

Both supply a `Context` that resolves the subgraph's inputs (IR tensors in a requested layout) and looks
through variable bindings. A converter that meets something it cannot express (grouped convolution, a
float bias that does not fit, ...) raises NotConvertible: the importer then lowers the subgraph through
TVM instead (edgesdk/tvm/lowering.py), the BYOC check rejects the match.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass, field
from ..ir.graph import Op, QuantParams, Tensor

NHWC_FROM_NCHW = (0, 2, 3, 1)  # storage axes of an NCHW tensor kept NHWC: storage = logical.transpose(perm)
RELU_BOUNDS = {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1"}
# An int8 clip exists because the model had a fused activation: when several give the same range (RELU and
# NONE with zero point -128), the first one here is taken.
TFLITE_ACTIVATIONS = ("RELU", "RELU6", "RELU_N1_TO_1", "NONE")


class NotConvertible(Exception):
    """The subgraph has the right shape but something edgesdk's IR op cannot express (str = why)."""


@dataclass
class Converted:
    """One IR op and the layout of its output (`perm`: storage axes of the Relax value)."""

    op: Op
    perm: tuple


@dataclass
class Context:
    """What a converter needs from its caller.

    lookup(expr)            -> the value bound to a Relax Var (or the expr itself when it is not bound)
    activation(expr, perm)  -> (IR Tensor, storage perm) of an input activation; `perm` None = as it is,
                               else the caller inserts a transpose so the tensor is stored that way
    quant_of(tensor, dq)    -> the QuantParams to use for `tensor` read through dequantize call `dq`
    new_tensor(...)         -> a fresh IR output tensor
    """

    lookup: object
    activation: object
    quant_of: object
    new_tensor: object
    next_index: object = None
    notes: list = field(default_factory=list)


# -- reading Relax expressions ----------------------------------------------------------------------------

def op_name(expr) -> str:
    op = getattr(expr, "op", None)
    return getattr(op, "name", "") if op is not None else ""


def is_call(expr, *names) -> bool:
    return op_name(expr) in names


def is_const(expr) -> bool:
    return type(expr).__name__ in ("GenericConst", "Constant")


def const_array(expr) -> np.ndarray:
    return np.asarray(expr.value.numpy())


def dtype_of(expr) -> str:
    return str(expr.ty.dtype)


def shape_of(expr) -> tuple:
    return tuple(int(d) for d in expr.ty.shape)


def qparams(call) -> QuantParams:
    """Scale, zero point and axis of a relax.quantize/dequantize call (constants only)."""
    scale_expr, zp_expr = call.args[1], call.args[2]
    if not (is_const(scale_expr) and is_const(zp_expr)):
        raise NotConvertible("quantization parameters are not constants")
    scale = const_array(scale_expr).astype(np.float32).reshape(-1)
    zp = const_array(zp_expr).astype(np.int64).reshape(-1)
    if zp.size == 1 and scale.size > 1:
        zp = np.repeat(zp, scale.size)
    if zp.size != scale.size or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise NotConvertible("invalid quantization parameters")
    return QuantParams(scale, zp, int(call.attrs.axis) if scale.size > 1 else 0)


def legalize_quant(quant: QuantParams, dtype: str) -> QuantParams:
    """uint8 -> int8 as edgesdk's TFLite importer does: same real values with zero points shifted by -128."""
    if dtype == "uint8":
        return QuantParams(quant.scale, quant.zero_point - 128, quant.axis)
    return quant


def out_dtype(call) -> str:
    return str(call.attrs.out_dtype)


def float_attr(value) -> float:
    return float(getattr(value, "value", value))


# -- constant weights --------------------------------------------------------------------------------------

@dataclass
class FoldedConst:
    """Integer data of a constant in the layout of the Relax expression, with its quantization."""

    data: np.ndarray
    quant: QuantParams | None
    dtype: str


def fold_const(expr, ctx: Context) -> FoldedConst:
    """dequantize / permute_dims / reshape chains over a constant, evaluated on the integers.

    The per-channel axis is tracked through the transposes and reshapes with an array of channel indices
    that undergoes the same transformations as the data.
    """
    data, channel, quant, dtype = _fold(ctx.lookup(expr), ctx)
    if quant is None:
        return FoldedConst(data, None, dtype)
    if quant.scale.size > 1:
        axis = _channel_axis(channel, quant.scale.size)
        quant = QuantParams(quant.scale, quant.zero_point, axis)
    return FoldedConst(data, quant, dtype)


def _fold(expr, ctx):
    if is_const(expr):
        data = const_array(expr)
        return data, None, None, str(data.dtype)
    if not hasattr(expr, "op"):
        raise NotConvertible("weights are not constant")
    inner = ctx.lookup(expr.args[0])
    data, channel, quant, dtype = _fold(inner, ctx)
    name = op_name(expr)
    if name == "relax.dequantize":
        if quant is not None:
            raise NotConvertible("weights dequantized twice")
        quant = legalize_quant(qparams(expr), dtype)
        if dtype == "uint8":
            data, dtype = (data.astype(np.int16) - 128).astype(np.int8), "int8"
        if quant.scale.size > 1:
            shape = [1] * data.ndim
            shape[quant.axis] = quant.scale.size
            channel = np.broadcast_to(np.arange(quant.scale.size).reshape(shape), data.shape)
        return data, channel, quant, dtype
    if name == "relax.permute_dims":
        axes = expr.attrs.axes
        axes = [int(a) for a in axes] if axes is not None else list(range(data.ndim))[::-1]
        return data.transpose(axes), None if channel is None else channel.transpose(axes), quant, dtype
    if name == "relax.reshape":
        shape = shape_of(expr)
        return data.reshape(shape), None if channel is None else channel.reshape(shape), quant, dtype
    raise NotConvertible(f"weights computed by {name}")


def _channel_axis(channel: np.ndarray, count: int) -> int:
    for axis in range(channel.ndim):
        if channel.shape[axis] != count:
            continue
        shape = [1] * channel.ndim
        shape[axis] = count
        if np.array_equal(channel, np.broadcast_to(np.arange(count).reshape(shape), channel.shape)):
            return axis
    raise NotConvertible("per-channel quantization does not follow one axis of the weights")


def to_layout(data: np.ndarray, quant, source: str, target: str):
    """Permute weights from layout `source` (e.g. "OIHW", "HWIO") to `target`, moving the quantized axis."""
    perm = [source.index(c) for c in target]
    if quant is not None and quant.scale.size > 1:
        quant = QuantParams(quant.scale, quant.zero_point, perm.index(quant.axis))
    return data.transpose(perm), quant


# -- the requantizing chain around an op --------------------------------------------------------------------

@dataclass
class Chain:
    """root = [int8 clip] <- quantize <- [activation] <- [add bias] <- core."""

    core: object
    bias: object | None
    float_activation: str | None
    quantize: object
    int_clip: tuple | None


def parse_chain(root, ctx: Context, allow_bias: bool = False, allow_activation: bool = True) -> Chain:
    expr, int_clip = root, None
    if is_call(expr, "relax.clip") and dtype_of(expr) in ("int8", "uint8"):
        int_clip = (float_attr(expr.args[1]), float_attr(expr.args[2]))
        expr = ctx.lookup(expr.args[0])
    if not is_call(expr, "relax.quantize"):
        raise NotConvertible("the subgraph does not end in quantize")
    q = expr
    body = ctx.lookup(q.args[0])
    act = None
    if allow_activation and is_call(body, "relax.nn.relu"):
        act, body = "RELU", ctx.lookup(body.args[0])
    elif allow_activation and is_call(body, "relax.clip") and dtype_of(body) == "float32":
        bounds = (float_attr(body.args[1]), float_attr(body.args[2]))
        act = RELU_BOUNDS.get(bounds, "RELU" if bounds[0] == 0.0 and bounds[1] >= 3.0e38 else None)
        if act is None:
            raise NotConvertible(f"clip to {bounds} is not a TFLite fused activation")
        body = ctx.lookup(body.args[0])
    bias = None
    if allow_bias and is_call(body, "relax.add"):
        lhs, rhs = ctx.lookup(body.args[0]), ctx.lookup(body.args[1])
        if _is_const_tree(rhs, ctx):
            body, bias = lhs, rhs
        elif _is_const_tree(lhs, ctx):
            body, bias = rhs, lhs
    return Chain(body, bias, act, q, int_clip)


def _is_const_tree(expr, ctx) -> bool:
    if is_const(expr):
        return True
    if is_call(expr, "relax.dequantize", "relax.reshape", "relax.permute_dims", "relax.expand_dims"):
        return _is_const_tree(ctx.lookup(expr.args[0]), ctx)
    return False


def output_tensor(chain: Chain, ctx: Context, storage_shape: tuple, name: str) -> Tensor:
    q = chain.quantize
    dtype = out_dtype(q)
    if dtype not in ("int8", "uint8"):
        raise NotConvertible(f"quantize to {dtype}")
    quant = legalize_quant(qparams(q), dtype)
    if quant.scale.size > 1:
        raise NotConvertible("per-channel quantized activations")
    return ctx.new_tensor(name, storage_shape, "int8", quant, "uint8" if dtype == "uint8" else None)


def fused_activation(chain: Chain, out: Tensor) -> str:
    """The TFLite fused activation of the chain: a float relu/clip, or the int8 clip of TVM's TFLite frontend."""
    if chain.int_clip is None:
        return chain.float_activation or "NONE"
    if chain.float_activation is not None:
        raise NotConvertible("both a float activation and an integer clip")
    from ..ir.quant import activation_range

    lo, hi = chain.int_clip
    if out.orig_dtype == "uint8":
        lo, hi = lo - 128, hi - 128
    for act in TFLITE_ACTIVATIONS:
        if activation_range(act, out.quant.scale0, out.quant.zp0) == (int(lo), int(hi)):
            return act
    raise NotConvertible(f"integer clip [{lo}, {hi}] is no TFLite fused activation of the output quantization")


def dequantized_input(expr, ctx: Context, perm=None):
    """The int8 IR tensor read through `dequantize(x)` (in storage `perm`), with the dequantize's QuantParams."""
    dq = ctx.lookup(expr)
    if not is_call(dq, "relax.dequantize"):
        raise NotConvertible("an operand is not dequantized from an integer tensor")
    tensor, got_perm = ctx.activation(dq.args[0], perm)
    if tensor.dtype != "int8":
        raise NotConvertible("an operand is not an int8 quantized tensor")
    ctx.quant_of(tensor, dq)
    return tensor, got_perm


# -- converters ----------------------------------------------------------------------------------------------

def _pads(padding) -> tuple:
    p = [int(v) for v in padding]
    if len(p) == 2:
        p = p * 2
    return p[0], p[1], p[2], p[3]  # top, left, bottom, right


def _spatial_attrs(strides, dilation, padding) -> dict:
    top, left, bottom, right = _pads(padding)
    return {"stride_h": int(strides[0]), "stride_w": int(strides[1]),
            "dilation_h": int(dilation[0]) if dilation is not None else 1,
            "dilation_w": int(dilation[1]) if dilation is not None else 1,
            "pad_top": top, "pad_left": left, "pad_bottom": bottom, "pad_right": right, "padding": "EXPLICIT"}


def _layout_perm(layout: str) -> tuple:
    if layout == "NHWC":
        return (0, 1, 2, 3)
    if layout == "NCHW":
        return NHWC_FROM_NCHW
    raise NotConvertible(f"data layout {layout}")


def _storage_shape(logical: tuple, perm: tuple) -> tuple:
    return tuple(logical[a] for a in perm)


def convert_conv2d(root, ctx: Context, name: str) -> Converted:
    chain = parse_chain(root, ctx, allow_bias=True)
    conv = chain.core
    if not is_call(conv, "relax.nn.conv2d"):
        raise NotConvertible("not a convolution")
    a = conv.attrs
    perm = _layout_perm(str(a.data_layout))
    if str(a.out_layout) != str(a.data_layout):
        raise NotConvertible("output layout differs from the input layout")
    x, _ = dequantized_input(conv.args[0], ctx, perm)
    w = fold_const(conv.args[1], ctx)
    if w.quant is None or w.dtype != "int8":
        raise NotConvertible("weights are not int8 quantized constants")
    data, wq = to_layout(w.data, w.quant, str(a.kernel_layout), "OHWI")
    groups, in_c = int(a.groups), x.shape[3]
    y = output_tensor(chain, ctx, _storage_shape(shape_of(conv), perm), name)
    attrs = _spatial_attrs(a.strides, a.dilation, a.padding)
    if groups == 1:
        op_type, weights = "CONV_2D", data
    elif groups == in_c and data.shape[3] == 1:
        op_type = "DEPTHWISE_CONV_2D"
        weights = data.transpose(3, 1, 2, 0)  # [C*M, KH, KW, 1] -> 1HWC
        if wq.scale.size > 1:
            wq = QuantParams(wq.scale, wq.zero_point, 3)
        attrs["depth_multiplier"] = data.shape[0] // in_c
    else:
        raise NotConvertible(f"grouped convolution ({groups} groups)")
    w_tensor = ctx.new_tensor(f"{name}_weights", weights.shape, "int8", wq, None, np.ascontiguousarray(weights))
    bias = _bias_tensor(chain.bias, ctx, x, wq, weights.shape[0] if op_type == "CONV_2D" else weights.shape[3], name)
    attrs["activation"] = fused_activation(chain, y)
    return Converted(Op(ctx.next_index(), op_type, [x, w_tensor, bias], [y], attrs), perm)


def _bias_tensor(expr, ctx: Context, x: Tensor, wq: QuantParams, channels: int, name: str):
    """int32 bias at scale s_x * s_w (what TFLite's kernels assume); a float or differently scaled bias is
    requantized to it (rounded half to even)."""
    if expr is None:
        return None
    b = fold_const(expr, ctx)
    values = b.data.reshape(-1)
    if values.size != channels:
        raise NotConvertible(f"bias has {values.size} values for {channels} channels")
    want = (np.float64(x.quant.scale0) * wq.scale.astype(np.float64)) * np.ones(channels)
    per_tensor = wq.scale.size == 1
    if b.quant is not None and b.dtype == "int32" and np.all(b.quant.zero_point == 0):
        have = b.quant.scale.astype(np.float64) * np.ones(channels)
        if np.allclose(have, want, rtol=1e-6, atol=0):
            data = values.astype(np.int32)
        else:
            data = np.rint(values.astype(np.float64) * have / want)
    elif b.quant is None and b.dtype == "float32":
        data = np.rint(values.astype(np.float64) / want)
        ctx.notes.append(f"{name}: float bias quantized to int32 at input_scale * weight_scale")
    else:
        raise NotConvertible("bias is neither int32 quantized nor float")
    if np.any(np.abs(data) > 2**31 - 1):
        raise NotConvertible("bias does not fit int32 at input_scale * weight_scale")
    scales = want[:1] if per_tensor else want
    quant = QuantParams(scales.astype(np.float32), np.zeros(scales.size, np.int64), 0)
    return ctx.new_tensor(f"{name}_bias", (channels,), "int32", quant, None, data.astype(np.int32))


def convert_fully_connected(root, ctx: Context, name: str) -> Converted:
    chain = parse_chain(root, ctx, allow_bias=True)
    mm = chain.core
    if not is_call(mm, "relax.matmul"):
        raise NotConvertible("not a matrix multiplication")
    x, _ = dequantized_input(mm.args[0], ctx, tuple(range(len(shape_of(mm.args[0])))))
    w = fold_const(mm.args[1], ctx)
    if w.quant is None or w.dtype != "int8" or w.data.ndim != 2:
        raise NotConvertible("weights are not 2-D int8 quantized constants")
    data, wq = to_layout(w.data, w.quant, "IO", "OI")  # x @ W with W [in, out] -> TFLite [out, in]
    if x.shape[-1] != data.shape[1]:
        raise NotConvertible("input depth does not match the weights")
    y = output_tensor(chain, ctx, shape_of(mm), name)
    w_tensor = ctx.new_tensor(f"{name}_weights", data.shape, "int8", wq, None, np.ascontiguousarray(data))
    bias = _bias_tensor(chain.bias, ctx, x, wq, data.shape[0], name)
    attrs = {"activation": fused_activation(chain, y), "keep_num_dims": len(y.shape) != 2}
    return Converted(Op(ctx.next_index(), "FULLY_CONNECTED", [x, w_tensor, bias], [y], attrs),
                     tuple(range(len(y.shape))))


def convert_binary(root, ctx: Context, name: str) -> Converted:
    chain = parse_chain(root, ctx)
    core = chain.core
    op_type = {"relax.add": "ADD", "relax.multiply": "MUL"}.get(op_name(core))
    if op_type is None:
        raise NotConvertible("not an add or multiply")
    constant = [_is_const_tree(ctx.lookup(arg), ctx) for arg in core.args[:2]]
    if all(constant):
        raise NotConvertible("both operands are constants")
    first = 1 if constant[0] else 0  # the activation operand sets the layout
    lhs_shape, rhs_shape = shape_of(core.args[first]), shape_of(core.args[1 - first])
    a, perm = dequantized_input(core.args[first], ctx, None)
    scalar = constant[1 - first] and int(np.prod(rhs_shape)) == 1  # broadcasts in any layout
    if not scalar and (len(lhs_shape) != len(rhs_shape) or len(lhs_shape) != len(perm)):
        a, perm = dequantized_input(core.args[first], ctx, tuple(range(len(lhs_shape))))
    if constant[1 - first]:
        b = _constant_operand(core.args[1 - first], ctx, perm, name)
    else:
        b, _ = dequantized_input(core.args[1 - first], ctx, perm if len(rhs_shape) == len(perm) else None)
    y = output_tensor(chain, ctx, _storage_shape(shape_of(core), perm), name)
    inputs = [b, a] if first else [a, b]
    return Converted(Op(ctx.next_index(), op_type, inputs, [y], {"activation": fused_activation(chain, y)}), perm)


def _constant_operand(expr, ctx: Context, perm: tuple, name: str) -> Tensor:
    """An operand dequantized from a constant: an int8 constant tensor, stored in `perm` when it has that rank."""
    folded = fold_const(expr, ctx)
    if folded.quant is None or folded.dtype != "int8" or folded.quant.scale.size != 1:
        raise NotConvertible("a constant operand is not an int8 tensor quantized per tensor")
    data = folded.data.transpose(perm) if folded.data.ndim == len(perm) else folded.data
    return ctx.new_tensor(f"{name}_constant", data.shape, "int8", folded.quant, None, np.ascontiguousarray(data))


def convert_pool(root, ctx: Context, name: str) -> Converted:
    """QDQ pooling (dq -> pool -> q) or TVM's TFLite form of integer average pooling (astype int32 ->
    avg_pool2d -> astype int8, no requantization)."""
    if is_call(root, "relax.astype"):
        pool = ctx.lookup(root.args[0])
        if not is_call(pool, "relax.nn.avg_pool2d") or dtype_of(root) not in ("int8", "uint8"):
            raise NotConvertible("not an integer average pool")
        widen = ctx.lookup(pool.args[0])
        if not is_call(widen, "relax.astype"):
            raise NotConvertible("not an integer average pool")
        perm = _layout_perm(str(pool.attrs.layout))
        x, _ = ctx.activation(widen.args[0], perm)
        y = ctx.new_tensor(name, _storage_shape(shape_of(root), perm), "int8", x.quant, x.orig_dtype)
        act = "NONE"
    else:
        chain = parse_chain(root, ctx)
        pool = chain.core
        if not is_call(pool, "relax.nn.avg_pool2d", "relax.nn.max_pool2d"):
            raise NotConvertible("not a pooling op")
        perm = _layout_perm(str(pool.attrs.layout))
        x, _ = dequantized_input(pool.args[0], ctx, perm)
        y = output_tensor(chain, ctx, _storage_shape(shape_of(pool), perm), name)
        act = fused_activation(chain, y)
    a = pool.attrs
    if bool(a.ceil_mode) or (is_call(pool, "relax.nn.avg_pool2d") and bool(a.count_include_pad)):
        raise NotConvertible("ceil_mode or count_include_pad pooling")
    attrs = _spatial_attrs(a.strides, a.dilation, a.padding)
    if attrs["dilation_h"] != 1 or attrs["dilation_w"] != 1:
        raise NotConvertible("dilated pooling")
    attrs.update(filter_h=int(a.pool_size[0]), filter_w=int(a.pool_size[1]), activation=act)
    op_type = "MAX_POOL_2D" if is_call(pool, "relax.nn.max_pool2d") else "AVERAGE_POOL_2D"
    return Converted(Op(ctx.next_index(), op_type, [x], [y], attrs), perm)


def convert_mean(root, ctx: Context, name: str) -> Converted:
    chain = parse_chain(root, ctx, allow_activation=False)
    mean = chain.core
    if not is_call(mean, "relax.mean"):
        raise NotConvertible("not a mean")
    rank = len(shape_of(mean.args[0]))
    axes = sorted({int(v) % rank for v in mean.attrs.axis}) if mean.attrs.axis is not None else list(range(rank))
    keep = bool(mean.attrs.keepdims)
    x, perm = dequantized_input(mean.args[0], ctx, None if keep else tuple(range(rank)))
    storage_axes = tuple(sorted(perm.index(a) for a in axes))
    y = output_tensor(chain, ctx, _storage_shape(shape_of(mean), perm) if keep else shape_of(mean), name)
    axes_tensor = ctx.new_tensor(f"{name}_axes", (len(storage_axes),), "int32", None, None,
                                 np.array(storage_axes, np.int32))
    op = Op(ctx.next_index(), "MEAN", [x, axes_tensor], [y], {"axes": storage_axes, "keep_dims": keep})
    return Converted(op, perm if keep else tuple(range(len(y.shape))))


def convert_reshape(root, ctx: Context, name: str) -> Converted:
    """dq -> reshape -> q with unchanged quantization, or a reshape of int8 data (TVM's TFLite form)."""
    if is_call(root, "relax.reshape") and dtype_of(root) in ("int8", "uint8"):
        x, _ = ctx.activation(root.args[0], tuple(range(len(shape_of(root.args[0])))))
        y = ctx.new_tensor(name, shape_of(root), "int8", x.quant, x.orig_dtype)
    else:
        chain = parse_chain(root, ctx, allow_activation=False)
        if not is_call(chain.core, "relax.reshape") or chain.int_clip is not None:
            raise NotConvertible("not a reshape")
        x, _ = dequantized_input(chain.core.args[0], ctx, tuple(range(len(shape_of(chain.core.args[0])))))
        y = output_tensor(chain, ctx, shape_of(chain.core), name)
        if not _same_quant(x.quant, y.quant):
            raise NotConvertible("reshape changes the quantization")
    return Converted(Op(ctx.next_index(), "RESHAPE", [x], [y], {}), tuple(range(len(y.shape))))


def _same_quant(a: QuantParams, b: QuantParams) -> bool:
    return np.array_equal(a.scale, b.scale) and np.array_equal(a.zero_point, b.zero_point)


def convert_softmax(root, ctx: Context, name: str) -> Converted:
    chain = parse_chain(root, ctx, allow_activation=False)
    sm = chain.core
    if not is_call(sm, "relax.nn.softmax"):
        raise NotConvertible("not a softmax")
    rank = len(shape_of(sm.args[0]))
    axis = int(sm.attrs.axis) % rank
    x, perm = dequantized_input(sm.args[0], ctx, None)
    if perm.index(axis) != rank - 1:
        x, perm = dequantized_input(sm.args[0], ctx, tuple(range(rank)))
        if axis != rank - 1:
            raise NotConvertible("softmax over an axis other than the innermost")
    y = output_tensor(chain, ctx, _storage_shape(shape_of(sm), perm), name)
    return Converted(Op(ctx.next_index(), "SOFTMAX", [x], [y], {"beta": 1.0}), perm)


def convert_unary(root, ctx: Context, name: str) -> Converted:
    """Standalone activations: dq -> sigmoid/tanh/relu/clip -> q."""
    chain = parse_chain(root, ctx, allow_activation=False)
    core = chain.core
    table = {"relax.sigmoid": "LOGISTIC", "relax.tanh": "TANH", "relax.nn.relu": "RELU"}
    op_type = table.get(op_name(core))
    if is_call(core, "relax.clip"):
        bounds = (float_attr(core.args[1]), float_attr(core.args[2]))
        op_type = RELU_BOUNDS.get(bounds, "RELU" if bounds[0] == 0.0 and bounds[1] >= 3.0e38 else None)
    if op_type is None or chain.int_clip is not None:
        raise NotConvertible("not a TFLite activation op")
    x, perm = dequantized_input(core.args[0], ctx, None)
    y = output_tensor(chain, ctx, _storage_shape(shape_of(core), perm), name)
    return Converted(Op(ctx.next_index(), op_type, [x], [y], {}), perm)


def convert_concat(root, ctx: Context, name: str) -> Converted:
    chain = parse_chain(root, ctx, allow_activation=False)
    cat = chain.core
    if not is_call(cat, "relax.concat"):
        raise NotConvertible("not a concatenation")
    fields = list(ctx.lookup(cat.args[0]).fields)
    rank = len(shape_of(cat))
    axis = int(cat.attrs.axis) % rank
    first, perm = dequantized_input(fields[0], ctx, None)
    inputs = [first] + [dequantized_input(f, ctx, perm)[0] for f in fields[1:]]
    y = output_tensor(chain, ctx, _storage_shape(shape_of(cat), perm), name)
    attrs = {"axis": perm.index(axis), "activation": "NONE"}
    return Converted(Op(ctx.next_index(), "CONCATENATION", inputs, [y], attrs), perm)


def convert_quantize(root, ctx: Context, name: str) -> Converted:
    """quantize(float tensor) -> QUANTIZE float32 -> int8; quantize(dequantize(x)) -> requantize."""
    chain = parse_chain(root, ctx, allow_activation=False)
    src = chain.core
    if chain.int_clip is not None:
        raise NotConvertible("clip after quantize")
    if is_call(src, "relax.dequantize"):
        x, perm = dequantized_input(src, ctx, None)
    else:
        x, perm = ctx.activation(src, None)
        if x.dtype != "float32":
            raise NotConvertible("quantize of a non-float tensor")
    y = output_tensor(chain, ctx, x.shape, name)
    return Converted(Op(ctx.next_index(), "QUANTIZE", [x], [y], {}), perm)


# Pattern name -> converter, in the order the importer tries them (most specific first).
CONVERTERS = {
    "CONV_2D": convert_conv2d,
    "FULLY_CONNECTED": convert_fully_connected,
    "ADD_MUL": convert_binary,
    "POOL_2D": convert_pool,
    "MEAN": convert_mean,
    "SOFTMAX": convert_softmax,
    "CONCATENATION": convert_concat,
    "RESHAPE": convert_reshape,
    "ACTIVATION": convert_unary,
    "QUANTIZE": convert_quantize,
}
