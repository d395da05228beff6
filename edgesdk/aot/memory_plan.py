"""Static memory plan: every activation tensor gets a fixed offset in one arena, sized at build time.

Liveness is measured in execution steps (op positions). Two buffers may share bytes only if their live
ranges do not overlap, with one exception: in-place execution (below). An op's inputs and outputs are live
at the op's step. RESHAPE, EXPAND_DIMS and SQUEEZE outputs alias their input (same bytes, new shape); a host op's scratch is a buffer
live during its op only.

In-place execution. When an op's input dies at that op, its output may overlap it, provided the op never
overwrites an input byte it (or a later part of it) still has to read. Whether an op may do so is its
target's answer (`Target.in_place(op, x)`: the rule its code honours, None by default -- a target that says
nothing gets no overlap); the planner receives those answers as a function `in_place(op, x) -> rule | None`.
Each rule is a geometric condition that this module computes from the op, and `verify_plan` recomputes it
(it does not trust the plan):

* exact (elementwise ops; input and output of the same shape, no broadcasting): output element i is
  computed from input element i only, so the output may start exactly at the input (same offset, same
  size). Safe in any processing order in which element i is read before element i is written.
* raster (window ops: CONV_2D, DEPTHWISE_CONV_2D, AVERAGE/MAX_POOL_2D; and FULLY_CONNECTED): output pixels are
  produced in NHWC raster order (batch, row, column; a fully connected row is one pixel) in groups: the pixels
  of one output row, or up to RASTER_PIXEL_BLOCK consecutive pixels, may be computed together with their
  reads and writes interleaved in any order (e.g. channel by channel across a row), but a group starts only
  after the reads of the pixels before it are done. The output may then start `distance` bytes *below* the
  input, where `distance` = max over output pixels P of (end of the output bytes of the last pixel in P's
  group - first input byte read by P or any later pixel), P's group reaching to the end of P's row and at
  least RASTER_PIXEL_BLOCK pixels. So whatever a group writes lies below every input byte that it or a later
  group still reads. A rule a target names for an op it does not fit (raster for an op without a window)
  gives no overlap.

Which kernels honour which rule is written beside them (edgesdk/targets/c/in_place.py for the host kernels,
which tests/test_memory_plan.py runs on overlapping buffers; the NPU and DSP in their packages).

Cascading (edgesdk/ops/stripes.py, searched by edgesdk/aot/cascade.py). A cascade group runs consecutive ops
in row stripes; its intermediate tensors exist only as *stripe buffers* (kind "stripe": a few rows, live over
the whole group), and every other tensor the group touches is live over the whole group too (stripes of all
its ops interleave). The group's per-op in-place rules do not apply; instead its output may take exactly the
bytes of an input dying in the group when the group's schedule never reads a row of that input after
overwriting it (rule "cascade-exact", recomputed from the schedule by `verify_plan`, which also recomputes
each stripe buffer's size): the same bytes when the last op is elementwise over that input, else the output
may start at or below the input's first byte (a strided or narrowing chain writes over input rows it has
consumed). A graph input the group streams (`CascadeGroup.streamed`: the caller writes its rows during the
group) is a stripe buffer too, live over the group's steps only.

Placement. Buffers are placed one at a time at the lowest aligned offset that no already placed buffer
forbids (each co-live buffer forbids an open interval of offsets, narrower for permitted overlaps). The
order matters; the planner tries several orders (by size, by lifetime, by time in both directions, by the
busiest step) and then improves the best with a deterministic local search (seeded moves in a fixed
budget of moves and of re-placed buffers), stopping early when it reaches the per-step lower bound (the
heuristic orders too: once one reaches it none can win, and a later order is given up as soon as it
cannot beat the best). Deterministic: same graph, same plan. When many buffers are live together, the
free-offset query reads an index of the placed buffers (a segment tree over the steps holding merged
offset intervals) instead of every co-live buffer, and verify_plan sweeps over the steps instead of
testing every pair, so planning is near-linear in the number of buffers (O(n log^2 n) per order) even
when hundreds of them are live together; when each buffer meets only a few others (every shared model)
the query asks those few directly, which is cheaper at that size. `MemoryPlan.work` counts the work
(tests/test_memory_plan.py checks its growth, and that both ways find exactly the offsets of the pairwise
rule).
"""

from __future__ import annotations

import heapq
import random
from bisect import bisect_left, bisect_right
from itertools import accumulate
from operator import add

import numpy as np

from ..dataclass_cache import dataclass, field
from ..ir.graph import ALIAS_OPS, DTYPE_BYTES, Graph
from ..ops.window import WINDOW_OPS, window_geometry
from ..ops.stripes import activation_inputs, row_bytes
from ..targets.api import compile_memo

IN_PLACE_RULES = ("exact", "raster")  # what Target.in_place may answer (module docstring)
RASTER_PIXEL_BLOCK = 4  # consecutive output pixels a kernel may compute together (besides a whole row)
# Local search after the heuristic orders: a fixed move count, not a time budget, so plans are reproducible.
SEARCH_ITERATIONS = 400  # at most this many moves
SEARCH_PATIENCE = 40  # stop after this many moves without a gain
SEARCH_SEED = 0
# ... and re-places at most this many buffers in all (each move re-places the whole order: prefix and suffix),
# so that the search's work is bounded on large graphs. The shared models stay far below it.
SEARCH_PLACEMENT_BUDGET = 200_000
# Placement asks each placed co-live buffer directly (the pairwise rule) while the buffers meet at most this
# many others on average; above, an index of the placed buffers answers (near-linear at any size).
PAIRWISE_LIMIT = 32


@dataclass(eq=False)
class Buffer:
    name: str
    size: int
    first: int  # first step at which the bytes must hold data
    last: int  # last step that reads them
    tensors: list = field(default_factory=list)
    offset: int | None = None
    kind: str = "tensor"  # "tensor" (an activation and its aliases), "state" (persistent between inferences),
    # "scratch" (of tensors[0], an Op) or
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
    cascades: list = field(default_factory=list)  # CascadeGroups (edgesdk/ops/stripes.py)
    work: dict = field(default_factory=dict)  # what planning it took (Work.as_dict()): counts, not seconds

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
        x = op.inputs[0] if op.inputs else None
        # State is not aliased: an ASSIGN_VARIABLE may change it while the alias is still being read.
        if op.type in ALIAS_OPS and x is not None and not x.is_const and not x.persistent and not op.outputs[0].persistent:
            alias_of[op.outputs[0]] = x
    return alias_of


@dataclass
class _GraphFacts:
    """What build_buffers and find_overlaps read from the graph whatever the cascade groups, worked out once
    per graph: each buffer before any group (name, size, first, last, tensors, kind), the buffer of each
    activation tensor (`slot`: its position), and the ops that may run in place (step, op, output, distinct
    activation inputs)."""

    base: list
    slot: dict
    in_place_ops: list


def _graph_facts(graph: Graph) -> _GraphFacts:
    alias_of, tensors = _alias_map(graph), graph.activation_tensors()
    end = len(graph.ops)
    roots, slot, base = {}, {}, []
    for t in tensors:
        root = _alias_root(t, alias_of)
        if root not in roots:
            roots[root] = len(base)
            base.append([root.name, root.nbytes, end, -1, [], "tensor"])
        slot[t] = roots[root]
        base[slot[t]][4].append(t)
    for step, op in enumerate(graph.ops):
        for t in op.inputs + op.outputs:
            if t is not None and not t.is_const:
                entry = base[roots[_alias_root(t, alias_of)]]
                entry[2], entry[3] = min(entry[2], step), max(entry[3], step)
    for t in graph.inputs:
        base[roots[_alias_root(t, alias_of)]][2] = -1  # written by the caller before the first op
    for t in graph.outputs:
        if not t.is_const:
            base[roots[_alias_root(t, alias_of)]][3] = end  # read by the caller after the last op
    for t in tensors:
        if t.persistent:  # kept between inferences: live from before the first op to after the last
            entry = base[roots[_alias_root(t, alias_of)]]
            entry[2], entry[3], entry[5] = -1, end, "state"
    in_place_ops = [(step, op, op.outputs[0], [x for x in dict.fromkeys(op.inputs) if x is not None and not x.is_const])
                    for step, op in enumerate(graph.ops) if op.type not in ALIAS_OPS and len(op.outputs) == 1]
    return _GraphFacts([tuple(entry) for entry in base], slot, in_place_ops)


