"""Readable dumps of the compiler's state after a pass (`edgesdk build --dump-after PASS`), for debugging a pass:
the ops with their tensors and targets, the regions, the memory plan, the generated executor's steps."""

from __future__ import annotations

import sys


def _tensor(t) -> str:
    if t is None:
        return "-"
    kind = "const " if t.is_const else ""
    return f"{kind}'{t.name}' {t.dtype}{list(t.shape)}"


def dump_text(pass_name: str, state) -> str:
    graph = state.graph
    lines = [f"== edgesdk: after pass '{pass_name}': model '{graph.name}', {len(graph.ops)} ops, "
             f"{len(graph.tensors)} tensors =="]
    lines.append("inputs:  " + ", ".join(_tensor(t) for t in graph.inputs))
    lines.append("outputs: " + ", ".join(_tensor(t) for t in graph.outputs))
    regions = state.regions or ()
    region_of = {op: k for k, r in enumerate(regions) for op in r.ops}
    for op in graph.ops:
        where = f"  [region {region_of[op]}: {regions[region_of[op]].target}]" if op in region_of else ""
        lines.append(f"  #{op.index:<4} {op.type:<24}{where}")
        lines.append(f"        in:  {', '.join(_tensor(t) for t in op.inputs) or '-'}")
        lines.append(f"        out: {', '.join(_tensor(t) for t in op.outputs) or '-'}")
    if state.folding is not None and state.folding.folded:
        lines.append("folded at build time: " + ", ".join(f"#{op.index} {op.type}" for op in state.folding.folded))
    for k, region in enumerate(regions):
        lines.append(f"region {k}: {region.target}, ops {[op.index for op in region.ops]}")
    if state.scratch:
        lines.append("scratch: " + ", ".join(f"#{op.index} {n} B" for op, n in state.scratch.items()))
    plan = state.plan
    if plan is not None:
        lines.append(f"memory plan: arena {plan.arena_bytes} B, lower bound {plan.lower_bound} B, "
                     f"{len(plan.buffers)} buffers, {len(plan.cascades)} cascade groups")
        for b in sorted(plan.buffers, key=lambda b: (b.offset, b.first)):
            lines.append(f"  {b.offset:>8} +{b.size:<8} steps {b.first}-{b.last}  {b.kind:<7} {b.name}")
    if state.executor is not None:
        ex = state.executor
        lines.append(f"executor: {len(ex.steps)} steps, {len(ex.consts)} constant arrays")
        for step in ex.steps:
            lines.append(f"  [{step.target}] {step.comment}")
    return "\n".join(lines) + "\n"


def print_dump(pass_name: str, state, stream=None) -> None:
    (stream or sys.stderr).write(dump_text(pass_name, state))
