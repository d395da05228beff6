"""Static memory plan: every activation tensor gets a fixed offset in one arena, sized at build time.

Liveness is measured in execution steps (op positions). Two buffers may share bytes only if their live
ranges do not overlap, with one exception: in-place execution (below). An op's inputs and outputs are live
at the op's step. RESHAPE, EXPAND_DIMS and SQUEEZE outputs alias their input (same bytes, new shape); a host op's scratch is a buffer
live during its op only.

In-place execution. When an op's input dies at that op, its output may overlap it, provided the op never
overwrites an input byte it (or a later part of it) still has to read. Two rules, chosen per op type and
proved per pair by `verify_plan` (which recomputes them from the op, it does not trust the plan):

* exact (ADD, MUL, RELU family; input and output of the same shape, no broadcasting): output element i
  is computed from input element i only, so the output may start exactly at the input (same offset, same
  size). Safe in any processing order: element i is read before element i is written.
* raster (CONV_2D, DEPTHWISE_CONV_2D, AVERAGE/MAX_POOL_2D, FULLY_CONNECTED): output pixels are produced in
  NHWC raster order (batch, row, column; a fully connected row is one pixel) in groups: the pixels of one
  output row, or up to RASTER_PIXEL_BLOCK consecutive pixels, may be computed together with their reads
  and writes interleaved in any order (e.g. channel by channel across a row), but a group starts only
  after the reads of the pixels before it are done. The output may then start `distance` bytes *below*
  the input, where `distance` = max over output pixels P of (end of the output bytes of the last pixel
  in P's group - first input byte read by P or any later pixel), P's group reaching to the end of P's
  row and at least RASTER_PIXEL_BLOCK pixels. So whatever a group writes lies below every input byte
  that it or a later group still reads.
  The host C kernels satisfy this (pixel loops outermost; the blocked convolution computes two adjacent
  pixels together, the sliding depthwise kernel one channel of one row at a time), and
  tests/test_memory_plan.py runs them on overlapping buffers to check it; the NPU reads all operands of a
  command before writing its output (docs/npu-datasheet.md section 4), which is stronger. A kernel that
  computes several rows together, or loops over channels outside rows, must leave RASTER_INPLACE_OPS (or
  the rule must grow); kernels must not declare input and output pointers `restrict`.

Cascading (edgesdk/targets/npu/cascade.py). A cascade group runs consecutive NPU ops in row stripes; its
intermediate tensors exist only as *stripe buffers* (kind "stripe": a few rows, live over the whole group),
and every other tensor the group touches is live over the whole group too (stripes of all its ops
interleave). The group's per-op in-place rules do not apply; instead its output may take exactly the bytes
of an input dying in the group when the group's schedule never reads a row of that input after overwriting
it (rule "cascade-exact", recomputed from the schedule by `verify_plan`, which also recomputes each stripe
buffer's size).

Placement. Buffers are placed one at a time at the lowest aligned offset that no already placed buffer
forbids (each co-live buffer forbids an open interval of offsets, narrower for permitted overlaps). The
order matters; the planner tries several orders (by size, by lifetime, by time in both directions, by the
busiest step) and then improves the best with a deterministic local search (seeded moves in a fixed
budget), stopping early when it reaches the per-step lower bound. Deterministic: same graph, same plan.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from ..ir.graph import DTYPE_BYTES, Graph

ALIAS_OPS = {"RESHAPE", "EXPAND_DIMS", "SQUEEZE"}  # outputs share their input's bytes (same bytes, new shape)
EXACT_INPLACE_OPS = {"ADD", "MUL", "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"}
RASTER_INPLACE_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "FULLY_CONNECTED"}
RASTER_PIXEL_BLOCK = 4  # consecutive output pixels a kernel may compute together (besides a whole row)
# Local search after the heuristic orders: a fixed move count, not a time budget, so plans are reproducible.
SEARCH_ITERATIONS = 400  # at most this many moves
SEARCH_PATIENCE = 40  # stop after this many moves without a gain
SEARCH_SEED = 0


@dataclass(eq=False)
class Buffer:
    name: str
    size: int
    first: int  # first step at which the bytes must hold data
    last: int  # last step that reads them
    tensors: list = field(default_factory=list)
    offset: int | None = None
    kind: str = "tensor"  # "tensor" (an activation and its aliases), "scratch" (of tensors[0], an Op) or
    # "stripe" (the rolling stripe buffer of tensors[0], an intermediate of a cascade group)

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last

    def overlaps_in_space(self, other: "Buffer") -> bool:
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


@dataclass(eq=False)
class Overlap:
    """Permission for `output` to share bytes with `input`, which dies at `op` (step `step`).

    distance None: exact in-place (same offset). Else: output.offset + distance <= input.offset."""

    output: Buffer
    input: Buffer
    op: object
    step: int
    input_tensor: object
    distance: int | None
    rule: str
    group: object = None  # the CascadeGroup of a "cascade-exact" permission (live from its first step)

    @property
    def first_step(self) -> int:
        """First step at which the output may share the input's bytes."""
        return self.group.first_step if self.group is not None else self.step

    def allows(self) -> bool:
        if self.distance is None:
            return self.output.offset == self.input.offset and self.output.size == self.input.size
        return self.output.offset + self.distance <= self.input.offset


