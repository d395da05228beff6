"""Cascade groups on the NPU: each stripe event of a group (edgesdk/ops/stripes.py) becomes NPU commands.

A stripe command is the op's ordinary command over whole tensors with row-range descriptors and the stripe's
leading padding: the NPU's tensor descriptors take any offset and strides, so a row range is an offset and a
shape, and a Shift is one DMA_COPY. A convolution with few input channels may run its stripes with the kernel
columns folded into the channels instead (_folded_stripe, fold.stripe_commands: a few commands a stripe). A
Fetch (a streamed graph input's next rows) is no command: the region's command table ends there
(`ReadInputRows`), the CPU calls the caller's edgesdk_default_read_input_rows() into
the input's stripe buffer, and the next table goes on (NpuTarget.generate). Which ops the NPU runs in stripes (`STRIPE_LOWERINGS`) and what a group
costs by the timing model (docs/npu-datasheet.md section 6) are answered here for the cascade search.
"""

from __future__ import annotations

from ...dataclass_cache import dataclass
from ...ops.stripes import ELEMENTWISE_OPS, Compute, Fetch, Shift, nhwc, row_bytes
from ...ops.window import WINDOW_OPS
from ..api import compile_memo
from .codegen import LOWERINGS, board_memory
from . import fold
from .hw import cmdtable as C
from .hw import timing

ARENA_REGION = 1  # activation arena in SRAM (codegen.ARENA_REGION)


@dataclass(frozen=True)
class ReadInputRows:
    """Not a command: the CPU asks the caller for rows [start, start + rows) of graph input `input_number`
    into the arena at `arena_offset` (a streamed input's stripe buffer) between two command tables."""

    input_number: int
    start: int
    rows: int
    arena_offset: int
    nbytes: int
    uint8: bool  # the caller gives uint8: converted to int8 as read (ctext.UINT8_INPUT_READER)
    note: str = ""


def can_stripe(op) -> bool:
    """The NPU lowers every op with a row geometry (windows, elementwise) to one command whose descriptors can
    address any row range."""
    return op.type in WINDOW_OPS + ELEMENTWISE_OPS


def lower_group(group, ctx, lower_op) -> list:
    """The NPU commands of a group, stripe by stripe. `lower_op(op)` is the ordinary lowering of one op (one
    command over whole tensors, which also places its weights once)."""
    return _stripe_commands(group, group.schedule(), ctx, lower_op)


def _stripe_commands(group, schedule, ctx, lower_op) -> list:
    lower = _event_lowering(group, ctx, lower_op)
    return [command for event in schedule.events for command in lower(event)]


def _event_lowering(group, ctx, lower_op):
    """The function that lowers one event of `group`'s schedule to its list of commands: a Compute to its op's
    command (`lower_op`, one per op, asked once here) over the event's rows (a few when the stripe runs folded,
    _folded_stripe), a Shift to a DMA_COPY, a Fetch to a ReadInputRows."""
    whole = {}
    for op in group.ops:
        commands = lower_op(op)
        if len(commands) != 1:
            raise AssertionError(f"cascade: {op.location} lowers to {len(commands)} commands, not one")
        whole[op] = commands[0]
    inter = set(group.buffered)

    def rows_desc(tensor, start, stop, bases):
        _, _, w, c = nhwc(tensor.shape)
        first = start - bases[tensor] if tensor in inter else start
        return C.TensorDesc.dense(ARENA_REGION, ctx.arena_offset(tensor) + first * row_bytes(tensor),
                                  (1, stop - start, w, c), tensor.dtype)

    def lower(event):
        if isinstance(event, Fetch):
            t, n = event.tensor, event.stop - event.start
            return [ReadInputRows(group.input_number(t), event.start, n,
                                  ctx.arena_offset(t) + event.buffer_row * row_bytes(t), n * row_bytes(t),
                                  group.converts(t), note=f"input '{t.name}' rows {event.start}..{event.stop - 1}")]
        if isinstance(event, Shift):
            t, n = event.tensor, event.stop - event.start
            src = rows_desc(t, event.source_row, event.source_row + n, {t: 0})
            dst = rows_desc(t, 0, n, {t: 0})
            return [C.DmaCopy(src, dst, note=f"cascade: keep rows {event.start}..{event.stop - 1} of '{t.name}' "
                                             "(stripe buffer)")]
        op, command = event.op, whole[event.op]
        out = rows_desc(op.outputs[0], event.start, event.stop, event.bases)
        note = f"{command.note} rows {event.start}..{event.stop - 1}"
        if op.type in ELEMENTWISE_OPS:
            a, b = op.inputs[0], op.inputs[1]
            ins = [rows_desc(t, *event.reads[t][:2], event.bases) for t in (a, b)]
            return [_with(command, input1=ins[0], input2=ins[1], output=out, note=note)]
        x = op.inputs[0]
        start, stop, pad = event.reads[x]
        stripe = _with(command, input=rows_desc(x, start, stop, event.bases), output=out, pad_top=pad, note=note)
        return _folded_stripe(group, op, stripe, ctx)

    return lower


