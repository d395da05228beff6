"""Cascading: run a chain of NPU layers in row stripes so that its intermediate tensors never exist whole.

A cascade group is a run of consecutive ops of one NPU region (CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D,
MAX_POOL_2D, and ADD/MUL without broadcasting) whose intermediate tensors -- the outputs of every op but the
last -- are each read by exactly one other op of the group and by nothing else. The group's last output is
produced in stripes of `stripe_height` rows. For each stripe, walking the ops backwards, every op computes
only the rows of its output that are new and that its consumer needs now; an op's window (kernel, stride,
dilation, leading padding) says which input rows that takes (`input_rows`, halo rows included).

An intermediate lives in a *stripe buffer* of `rows` rows (the largest window its consumer ever reads at
once) holding the tensor's rows [base, base + rows). When its producer is about to write past the end, one
DMA_COPY moves the rows still needed to the top of the buffer and `base` moves up (a "shift"). All other
operands (the group's inputs and its output) are whole tensors, addressed one row range at a time: the NPU's
tensor descriptors take any offset and strides, so a row range is an offset and a shape.

Padding at stripe edges. A command computing output rows [o0, o1) reads input rows [i0, i1): i0 is the first
row of the first window clamped at 0, i1 one past the last row of the last window clamped at the input's
height. Its leading padding is i0 - (o0 * stride - pad_top), i.e. the real padding only when the stripe
touches the top edge; at the bottom the input descriptor ends at the real last row, so the NPU treats the
same taps as padding as the unstriped command does (implicit bottom padding). Every tap of every output row
therefore reads the same input element, or the same padding, as in the unstriped layer: the result is
bit-identical, and the window rule of the datasheet (section 4) holds for every stripe command.

In-place. The group's output may take the very bytes of a group input that dies in the group when the last
op is elementwise over that input (exact rule) and the schedule never reads a row of that input after
a stripe has overwritten it (`exact_overlap_allowed`, recomputed by memory_plan.verify_plan).

The planner decides (`choose_cascades`): a group and stripe height is kept only when the arena shrinks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...ir.graph import DTYPE_BYTES

WINDOW_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")
ELEMENTWISE_OPS = ("ADD", "MUL")
CASCADE_OPS = WINDOW_OPS + ELEMENTWISE_OPS


def _nhwc(shape) -> tuple:
    shape = tuple(int(d) for d in shape)
    return (1,) * (4 - len(shape)) + shape


def _activation_inputs(op) -> list:
    """The op's distinct non-constant inputs, in order."""
    return list(dict.fromkeys(t for t in op.inputs if t is not None and not t.is_const))


def row_bytes(tensor) -> int:
    _, _, w, c = _nhwc(tensor.shape)
    return w * c * DTYPE_BYTES[tensor.dtype]


def window_geometry(op) -> tuple:
    """(kernel_h, stride_h, pad_top, dilation_h) along the rows of a window op."""
    a = op.attrs
    if op.type in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        kernel, dilation = a["filter_h"], 1
    else:  # CONV_2D weights [O, KH, KW, I]; DEPTHWISE_CONV_2D [1, KH, KW, O]
        kernel, dilation = op.inputs[1].shape[1], a.get("dilation_h", 1)
    return kernel, a["stride_h"], a.get("pad_top", 0), dilation


def input_rows(op, x, out_start: int, out_stop: int) -> tuple:
    """(start, stop, pad_top) of the rows of input `x` that output rows [out_start, out_stop) of `op` read,
    and the leading padding of a command that computes exactly those output rows from exactly those input
    rows (module docstring, "Padding at stripe edges")."""
    if op.type in ELEMENTWISE_OPS:
        return out_start, out_stop, 0
    kernel, stride, pad, dilation = window_geometry(op)
    height = _nhwc(x.shape)[1]
    first = out_start * stride - pad  # input row of the first tap of the first window (may be padding)
    last = (out_stop - 1) * stride - pad + (kernel - 1) * dilation  # last tap of the last window
    start, stop = max(first, 0), min(last + 1, height)
    return start, stop, start - first


