"""Row stripes: the geometry of running a chain of layers so that its intermediate tensors never exist whole.

This module knows only the graph IR and the op layer; which target runs a chain in stripes, and how, is the
target's business (Target.can_stripe / stripe_costs / its own lowering), and which chains are worth it is the
search's (edgesdk/aot/cascade.py).

A cascade group is a run of consecutive ops (window ops: CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D,
MAX_POOL_2D; ADD/MUL without broadcasting; the unary HARD_SWISH, RELU, RELU6) whose intermediate tensors -- the outputs of every op but the
last -- are read only by ops of the group (one or several: an inverted-residual block's input, made by the group's
previous projection, feeds both the block's expanding convolution and its ADD). The group's last output is
produced in stripes of `stripe_height` rows (the first stripe may be shorter: `lead_rows`). For each stripe, walking the ops backwards, every op computes
only the rows of its output that are new and that its consumer needs now; an op's window (kernel, stride,
dilation, leading padding) says which input rows that takes (`input_rows`, halo rows included).

An intermediate lives in a *stripe buffer* of `rows` rows (the most rows its readers take in one stripe,
together) holding the tensor's rows [base, base + rows). When its producer is about to write past the end, the
rows still needed move to the top of the buffer and `base` moves up (a `Shift`). All other operands (the
group's inputs and its output) are whole tensors, addressed one row range at a time.

Padding at stripe edges. A command computing output rows [o0, o1) reads input rows [i0, i1): i0 is the first
row of the first window clamped at 0, i1 one past the last row of the last window clamped at the input's
height. Its leading padding is i0 - (o0 * stride - pad_top), i.e. the real padding only when the stripe
touches the top edge; at the bottom the input ends at the real last row, so the same taps are padding as in
the unstriped layer. Every tap of every output row therefore reads the same input element, or the same
padding, as the unstriped layer: a target whose layer arithmetic does not depend on where a row range
starts gets a bit-identical result.

Streamed inputs. A graph input that only the group reads may be *streamed*: it lives in a stripe buffer like
an intermediate, and a `Fetch` event asks the caller for its next rows (each row once, top to bottom, as a
camera delivers lines) just before the first op that reads them; the rows its windows read again (the halo)
stay in the buffer and move up with a `Shift`, so the caller never supplies a row twice.

Across targets. A group's ops may run on different targets (an NPU convolution feeding a host layer): the
schedule is the same, cut into runs of consecutive events of one target (`group_runs`; a Shift or a Fetch goes
with the Compute after it), each target pricing and lowering its own events (`GroupPart`, `group_parts`).

In-place. The group's output may start at the first byte of a group input that dies in the group when the
schedule never reads a byte of that input after a stripe has written it as output, and an op reading that
input while writing the output is elementwise over it (`exact_overlap_allowed`, recomputed by
memory_plan.verify_plan).
"""

from __future__ import annotations

from itertools import accumulate

from ..dataclass_cache import dataclass, field
from ..ir.graph import DTYPE_BYTES
from .window import WINDOW_OPS, window_geometry

ELEMENTWISE_OPS = ("ADD", "MUL")
UNARY_OPS = ("HARD_SWISH", "RELU", "RELU6")  # one input, element i from element i
STRIPE_OPS = WINDOW_OPS + ELEMENTWISE_OPS + UNARY_OPS  # ops with a row geometry (a target may stripe a subset)
ROW_PRESERVING = ELEMENTWISE_OPS + UNARY_OPS  # output row r from input row r only
MAX_CHAIN_OPS = 6  # longer chains: halos grow, and the search gets slow


def nhwc(shape) -> tuple:
    shape = tuple(map(int, shape))
    return (1,) * (4 - len(shape)) + shape


def activation_inputs(op) -> list:
    """The op's distinct non-constant inputs, in order."""
    return list(dict.fromkeys(t for t in op.inputs if t is not None and not t.is_const))