def _folded_stripe(group, op, command, ctx) -> list:
    """The commands of one stripe of `op`: `command`, or the same sums with the W taps folded into the
    channels (fold.stripe_commands) when the timing model finds that cheaper and the NPU's static pass takes
    them. Only when the op's output is a stripe buffer of the group (it overlaps no input, fold.stripe_commands
    needs that). The choice depends on the stripe's shapes alone (not on offsets), so the cascade search's dry
    pricing (stripe_cost) and the build choose alike; remembered per shape for the compile (compile_memo), so
    the build takes the choices the pricing made."""
    if op.outputs[0] not in group.buffered or not _folds_w_interior(op):
        return [command]
    cache = compile_memo("npu-stripe-folds")
    key = (op, command.input.shape, command.output.shape, command.pad_top, command.weight_stream_bytes,
           id(ctx.board))
    if cache.get(key) is False:
        return [command]
    folded = fold.stripe_commands(op, command)
    if key not in cache:
        memory = board_memory(ctx.board)
        plain = timing.command_cost(command, memory).cycles
        cache[key] = fold.cycles(folded, memory) < plain and fold.accepted(folded)
    return folded if cache[key] else [command]


def _folds_w_interior(op) -> bool:
    """fold.Fold("w", False) in fold.candidates(op), once per compile for each op (asked for every stripe)."""
    known = compile_memo("npu-stripe-foldable")  # op -> bool
    if op not in known:
        known[op] = fold.Fold("w", False) in fold.candidates(op)
    return known[op]


_with = C.with_fields  # (a stripe command is the op's command over other rows)


def whole_cost(ops, ctx) -> int:
    """NPU cycles of `ops` lowered as outside a cascade (codegen.WHOLE_LOWERINGS: a convolution may fold a
    kernel axis into its channels), by the timing model; cached in the context."""
    from .codegen import WHOLE_LOWERINGS

    cache = ctx.data("npu-whole-costs", dict)
    memory = None  # built only when an op is priced: most calls find every op cached
    total = 0
    for op in ops:
        if op not in cache:
            if memory is None:
                memory = board_memory(ctx.board)
            commands = WHOLE_LOWERINGS.get(op.type, LOWERINGS[op.type])(op, ctx)
            cache[op] = sum(timing.command_cost(c, memory).cycles for c in commands)
        total += cache[op]
    return total


def stripe_cost(group, ctx) -> tuple:
    """(NPU cycles of the group in stripes, of its ops run whole) by the timing model, from a dry lowering in
    `ctx` (weights go to its throwaway blob, arena offsets read as 0). Commands and stripe costs are cached in
    the context: the search asks about many groups of the same ops."""
    cache = ctx.data("npu-stripe-costs", lambda: {"commands": {}, "cycles": {}, "whole": {}, "memory": None})
    if cache["memory"] is None:
        cache["memory"] = board_memory(ctx.board)
    memory, commands, cycles, whole_cycles = cache["memory"], cache["commands"], cache["cycles"], cache["whole"]
    for op in group.ops:
        if op not in commands:
            commands[op] = LOWERINGS[op.type](op, ctx)
            whole_cycles[op] = sum(timing.command_cost(c, memory).cycles for c in commands[op])
    # Whole ops priced here in the one-command form their stripes take; the search holds a group to its ops
    # as an op-by-op build runs them (whole_cost: a convolution folded, fold.py), which Striping asks apart.
    whole = sum(whole_cycles[op] for op in group.ops)
    striped = 0
    end = lower = None  # (the event lowering is made when a stripe shape is not priced yet)
    for event in group.schedule().events:  # stripe commands of equal shape cost the same: lower one each
        if isinstance(event, Fetch):  # the table ends and a new one starts: its END command
            if end is None:
                end = timing.command_cost(C.End(), memory).cycles
            striped += end
            continue
        if isinstance(event, Shift):
            key = (event.tensor, event.stop - event.start)
        else:
            assert isinstance(event, Compute)
            reads = event.reads
            if len(reads) == 1:  # (most ops: the same key as below, without the sort)
                (r,) = reads.values()
                key = (event.op, event.stop - event.start, ((r[1] - r[0], r[2]),))
            else:
                key = (event.op, event.stop - event.start, tuple(sorted((r[1] - r[0], r[2]) for r in reads.values())))
        if key not in cycles:  # one command, or a few when the stripe runs folded (_folded_stripe)
            if lower is None:
                lower = _event_lowering(group, ctx, commands.__getitem__)
            cycles[key] = sum(timing.command_cost(command, memory).cycles for command in lower(event))
        striped += cycles[key]
    runs = getattr(group, "runs", 0)  # a group crossing targets: each run of NPU stripes is a table of its own
    if runs:
        striped += runs * timing.command_cost(C.End(), memory).cycles
    return striped, whole