# -- the schedule ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Compute:
    """Output rows [start, stop) of `op`; `reads` maps each activation input to (start, stop, pad_top);
    `bases` the first tensor row each stripe buffer holds at this point."""

    op: object
    start: int
    stop: int
    reads: dict
    bases: dict


@dataclass(frozen=True)
class Shift:
    """Move rows [start, stop) of stripe buffer `tensor` from buffer row `source_row` to buffer row 0."""

    tensor: object
    start: int
    stop: int
    source_row: int


@dataclass(frozen=True)
class Schedule:
    events: tuple  # Compute and Shift, in execution order
    rows: dict  # intermediate tensor -> rows its stripe buffer holds
    stripes: int


def _consumers(ops) -> dict:
    result = {}
    for op in ops:
        for x in _activation_inputs(op):
            result.setdefault(x, []).append(op)
    return result


def build_schedule(ops, stripe_height: int, capacity: dict | None = None) -> Schedule:
    """The commands of a group, stripe by stripe. `capacity` (intermediate -> rows) defaults to the
    smallest that works: the widest window any consumer reads at once."""
    ops = tuple(ops)
    last = ops[-1]
    inter = intermediates(ops)
    consumer = {t: _consumers(ops)[t][0] for t in inter}
    height = _nhwc(last.outputs[0].shape)[1]
    if capacity is None:
        widest = {t: 0 for t in inter}
        _simulate(ops, stripe_height, height, inter, consumer, None, widest)
        capacity = widest
    events = []
    stripes = _simulate(ops, stripe_height, height, inter, consumer, capacity, None, events)
    return Schedule(tuple(events), dict(capacity), stripes)


def _simulate(ops, stripe_height, height, inter, consumer, capacity, widest, events=None) -> int:
    inputs = {op: _activation_inputs(op) for op in ops}
    produced = {t: 0 for t in inter}
    base = {t: 0 for t in inter}
    stripes = 0
    for y0 in range(0, height, stripe_height):
        stripes += 1
        ranges, needs, reads = {}, {}, {}
        for op in reversed(ops):  # what each op must compute in this stripe
            y = op.outputs[0]
            if op is ops[-1]:
                start, stop = y0, min(y0 + stripe_height, height)
            else:
                start = produced[y]
                stop = max(start, needs.get(y, (0, 0))[1])
            ranges[op] = (start, stop)
            if start >= stop:
                continue
            reads[op] = {x: input_rows(op, x, start, stop) for x in inputs[op]}
            for x, (r0, r1, _pad) in reads[op].items():
                if x in inter:
                    needs[x] = (r0, r1)
                    if widest is not None:
                        widest[x] = max(widest[x], r1 - r0)
        for op in ops:  # in execution order
            start, stop = ranges[op]
            if start >= stop:
                continue
            y = op.outputs[0]
            if y in inter and capacity is not None and stop > base[y] + capacity[y]:
                keep_from = needs[y][0]  # rows below this are never read again
                if stop - keep_from > capacity[y]:
                    raise ValueError(f"cascade: a stripe buffer of {capacity[y]} rows cannot hold rows "
                                     f"{keep_from}..{stop - 1} of '{y.name}'")
                if keep_from < produced[y] and events is not None:
                    events.append(Shift(y, keep_from, produced[y], keep_from - base[y]))
                base[y] = keep_from
            if events is not None:
                events.append(Compute(op, start, stop, reads[op], dict(base)))
            if y in inter:
                produced[y] = stop
    return stripes


# -- groups ------------------------------------------------------------------------------------------------
def intermediates(ops) -> list:
    """Outputs of every op of the chain but the last (they exist only as stripe buffers)."""
    return [op.outputs[0] for op in ops[:-1]]