def row_bytes(tensor) -> int:
    _, _, w, c = nhwc(tensor.shape)
    return w * c * DTYPE_BYTES[tensor.dtype]


def input_rows(op, x, out_start: int, out_stop: int) -> tuple:
    """(start, stop, pad_top) of the rows of input `x` that output rows [out_start, out_stop) of `op` read,
    and the leading padding of a command that computes exactly those output rows from exactly those input
    rows (module docstring, "Padding at stripe edges")."""
    return _rows_read(_read_window(op, x), out_start, out_stop)


def _read_window(op, x):
    """What input_rows needs of `op` and its input `x`: (stride, pad_top, extent of the kernel's taps - 1,
    input height), or None for an op whose output row r reads input row r only."""
    if op.type in ROW_PRESERVING:
        return None
    g = window_geometry(op)
    return g.stride_h, g.pad_top, (g.kernel_h - 1) * g.dilation_h, nhwc(x.shape)[1]


def _rows_read(window, out_start: int, out_stop: int) -> tuple:
    """input_rows for a `_read_window`."""
    if window is None:
        return out_start, out_stop, 0
    stride, pad_top, extent, height = window
    first = out_start * stride - pad_top  # input row of the first tap of the first window (may be padding)
    last = (out_stop - 1) * stride - pad_top + extent  # last tap of the last window
    start = first if first > 0 else 0  # (conditionals, not max/min: the schedules ask this for every stripe)
    stop = last + 1 if last < height else height
    return start, stop, start - first


# -- the schedule ------------------------------------------------------------------------------------------
@dataclass
class Compute:
    """Output rows [start, stop) of `op`; `reads` maps each activation input to (start, stop, pad_top);
    `bases` the first tensor row each stripe buffer holds at this point. Read only, as Shift and Fetch, but
    not frozen: a frozen dataclass sets each field through object.__setattr__ (~5x the time), and the cascade
    search builds hundreds of these per compile (its dict fields made it unhashable anyway)."""

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
class Fetch:
    """The caller writes rows [start, stop) of streamed graph input `tensor` into its stripe buffer from buffer
    row `buffer_row` (edgesdk_default_read_input_rows)."""

    tensor: object
    start: int
    stop: int
    buffer_row: int


@dataclass(frozen=True)
class Schedule:
    events: tuple  # Compute, Shift and Fetch, in execution order
    rows: dict  # intermediate or streamed input -> rows its stripe buffer holds
    stripes: int


def consumers(ops) -> dict:
    """tensor -> the ops (of `ops`) reading it."""
    result = {}
    for op in ops:
        for x in activation_inputs(op):
            result.setdefault(x, []).append(op)
    return result


def intermediates(ops) -> list:
    """Outputs of every op of the chain but the last (they exist only as stripe buffers)."""
    return [op.outputs[0] for op in ops[:-1]]


def build_schedule(ops, stripe_height: int, capacity: dict | None = None, streamed=(),
                   windows: dict | None = None, lead_rows: int = 0) -> Schedule:
    """The events of a group, stripe by stripe. `capacity` (buffered tensor -> rows) defaults to the
    smallest that works: the widest window any consumer reads at once. `streamed`: group inputs that live in
    stripe buffers filled by Fetch events (module docstring). `windows`: a memo of each op's row windows
    (`_row_windows`) for the schedules of one build, which ask about the same ops again and again. `lead_rows`
    (0: `stripe_height`): the rows of the first stripe, the others following in stripes of `stripe_height`.
    A strided window without leading padding reads one row more in the first stripe than in the others (no
    rows of it were read before); a shorter first stripe keeps the buffers the first stripe alone sizes
    (those read by 1x1 layers above it) at the steady stripes' rows."""
    ops = tuple(ops)
    last = ops[-1]
    inter = intermediates(ops)
    inter += [t for t in streamed if t not in inter]
    height = nhwc(last.outputs[0].shape)[1]
    stripes = _stripe_rows(ops, stripe_height, height, inter, windows, lead_rows)
    if capacity is None:
        capacity = {t: 0 for t in inter}
        for _, needs in stripes:
            for x, (n0, n1) in needs.items():
                if n1 - n0 > capacity[x]:
                    capacity[x] = n1 - n0
    return Schedule(tuple(_events(ops, stripes, inter, capacity)), dict(capacity), len(stripes))


