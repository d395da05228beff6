"""Cascade groups on the host core: each stripe event of a group (edgesdk/ops/stripes.py) becomes one kernel call.

A stripe of a layer is the layer's ordinary kernel call over a row range, mirroring the NPU's row-range
descriptors (edgesdk/targets/npu/stripes.py): the input pointer moves to the first input row the stripe reads,
the params struct says the stripe's input height (the rows it may read), output height and leading padding,
and the output pointer moves to the stripe's first output row (in a stripe buffer: its row in the buffer).
Every window kernel below (ROW_KERNELS) takes its rows from `in_h`, `out_h` and `pad_top` alone and treats a
row at or past `in_h` as padding, so a stripe computes exactly what the whole layer computes for those rows (a
pointwise convolution the emitter flattened to one long row gets `in_w` / `out_w` of the stripe's pixels); the
elementwise kernels take the stripe's shape (no broadcasting) or element count. A Shift is one
`edgesdk_reshape` call (a memmove: source and destination rows may overlap), a Fetch one call of the caller's
`edgesdk_default_read_input_rows` into the streamed input's stripe buffer.

Only the int8 kernels stripe. The 3x3 sliding depthwise kernel always loads three input rows, so a stripe of
it that reads fewer (one output row at a padded edge) runs the reference depthwise loops instead, with their
own constants (`LayerCalls.fallback`).

The cost of a group is the host kernels' instruction model (kernel_cost.py, calibrated on the emulator) over
the calls the group makes, each priced over its own rows; each shift its bytes.
"""

from __future__ import annotations

from ...ops.broadcast import MAX_DIMS
from ...ops.stripes import Compute, Fetch, Shift, nhwc, row_bytes
from ...ctext import UINT8_INPUT_READER, UINT8_INPUT_READER_TEXT
from .calls import READ_INPUT_ROWS, SHIFT_KERNEL, Arena, Const, HostLayer, Int, KernelCall, Params, render_params
from .kernel_cost import fetch_instructions, generic_call_instructions, layer_call_instructions, shift_instructions

ROW_KERNELS = ("edgesdk_conv2d_s8", "edgesdk_conv2d_s8_paired", "edgesdk_depthwise_conv2d_s8",
               "edgesdk_average_pool2d_s8", "edgesdk_max_pool2d_s8")
ELEMENTWISE_KERNELS = ("edgesdk_add_s8", "edgesdk_mul_s8")
SIZED_KERNELS = ("edgesdk_hard_swish_s8",)  # params.size elements, one input

STRIPE_TYPES = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "ADD", "MUL", "HARD_SWISH")
SLIDING_ROWS = 3  # input rows the sliding depthwise kernel loads for every output row


def can_stripe(op) -> bool:
    """int8 windows and elementwise ops whose kernel takes a row range (the module docstring)."""
    tensors = [t for t in list(op.inputs[:1]) + list(op.outputs) if t is not None]
    if op.type in ("ADD", "MUL"):
        tensors = [t for t in op.inputs[:2] if t is not None] + list(op.outputs)
    return (op.type in STRIPE_TYPES and "relax_function" not in op.attrs
            and all(t.dtype == "int8" for t in tensors))


# -- one layer's whole call, emitted once per op -----------------------------------------------------------
class _ParamsAside:
    """A codegen context that keeps the whole layer's params struct to itself (a group's calls only pass
    their stripes' structs, declared separately) and passes everything else on: the layer's constant arrays
    are the ones every stripe call reads."""

    def __init__(self, ctx):
        self._ctx = ctx

    def declare(self, c_text: str) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _one_call(layer) -> KernelCall:
    if len(layer.calls) != 1 or not isinstance(layer.calls[0], KernelCall):
        raise AssertionError(f"cascade: {layer.op.location} emits {len(layer.calls)} host calls, not one")
    return layer.calls[0]