@dataclass(eq=False)
class CascadeGroup:
    """Consecutive ops (steps first_step .. first_step + len(ops) - 1) run in stripes of `stripe_height`
    output rows of the last op."""

    ops: tuple
    stripe_height: int
    first_step: int
    _schedule: Schedule | None = field(default=None, repr=False)

    @property
    def last_step(self) -> int:
        return self.first_step + len(self.ops) - 1

    @property
    def output(self):
        return self.ops[-1].outputs[0]

    @property
    def intermediates(self) -> list:
        return intermediates(self.ops)

    def external_inputs(self) -> list:
        inter = set(self.intermediates)
        return list(dict.fromkeys(x for op in self.ops for x in _activation_inputs(op) if x not in inter))

    def schedule(self) -> Schedule:
        if self._schedule is None:
            self._schedule = build_schedule(self.ops, self.stripe_height)
        return self._schedule

    def buffer_bytes(self, tensor) -> int:
        """Size of the stripe buffer of an intermediate."""
        return self.schedule().rows[tensor] * row_bytes(tensor)

    def exact_overlap_allowed(self, x, recompute: bool = False) -> bool:
        """May the group's output take exactly the bytes of its input x (x dying in the group)? `recompute`
        derives the schedule afresh instead of using the cached one (for the plan's proof)."""
        sched = build_schedule(self.ops, self.stripe_height) if recompute else self.schedule()
        return exact_overlap_allowed(self.ops, sched, x)

    def describe(self) -> dict:
        sched = self.schedule()
        computes = sum(isinstance(e, Compute) for e in sched.events)
        return {"ops": [op.index for op in self.ops], "types": [op.type for op in self.ops],
                "steps": [self.first_step, self.last_step], "stripe_height": self.stripe_height,
                "stripes": sched.stripes, "commands": computes + sum(isinstance(e, Shift) for e in sched.events),
                "shifts": sum(isinstance(e, Shift) for e in sched.events),
                "buffers": [{"tensor": t.name, "rows": sched.rows[t], "bytes": self.buffer_bytes(t),
                             "whole_tensor_bytes": t.nbytes} for t in self.intermediates]}


def exact_overlap_allowed(ops, sched: Schedule, x) -> bool:
    """Output y of the last op at x's offset: y row r lies on x row r (same shape). Safe iff the last op is
    elementwise over x without broadcasting and no command reads a row of x after a command has written
    that row of y (the elementwise command itself reads each element before writing it)."""
    last, y = ops[-1], ops[-1].outputs[0]
    same = all(tuple(t.shape) == tuple(y.shape) and DTYPE_BYTES[t.dtype] == DTYPE_BYTES[y.dtype]
               for t in _activation_inputs(last))
    if last.type not in ELEMENTWISE_OPS or x not in _activation_inputs(last) or not same:
        return False
    written = []  # row ranges of y written so far
    for event in sched.events:
        if not isinstance(event, Compute):
            continue
        if x in event.reads:
            r0, r1, _ = event.reads[x]
            if any(r0 < w1 and w0 < r1 for w0, w1 in written):
                return False
        if event.op is last:
            written.append((event.start, event.stop))
    return True


def chain_ok(ops, graph, consumers: dict | None = None) -> bool:
    """Can these consecutive ops form a cascade group (module docstring)? `consumers` (tensor -> ops
    reading it) is computed from the graph unless given."""
    if len(ops) < 2:
        return False
    outputs = set(graph.outputs)
    consumers = _consumers(graph.ops) if consumers is None else consumers
    members = set(ops)
    for op in ops:
        if op.type not in CASCADE_OPS or len(op.outputs) != 1 or _nhwc(op.outputs[0].shape)[0] != 1:
            return False
        if len(op.outputs[0].shape) != 4 or any(len(x.shape) != 4 for x in _activation_inputs(op)):
            return False
        if op.type in WINDOW_OPS and (op.inputs[0] is None or op.inputs[0].is_const):
            return False
        if op.type in ELEMENTWISE_OPS:
            y = op.outputs[0]
            if any(t is None or t.is_const or tuple(t.shape) != tuple(y.shape) for t in op.inputs[:2]):
                return False  # no broadcasting, no constant operands
        elif any(x is not op.inputs[0] for x in _activation_inputs(op)):
            return False
    for t in intermediates(ops):
        users = consumers.get(t, [])
        if t in outputs or len(users) != 1 or users[0] not in members:
            return False
        user = users[0]
        if user.inputs.count(t) != 1:
            return False  # ADD(t, t): one buffer read twice per stripe, keep it simple
    return True