def _make_room(y, stop, needs, produced, base, capacity, events) -> bool:
    """Before rows up to `stop` of buffered tensor y are written: if they would pass the buffer's end, move the
    rows still needed to its top (a Shift) and move its base up. Did the base move?"""
    if stop <= base[y] + capacity[y]:
        return False
    keep_from = needs[y][0]  # rows below this are never read again
    if stop - keep_from > capacity[y]:
        raise ValueError(f"cascade: a stripe buffer of {capacity[y]} rows cannot hold rows "
                         f"{keep_from}..{stop - 1} of '{y.name}'")
    if keep_from < produced[y]:
        events.append(Shift(y, keep_from, produced[y], keep_from - base[y]))
    moved = base[y] != keep_from
    base[y] = keep_from
    return moved


def _row_windows(ops, memo: dict | None = None) -> list:
    """Per op: (op, its output, [(input, its _read_window)]), worked out once per schedule, or once per `memo`
    (op -> its entry: it depends on the op alone)."""
    if memo is None:
        return [_op_row_windows(op) for op in ops]
    result = []
    for op in ops:
        entry = memo.get(op)
        if entry is None:
            entry = memo[op] = _op_row_windows(op)
        result.append(entry)
    return result


def _op_row_windows(op) -> tuple:
    return op, op.outputs[0], [(x, _read_window(op, x)) for x in activation_inputs(op)]


def _stripe_rows(ops, stripe_height, height, inter, memo: dict | None = None, lead_rows: int = 0) -> list:
    """Per stripe: (computes: (op, its output if buffered else None, output rows start, stop, {input:
    input_rows}) of each op that computes rows in it, in execution order; needs: buffered tensor -> the rows
    [start, stop) its readers take in this stripe). Which rows each op computes depends only on what was
    produced before, never on the stripe buffers' sizes. `memo`: build_schedule's `windows`; `lead_rows`:
    build_schedule's."""
    windows = _row_windows(ops, memo)
    buffered = set(inter)
    outputs = {y for _, y, _ in windows}
    fetched = [t for t in inter if t not in outputs]  # streamed inputs: filled by Fetch events
    produced = {t: 0 for t in inter}
    last = ops[-1]
    # per op, last first: (op, its output if buffered else None, [(input, its window, is it buffered)])
    backwards = [(op, y if y in buffered else None, [(x, window, x in buffered) for x, window in op_windows])
                 for op, y, op_windows in windows[::-1]]
    stripes = []
    starts = [0] + list(range(lead_rows, height, stripe_height)) if 0 < lead_rows < height else \
        list(range(0, height, stripe_height))
    for y0, y1 in zip(starts, starts[1:] + [height]):
        computes, needs = [], {}
        for op, y, op_windows in backwards:  # what each op must compute in this stripe
            if op is last:
                start, stop = y0, y1
            else:
                start = produced[y]
                need = needs.get(y)
                if need is None or need[1] <= start:
                    continue  # nothing new of it is read in this stripe
                stop = need[1]
            op_reads = {}
            for x, window, x_buffered in op_windows:
                r0, r1, _pad = op_reads[x] = _rows_read(window, start, stop)
                if x_buffered:  # the rows all its readers in the group take in this stripe
                    need = needs.get(x)
                    if need is None:
                        needs[x] = (r0, r1)
                    elif need[0] > r0 or need[1] < r1:
                        needs[x] = (need[0] if need[0] < r0 else r0, need[1] if need[1] > r1 else r1)
            computes.append((op, y, start, stop, op_reads))
        computes.reverse()
        for x in fetched:
            produced[x] = max(produced[x], needs.get(x, (0, 0))[1])
        for _, y, _, stop, _ in computes:
            if y is not None:
                produced[y] = stop
        stripes.append((computes, needs))
    return stripes


