"""Static memory plan: every activation tensor gets a fixed offset in one arena, sized at build time.

Liveness is measured in execution steps (op positions). Two buffers may share bytes only if their live
ranges do not overlap; an op's inputs and outputs are live at the op's step, so an op never overwrites
what it is still reading. RESHAPE outputs alias their input (same bytes, new shape). Placement is greedy by
size: the largest buffer first, each at the lowest aligned offset free for its whole lifetime.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.graph import Graph

ALIAS_OPS = {"RESHAPE"}  # outputs share their input's bytes


@dataclass(eq=False)
class Buffer:
    name: str
    size: int
    first: int  # first step at which the bytes must hold data
    last: int  # last step that reads them
    tensors: list = field(default_factory=list)
    offset: int | None = None

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last

    def overlaps_in_space(self, other: "Buffer") -> bool:
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


@dataclass
class MemoryPlan:
    buffers: list
    arena_bytes: int
    alignment: int
    offsets: dict  # Tensor -> offset
    scratch: dict  # Op -> (offset, size)

    def offset(self, tensor) -> int:
        return self.offsets[tensor]


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _alias_root(tensor, alias_of: dict):
    while tensor in alias_of:
        tensor = alias_of[tensor]
    return tensor


def build_buffers(graph: Graph, scratch_sizes: dict | None = None) -> list:
    """Group aliased tensors and compute each group's live range [first, last] in op steps."""
    alias_of = {}
    for op in graph.ops:
        if op.type in ALIAS_OPS and op.inputs[0] is not None and not op.inputs[0].is_const:
            alias_of[op.outputs[0]] = op.inputs[0]
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
    buffers = list(groups.values())
    for step, op in enumerate(graph.ops):
        size = (scratch_sizes or {}).get(op, 0)
        if size:
            buffers.append(Buffer(f"scratch of op {op.index}", size, step, step, [op]))
    return buffers


def place_greedy_by_size(buffers: list, alignment: int) -> int:
    """Assign offsets; return the arena size."""
    placed: list = []
    for buf in sorted(buffers, key=lambda b: (-b.size, b.first)):
        busy = sorted((p for p in placed if p.overlaps_in_time(buf)), key=lambda p: p.offset)
        offset = 0
        for other in busy:
            if offset + buf.size <= other.offset:
                break
            offset = max(offset, _align(other.offset + other.size, alignment))
        buf.offset = offset
        placed.append(buf)
    return _align(max((b.offset + b.size for b in buffers), default=0), alignment)


def plan_memory(graph: Graph, scratch_sizes: dict | None = None, alignment: int = 16) -> MemoryPlan:
    buffers = build_buffers(graph, scratch_sizes)
    arena = place_greedy_by_size(buffers, alignment)
    offsets, scratch = {}, {}
    for buf in buffers:
        if buf.name.startswith("scratch of op"):
            scratch[buf.tensors[0]] = (buf.offset, buf.size)
        else:
            for t in buf.tensors:
                offsets[t] = buf.offset
    plan = MemoryPlan(buffers, arena, alignment, offsets, scratch)
    verify_plan(plan)
    return plan


def verify_plan(plan: MemoryPlan) -> None:
    """Prove the plan: buffers inside the arena, aligned, and no two live at once share a byte."""
    for buf in plan.buffers:
        if buf.offset < 0 or buf.offset + buf.size > plan.arena_bytes or buf.offset % plan.alignment:
            raise AssertionError(f"memory plan: buffer {buf.name} at {buf.offset}+{buf.size} outside the arena")
    for i, a in enumerate(plan.buffers):
        for b in plan.buffers[i + 1:]:
            if a.size and b.size and a.overlaps_in_time(b) and a.overlaps_in_space(b):
                raise AssertionError(f"memory plan: {a.name} and {b.name} are live together and overlap")