MAX_CHAIN_OPS = 6  # longer chains: halos grow, and the search gets slow


def candidate_chains(graph, regions) -> list:
    """Every run of consecutive ops of one NPU region that may form a cascade group, with its first step,
    as (first_step, ops); shortest first."""
    step_of = {op: i for i, op in enumerate(graph.ops)}
    consumers = _consumers(graph.ops)
    result = []
    for region in regions:
        if region.target != "npu":
            continue
        ops = list(region.ops)
        for i in range(len(ops)):
            for j in range(i + 2, min(i + MAX_CHAIN_OPS, len(ops)) + 1):
                chain = tuple(ops[i:j])
                steps = [step_of[op] for op in chain]
                if steps != list(range(steps[0], steps[0] + len(chain))):
                    break
                if _nhwc(chain[-1].outputs[0].shape)[1] < 2:
                    continue  # one output row: nothing to stripe
                if not all(op.file_operator for op in chain):
                    break  # inlined WHILE / IF subgraphs are not cascaded (schedules name groups by operator index)
                if chain_ok(chain, graph, consumers):
                    result.append((steps[0], chain))
    return sorted(result, key=lambda c: (len(c[1]), c[0]))


def stripe_heights(chain) -> list:
    """Stripe heights worth trying, largest first: powers of two below the output height."""
    height = _nhwc(chain[-1].outputs[0].shape)[1]
    heights, h = [], 1
    while h < height:
        heights.append(h)
        h *= 2
    return heights[::-1]


# -- choosing groups ---------------------------------------------------------------------------------------
def _busiest_steps(plan) -> set:
    """Steps at which the live bytes (before overlap) reach their maximum: only a group covering one of
    them can lower the peak."""
    buffers = [b for b in plan.buffers if b.size]
    if not buffers:
        return set()
    load = {}
    for s in range(min(b.first for b in buffers), max(b.last for b in buffers) + 1):
        load[s] = sum(b.size for b in buffers if b.first <= s <= b.last)
    top = max(load.values())
    return {s for s, v in load.items() if v == top}


# A group may cost at most this fraction of extra NPU cycles over its ops run whole: every stripe command
# pays the fixed command overhead and re-reads its weights and channel records (from flash, the slow
# stream), which is nearly free for a compute-bound layer cut into a few stripes and doubles the time of
# a weight-bound one cut into many.
MAX_CYCLE_INCREASE = 0.05


def choose_cascades(graph, regions, scratch_sizes, baseline, rounding_mode: str, board,
                    alignment: int = 16, max_cycle_increase: float = MAX_CYCLE_INCREASE):
    """Add cascade groups to the plan while one lowers the arena. Each round tries every candidate chain
    (not overlapping the groups chosen so far) that covers a busiest step of the current plan at every
    stripe height within the cycle budget (`group_cycles`), and keeps the smallest arena; ties go to the
    fewer NPU cycles. Returns the best plan (`baseline` itself when no group helps)."""
    candidates = candidate_chains(graph, regions)
    if not candidates:
        return baseline
    costs = _CycleCosts(rounding_mode, board)
    best, chosen = baseline, []
    while True:
        taken = {op for g in chosen for op in g.ops}
        busiest = _busiest_steps(best)
        round_best = None  # (arena, extra cycles, plan)
        for first, chain in candidates:
            if taken & set(chain) or not busiest & set(range(first, first + len(chain))):
                continue
            for height in stripe_heights(chain):  # largest first: lower stripes only cost more cycles
                group = CascadeGroup(chain, height, first)
                striped, whole = costs.of(group)
                if striped > whole * (1 + max_cycle_increase):
                    break
                below = round_best[0] + 1 if round_best else best.arena_bytes
                plan = _try(graph, scratch_sizes, alignment, chosen + [group], below)
                if plan is not None and (round_best is None or (plan.arena_bytes, striped - whole) < round_best[:2]):
                    round_best = (plan.arena_bytes, striped - whole, plan)
        if round_best is None:
            return best
        best = round_best[2]
        chosen = list(best.cascades)