def _events(ops, stripes, inter, capacity) -> list:
    """The Fetch, Shift and Compute events of the stripes (`_stripe_rows`) with stripe buffers of `capacity`
    rows. Events between two moves of a buffer's base share one `bases` dict (read only)."""
    outputs = {op.outputs[0] for op in ops}
    fetched = [t for t in inter if t not in outputs]
    produced = {t: 0 for t in inter}
    base = {t: 0 for t in inter}
    bases = dict(base)  # the current `base`, as the Compute events hold it
    events = []
    for computes, needs in stripes:
        for x in fetched:  # the caller's new rows, before any op reads them
            start, stop = produced[x], needs.get(x, (0, 0))[1]
            if start >= stop:
                continue
            if _make_room(x, stop, needs, produced, base, capacity, events):
                bases = dict(base)
            events.append(Fetch(x, start, stop, start - base[x]))
            produced[x] = stop
        for op, y, start, stop, reads in computes:  # in execution order
            if y is not None and stop > base[y] + capacity[y]:  # (_make_room's test, asked here first)
                _make_room(y, stop, needs, produced, base, capacity, events)
                bases = dict(base)
            events.append(Compute(op, start, stop, reads, bases))
            if y is not None:
                produced[y] = stop
    return events


# -- groups ------------------------------------------------------------------------------------------------
@dataclass(eq=False)
class CascadeGroup:
    """Consecutive ops (steps first_step .. first_step + len(ops) - 1) run in stripes of `stripe_height`
    output rows of the last op."""

    ops: tuple
    stripe_height: int
    first_step: int
    streamed: tuple = ()  # graph inputs read in rows from the caller (Fetch events), never whole
    input_numbers: tuple = ()  # each streamed input's number among the graph inputs (the caller's `input`)
    sources: tuple = ()  # each streamed input as the caller gives it (uint8: the rows are converted as read)
    _schedule: Schedule | None = field(default=None, repr=False)
    _windows: dict | None = field(default=None, repr=False)  # build_schedule's memo, shared by one build's groups
    lead_rows: int = 0  # rows of the first stripe (build_schedule); 0: stripe_height
    # What `buffered`, `external_inputs`, `buffer_bytes` and `exact_overlap_allowed` found (the last two from the
    # cached schedule): the memory planner's bound asks them again for every candidate the kept groups are tried with
    _answers: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def last_step(self) -> int:
        return self.first_step + len(self.ops) - 1

    @property
    def output(self):
        return self.ops[-1].outputs[0]

    @property
    def intermediates(self) -> list:
        return intermediates(self.ops)

    @property
    def buffered(self) -> list:
        """The tensors that live in stripe buffers: the intermediates and the streamed inputs."""
        known = self._answers.get("buffered")
        if known is None:
            known = self._answers["buffered"] = self.intermediates + list(self.streamed)
        return list(known)

    def external_inputs(self) -> list:
        """Group inputs that are whole tensors (streamed inputs are not)."""
        known = self._answers.get("external")
        if known is None:
            inter = set(self.buffered)
            known = self._answers["external"] = list(dict.fromkeys(x for op in self.ops for x in activation_inputs(op)
                                                                   if x not in inter))
        return list(known)

    def schedule(self, recompute: bool = False) -> Schedule:
        """The group's events (cached); `recompute` derives them afresh (for the plan's proof)."""
        if recompute:
            return build_schedule(self.ops, self.stripe_height, streamed=self.streamed, lead_rows=self.lead_rows)
        if self._schedule is None:
            self._schedule = build_schedule(self.ops, self.stripe_height, streamed=self.streamed,
                                            windows=self._windows, lead_rows=self.lead_rows)
        return self._schedule

    def input_number(self, tensor) -> int:
        return self.input_numbers[self.streamed.index(tensor)]

    def converts(self, tensor) -> bool:
        """Does the streamed input arrive as uint8 (the model's edge), to be converted to int8 as it is read?"""
        source = self.sources[self.streamed.index(tensor)] if self.sources else tensor
        return source.dtype == "uint8" and tensor.dtype == "int8"

    def buffer_bytes(self, tensor) -> int:
        """Size of the stripe buffer of an intermediate or a streamed input."""
        key = ("bytes", tensor)
        if key not in self._answers:
            self._answers[key] = self.schedule().rows[tensor] * row_bytes(tensor)
        return self._answers[key]

    def exact_overlap_allowed(self, x, recompute: bool = False) -> bool:
        """May the group's output take exactly the bytes of its input x (x dying in the group)? `recompute`
        derives the schedule afresh instead of using the cached one (for the plan's proof)."""
        if recompute:
            return exact_overlap_allowed(self.ops, self.schedule(recompute), x)
        key = ("exact", x)
        if key not in self._answers:
            self._answers[key] = exact_overlap_allowed(self.ops, self.schedule(), x)
        return self._answers[key]

    def describe(self) -> dict:
        sched = self.schedule()
        computes = sum(isinstance(e, Compute) for e in sched.events)
        shifts = sum(isinstance(e, Shift) for e in sched.events)
        fetches = sum(isinstance(e, Fetch) for e in sched.events)
        return {"ops": [op.index for op in self.ops], "types": [op.type for op in self.ops],
                "steps": [self.first_step, self.last_step], "stripe_height": self.stripe_height,
                "stripes": sched.stripes, "commands": computes + shifts, "shifts": shifts,
                "input_fetches": fetches, "streamed_inputs": [t.name for t in self.streamed],
                "buffers": [{"tensor": t.name, "rows": sched.rows[t], "bytes": self.buffer_bytes(t),
                             "whole_tensor_bytes": t.nbytes} for t in self.buffered],
                **({"first_stripe_rows": self.lead_rows} if self.lead_rows else {})}