def build_buffers(graph: Graph, scratch_sizes: dict | None = None, cascades=(), striped_scratch=None,
                  facts: _GraphFacts | None = None) -> list:
    """Group aliased tensors and compute each group's live range [first, last] in op steps; a cascade
    group's intermediates become stripe buffers and its other tensors live over the whole group.
    `striped_scratch(op)`: False when the op's code in stripes takes no scratch (None: it keeps it).
    `facts`: the graph's _graph_facts, when the caller has them already."""
    facts = facts or _graph_facts(graph)
    buffers = [Buffer(name, size, first, last, list(tensors), kind=kind)
               for name, size, first, last, tensors, kind in facts.base]
    slot = facts.slot
    for g in cascades:
        stripe = set(g.buffered)
        for op in g.ops:
            for t in op.inputs + op.outputs:
                if t is not None and not t.is_const and t not in stripe:
                    buf = buffers[slot[t]]
                    buf.first, buf.last = min(buf.first, g.first_step), max(buf.last, g.last_step)
        for t in g.buffered:  # a streamed input too: the caller writes its rows during the group only
            buf = buffers[slot[t]]
            buf.size, buf.kind, buf.first, buf.last = g.buffer_bytes(t), "stripe", g.first_step, g.last_step
    grouped = {op for g in cascades for op in g.ops}
    for step, op in enumerate(graph.ops):
        size = (scratch_sizes or {}).get(op, 0)
        if _drops_scratch(op, grouped, striped_scratch):
            size = 0
        if size:
            buffers.append(Buffer(f"scratch of op {op.index}", size, step, step, [op], kind="scratch"))
    return buffers


def _drops_scratch(op, grouped: set, striped_scratch) -> bool:
    """Does `op` give up its scratch area: it runs in a group's stripes, whose code takes none
    (`striped_scratch`, Target.stripes_use_scratch; None: every op keeps its scratch)?"""
    return op in grouped and striped_scratch is not None and not striped_scratch(op)


def _pair_saving(problem: "MemoryProblem", pair: tuple, firsts, lasts, sizes, kinds, grouped) -> int:
    """The bytes in-place pair (step, op, output slot, input slot, input) saves at its step (find_overlaps'
    tests: the output is born and the input dies there, both whole tensors, the op in no group), 0 if none."""
    step, op, out, inp, x = pair
    if firsts[out] == step and lasts[inp] == step and kinds[out] == kinds[inp] == "tensor" and op not in grouped:
        rule = problem._overlap_rule(op, x)
        if rule is not None:
            return _overlap_saving(sizes[out], sizes[inp], rule[1])
    return 0


# -- in-place rules --------------------------------------------------------------------------------------------

def _nhwc(shape) -> tuple:
    shape = tuple(map(int, shape))
    return (1,) * (4 - len(shape)) + shape