@dataclass
class MemoryPlan:
    buffers: list
    arena_bytes: int
    alignment: int
    offsets: dict  # Tensor -> offset
    scratch: dict  # Op -> (offset, size)
    overlaps: list = field(default_factory=list)  # Overlap permissions the planner may use
    lower_bound: int = 0  # no plan of these buffers (with these permissions) can use fewer bytes
    strategy: str = ""  # which placement order won
    cascades: list = field(default_factory=list)  # CascadeGroups (edgesdk/targets/npu/cascade.py)

    def offset(self, tensor) -> int:
        return self.offsets[tensor]

    def in_place(self) -> list:
        """The permitted overlaps the plan actually uses (output and input share bytes)."""
        return [o for o in self.overlaps if o.output.size and o.input.size and o.output.overlaps_in_space(o.input)]


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _alias_root(tensor, alias_of: dict):
    while tensor in alias_of:
        tensor = alias_of[tensor]
    return tensor


# -- liveness ------------------------------------------------------------------------------------------------

def _alias_map(graph: Graph) -> dict:
    alias_of = {}
    for op in graph.ops:
        if op.type in ALIAS_OPS and op.inputs[0] is not None and not op.inputs[0].is_const:
            alias_of[op.outputs[0]] = op.inputs[0]
    return alias_of


def build_buffers(graph: Graph, scratch_sizes: dict | None = None, cascades=()) -> list:
    """Group aliased tensors and compute each group's live range [first, last] in op steps; a cascade
    group's intermediates become stripe buffers and its other tensors live over the whole group."""
    alias_of = _alias_map(graph)
    end = len(graph.ops)
    groups: dict = {}
    for t in graph.activation_tensors():
        root = _alias_root(t, alias_of)
        buf = groups.get(root)
        if buf is None:
            buf = groups[root] = Buffer(root.name, root.nbytes, end, -1)
        buf.tensors.append(t)
    for step, op in enumerate(graph.ops):
        for t in op.inputs + op.outputs:
            if t is not None and not t.is_const:
                buf = groups[_alias_root(t, alias_of)]
                buf.first, buf.last = min(buf.first, step), max(buf.last, step)
    for t in graph.inputs:
        groups[_alias_root(t, alias_of)].first = -1  # written by the caller before the first op
    for t in graph.outputs:
        if not t.is_const:
            groups[_alias_root(t, alias_of)].last = end  # read by the caller after the last op
    for g in cascades:
        stripe = set(g.intermediates)
        for op in g.ops:
            for t in op.inputs + op.outputs:
                if t is not None and not t.is_const and t not in stripe:
                    buf = groups[_alias_root(t, alias_of)]
                    buf.first, buf.last = min(buf.first, g.first_step), max(buf.last, g.last_step)
        for t in g.intermediates:
            buf = groups[_alias_root(t, alias_of)]
            buf.size, buf.kind, buf.first, buf.last = g.buffer_bytes(t), "stripe", g.first_step, g.last_step
    buffers = list(groups.values())
    for step, op in enumerate(graph.ops):
        size = (scratch_sizes or {}).get(op, 0)
        if size:
            buffers.append(Buffer(f"scratch of op {op.index}", size, step, step, [op], kind="scratch"))
    return buffers


# -- in-place rules --------------------------------------------------------------------------------------------

def _nhwc(shape) -> tuple:
    shape = tuple(int(d) for d in shape)
    return (1,) * (4 - len(shape)) + shape