# -- groups that cross targets ---------------------------------------------------------------------------
def event_ops(events) -> list:
    """The op whose target runs each event: a Compute its own op; a Shift or a Fetch the op of the next
    Compute (a shift moves a stripe buffer's rows just before its producer writes past its end, a fetch comes
    before the ops of its stripe), which every stripe has after them (its last op)."""
    owners, pending = [], 0
    for event in events:
        if isinstance(event, Compute):
            owners.extend([event.op] * (pending + 1))
            pending = 0
        else:
            pending += 1
    if pending:
        raise ValueError("cascade: a stripe ends with a shift or a fetch and no layer after it")
    return owners


class GroupPart:
    """Some of a cascade group's events, all run by one target: to that target's lowering and cost model it
    looks like a group (`ops`: the group's ops it runs; `schedule()`: its events only; every other attribute,
    the stripe buffers included, is the group's). `runs`: how many separate runs of consecutive events it
    makes of the group's schedule (each one block of the run function, the other targets' runs between)."""

    def __init__(self, group, ops, events, runs: int = 1):
        whole = group.schedule()
        self.group = group
        self.ops = tuple(ops)
        self.runs = runs
        self._schedule = Schedule(tuple(events), whole.rows, whole.stripes)

    def schedule(self, recompute: bool = False) -> Schedule:
        return self._schedule

    def __getattr__(self, name):
        return getattr(self.group, name)


def group_parts(group, key_of) -> dict:
    """{key: GroupPart} of a group whose ops `key_of(op)` (their targets) tells apart: each key's events, with
    the number of runs they make; one key: {key: the group itself}."""
    keys = [key_of(op) for op in group.ops]
    if len(set(keys)) == 1:
        return {keys[0]: group}
    events, runs = {}, {}
    for run in group_runs(group, key_of):
        events.setdefault(run.key, []).extend(run.events)
        runs[run.key] = runs.get(run.key, 0) + 1
    return {key: GroupPart(group, [op for op in group.ops if key_of(op) == key], events[key], runs[key])
            for key in dict.fromkeys(keys)}