def forced_groups(graph, regions, specs) -> list:
    """The cascade groups a tuning schedule names, as CascadeGroups: `specs` is a list of (operator indices,
    stripe height). Each must be a candidate chain of the current partition (`candidate_chains`) with a
    stripe height from 1 to below its output height, and no two may share an op; else UsageError."""
    from ...errors import UsageError

    chains = {tuple(op.index for op in chain): (first, chain) for first, chain in candidate_chains(graph, regions)}
    groups, taken = [], set()
    for indices, height in specs:
        indices = tuple(indices)
        if indices not in chains:
            raise UsageError(f"The tuning schedule runs ops {list(indices)} as a cascade group, but they are not a "
                             "chain of consecutive NPU layers that can run in stripes in this build. Re-run "
                             "'edgesdk tune' for this model, board and target list.")
        first, chain = chains[indices]
        out_height = _nhwc(chain[-1].outputs[0].shape)[1]
        if not 1 <= height < out_height or taken & set(indices):
            raise UsageError(f"The tuning schedule's cascade group of ops {list(indices)} has stripe height {height} "
                             f"(the output has {out_height} rows) or shares an op with another group. Re-run "
                             "'edgesdk tune'.")
        taken |= set(indices)
        groups.append(CascadeGroup(chain, int(height), first))
    return groups


def plan_with_groups(graph, regions, scratch_sizes, specs, alignment: int = 16):
    """The memory plan with exactly the cascade groups `specs` (see forced_groups), without searching: how
    a tuning schedule's groups are applied."""
    from ...aot.memory_plan import plan_memory

    return plan_memory(graph, scratch_sizes, alignment, cascades=forced_groups(graph, regions, specs))


def arena_reducing_groups(graph, regions, scratch_sizes, plan, alignment: int = 16) -> list:
    """Every group (candidate chain not overlapping plan.cascades, covering a busiest step, at any stripe
    height, whatever its cycles) that, added to the plan's groups, gives a smaller arena: a list of
    (arena bytes, first step, chain, stripe height), smallest arena first, then larger stripes. The tuner's
    "add a group" moves (edgesdk/tune/search.py); `choose_cascades` is the same search under a cycle budget."""
    chosen = list(plan.cascades)
    taken = {op for g in chosen for op in g.ops}
    busiest = _busiest_steps(plan)
    found = []
    for first, chain in candidate_chains(graph, regions):
        if taken & set(chain) or not busiest & set(range(first, first + len(chain))):
            continue
        for height in stripe_heights(chain):
            trial = _try(graph, scratch_sizes, alignment, chosen + [CascadeGroup(chain, height, first)],
                         plan.arena_bytes)
            if trial is not None:
                found.append((trial.arena_bytes, first, chain, height))
    return sorted(found, key=lambda f: (f[0], f[1], len(f[2]), -f[3]))


def _try(graph, scratch_sizes, alignment, groups, below: int):
    """The plan with these groups if its arena is below `below` bytes, else None (skipping the placement
    search when the per-step lower bound already says no)."""
    from ...aot.memory_plan import build_buffers, find_overlaps, lower_bound, plan_memory

    buffers = build_buffers(graph, scratch_sizes, groups)
    if lower_bound(buffers, find_overlaps(graph, buffers, groups), alignment) >= below:
        return None
    plan = plan_memory(graph, scratch_sizes, alignment, cascades=groups)
    return plan if plan.arena_bytes < below else None