class LayerCalls:
    """A layer's whole call (its params struct not declared) and, for a sliding depthwise layer, the reference
    loops' call that stripes of fewer than three input rows take (made when first needed)."""

    def __init__(self, op, ctx):
        from .codegen import emit_layer

        self.op, self._ctx = op, ctx
        self.whole = _one_call(emit_layer(op, _ParamsAside(ctx)))
        self._fallback = None

    def sliding(self) -> bool:
        return self.whole.kernel == "edgesdk_depthwise_conv2d_s8" and bool(self.whole.args[0]["sliding"])

    def fallback(self) -> KernelCall:
        if self._fallback is None:
            from .emit import Emit, c_op_entry

            emit = c_op_entry(self.op.type).emit  # ops/depthwise_conv_2d.py: emit_depthwise_conv2d
            self._fallback = _one_call(emit(Emit(self.op, _ParamsAside(self._ctx)), sliding=False))
        return self._fallback

    def for_event(self, event) -> KernelCall | None:
        """The call a Compute event takes (None: this layer's kernel cannot run a row range)."""
        if self.whole.kernel not in ROW_KERNELS + ELEMENTWISE_KERNELS + SIZED_KERNELS:
            return None
        if self.sliding() and _rows_read(self.op, event) < SLIDING_ROWS:
            return self.fallback()
        return self.whole


def _layer_calls(ops, ctx) -> dict:
    """{op: LayerCalls} of the context, each made once (its constant arrays too): the search asks about many
    groups of the same ops, and a group that crosses targets lowers each run of its host stripes apart."""
    cache = ctx.data("c-stripe-calls", dict)
    for op in ops:
        if op not in cache:
            cache[op] = LayerCalls(op, ctx)
    return cache


def _rows_read(op, event) -> int:
    start, stop, _ = event.reads[op.inputs[0]]
    return stop - start


# -- the stripe's params ---------------------------------------------------------------------------------
def stripe_fields(op, call, event) -> dict | None:
    """The params fields of `call` (the layer's whole call) for a Compute event: its rows; None when the
    kernel cannot run that row range."""
    fields = dict(call.args[0].fields)
    rows_out = event.stop - event.start
    if call.kernel in ELEMENTWISE_KERNELS:
        shape = fields["shape"]
        if shape["broadcast"]:
            return None
        _, _, w, c = nhwc(op.outputs[0].shape)
        out_shape = [1] * (MAX_DIMS - 3) + [rows_out, w, c]
        strides = [rows_out * w * c] * (MAX_DIMS - 3) + [w * c, c, 1]
        fields["shape"] = dict(shape, size=rows_out * w * c, out_shape=out_shape, in1_strides=strides,
                               in2_strides=list(strides))
        return fields
    if call.kernel in SIZED_KERNELS:
        fields["size"] = rows_out * row_bytes(op.outputs[0])
        return fields
    x = op.inputs[0]
    start, stop, pad_top = event.reads[x]
    rows_in = stop - start
    if call.kernel == "edgesdk_depthwise_conv2d_s8" and fields["sliding"] and rows_in < SLIDING_ROWS:
        return None
    _, in_h, in_w, _ = nhwc(x.shape)
    _, out_h, out_w, _ = nhwc(op.outputs[0].shape)
    if fields["in_h"] == 1 and in_h > 1 and fields["in_w"] == in_h * in_w:  # a pointwise conv over one long row
        fields.update(in_w=rows_in * in_w, out_w=rows_out * out_w)
        return fields
    fields.update(in_h=rows_in, out_h=rows_out, pad_top=pad_top)
    return fields


def _fields_key(fields: dict) -> tuple:
    """Fields as a hashable key: constant arrays by identity (the stripes of a layer share them)."""
    return tuple((k, id(v) if isinstance(v, Const) else repr(v)) for k, v in fields.items())


def _pointer(arg: Arena, tensor, first_row: int) -> Arena:
    return Arena(tensor, arg.offset + first_row * row_bytes(tensor), arg.ctype)