@dataclass(frozen=True)
class StripeRun:
    """Consecutive events of a group's schedule that one target runs (`key`), as a GroupPart (`part`)."""

    key: object
    events: tuple
    part: object


def group_runs(group, key_of) -> list:
    """The group's schedule cut into runs of consecutive events of one key (target), in execution order."""
    events = group.schedule().events
    owners = event_ops(events)
    runs, current, key = [], [], None
    for event, op in zip(events, owners):
        k = key_of(op)
        if current and k != key:
            runs.append(current)
            current = []
        current.append((event, op))
        key = k
    if current:
        runs.append(current)
    result = []
    for run in runs:
        members = {op for _, op in run}
        events = tuple(event for event, _ in run)
        part = GroupPart(group, [op for op in group.ops if op in members], events)
        result.append(StripeRun(key_of(run[0][1]), events, part))
    return result


def exact_overlap_allowed(ops, sched: Schedule, x) -> bool:
    """May output y of the last op start at x's first byte? Row r of y then lies on bytes [r, r + 1) *
    row_bytes(y) of x. Safe iff no event reads bytes of x that an earlier event has written as y; an event that
    reads x and writes y itself must be the last op, elementwise over x without broadcasting (row r of y on
    row r of x, each element read before it is written). So a group whose output is smaller per row than its
    input (a strided or channel-reducing chain) may write over the rows of its input it has consumed."""
    last, y = ops[-1], ops[-1].outputs[0]
    if x in activation_inputs(last):
        same = all(tuple(t.shape) == tuple(y.shape) and DTYPE_BYTES[t.dtype] == DTYPE_BYTES[y.dtype]
                   for t in activation_inputs(last))
        if last.type not in ROW_PRESERVING or not same:
            return False
    x_row, y_row = row_bytes(x), row_bytes(y)
    written = []  # byte ranges of y (from its first byte) written so far
    for event in sched.events:
        if not isinstance(event, Compute):
            continue
        if x in event.reads:
            r0, r1, _ = event.reads[x]
            if any(r0 * x_row < w1 and w0 < r1 * x_row for w0, w1 in written):
                return False
        if event.op is last:
            written.append((event.start * y_row, event.stop * y_row))
    return True


def chain_ok(ops, graph, users: dict | None = None) -> bool:
    """Can these consecutive ops form a cascade group (module docstring)? `users` (tensor -> ops reading it)
    is computed from the graph unless given."""
    if len(ops) < 2:
        return False
    outputs = set(graph.outputs)
    users = consumers(graph.ops) if users is None else users
    members = set(ops)
    if not all(_stripes_alone(op) for op in ops):
        return False
    for t in intermediates(ops):
        readers = users.get(t, [])
        if not _intermediate_ok(t, readers, outputs) or any(r not in members for r in readers):
            return False
    return True


class ChainTable:
    """chain_ok for every run of consecutive ops of `ops` (a graph's ops in steps), each op and intermediate
    checked once: `ok(i, j)` is chain_ok(ops[i:j], graph, users), for the search that asks about every run."""

    def __init__(self, ops, graph, users: dict):
        ops = list(ops)
        step = {op: k for k, op in enumerate(ops)}
        outputs = set(graph.outputs)
        alone = [_stripes_alone(op) for op in ops]
        # ops before each step that may not be in any chain: ops[i:j] all may when the counts at i and j agree
        self._not_alone = list(accumulate((not a for a in alone), initial=0))
        # per op: (first, last) step of its output's readers if that output may be an intermediate, else None
        self._readers = [_reader_steps(op.outputs[0], users.get(op.outputs[0], []), outputs, step) if a else None
                         for op, a in zip(ops, alone)]

    def ok(self, i: int, j: int) -> bool:
        if j - i < 2 or self._not_alone[j] != self._not_alone[i]:
            return False
        readers = self._readers
        for k in range(i, j - 1):
            r = readers[k]
            if r is None or r[0] < i or r[1] >= j:
                return False
        return True