def _first_taps(out_size: int, stride: int, pad: int, dilation: int, kernel: int) -> np.ndarray:
    """Per output position along one axis: the input index of the first tap inside the input."""
    start = np.arange(out_size, dtype=np.int64) * stride - pad
    skip = np.where(start < 0, (-start + dilation - 1) // dilation, 0)  # taps that fall into the padding
    skip = np.minimum(skip, kernel - 1)
    return np.maximum(start + skip * dilation, 0)


def _window_geometry(op) -> tuple:
    """(kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w)."""
    a = op.attrs
    if op.type in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        kh, kw, dh, dw = a["filter_h"], a["filter_w"], 1, 1
    else:
        weights = op.inputs[1].shape  # CONV_2D [O, KH, KW, I]; DEPTHWISE_CONV_2D [1, KH, KW, O]
        kh, kw, dh, dw = weights[1], weights[2], a.get("dilation_h", 1), a.get("dilation_w", 1)
    return kh, kw, a["stride_h"], a["stride_w"], a.get("pad_top", 0), a.get("pad_left", 0), dh, dw


def _raster_distance(op, x, y, block: int = RASTER_PIXEL_BLOCK) -> int:
    """Smallest `distance` with which y may start below x (module docstring, rule 'raster')."""
    in_bytes, out_bytes = DTYPE_BYTES[x.dtype], DTYPE_BYTES[y.dtype]
    if op.type == "FULLY_CONNECTED":
        depth = op.inputs[1].shape[1]
        rows = x.num_elements // depth
        first_read = np.arange(rows, dtype=np.int64) * depth * in_bytes
        pixel_bytes = (y.num_elements // rows) * out_bytes
        row_pixels = 1
    else:
        n, ih, iw, ic = _nhwc(x.shape)
        _, oh, ow, oc = _nhwc(y.shape)
        kh, kw, sh, sw, pt, pl, dh, dw = _window_geometry(op)
        rows = _first_taps(oh, sh, pt, dh, kh)
        cols = _first_taps(ow, sw, pl, dw, kw)
        batch = np.arange(n, dtype=np.int64)[:, None, None]
        first_read = (((batch * ih + rows[None, :, None]) * iw + cols[None, None, :]) * ic * in_bytes).reshape(-1)
        pixel_bytes = oc * out_bytes
        row_pixels = ow
    # What pixel P or any later pixel reads starts here (non-monotone with dilation, hence the suffix min).
    still_needed = np.minimum.accumulate(first_read[::-1])[::-1]
    # Where the writes of P's group end: the end of P's row, or pixel P + block - 1 (not past the last pixel).
    pixels = first_read.size
    index = np.arange(pixels, dtype=np.int64)
    group_end = np.maximum(np.minimum(index + block, pixels), (index // row_pixels + 1) * row_pixels)
    written_end = group_end * pixel_bytes
    return int(max(0, (written_end - still_needed).max()))


def required_overlap(op, x):
    """(rule, distance) under which op's output may overlap its input x, or None if it never may.

    Only the arithmetic is checked here; whether x dies at op is the caller's business."""
    if len(op.outputs) != 1 or x is None or x.is_const:
        return None
    y = op.outputs[0]
    if op.type in EXACT_INPLACE_OPS:
        same = tuple(x.shape) == tuple(y.shape) and DTYPE_BYTES[x.dtype] == DTYPE_BYTES[y.dtype]
        others_same = all(t is None or t.is_const or tuple(t.shape) == tuple(y.shape) for t in op.inputs)
        return ("exact", None) if same and others_same else None
    if op.type in RASTER_INPLACE_OPS and x is op.inputs[0]:
        return ("raster", _raster_distance(op, x, y))
    return None


def find_overlaps(graph: Graph, buffers: list, cascades=()) -> list:
    """Every permitted (output, input) overlap: the input's buffer dies at the op producing the output
    (for a cascade group: at its last op, the output being produced from its first)."""
    owner = {t: buf for buf in buffers if buf.kind == "tensor" for t in buf.tensors}  # aliases included
    in_group = {op for g in cascades for op in g.ops}
    result = [o for g in cascades for o in _cascade_overlaps(g, owner)]
    for step, op in enumerate(graph.ops):
        if op.type in ALIAS_OPS or len(op.outputs) != 1 or op in in_group:
            continue
        out_buf = owner.get(op.outputs[0])
        if out_buf is None or out_buf.first != step:
            continue
        for x in dict.fromkeys(op.inputs):  # each distinct input once
            if x is None or x.is_const:
                continue
            in_buf = owner[x]
            if in_buf is out_buf or in_buf.last != step:
                continue
            rule = required_overlap(op, x)
            if rule is not None:
                result.append(Overlap(out_buf, in_buf, op, step, x, rule[1], rule[0]))
    return result


def _cascade_overlaps(group, owner: dict) -> list:
    out_buf = owner.get(group.output)
    result = []
    if out_buf is None or out_buf.first != group.first_step:
        return result
    for x in group.external_inputs():
        in_buf = owner.get(x)
        if in_buf is None or in_buf is out_buf or in_buf.last != group.last_step:
            continue
        if group.exact_overlap_allowed(x):
            result.append(Overlap(out_buf, in_buf, group.ops[-1], group.last_step, x, None, "cascade-exact", group))
    return result


# -- placement -------------------------------------------------------------------------------------------------

class _Conflicts:
    """For each buffer, the co-live buffers and how they restrict each other's offsets."""

    def __init__(self, buffers: list, overlaps: list):
        self.buffers = buffers
        index = {id(b): i for i, b in enumerate(buffers)}
        permits = {}
        for o in overlaps:
            permits[(index[id(o.output)], index[id(o.input)])] = o.distance
        self.neighbors = [[] for _ in buffers]  # i -> [(j, kind, distance)]
        for i, a in enumerate(buffers):
            for j in range(i + 1, len(buffers)):
                b = buffers[j]
                if not (a.size and b.size and a.overlaps_in_time(b)):
                    continue
                for (p, q) in ((i, j), (j, i)):
                    if (p, q) in permits:
                        distance = permits[(p, q)]
                        kind = "exact" if distance is None else "below"
                        self.neighbors[p].append((q, kind, distance))  # p is the output of q
                        self.neighbors[q].append((p, "exact" if distance is None else "above", distance))
                        break
                else:
                    self.neighbors[i].append((j, "disjoint", 0))
                    self.neighbors[j].append((i, "disjoint", 0))

    def forbidden(self, i: int, offsets: list) -> list:
        """Open intervals of offsets that buffer i may not take, given the placed buffers' offsets."""
        size = self.buffers[i].size
        intervals = []
        for j, kind, distance in self.neighbors[i]:
            o = offsets[j]
            if o is None:
                continue
            other = self.buffers[j].size
            if kind == "disjoint":
                intervals.append((o - size, o + other))
            elif kind == "below":  # i is the output: o_i <= o_j - distance, or above o_j entirely
                intervals.append((o - distance, o + other))
            elif kind == "above":  # i is the input: o_i >= o_j + distance, or below o_j entirely
                intervals.append((o - size, o + distance))
            else:  # exact: the same offset, or disjoint (two open intervals leave o itself free)
                intervals.append((o - size, o))
                intervals.append((o, o + other))
        return intervals


def _lowest_free(intervals: list, alignment: int) -> int:
    """The lowest aligned offset >= 0 inside none of the open intervals (a sweep in order of their start)."""
    candidate = 0
    for lo, hi in sorted(intervals):
        if candidate <= lo:
            break  # this interval and all later ones start at or above the candidate
        if candidate < hi:
            candidate = _align(hi, alignment)
    return candidate


def _place_order(order: list, conflicts: _Conflicts, alignment: int, keep: int = 0, previous: list | None = None,
                 give_up_above: int | None = None) -> tuple:
    """Offsets for buffers placed in `order`; returns (offsets, arena), or (None, None) as soon as the
    arena would exceed `give_up_above`. The first `keep` buffers of `order` keep their `previous` offsets
    (the caller guarantees the same prefix was placed before)."""
    offsets = [None] * len(conflicts.buffers)
    arena = 0
    for position, i in enumerate(order):
        if position < keep:
            offsets[i] = previous[i]
        else:
            offsets[i] = _lowest_free(conflicts.forbidden(i, offsets), alignment)
        arena = max(arena, offsets[i] + conflicts.buffers[i].size)
        if give_up_above is not None and _align(arena, alignment) > give_up_above:
            return None, None
    return offsets, _align(arena, alignment)


def place_greedy_by_size(buffers: list, alignment: int) -> int:
    """Largest first, each at the lowest free offset, no in-place overlaps; assign offsets, return the arena."""
    conflicts = _Conflicts(buffers, [])
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, buffers[i].first))
    offsets, arena = _place_order(order, conflicts, alignment)
    for buf, offset in zip(buffers, offsets):
        buf.offset = offset
    return arena


def lower_bound(buffers: list, overlaps: list, alignment: int) -> int:
    """Max over steps of the bytes live at that step, minus the most each permitted overlap could save."""
    if not buffers:
        return 0
    steps = range(min(b.first for b in buffers), max(b.last for b in buffers) + 1)
    best = max(b.size for b in buffers)
    for s in steps:
        live = sum(b.size for b in buffers if b.first <= s <= b.last)
        saved = 0
        for o in overlaps:
            if o.first_step <= s <= o.step:
                out, inp = o.output.size, o.input.size
                saved += min(out, inp) if o.distance is None else max(0, min(inp, out - o.distance))
        best = max(best, live - saved)
    return _align(best, alignment)


def _heuristic_orders(buffers: list) -> dict:
    n = range(len(buffers))
    busiest = {}
    for s in {b.first for b in buffers} | {b.last for b in buffers}:
        live = sum(b.size for b in buffers if b.first <= s <= b.last)
        for i in n:
            if buffers[i].first <= s <= buffers[i].last:
                busiest[i] = max(busiest.get(i, 0), live)
    b = buffers
    return {
        "largest first": sorted(n, key=lambda i: (-b[i].size, b[i].first)),
        "latest first": sorted(n, key=lambda i: (-b[i].first, -b[i].size)),
        "earliest first": sorted(n, key=lambda i: (b[i].first, -b[i].size)),
        "longest-lived first": sorted(n, key=lambda i: (-(b[i].last - b[i].first), -b[i].size, b[i].first)),
        "size x lifetime": sorted(n, key=lambda i: (-b[i].size * (b[i].last - b[i].first + 1), b[i].first)),
        "busiest step first": sorted(n, key=lambda i: (-busiest.get(i, 0), -b[i].size, b[i].first)),
        "busiest step, latest first": sorted(n, key=lambda i: (-busiest.get(i, 0), -b[i].first, -b[i].size)),
    }


def _move(order: list, offsets: list, arena: int, buffers: list, rng: random.Random) -> tuple:
    """Change `order` in place; return the two positions involved. Mostly moves a buffer that ends at the
    top of the arena to an earlier position (so it is placed before what pushed it up), else a random
    swap or insertion."""
    if rng.random() < 0.7:
        top = [k for k, i in enumerate(order) if offsets[i] + buffers[i].size > arena - buffers[i].size // 2 and k > 0]
        if top:
            i = rng.choice(top)
            j = rng.randrange(i)
            order.insert(j, order.pop(i))
            return i, j
    i, j = rng.randrange(len(order)), rng.randrange(len(order))
    if rng.random() < 0.5:
        order[i], order[j] = order[j], order[i]
    else:
        order.insert(j, order.pop(i))
    return i, j


def search_placement(buffers: list, overlaps: list, alignment: int, iterations: int = SEARCH_ITERATIONS) -> tuple:
    """Assign offsets with the best order found; return (arena, lower bound, strategy)."""
    conflicts = _Conflicts(buffers, overlaps)
    bound = lower_bound(buffers, overlaps, alignment)
    best = None
    for name, order in _heuristic_orders(buffers).items():
        offsets, arena = _place_order(order, conflicts, alignment)
        if best is None or arena < best[0]:
            best = (arena, order, offsets, name)
    rng = random.Random(SEARCH_SEED)
    improved, since_gain = False, 0
    for _ in range(iterations if len(buffers) > 1 else 0):
        if best[0] <= bound or since_gain >= SEARCH_PATIENCE:
            break
        since_gain += 1
        order = list(best[1])
        i, j = _move(order, best[2], best[0], buffers, rng)
        offsets, arena = _place_order(order, conflicts, alignment, keep=min(i, j), previous=best[2],
                                      give_up_above=best[0])
        if arena is not None:  # not worse: keep it (equal moves let the search cross plateaus)
            if arena < best[0]:
                improved, since_gain = True, 0
            best = (arena, order, offsets, best[3])
    arena, _, offsets, name = best
    for buf, offset in zip(buffers, offsets):
        buf.offset = offset
    return arena, bound, name + (" + local search" if improved else "")


def plan_memory(graph: Graph, scratch_sizes: dict | None = None, alignment: int = 16,
                in_place: bool = True, cascades=()) -> MemoryPlan:
    """Plan the arena. `in_place=False` forbids every overlap of live buffers (for comparison); `cascades`
    are the cascade groups the NPU codegen will run in stripes (edgesdk/targets/npu/cascade.py)."""
    buffers = build_buffers(graph, scratch_sizes, cascades)
    overlaps = find_overlaps(graph, buffers, cascades) if in_place else []
    arena, bound, strategy = search_placement(buffers, overlaps, alignment)
    offsets, scratch = {}, {}
    for buf in buffers:
        if buf.kind == "scratch":
            scratch[buf.tensors[0]] = (buf.offset, buf.size)
        else:
            for t in buf.tensors:
                offsets[t] = buf.offset
    plan = MemoryPlan(buffers, arena, alignment, offsets, scratch, overlaps, bound, strategy, list(cascades))
    verify_plan(plan)
    return plan


def verify_plan(plan: MemoryPlan) -> None:
    """Prove the plan: buffers inside the arena, aligned, and no two live at once share a byte, except an
    output and the input dying at its op where that op's in-place rule (recomputed here) allows it."""
    for buf in plan.buffers:
        if buf.offset < 0 or buf.offset + buf.size > plan.arena_bytes or buf.offset % plan.alignment:
            raise AssertionError(f"memory plan: buffer {buf.name} at {buf.offset}+{buf.size} outside the arena")
    _check_cascades(plan)
    permitted = {}
    for o in plan.overlaps:
        _check_permission(o)
        permitted[(id(o.output), id(o.input))] = o
    for i, a in enumerate(plan.buffers):
        for b in plan.buffers[i + 1:]:
            if not (a.size and b.size and a.overlaps_in_time(b) and a.overlaps_in_space(b)):
                continue
            o = permitted.get((id(a), id(b))) or permitted.get((id(b), id(a)))
            if o is None:
                raise AssertionError(f"memory plan: {a.name} and {b.name} are live together and overlap")
            if not o.allows():
                want = "the same offset" if o.distance is None else f"at least {o.distance} bytes below"
                raise AssertionError(f"memory plan: {o.output.name} must start {want} {o.input.name} "
                                     f"(in-place rule '{o.rule}' of {o.op.type}), not at {o.output.offset} vs {o.input.offset}")


def _check_cascades(plan: MemoryPlan) -> None:
    """Each cascade group: its schedule (recomputed) fits every stripe buffer, and every tensor the group
    touches has bytes live over the whole group."""
    owner = {t: buf for buf in plan.buffers if buf.kind != "scratch" for t in buf.tensors}
    seen = set()
    for g in plan.cascades:
        if seen & set(g.ops):
            raise AssertionError("memory plan: two cascade groups share an op")
        seen |= set(g.ops)
        from ..targets.npu.cascade import build_schedule, row_bytes

        rows = build_schedule(g.ops, g.stripe_height).rows
        for op in g.ops:
            for t in op.inputs + op.outputs:
                if t is None or t.is_const:
                    continue
                buf = owner.get(t)
                if buf is None or buf.first > g.first_step or buf.last < g.last_step:
                    raise AssertionError(f"memory plan: '{t.name}' is not live over cascade group steps "
                                         f"{g.first_step}..{g.last_step}")
                if t in rows:
                    need = rows[t] * row_bytes(t)
                    if buf.kind != "stripe" or buf.size < need:
                        raise AssertionError(f"memory plan: stripe buffer of '{t.name}' has {buf.size} bytes, "
                                             f"its cascade schedule needs {need}")
                elif buf.size < t.nbytes:
                    raise AssertionError(f"memory plan: '{t.name}' ({t.nbytes} bytes) does not fit its buffer")


def _check_permission(o: Overlap) -> None:
    """An overlap permission is only valid if the input dies where the output is born, and the op's rule
    (recomputed) is the one recorded."""
    if o.rule == "cascade-exact":
        g = o.group
        if o.input.last != g.last_step or o.output.first != g.first_step or o.op is not g.ops[-1] or \
                not g.exact_overlap_allowed(o.input_tensor, recompute=True):
            raise AssertionError(f"memory plan: cascade group of ops {[op.index for op in g.ops]} does not allow "
                                 f"{o.output.name} to take the bytes of {o.input.name}")
        return
    if o.input.last != o.step or o.output.first != o.step:
        raise AssertionError(f"memory plan: {o.output.name} may not overlap {o.input.name}: the input does not "
                             f"die at step {o.step} where the output is produced")
    rule = required_overlap(o.op, o.input_tensor)
    if rule is None or rule[0] != o.rule or (rule[1] is None) != (o.distance is None) or \
            (rule[1] is not None and o.distance < rule[1]):
        raise AssertionError(f"memory plan: {o.op.type} does not allow its output to overlap its input as recorded "
                             f"({o.rule}, {o.distance}); its rule is {rule}")