# -- lowering ----------------------------------------------------------------------------------------------
def lower_group(group, ctx) -> HostLayer:
    """One HostLayer running the whole group: a call per stripe event, each naming the op it computes."""
    layers = _layer_calls(group.ops, ctx)
    inter = set(group.buffered)
    # (op, fields as text) -> Params: equal stripes share one struct (across the runs of a group that crosses
    # targets too, each lowered on its own)
    declared = ctx.data("c-stripe-params", dict)
    layer = HostLayer(group.ops[0], ops=tuple(group.ops))
    for event in group.schedule().events:
        if isinstance(event, Fetch):
            layer.calls.append(_fetch_call(group, event, ctx))
            continue
        if isinstance(event, Shift):
            t, n = event.tensor, event.stop - event.start
            slot = Arena(t, ctx.arena_offset(t), "uint8_t")
            layer.calls.append(KernelCall(SHIFT_KERNEL, (Int(n * row_bytes(t)), _pointer(slot, t, event.source_row),
                                                         slot), op=None))
            continue
        op = event.op
        call = layers[op].for_event(event)
        fields = stripe_fields(op, call, event) if call is not None else None
        if fields is None:
            raise AssertionError(f"cascade: {op.location} cannot run output rows "
                                 f"{event.start}..{event.stop - 1} as a stripe")
        key = (op, _fields_key(fields))
        if key not in declared:
            old = call.args[0]
            params = Params(old.ctype, ctx.symbol(f"{old.symbol}_rows{event.start}"), fields)
            ctx.declare(render_params(params))
            declared[key] = params

        def rows(arg, tensor, start):
            if not isinstance(arg, Arena):
                return arg  # a constant operand
            return _pointer(arg, tensor, start - event.bases[tensor] if tensor in inter else start)

        args = list(call.args)
        args[0] = declared[key]
        if call.kernel in ELEMENTWISE_KERNELS:
            for k, t in ((1, op.inputs[0]), (2, op.inputs[1])):
                args[k] = rows(args[k], t, event.reads[t][0]) if t in event.reads else args[k]
        else:
            args[1] = rows(args[1], op.inputs[0], event.reads[op.inputs[0]][0])
        args[-1] = rows(args[-1], op.outputs[0], event.start)
        layer.calls.append(KernelCall(call.kernel, tuple(args), op=op))
    layer.note = (f"cascade of {len(group.ops)} layers in {group.schedule().stripes} stripes of "
                  f"{group.stripe_height} rows" + (f", the first of {group.lead_rows}" if group.lead_rows else ""))
    if getattr(group, "group", None) is not None:  # one run of a group that crosses targets
        layer.note = (f"stripes of a cascade group of layers {', '.join(str(op.index) for op in group.group.ops)} "
                      f"with another target, in stripes of {group.stripe_height} rows")
    return layer


def _fetch_call(group, event, ctx) -> KernelCall:
    """The caller's rows into the streamed input's stripe buffer; a uint8 input through the converting reader."""
    t, rows = event.tensor, event.stop - event.start
    slot = Arena(t, ctx.arena_offset(t), "uint8_t")
    args = (Int(group.input_number(t)), Int(event.start), Int(rows), _pointer(slot, t, event.buffer_row))
    if not group.converts(t):
        return KernelCall(READ_INPUT_ROWS, args, op=None)
    ctx.define_function("stream.uint8_reader", UINT8_INPUT_READER_TEXT)
    return KernelCall(UINT8_INPUT_READER, args + (Int(rows * row_bytes(t)),), op=None)


# -- cost --------------------------------------------------------------------------------------------------
def call_cost(op, call, fields, op_instructions) -> float:
    """Instructions of one call of `op`'s kernel over the rows `fields` name (kernel_cost.py); a kernel that
    model does not know: the generic `op_instructions(op)` for the call's share of the output rows."""
    known = layer_call_instructions(call.kernel, fields)  # op None: the kernels a stripe can call
    return known if known is not None else generic_call_instructions(op, fields, op_instructions)


def stripe_cost(group, ctx, op_instructions) -> tuple | None:
    """(instructions of the group in stripes, of its ops run whole) by the host kernels' instruction model
    (kernel_cost.py: each call priced by its kernel's loops over its own rows, so a stripe pays its call, its
    odd pixel pair, its reference loops), or None when a layer's kernel cannot run one of the group's row
    ranges. `op_instructions(op)`: the target's generic model, for kernels the calibrated one does not know.
    The layers' calls are cached in the context (the search asks about many groups of the same ops)."""
    cache = _layer_calls(group.ops, ctx)
    whole = sum(call_cost(op, cache[op].whole, cache[op].whole.args[0].fields, op_instructions) for op in group.ops)
    striped = 0.0
    for event in group.schedule().events:
        if isinstance(event, Fetch):
            converted = (event.stop - event.start) * row_bytes(event.tensor) if group.converts(event.tensor) else 0
            striped += fetch_instructions(converted)
            continue
        if isinstance(event, Shift):
            striped += shift_instructions((event.stop - event.start) * row_bytes(event.tensor))
            continue
        assert isinstance(event, Compute)
        op = event.op
        call = cache[op].for_event(event)
        fields = stripe_fields(op, call, event) if call is not None else None
        if fields is None:
            return None
        striped += call_cost(op, call, fields, op_instructions)
    return int(round(striped)), int(round(whole))