def _reader_steps(t, readers, outputs, step: dict):
    """(first, last) step of the readers of `t` if it may be an intermediate (_intermediate_ok, every reader in
    `step`), else None."""
    if not _intermediate_ok(t, readers, outputs) or not all(r in step for r in readers):
        return None
    return min(step[r] for r in readers), max(step[r] for r in readers)


def _stripes_alone(op) -> bool:
    """The conditions of chain_ok on one op, whatever the chain."""
    if op.type not in STRIPE_OPS or len(op.outputs) != 1 or nhwc(op.outputs[0].shape)[0] != 1:
        return False
    if len(op.outputs[0].shape) != 4 or any(len(x.shape) != 4 for x in activation_inputs(op)):
        return False
    if op.type in WINDOW_OPS and (op.inputs[0] is None or op.inputs[0].is_const):
        return False
    if op.type in ROW_PRESERVING:
        y = op.outputs[0]
        if any(t is None or t.is_const or tuple(t.shape) != tuple(y.shape) for t in op.inputs[:2]):
            return False  # no broadcasting, no constant operands
    elif any(x is not op.inputs[0] for x in activation_inputs(op)):
        return False
    return True


def _intermediate_ok(t, readers, outputs) -> bool:
    """The conditions of chain_ok on an intermediate but that its readers are members of the chain."""
    if t in outputs or not readers:
        return False
    return all(r.inputs.count(t) == 1 for r in readers)  # ADD(t, t): one buffer read twice per stripe


def stripe_heights(chain, finer: bool = False) -> list:
    """Stripe heights worth trying, largest first: powers of two below the output height (`finer`: and three
    times powers of two, for the fit search, where a height between two powers may be the one that fits)."""
    height = nhwc(chain[-1].outputs[0].shape)[1]
    heights, h = set(), 1
    while h < height:
        heights.add(h)
        if finer and 3 * h < height:
            heights.add(3 * h)
        h *= 2
    return sorted(heights, reverse=True)


def streamable_inputs(chain, graph_inputs, users: dict) -> tuple:
    """The graph inputs (of `graph_inputs`, those the build may stream) that `chain` reads and nothing else
    does: the ones a group of these ops can read in rows from the caller. A window op reads them through its
    first input only (chain_ok), an elementwise op through either."""
    members = set(chain)
    read = dict.fromkeys(x for op in chain for x in activation_inputs(op))
    return tuple(x for x in read if x in graph_inputs and len(x.shape) == 4 and nhwc(x.shape)[0] == 1
                 and all(r in members for r in users.get(x, ())))


def absorb_input_conversions(graph) -> None:
    """For --stream-input: a uint8 image input reaches the model through the importer's edge QUANTIZE (q - 128,
    same scale: the sign bit flipped). Streamed, that conversion runs on each row as it is read, so the edge
    op goes, its int8 output becomes the graph input, and graph.stream_sources remembers the uint8 tensor the
    caller gives."""
    for k, x in enumerate(list(graph.inputs)):
        readers = [op for op in graph.ops if x in op.inputs]
        if len(readers) != 1 or x in graph.outputs:
            continue
        (q,) = readers
        if q.type != "QUANTIZE" or q.attrs.get("edge") != "uint8 input" or len(q.outputs) != 1:
            continue
        y = q.outputs[0]
        if y in graph.outputs or x.quant is None or y.quant is None or y.dtype != "int8" or \
                list(x.quant.scale) != list(y.quant.scale) or \
                [int(z) - 128 for z in x.quant.zero_point] != [int(z) for z in y.quant.zero_point]:
            continue
        graph.ops.remove(q)
        graph.tensors.remove(x)
        graph.inputs[k] = y
        graph.stream_sources[y] = x


def groups_by_op(cascades) -> dict:
    """op -> its cascade group, for the ops of every group."""
    return {op: g for g in cascades or () for op in g.ops}