class _CycleCosts:
    """NPU cycles of a group's ops run whole and in stripes (the timing model, docs/npu-datasheet.md
    section 6), from a dry lowering: weights go to a throwaway blob, arena offsets read as 0."""

    def __init__(self, rounding_mode: str, board):
        from ...aot.executor import CodegenContext, ExecutorModel
        from ...importer.names import UniqueIdentifiers
        from ...npu import timing

        self.ctx = CodegenContext(ExecutorModel("dry", 0), None, UniqueIdentifiers(), rounding_mode, board)
        self.memory = timing.MemoryMap.for_board(board)
        self.commands = {}  # op -> its one command over whole tensors
        self.cycles = {}  # a stripe command's shape -> its cycles

    def of(self, group) -> tuple:
        """(cycles in stripes, cycles whole)."""
        from ...npu import timing
        from .codegen import LOWERINGS

        for op in group.ops:
            if op not in self.commands:
                self.commands[op] = LOWERINGS[op.type](op, self.ctx)
        whole = sum(timing.command_cost(c, self.memory).cycles for op in group.ops for c in self.commands[op])
        striped = 0
        for event in group.schedule().events:  # stripe commands of equal shape cost the same: lower one each
            if isinstance(event, Shift):
                key = (event.tensor, event.stop - event.start)
            else:
                key = (event.op, event.stop - event.start, tuple(sorted((r[1] - r[0], r[2]) for r in event.reads.values())))
            if key not in self.cycles:
                single = Schedule((event,), {}, 1)
                (command,) = _stripe_commands(group, single, self.ctx, lambda op: self.commands[op])
                self.cycles[key] = timing.command_cost(command, self.memory).cycles
            striped += self.cycles[key]
        return striped, whole


def group_cycles(group, rounding_mode: str, board) -> tuple:
    """(NPU cycles of the group in stripes, of its ops run whole), by the timing model."""
    return _CycleCosts(rounding_mode, board).of(group)


# -- codegen -----------------------------------------------------------------------------------------------
def groups_by_op(plan) -> dict:
    """op -> its cascade group, for the ops of every group of the plan."""
    return {op: g for g in getattr(plan, "cascades", None) or () for op in g.ops}


def lower_group(group: CascadeGroup, ctx, lower_op) -> list:
    """The NPU commands of a group, stripe by stripe. `lower_op(op)` is the ordinary lowering of one op (one
    command over whole tensors, which also places its weights once); each stripe command is that command
    with row-range descriptors and the stripe's leading padding."""
    return _stripe_commands(group, group.schedule(), ctx, lower_op)


def _stripe_commands(group, schedule, ctx, lower_op) -> list:
    from ...npu import cmdtable as C
    from .codegen import ARENA_REGION

    whole = {}
    for op in group.ops:
        commands = lower_op(op)
        if len(commands) != 1:
            raise AssertionError(f"cascade: {op.location} lowers to {len(commands)} commands, not one")
        whole[op] = commands[0]
    inter = set(group.intermediates)

    def rows_desc(tensor, start, stop, bases):
        _, _, w, c = _nhwc(tensor.shape)
        first = start - bases[tensor] if tensor in inter else start
        return C.TensorDesc.dense(ARENA_REGION, ctx.arena_offset(tensor) + first * row_bytes(tensor), (1, stop - start, w, c))

    result = []
    for event in schedule.events:
        if isinstance(event, Shift):
            t, n = event.tensor, event.stop - event.start
            src = rows_desc(t, event.source_row, event.source_row + n, {t: 0})
            dst = rows_desc(t, 0, n, {t: 0})
            result.append(C.DmaCopy(src, dst, note=f"cascade: keep rows {event.start}..{event.stop - 1} of "
                                                   f"'{t.name}' (stripe buffer)"))
            continue
        op, command = event.op, whole[event.op]
        y = op.outputs[0]
        out = rows_desc(y, event.start, event.stop, event.bases)
        note = f"{command.note} rows {event.start}..{event.stop - 1}"
        if op.type in ELEMENTWISE_OPS:
            a, b = op.inputs[0], op.inputs[1]
            ins = [rows_desc(t, *event.reads[t][:2], event.bases) for t in (a, b)]
            result.append(replace(command, input1=ins[0], input2=ins[1], output=out, note=note))
        else:
            x = op.inputs[0]
            start, stop, pad = event.reads[x]
            result.append(replace(command, input=rows_desc(x, start, stop, event.bases), output=out, pad_top=pad,
                                  note=note))
    return result


def cascade_report(plan) -> list:
    """report.json memory.cascades: each group's ops, stripe height and stripe buffers (offsets included)."""
    offsets = {t: off for t, off in plan.offsets.items()}
    result = []
    for g in getattr(plan, "cascades", None) or ():
        entry = g.describe()
        for buf, t in zip(entry["buffers"], g.intermediates):
            buf["offset"] = offsets.get(t)
        result.append(entry)
    return result