def _first_taps(out_size: int, stride: int, pad: int, dilation: int, kernel: int) -> list:
    """Per output position along one axis: the input index of the first tap inside the input."""
    taps = list(range(-pad, out_size * stride - pad, stride)) if stride > 0 else [-pad] * out_size
    for o in range(min(out_size, -(-pad // stride) if stride > 0 else out_size)):  # windows starting in the padding
        start = taps[o]
        if start < 0:
            skip = min((-start + dilation - 1) // dilation, kernel - 1)  # taps that fall into the padding
            taps[o] = max(start + skip * dilation, 0)
    return taps


def _raster_distance(op, x, y, block: int = RASTER_PIXEL_BLOCK) -> int:
    """Smallest `distance` with which y may start below x (module docstring, rule 'raster'). Remembered for the
    compile by what it depends on (the shapes, element sizes and window): the planner and the plan's proof
    ask it of every window op of each memory problem, and a model repeats its layers' shapes."""
    of_op = compile_memo("memory-plan-raster-distances")  # (op, x, y, block) -> distance
    distance = of_op.get((op, x, y, block))
    if distance is None:
        in_bytes, out_bytes = DTYPE_BYTES[x.dtype], DTYPE_BYTES[y.dtype]
        if op.type == "FULLY_CONNECTED":
            key = (op.inputs[1].shape[1], x.num_elements, y.num_elements, in_bytes, out_bytes, block)
        else:
            key = (_nhwc(x.shape), _nhwc(y.shape), in_bytes, out_bytes, window_geometry(op), block)
        of_geometry = compile_memo("memory-plan-raster-distances-by-geometry")
        if key not in of_geometry:
            of_geometry[key] = _raster_distance_of(op, x, y, block)
        distance = of_op[(op, x, y, block)] = of_geometry[key]
    return distance


def _raster_distance_of(op, x, y, block: int) -> int:
    """_raster_distance, worked out."""
    in_bytes, out_bytes = DTYPE_BYTES[x.dtype], DTYPE_BYTES[y.dtype]
    if op.type == "FULLY_CONNECTED":
        depth = op.inputs[1].shape[1]
        rows = x.num_elements // depth
        first_read = np.arange(0, rows * depth * in_bytes, depth * in_bytes, dtype=np.int64)
        pixel_bytes = (y.num_elements // rows) * out_bytes
        row_pixels = 1
    else:
        n, ih, iw, ic = _nhwc(x.shape)
        _, oh, ow, oc = _nhwc(y.shape)
        g = window_geometry(op)
        rows = _first_taps(oh, g.stride_h, g.pad_top, g.dilation_h, g.kernel_h)
        cols = _first_taps(ow, g.stride_w, g.pad_left, g.dilation_w, g.kernel_w)
        # ((batch * ih + row) * iw + column) * ic * in_bytes for every output pixel, in raster order: a part
        # per row of pixels plus a part per column
        unit = ic * in_bytes
        row_reads = np.array([(b * ih + r) * iw * unit for b in range(n) for r in rows], dtype=np.int64)
        first_read = np.add.outer(row_reads, np.array([c * unit for c in cols], dtype=np.int64)).ravel()
        pixel_bytes = oc * out_bytes
        row_pixels = ow
    # What pixel P or any later pixel reads starts here (non-monotone with dilation, hence the suffix min).
    still_needed = np.minimum.accumulate(first_read[::-1])[::-1]
    # Where the writes of P's group end: the end of P's row, or pixel P + block - 1 (not past the last pixel).
    pixels = first_read.size
    group_end = np.arange(block, pixels + block, dtype=np.int64)
    np.minimum(group_end, pixels, out=group_end)
    if row_pixels > 1:
        np.maximum(group_end, np.repeat(np.arange(row_pixels, pixels + 1, row_pixels, dtype=np.int64), row_pixels),
                   out=group_end)
    group_end *= pixel_bytes
    group_end -= still_needed
    return max(0, int(group_end.max()))


def required_overlap(op, x, rule: str | None):
    """(rule, distance) under which op's output may overlap its input x by the rule its target declares, or
    None if it may not (no rule, or the op does not fit the rule's geometry).

    Only the arithmetic is checked here; whether x dies at op is the caller's business."""
    if rule is None or len(op.outputs) != 1 or x is None or x.is_const:
        return None
    y = op.outputs[0]
    if rule == "exact":
        same = tuple(x.shape) == tuple(y.shape) and DTYPE_BYTES[x.dtype] == DTYPE_BYTES[y.dtype]
        others_same = all(t is None or t.is_const or tuple(t.shape) == tuple(y.shape) for t in op.inputs)
        return ("exact", None) if same and others_same else None
    if rule == "raster" and x is op.inputs[0] and (op.type in WINDOW_OPS or op.type == "FULLY_CONNECTED"):
        return ("raster", _raster_distance(op, x, y))
    return None


def find_overlaps(graph: Graph, buffers: list, cascades=(), in_place=None, overlap_rule=None,
                  facts: _GraphFacts | None = None) -> list:
    """Every permitted (output, input) overlap: the input's buffer dies at the op producing the output and
    the op's target declares a rule for it (`in_place(op, x)`; None: no overlaps but the cascades') that the
    op's geometry fits (for a cascade group: at its last op, the output being produced from its first).
    `overlap_rule(op, x)`: required_overlap under the op's declared rule, when the caller remembers it.
    `facts`: the graph's _graph_facts when `buffers` are build_buffers' with them."""
    owner = _Owners(buffers, facts.slot if facts else None)  # tensor -> its "tensor" buffer (aliases included)
    facts = facts or _graph_facts(graph)
    in_group = {op for g in cascades for op in g.ops}
    result = [o for g in cascades for o in _cascade_overlaps(g, owner)]
    if not in_place:
        return result
    for step, op, y, inputs in facts.in_place_ops:
        if op in in_group:
            continue
        out_buf = owner.get(y)
        if out_buf is None or out_buf.first != step:
            continue
        for x in inputs:  # each distinct activation input once
            in_buf = owner.get(x)  # state buffers ("state") never die, so nothing may overlap them
            if in_buf is None or in_buf is out_buf or in_buf.last != step:
                continue
            rule = overlap_rule(op, x) if overlap_rule else required_overlap(op, x, in_place(op, x))
            if rule is not None:
                result.append(Overlap(out_buf, in_buf, op, step, x, rule[1], rule[0]))
    return result


class _Owners:
    """tensor -> the buffer of kind "tensor" holding it (None for another kind, or no buffer). `slot`: each
    tensor's position in `buffers` (None: found from the buffers themselves)."""

    def __init__(self, buffers: list, slot: dict | None):
        self.buffers = buffers
        self.slot = slot if slot is not None else \
            {t: k for k, buf in enumerate(buffers) if buf.kind != "scratch" for t in buf.tensors}

    def get(self, t):
        k = self.slot.get(t)
        if k is None:
            return None
        buf = self.buffers[k]
        return buf if buf.kind == "tensor" else None


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
            # the last op elementwise over x: the very same bytes; else the output may start at or below x's
            # first byte (its stripes are written top down, so a lower start only writes over rows read earlier)
            distance = None if x in activation_inputs(group.ops[-1]) else 0
            result.append(Overlap(out_buf, in_buf, group.ops[-1], group.last_step, x, distance, "cascade-exact",
                                  group))
    return result


# -- placement -------------------------------------------------------------------------------------------------
#
# Placement puts each buffer at the lowest aligned offset that no already placed buffer forbids: a co-live
# buffer j at offset o_j forbids the open interval (o_j - size, o_j + size_j) -- narrower for a permitted
# overlap (`_partner_intervals`). Asking every co-live buffer costs O(co-live buffers) per placement, which
# is quadratic when many buffers are live together (the N inputs of a CONCATENATION), and the search
# places the buffers hundreds of times. So the placed buffers live in an index (`_OccupancyIndex`): a
# segment tree over the steps whose nodes keep the *merged* offset intervals of the buffers placed over
# them, so a stack of adjacent buffers is one interval and a free-offset query costs O(log steps) interval
# probes per gap it skips, not one per co-live buffer. `Work` counts what the planner does (placements,
# interval probes and inserts), so tests measure work, not seconds.


@dataclass
class Work:
    """Counters of the planner's work (deterministic: the same graph gives the same counts)."""

    placements: int = 0  # free-offset queries (one per buffer placed)
    probes: int = 0  # interval probes of those queries (a bisection in one merged interval list)
    inserts: int = 0  # merged-interval insertions into the index
    orders: int = 0  # placement orders tried (heuristics and local-search moves)

    def total(self) -> int:
        return self.probes + self.inserts

    def as_dict(self) -> dict:
        return {"placements": self.placements, "interval_probes": self.probes, "interval_inserts": self.inserts,
                "orders": self.orders}


class _MergedIntervals:
    """Disjoint half-open offset intervals [a, b), sorted; touching intervals are merged."""

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts, self.ends = [], []

    def add(self, a: int, b: int) -> None:
        starts, ends = self.starts, self.ends
        lo = bisect_left(ends, a)  # first interval that ends at or after a
        hi = bisect_right(starts, b)  # first interval that starts after b
        if lo == hi:
            starts.insert(lo, a)
            ends.insert(lo, b)
            return
        if starts[lo] < a:
            a = starts[lo]
        if ends[hi - 1] > b:
            b = ends[hi - 1]
        starts[lo:hi] = [a]
        ends[lo:hi] = [b]

    def conflict_end(self, y: int, end: int, carve) -> int | None:
        """None if [y, end) meets no interval (minus the `carve` ranges), else the end of the highest
        maximal occupied segment it meets: no offset in between can be free for a buffer starting at y."""
        starts, ends = self.starts, self.ends
        i = bisect_left(starts, end) - 1  # the last interval starting below `end` has the highest end
        if not carve:
            return ends[i] if i >= 0 and ends[i] > y else None
        while i >= 0 and ends[i] > y:
            for a, b in reversed(_subtract(starts[i], ends[i], carve)):
                if a < end and b > y:
                    return b
            i -= 1
        return None


def _subtract(a: int, b: int, ranges) -> list:
    """[a, b) minus the sorted disjoint `ranges`, as maximal pieces in increasing order."""
    pieces, lo = [], a
    for ra, rb in ranges:
        if rb <= lo or ra >= b:
            continue
        if ra > lo:
            pieces.append((lo, ra))
        lo = max(lo, rb)
    if lo < b:
        pieces.append((lo, b))
    return pieces


def _leaves(count: int) -> int:
    """Leaves of a segment tree over `count` positions: the first power of two at least `count`."""
    leaves = 1
    while leaves < count:
        leaves *= 2
    return leaves


def _canonical_nodes(lo: int, hi: int) -> list:
    """The canonical nodes of a segment tree (node v's children 2v, 2v + 1) that together cover the leaves
    [lo, hi), given as node numbers (leaf position + the number of leaves)."""
    nodes = []
    while lo < hi:
        if lo & 1:
            nodes.append(lo)
            lo += 1
        if hi & 1:
            hi -= 1
            nodes.append(hi)
        lo, hi = lo >> 1, hi >> 1
    return nodes


class _StepTree:
    """The node structure of a segment tree over the steps [first_step, last_step] (shared by every index
    of one placement problem): for a step window, the nodes an insertion updates and a query reads."""

    def __init__(self, first_step: int, last_step: int):
        self.base = first_step
        self.leaves = _leaves(last_step - first_step + 1)
        self._insert, self._query = {}, {}

    def _canonical(self, first: int, last: int) -> list:
        return _canonical_nodes(first - self.base + self.leaves, last - self.base + 1 + self.leaves)

    def _above(self, canonical: list) -> list:
        """The proper ancestors of the canonical nodes, each once."""
        seen, result = set(canonical), []
        for v in canonical:
            v >>= 1
            while v and v not in seen:
                seen.add(v)
                result.append(v)
                v >>= 1
        return result

    def insert_nodes(self, first: int, last: int) -> tuple:
        """(canonical nodes, canonical nodes and their ancestors)."""
        key = (first, last)
        if key not in self._insert:
            canonical = self._canonical(first, last)
            self._insert[key] = (canonical, canonical + self._above(canonical))
        return self._insert[key]

    def query_nodes(self, first: int, last: int) -> tuple:
        """(canonical nodes: read their subtree lists, their ancestors: read their cover lists)."""
        key = (first, last)
        if key not in self._query:
            canonical = self._canonical(first, last)
            self._query[key] = (canonical, self._above(canonical))
        return self._query[key]


class _OccupancyIndex:
    """The placed buffers as rectangles (steps [first, last] x offsets [o, o + size)).

    A segment tree over the steps: node v keeps `cover[v]`, the merged offset intervals of the buffers
    whose steps cover v's whole range (canonical nodes), and `below[v]`, those of every buffer stored at v
    or under it. The buffers live at some step of a window are then exactly those in `below` of the
    window's canonical nodes and in `cover` of their ancestors: O(log steps) merged lists."""

    def __init__(self, tree: _StepTree, work: Work):
        self.tree = tree
        self.cover, self.below = {}, {}
        self.work = work

    def insert(self, first: int, last: int, a: int, b: int) -> None:
        if a >= b:
            return
        canonical, updated = self.tree.insert_nodes(first, last)
        cover, below = self.cover, self.below
        for v in canonical:
            intervals = cover.get(v)
            if intervals is None:
                intervals = cover[v] = _MergedIntervals()
            intervals.add(a, b)
        for v in updated:
            intervals = below.get(v)
            if intervals is None:
                intervals = below[v] = _MergedIntervals()
            intervals.add(a, b)
        self.work.inserts += len(canonical) + len(updated)

    def lists(self, first: int, last: int) -> list:
        """The merged interval lists that hold every placed buffer live at some step of [first, last]."""
        canonical, above = self.tree.query_nodes(first, last)
        below, cover = self.below, self.cover
        return [below[v] for v in canonical if v in below] + [cover[v] for v in above if v in cover]


def _partner_intervals(kind: str, o: int, size: int, other: int, distance) -> list:
    """Offsets a buffer of `size` bytes may not take because of a placed permitted partner at `o` (of
    `other` bytes): the open intervals the old pairwise rule gave (see _Conflicts)."""
    if kind == "below":  # the buffer is the output: o_i <= o - distance, or above the input entirely
        return [(o - distance, o + other)]
    if kind == "above":  # the buffer is the input: o_i >= o + distance, or below the output entirely
        return [(o - size, o + distance)]
    return [(o - size, o), (o, o + other)]  # exact: the same offset, or disjoint


class _Conflicts:
    """The placement problem: buffers, and for each the permitted overlaps (partners) it has with co-live
    buffers. Disjointness with every other co-live buffer is looked up in an _OccupancyIndex -- or, when
    the buffers meet few others (at most `pairwise_limit` co-live buffers each on average, as in every
    shared model), asked of each placed co-live buffer directly (`near`): the pairwise rule itself, cheaper
    than maintaining the index at that size and with nothing to re-insert for a kept prefix."""

    def __init__(self, buffers: list, overlaps: list, work: Work | None = None,
                 pairwise_limit: int = PAIRWISE_LIMIT):
        self.buffers = buffers
        self.sizes = [b.size for b in buffers]
        self.work = work or Work()
        index = {id(b): i for i, b in enumerate(buffers)}
        permits = {}
        for o in overlaps:
            permits[(index[id(o.output)], index[id(o.input)])] = o.distance
        self.partners = [[] for _ in buffers]  # i -> [(j, kind, distance)]
        for (p, q), distance in sorted(permits.items()):
            a, b = buffers[p], buffers[q]
            if p == q or (q < p and (q, p) in permits) or not (a.size and b.size and a.overlaps_in_time(b)):
                continue  # one permission per pair: the one from the lower index, as the pairwise rule had it
            self.partners[p].append((q, "exact" if distance is None else "below", distance))  # p: the output
            self.partners[q].append((p, "exact" if distance is None else "above", distance))
        live = [b for b in buffers if b.size]
        self.tree = _StepTree(min((b.first for b in live), default=0), max((b.last for b in live), default=0))
        self.near = _forbidding(buffers, self.partners, pairwise_limit * len(buffers))

    def new_index(self) -> _OccupancyIndex | None:
        """An empty index of placed buffers; None when placement asks the co-live buffers directly."""
        return None if self.near is not None else _OccupancyIndex(self.tree, self.work)

    def place(self, index: _OccupancyIndex, i: int, offset: int, alignment: int) -> None:
        """Record buffer i at `offset`. Offsets are aligned, so an aligned offset conflicts with [o, o + size)
        exactly when it conflicts with [o, align(o + size)): the index stores the latter, and buffers side by
        side merge into one interval even when their sizes are not multiples of the alignment."""
        b = self.buffers[i]
        if b.size:
            index.insert(b.first, b.last, offset, _align(offset + b.size, alignment))

    def lowest_free(self, index: _OccupancyIndex, i: int, offsets: list, alignment: int) -> int:
        """The lowest aligned offset >= 0 that no placed co-live buffer forbids (by the index;
        _place_order_direct asks the co-live buffers themselves)."""
        self.work.placements += 1
        buf = self.buffers[i]
        size = buf.size
        if not size:
            return 0
        extra, windows = [], []  # partners' own intervals; (first, last, carved ranges) per partner overlap
        mine = {j for j, _, _ in self.partners[i]}
        for j, kind, distance in self.partners[i]:
            o = offsets[j]
            if o is None:
                continue
            other = self.buffers[j]
            extra.extend(_partner_intervals(kind, o, size, other.size, distance))
            windows.append((max(buf.first, other.first), min(buf.last, other.last), (o, _align(o + other.size, alignment))))
            # A partner of the partner may share its bytes (its own permission) and is carved out with them:
            # its plain rule is restored here (in real graphs their overlap windows never meet, so this is
            # redundant, but carving stays exact whatever the permissions).
            for k, _, _ in self.partners[j]:
                if k != i and k not in mine and offsets[k] is not None and self.buffers[k].overlaps_in_time(buf):
                    extra.append((offsets[k] - size, offsets[k] + self.buffers[k].size))
        pieces = []
        for first, last, carve in _window_pieces(buf.first, buf.last, windows):
            lists = index.lists(first, last)
            if lists:
                pieces.append((lists, carve))
        extra.sort()
        y, probes = 0, 0
        while True:
            moved = False
            for lists, carve in pieces:
                for intervals in lists:
                    probes += 1
                    end = intervals.conflict_end(y, y + size, carve)
                    if end is not None:
                        y, moved = _align(end, alignment), True
            for lo, hi in extra:
                if lo < y < hi:
                    y, moved = _align(hi, alignment), True
            if not moved:
                self.work.probes += probes
                return y


def _forbidding(buffers: list, partners: list, limit: int) -> list | None:
    """Per buffer i: (j, lo, hi) for each co-live buffer j, which at offset o forbids buffer i the open
    interval (o + lo, o + hi) of offsets (an exact partner gives two: the same offset stays allowed); None
    when there are more than `limit` such entries in all (then placement uses the _OccupancyIndex)."""
    near = [[] for _ in buffers]
    live = sorted((b.first, k) for k, b in enumerate(buffers) if b.size)
    count, active = 0, []  # active: (last, k) of the buffers started so far, a heap
    for first, k in live:
        while active and active[0][0] < first:
            heapq.heappop(active)
        count += 2 * len(active)
        if count > limit:
            return None
        for _, j in active:
            near[k].append(j)
            near[j].append(k)
        heapq.heappush(active, (buffers[k].last, k))
    result = []
    for i, others in enumerate(near):
        size, rules = buffers[i].size, {j: (kind, distance) for j, kind, distance in partners[i]}
        entries = []
        for j in sorted(others):
            other = buffers[j].size
            kind, distance = rules.get(j, ("disjoint", None))
            if kind == "disjoint":
                entries.append((j, -size, other))
            elif kind == "below":  # i is the output: o_i <= o_j - distance, or above the input entirely
                entries.append((j, -distance, other))
            elif kind == "above":  # i is the input: o_i >= o_j + distance, or below the output entirely
                entries.append((j, -size, distance))
            else:  # exact: the same offset, or disjoint
                entries += [(j, -size, 0), (j, 0, other)]
        result.append(entries)
    return result


def _window_pieces(first: int, last: int, windows: list) -> list:
    """[first, last] cut at the partners' overlap windows: (first, last, sorted carved offset ranges) per
    piece. Inside a partner's overlap window, the partner's bytes are occupied by the partner alone (the
    placed buffers respect every other rule), so they are carved out of the occupancy and the partner's
    own rule (_partner_intervals) applies instead."""
    if not windows:
        return [(first, last, ())]
    cuts = {first, last + 1}
    for lo, hi, _ in windows:
        cuts.update((lo, hi + 1))
    cuts = sorted(c for c in cuts if first <= c <= last + 1)
    pieces = []
    for lo, hi in zip(cuts, cuts[1:]):
        carve = sorted(r for wlo, whi, r in windows if wlo <= lo and hi - 1 <= whi)
        pieces.append((lo, hi - 1, tuple(carve)))
    return pieces


def _place_order(order: list, conflicts: _Conflicts, alignment: int, keep: int = 0, previous: list | None = None,
                 give_up_above: int | None = None, same_from: int | None = None) -> tuple:
    """Offsets for buffers placed in `order`; returns (offsets, arena), or (None, None) as soon as the
    arena would exceed `give_up_above`. The first `keep` buffers of `order` keep their `previous` offsets
    (the caller guarantees the same prefix was placed before). `same_from`: `previous` placed an order
    that differs from this one only at positions keep..same_from (a permutation of them); once every buffer
    re-placed up to there or later lands where it was before, the rest lands there too (same placed
    buffers, same offsets, same order from then on), so the rest keeps its `previous` offsets."""
    conflicts.work.orders += 1
    offsets = [None] * len(conflicts.buffers)
    same_from = len(order) if same_from is None or previous is None else same_from
    index = conflicts.new_index()
    if index is None:
        return _place_order_direct(order, conflicts, alignment, keep, previous, give_up_above, offsets, same_from)
    arena, moved = 0, False  # moved: a re-placed buffer left its previous offset
    for position, i in enumerate(order):
        if position < keep or (position > same_from and not moved):
            offsets[i] = previous[i]
        else:
            offsets[i] = conflicts.lowest_free(index, i, offsets, alignment)
            moved = moved or offsets[i] != previous[i] if previous is not None else True
        conflicts.place(index, i, offsets[i], alignment)
        arena = max(arena, offsets[i] + conflicts.buffers[i].size)
        if give_up_above is not None and _align(arena, alignment) > give_up_above:
            return None, None
    return offsets, _align(arena, alignment)


def _place_order_direct(order: list, conflicts: _Conflicts, alignment: int, keep: int, previous: list | None,
                        give_up_above: int | None, offsets: list, same_from: int) -> tuple:
    """_place_order when placement asks the co-live buffers directly (no occupancy index), the pairwise rule:
    each placed co-live buffer j forbids the open interval (offsets[j] + lo, offsets[j] + hi) of offsets
    (`_forbidding`), swept by their lower ends; the same offsets and work counts as lowest_free would find.
    Written as one loop: it runs for every order the placement search tries."""
    near, sizes = conflicts.near, conflicts.sizes
    # _align(arena) > give_up_above exactly when arena > give_up_above rounded down to the alignment
    limit = None if give_up_above is None else give_up_above // alignment * alignment
    if limit is not None and limit < 0 and order:
        return None, None  # even an arena of 0 bytes is above it
    arena, moved = 0, previous is None  # moved: a re-placed buffer left its previous offset
    placements = probes = 0  # (added to conflicts.work at the end)
    try:
        for position, i in enumerate(order):
            size = sizes[i]
            if position < keep or (position > same_from and not moved):
                y = previous[i]
            else:
                placements += 1
                y = 0
                if size:
                    intervals = sorted([(o + lo, o + hi) for j, lo, hi in near[i] if (o := offsets[j]) is not None])
                    probes += len(intervals)
                    for lo, hi in intervals:
                        if y <= lo:
                            break  # every later interval starts at or above y too
                        if y < hi:
                            y = -(-hi // alignment) * alignment
                if not moved and y != previous[i]:
                    moved = True
            offsets[i] = y
            if y + size > arena:
                arena = y + size
                if limit is not None and arena > limit:
                    return None, None
        return offsets, _align(arena, alignment)
    finally:
        conflicts.work.placements += placements
        conflicts.work.probes += probes


def place_greedy_by_size(buffers: list, alignment: int) -> int:
    """Largest first, each at the lowest free offset, no in-place overlaps; assign offsets, return the arena."""
    conflicts = _Conflicts(buffers, [])
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, buffers[i].first))
    offsets, arena = _place_order(order, conflicts, alignment)
    for buf, offset in zip(buffers, offsets):
        buf.offset = offset
    return arena


def _live_bytes(buffers: list) -> tuple:
    """(first step, bytes live at each step from it on): a difference array, O(buffers + steps)."""
    first = min(b.first for b in buffers)
    delta = [0] * (max(b.last for b in buffers) - first + 2)
    for b in buffers:
        delta[b.first - first] += b.size
        delta[b.last - first + 1] -= b.size
    return first, list(accumulate(delta))[:-1]


def step_lower_bounds(buffers: list, overlaps: list) -> tuple:
    """(first step, per step from it on: the bytes live at that step minus the most each permitted overlap
    could save there)."""
    first, live = _live_bytes(buffers)
    saved = [0] * (len(live) + 1)
    for o in overlaps:
        lo, hi = max(o.first_step, first), min(o.step, first + len(live) - 1)
        if lo > hi:
            continue
        amount = _overlap_saving(o.output.size, o.input.size, o.distance)
        saved[lo - first] += amount
        saved[hi - first + 1] -= amount
    return first, [a - b for a, b in zip(live, accumulate(saved))]


def lower_bound(buffers: list, overlaps: list, alignment: int) -> int:
    """Max over steps of the bytes live at that step, minus the most each permitted overlap could save."""
    if not buffers:
        return 0
    best = max(max(b.size for b in buffers), max(step_lower_bounds(buffers, overlaps)[1]))
    return _align(best, alignment)


def _overlap_saving(out: int, inp: int, distance) -> int:
    """The most an output of `out` bytes overlapping an input of `inp` bytes (Overlap.distance) saves."""
    return min(out, inp) if distance is None else max(0, min(inp, out - distance))


def _spans_bound(first: int, last: int, spans: list, savings: list, alignment: int) -> int:
    """lower_bound from plain numbers: `spans` (first step, last step, size) of the buffers, all within steps
    [first, last], `savings` (first step, last step, bytes) of the permitted overlaps."""
    return _align(max(max(size for _, _, size in spans), max(_step_values(first, last, spans, savings))), alignment)


def _step_values(first: int, last: int, adds, subtracts=()) -> list:
    """The bytes at each step first..last: each (first step, last step, bytes) of `adds` added over its steps,
    each of `subtracts` taken off, both cut to the range."""
    delta = [0] * (last - first + 2)
    for sign, items in ((1, adds), (-1, subtracts)):
        for lo, hi, amount in items:
            lo, hi = max(lo, first), min(hi, last)
            if lo <= hi:
                delta[lo - first] += sign * amount
                delta[hi - first + 1] -= sign * amount
    del delta[-1]
    return list(accumulate(delta))


def _heuristic_orders(buffers: list) -> dict:
    n = range(len(buffers))
    b = buffers
    busiest = {}
    if buffers:
        # The busiest step of each buffer: the most bytes live at any step where some buffer starts or
        # ends, within its lifetime (a range maximum over those steps: a sparse table, O(steps log steps)).
        first, live = _live_bytes(buffers)
        ends = {x.first for x in buffers} | {x.last for x in buffers}
        table = [[live[k] if k + first in ends else -1 for k in range(len(live))]]
        while 2 ** len(table) <= len(live):
            prev, half = table[-1], 2 ** (len(table) - 1)
            table.append([max(prev[k], prev[k + half]) for k in range(len(prev) - half)])
        for i in n:
            lo, hi = b[i].first - first, b[i].last - first
            level = (hi - lo + 1).bit_length() - 1
            busiest[i] = max(table[level][lo], table[level][hi - 2 ** level + 1])
    return {
        "largest first": sorted(n, key=lambda i: (-b[i].size, b[i].first)),
        "latest first": sorted(n, key=lambda i: (-b[i].first, -b[i].size)),
        "earliest first": sorted(n, key=lambda i: (b[i].first, -b[i].size)),
        "longest-lived first": sorted(n, key=lambda i: (-(b[i].last - b[i].first), -b[i].size, b[i].first)),
        "size x lifetime": sorted(n, key=lambda i: (-b[i].size * (b[i].last - b[i].first + 1), b[i].first)),
        "busiest step first": sorted(n, key=lambda i: (-busiest.get(i, 0), -b[i].size, b[i].first)),
        "busiest step, latest first": sorted(n, key=lambda i: (-busiest.get(i, 0), -b[i].first, -b[i].size)),
    }


def _top_positions(order: list, offsets: list, arena: int, sizes: list) -> list:
    """The positions (but the first) of `order` whose buffer ends near the top of the arena: _move's picks."""
    return [k for k, i in enumerate(order) if k and offsets[i] + sizes[i] + sizes[i] // 2 > arena]


def _move(order: list, offsets: list, arena: int, sizes: list, rng: random.Random, top_of=None) -> tuple:
    """Change `order` in place; return the two positions involved. Mostly moves a buffer that ends at the
    top of the arena to an earlier position (so it is placed before what pushed it up), else a random
    swap or insertion. `sizes`: each buffer's size. `top_of()`: `_top_positions` of this order, offsets and
    arena, if the caller keeps them (the search moves from the same best order until one is kept)."""
    if rng.random() < 0.7:
        top = top_of() if top_of is not None else _top_positions(order, offsets, arena, sizes)
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


def search_placement(buffers: list, overlaps: list, alignment: int, iterations: int = SEARCH_ITERATIONS,
                     work: Work | None = None) -> tuple:
    """Assign offsets with the best order found; return (arena, lower bound, strategy).

    The local search makes at most `iterations` moves and re-places at most SEARCH_PLACEMENT_BUDGET
    buffers in all (a move re-places the buffers after the first position it changed), so its work is
    bounded on any graph; `work` (a Work) receives the counts."""
    conflicts = _Conflicts(buffers, overlaps, work)
    bound = lower_bound(buffers, overlaps, alignment)
    best = None
    for name, order in _heuristic_orders(buffers).items():
        if best is not None and best[0] <= bound:
            break  # no order can beat the lower bound: the first to reach it wins
        # a later order counts only if strictly smaller: give it up as soon as it is not
        offsets, arena = _place_order(order, conflicts, alignment,
                                      give_up_above=None if best is None else best[0] - 1)
        if arena is not None and (best is None or arena < best[0]):
            best = (arena, order, offsets, name)
    rng = random.Random(SEARCH_SEED)
    improved, since_gain, budget = False, 0, SEARCH_PLACEMENT_BUDGET
    top = [None, None]  # (the best it was worked out for, its _top_positions)

    def top_of() -> list:
        if top[0] is not best:
            top[:] = best, _top_positions(best[1], best[2], best[0], conflicts.sizes)
        return top[1]

    for _ in range(iterations if len(buffers) > 1 else 0):
        if best[0] <= bound or since_gain >= SEARCH_PATIENCE or budget <= 0:
            break
        since_gain += 1
        order = list(best[1])
        i, j = _move(order, best[2], best[0], conflicts.sizes, rng, top_of)
        budget -= len(order)
        offsets, arena = _place_order(order, conflicts, alignment, keep=min(i, j), previous=best[2],
                                      give_up_above=best[0], same_from=max(i, j))
        if arena is not None:  # not worse: keep it (equal moves let the search cross plateaus)
            if arena < best[0]:
                improved, since_gain = True, 0
            best = (arena, order, offsets, best[3])
    arena, _, offsets, name = best
    for buf, offset in zip(buffers, offsets):
        buf.offset = offset
    return arena, bound, name + (" + local search" if improved else "")


def plan_memory(graph: Graph, scratch_sizes: dict | None = None, alignment: int = 16,
                in_place=None, cascades=()) -> MemoryPlan:
    """Plan the arena. `in_place(op, x)` gives the in-place rule each op's target declares for input x
    (None: no op overlaps its input); `cascades` are the cascade groups the targets will run in stripes
    (edgesdk/ops/stripes.py)."""
    return MemoryProblem(graph, scratch_sizes or {}, alignment, in_place).plan(cascades)


@dataclass
class MemoryProblem:
    """What the planner is given: the graph's buffers and lifetimes (from `graph` and the targets' scratch
    requests), the alignment, and the in-place permissions the targets declare. Plain data: the cascade
    search asks it for plans with different groups. What does not depend on the groups (the graph's aliases
    and activation tensors, each op's in-place geometry) is worked out once per problem, on first use."""

    graph: Graph
    scratch_sizes: dict
    alignment: int = 16
    in_place: object = None  # (op, input) -> rule name or None (Target.in_place of the op's target)
    striped_scratch: object = None  # op -> does its code in stripes use its scratch (Target.stripes_use_scratch)
    _facts: _GraphFacts | None = field(default=None, init=False, repr=False, compare=False)
    _rules: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _proven: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # verify_plan's own rules
    _trial: tuple | None = field(default=None, init=False, repr=False, compare=False)  # _trial_facts
    _base: object = field(default=None, init=False, repr=False, compare=False)  # _trial_base

    def _overlap_rule(self, op, x):
        key = (op, x)
        if key not in self._rules:
            self._rules[key] = required_overlap(op, x, self.in_place(op, x))
        return self._rules[key]

    def _graph(self) -> _GraphFacts:
        if self._facts is None:
            self._facts = _graph_facts(self.graph)
        return self._facts

    def _buffers(self, cascades) -> list:
        return build_buffers(self.graph, self.scratch_sizes, cascades, self.striped_scratch, self._graph())

    def _overlaps(self, buffers: list, cascades) -> list:
        return find_overlaps(self.graph, buffers, cascades, self.in_place, self._overlap_rule, self._graph())

    def _buffers_and_overlaps(self, cascades) -> tuple:
        buffers = self._buffers(cascades)
        return buffers, self._overlaps(buffers, cascades)

    def plan(self, cascades=(), prove: bool = True) -> MemoryPlan:
        """The plan with these cascade groups; `prove=False`: not verified yet (the caller proves it if it
        keeps it, `prove`)."""
        cascades = list(cascades)
        return self._place(cascades, *self._buffers_and_overlaps(cascades), prove)

    def _place(self, cascades: list, buffers: list, overlaps: list, prove: bool = True) -> MemoryPlan:
        work = Work()
        arena, bound, strategy = search_placement(buffers, overlaps, self.alignment, work=work)
        offsets, scratch = {}, {}
        for buf in buffers:
            if buf.kind == "scratch":
                scratch[buf.tensors[0]] = (buf.offset, buf.size)
            else:
                for t in buf.tensors:
                    offsets[t] = buf.offset
        plan = MemoryPlan(buffers, arena, self.alignment, offsets, scratch, overlaps, bound, strategy, cascades)
        plan.work = work.as_dict()
        if prove:
            self.prove(plan)
        return plan

    def prove(self, plan: MemoryPlan) -> None:
        """verify_plan on a plan of this problem (its work added to plan.work): what `plan` and `plan_below`
        do unless told not to, for a search that proves only the plan it keeps."""
        work = Work()
        verify_plan(plan, work, self._proven)
        plan.work = {key: plan.work.get(key, 0) + count for key, count in work.as_dict().items()}

    def step_bounds(self, cascades=()) -> dict:
        """{step: lower bound of the bytes live at that step} with these cascade groups (no placement)."""
        buffers = [b for b in self._buffers(cascades) if b.size]
        if not buffers:
            return {}
        first, bounds = step_lower_bounds(buffers, self._overlaps(buffers, cascades))
        return {first + k: v for k, v in enumerate(bounds)}

    def trial(self, cascades) -> tuple:
        """(lower bound of the arena with these groups, what `plan_below` needs to place them): the bound
        without a placement, so a search can drop a candidate before doing anything else for it. The bound is
        `lower_bound` of the buffers and overlaps the plan would have, worked out from their sizes and steps
        alone (`_trial_bound`): the search asks it of every candidate and places few."""
        cascades = list(cascades)
        return self._trial_bound(cascades), cascades

    def _trial_bound(self, cascades: list) -> int:
        """lower_bound(*self._buffers_and_overlaps(cascades)) without making the Buffer and Overlap records:
        build_buffers' sizes and steps, find_overlaps' permissions (the same tests, on slot numbers), as
        changes to the bound's per-step bytes without groups (`_TrialBase`): a group changes the buffers and
        permitted overlaps of its own tensors and ops only, so only those are worked out again."""
        base = self._trial_base()
        if base is None:
            return self._trial_bound_direct(cascades)
        return base.bound(self, cascades)

    def _trial_base(self):
        """The per-step bytes without groups (_TrialBase), worked out once; None when a buffer's steps are
        out of order (a tensor no op touches), which `_trial_bound_direct` handles as lower_bound does."""
        if self._base is None:
            facts = self._graph()
            ordered = all(entry[2] <= entry[3] for entry in facts.base)
            self._base = _TrialBase(self, facts) if ordered else False
        return self._base or None

    def _trial_bound_direct(self, cascades: list) -> int:
        """_trial_bound worked out from every buffer and overlap, not as changes."""
        facts = self._graph()
        slot = facts.slot
        sizes = [entry[1] for entry in facts.base]
        firsts = [entry[2] for entry in facts.base]
        lasts = [entry[3] for entry in facts.base]
        kinds = [entry[5] for entry in facts.base]
        for k, (first, last, size, kind) in _grouped_buffers(cascades, slot, firsts, lasts, sizes, kinds).items():
            firsts[k], lasts[k], sizes[k], kinds[k] = first, last, size, kind
        spans = list(zip(firsts, lasts, sizes))
        grouped = {op for g in cascades for op in g.ops}
        scratch, pairs = self._trial_facts()
        for step, op, size in scratch:
            if not _drops_scratch(op, grouped, self.striped_scratch):
                spans.append((step, step, size))
        if not spans:
            return 0

        savings = list(_cascade_savings(cascades, slot, firsts, lasts, sizes, kinds))
        for pair in pairs:  # as find_overlaps
            saving = _pair_saving(self, pair, firsts, lasts, sizes, kinds, grouped)
            if saving:
                savings.append((pair[0], pair[0], saving))
        first, last = min(span[0] for span in spans), max(span[1] for span in spans)
        return _spans_bound(first, last, spans, savings, self.alignment)

    def _trial_facts(self) -> tuple:
        """What _trial_bound reads whatever the groups, worked out once: ([(step, op, scratch bytes)] of the ops
        with scratch, [(step, op, output slot, input slot, input)] of the in-place overlaps find_overlaps may
        permit (whether the buffers are born and die there depends on the groups)."""
        if self._trial is None:
            facts = self._graph()
            scratch = [(step, op, (self.scratch_sizes or {}).get(op, 0)) for step, op in enumerate(self.graph.ops)]
            pairs = []
            for step, op, y, inputs in facts.in_place_ops if self.in_place else ():
                out = facts.slot.get(y)
                for x in inputs if out is not None else ():
                    k = facts.slot.get(x)
                    if k is not None and k != out:
                        pairs.append((step, op, out, k, x))
            self._trial = ([entry for entry in scratch if entry[2]], pairs)
        return self._trial

    def plan_below(self, cascades, below: int, trial: tuple | None = None, prove: bool = True):
        """The plan with these groups if its arena is below `below` bytes, else None (skipping the placement
        search when the per-step lower bound already says no). `trial`: this problem's `trial(cascades)`.
        `prove=False`: the plan is not verified (the caller proves the one it keeps, `prove`)."""
        bound, cascades = trial or self.trial(cascades)
        if bound >= below:
            return None
        plan = self._place(cascades, *self._buffers_and_overlaps(cascades), prove)
        return plan if plan.arena_bytes < below else None


class _TrialBase:
    """MemoryProblem._trial_bound's figures for the plan without groups, from which it works out a plan with
    groups by changes: each step's bytes live minus the permitted overlaps' savings (`values`, from step
    `first`, with their running maxima from either end), the buffers' and scratch areas' sizes largest first,
    the saving each in-place pair permits without groups, and the pairs and scratch of each buffer slot and op.

    The bound with groups is the same maximum: the steps the changes reach are added up again, the others keep
    their value. Its range of steps is the plan's without groups; a group can only move a buffer within it (to
    its own steps, which its ops' outputs cover), and a step it leaves empty holds no byte, so it cannot raise
    the maximum above the largest buffer, which the bound takes too."""

    def __init__(self, problem: MemoryProblem, facts: _GraphFacts):
        self.sizes = [entry[1] for entry in facts.base]
        self.firsts = [entry[2] for entry in facts.base]
        self.lasts = [entry[3] for entry in facts.base]
        self.kinds = [entry[5] for entry in facts.base]
        scratch, pairs = problem._trial_facts()
        self.scratch_of = {}
        for k, (step, op, size) in enumerate(scratch):
            self.scratch_of.setdefault(op, []).append((k, step, size))
        self.pairs, self.saving, self.pairs_of_slot, self.pairs_of_op = pairs, [], {}, {}
        for k, (step, op, out, inp, x) in enumerate(pairs):
            self.saving.append(_pair_saving(problem, pairs[k], self.firsts, self.lasts, self.sizes, self.kinds, set()))
            self.pairs_of_slot.setdefault(out, []).append(k)
            self.pairs_of_slot.setdefault(inp, []).append(k)
            self.pairs_of_op.setdefault(op, []).append(k)
        spans = list(zip(self.firsts, self.lasts, self.sizes)) + [(step, step, size) for step, _, size in scratch]
        self.empty = not spans
        if self.empty:
            return
        self.first, self.last = min(span[0] for span in spans), max(span[1] for span in spans)
        self.values = _step_values(self.first, self.last, spans,
                                   [(step, step, amount) for (step, *_), amount in zip(pairs, self.saving)])
        self.from_start = list(accumulate(self.values, max))
        self.from_end = list(accumulate(reversed(self.values), max))[::-1]
        self.largest = sorted([(size, 0, k) for k, size in enumerate(self.sizes)] +
                              [(size, 1, k) for k, (_, _, size) in enumerate(scratch)], reverse=True)

    def bound(self, problem: MemoryProblem, cascades: list) -> int:
        if self.empty:
            return 0
        slot = problem._graph().slot
        firsts, lasts, sizes, kinds = self.firsts, self.lasts, self.sizes, self.kinds
        changed = _grouped_buffers(cascades, slot, firsts, lasts, sizes, kinds)
        if not changed:
            return _align(max(self.largest[0][0], self.from_start[-1]), problem.alignment)
        firsts, lasts, sizes, kinds = (list(column) for column in (firsts, lasts, sizes, kinds))
        changes = []  # (first step, last step, bytes added)
        for k, (first, last, size, kind) in changed.items():
            if first < self.first or last > self.last:
                return problem._trial_bound_direct(cascades)  # outside the range (not met: see the class)
            if (first, last, size) != (firsts[k], lasts[k], sizes[k]):
                changes += [(firsts[k], lasts[k], -sizes[k]), (first, last, size)]
            firsts[k], lasts[k], sizes[k], kinds[k] = first, last, size, kind
        grouped = {op for g in cascades for op in g.ops}
        dropped = set()  # scratch areas the grouped ops give up in stripes (as build_buffers)
        for op in grouped:
            for k, step, size in self.scratch_of.get(op, ()):
                if _drops_scratch(op, grouped, problem.striped_scratch):
                    dropped.add(k)
                    changes.append((step, step, -size))
        pairs = {k for slot_k in changed for k in self.pairs_of_slot.get(slot_k, ())} | \
            {k for op in grouped for k in self.pairs_of_op.get(op, ())}
        for k in pairs:  # the in-place pairs whose buffers or op the groups touch (as find_overlaps)
            now = _pair_saving(problem, self.pairs[k], firsts, lasts, sizes, kinds, grouped)
            if now != self.saving[k]:
                step = self.pairs[k][0]
                changes.append((step, step, self.saving[k] - now))
        changes += [(first, last, -saving)
                    for first, last, saving in _cascade_savings(cascades, slot, firsts, lasts, sizes, kinds)]
        return _align(max(self._largest(changed, dropped), self._peak(changes)), problem.alignment)

    def _largest(self, changed: dict, dropped: set) -> int:
        """The largest buffer or scratch area with the groups."""
        largest = max((entry[2] for entry in changed.values()), default=0)
        for size, kind, k in self.largest:
            if size <= largest:
                break
            if k not in (changed if kind == 0 else dropped):
                return size
        return largest

    def _peak(self, changes: list) -> int:
        """The most bytes (less savings) at any step, with `changes` added to the values without groups."""
        if not changes:
            return self.from_start[-1]
        lo, hi = min(c[0] for c in changes), max(c[1] for c in changes)
        lo, hi = max(lo, self.first), min(hi, self.last)
        offset = lo - self.first
        peak = max(map(add, self.values[offset:offset + hi - lo + 1], _step_values(lo, hi, changes)))
        if lo > self.first:
            peak = max(peak, self.from_start[offset - 1])
        if hi < self.last:
            peak = max(peak, self.from_end[hi - self.first + 1])
        return peak


def _grouped_buffers(cascades, slot: dict, firsts, lasts, sizes, kinds) -> dict:
    """{slot: its buffer's [first step, last step, size, kind] with the groups}, for the slots the groups change
    (as build_buffers): a whole tensor a group touches lives over all of the group's steps, a buffered one is
    the group's stripe buffer. `firsts`..`kinds`: the slot arrays without the groups (not changed here)."""
    changed = {}
    for g in cascades:
        stripe = set(g.buffered)
        for op in g.ops:
            for t in op.inputs + op.outputs:
                if t is not None and not t.is_const and t not in stripe:
                    k = slot[t]
                    entry = changed.get(k) or changed.setdefault(k, [firsts[k], lasts[k], sizes[k], kinds[k]])
                    entry[0], entry[1] = min(entry[0], g.first_step), max(entry[1], g.last_step)
        for t in g.buffered:
            changed[slot[t]] = [g.first_step, g.last_step, g.buffer_bytes(t), "stripe"]
    return changed


def _cascade_savings(cascades, slot: dict, firsts: list, lasts: list, sizes: list, kinds: list):
    """(first step, last step, bytes saved) of each exact overlap a group's output may take of an input dying in
    it (as _cascade_overlaps), over the slot arrays of a trial bound."""

    def owner(t):  # _Owners.get: the slot of t's buffer if it is of kind "tensor"
        k = slot.get(t)
        return k if k is not None and kinds[k] == "tensor" else None

    for g in cascades:
        out = owner(g.output)
        if out is None or firsts[out] != g.first_step:
            continue
        for x in g.external_inputs():
            k = owner(x)
            if k is None or k == out or lasts[k] != g.last_step or not g.exact_overlap_allowed(x):
                continue
            distance = None if x in activation_inputs(g.ops[-1]) else 0
            yield g.first_step, g.last_step, _overlap_saving(sizes[out], sizes[k], distance)


def co_live_overlaps(buffers: list, work: Work | None = None) -> list:
    """Every pair (i, j), i < j, of buffers (indices) that are live at a common step and share a byte.

    A sweep over the steps with the live buffers in a segment tree over their offsets: each buffer asks for
    the live buffers it meets when it starts, so the work is O((buffers + pairs) log buffers), not one test
    per pair of buffers (a valid plan has few such pairs: its permitted in-place overlaps)."""
    items = [(b.first, b.last, b.offset, b.offset + b.size, k) for k, b in enumerate(buffers) if b.size]
    if not items:
        return []
    coords = sorted({x for it in items for x in (it[2], it[3])})
    position = {c: k for k, c in enumerate(coords)}
    leaves = _leaves(len(coords))
    stored, count = {}, [0] * (2 * leaves)

    def canonical(a: int, b: int) -> list:
        return _canonical_nodes(position[a] + leaves, position[b] + leaves)

    def update(k: int, a: int, b: int, add: bool) -> None:
        for v in canonical(a, b):
            (stored.setdefault(v, set()).add if add else stored[v].discard)(k)
            while v:
                count[v] += 1 if add else -1
                v >>= 1
            if work is not None:
                work.inserts += 1

    def meeting(a: int, b: int) -> set:
        found = set()
        nodes = canonical(a, b)
        seen = set(nodes)
        stack = list(nodes)
        while stack:  # every buffer stored in the subtree of a canonical node
            v = stack.pop()
            if work is not None:
                work.probes += 1
            found |= stored.get(v, set())
            if v < leaves:
                stack.extend(c for c in (2 * v, 2 * v + 1) if count[c])
        for v in nodes:  # and the buffers stored above one (they cover it)
            v >>= 1
            while v and v not in seen:
                seen.add(v)
                found |= stored.get(v, set())
                v >>= 1
        return found

    pairs, live = [], []  # live: heap of (last step, index, start, end)
    for first, last, a, b, k in sorted(items):
        while live and live[0][0] < first:
            _, j, ja, jb = heapq.heappop(live)
            update(j, ja, jb, False)
        pairs.extend((min(j, k), max(j, k)) for j in meeting(a, b))
        update(k, a, b, True)
        heapq.heappush(live, (last, k, a, b))
    return sorted(pairs)


def verify_plan(plan: MemoryPlan, work: Work | None = None, recomputed: dict | None = None) -> None:
    """Prove the plan: buffers inside the arena, aligned, and no two live at once share a byte, except an
    output and the input dying at its op where that op's in-place rule (recomputed here) allows it.
    `recomputed`: the proof's own recomputed rules, (op, input, rule) -> required_overlap, kept by the caller
    across the plans of one problem (the cascade search proves several with the same in-place ops)."""
    for buf in plan.buffers:
        if buf.offset < 0 or buf.offset + buf.size > plan.arena_bytes or buf.offset % plan.alignment:
            raise AssertionError(f"memory plan: buffer {buf.name} at {buf.offset}+{buf.size} outside the arena")
    _check_cascades(plan)
    permitted = {}
    for o in plan.overlaps:
        _check_permission(o, recomputed)
        permitted[(id(o.output), id(o.input))] = o
    for i, j in co_live_overlaps(plan.buffers, work):
        a, b = plan.buffers[i], plan.buffers[j]
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
        rows = g.schedule(recompute=True).rows
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


def _check_permission(o: Overlap, recomputed: dict | None = None) -> None:
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
    declared = o.rule if o.rule in IN_PLACE_RULES else None
    key = (o.op, o.input_tensor, declared)
    if recomputed is not None and key in recomputed:
        rule = recomputed[key]
    else:
        rule = required_overlap(o.op, o.input_tensor, declared)
        if recomputed is not None:
            recomputed[key] = rule
    if rule is None or rule[0] != o.rule or (rule[1] is None) != (o.distance is None) or \
            (rule[1] is not None and o.distance < rule[1]):
        raise AssertionError(f"memory plan: {o.op.type} does not allow its output to overlap its input as recorded "
                             f"({o.rule}, {o.distance}); its rule is {rule}")
