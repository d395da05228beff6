"""Health checks the compiler driver runs on the graph after every pass (like Vela's check_graph_health): the
invariants every later pass relies on. A failure is a bug in the pass that just ran, and says so."""

from __future__ import annotations

from .graph import Graph


class HealthError(AssertionError):
    """A pass left the graph (or its partition) inconsistent: an internal error, named after the pass."""


def graph_problems(graph: Graph) -> list:
    """Problems of the graph itself: ops in topological order, every tensor produced at most once, every
    activation an op reads available when it runs, every graph output produced or an input or constant."""
    problems = []
    available = {t for t in graph.inputs} | {t for t in graph.tensors if t.is_const or t.persistent}
    produced = set()
    for op in graph.ops:
        for t in op.inputs:
            if t is not None and not t.is_const and t not in available:
                problems.append(f"{op.location} reads '{t.name}' before any op produces it")
        for t in op.outputs:
            # Control-flow parts write again (edgesdk/importer/control_flow.py): a WHILE's "next" the loop
            # variables its "init" wrote, an IF's else branch the outputs its then branch wrote.
            if t in produced and "part" not in op.attrs:
                problems.append(f"{op.location} writes '{t.name}', which an earlier op already produced")
            produced.add(t)
            available.add(t)
    for t in graph.outputs:
        if t not in available:
            problems.append(f"graph output '{t.name}' is produced by no op")
    return problems


def partition_problems(graph: Graph, regions: list) -> list:
    """Problems of a partition: every op in exactly one region, regions in the graph's op order."""
    order = [op for region in regions for op in region.ops]
    if order != list(graph.ops):
        return [f"the regions hold {len(order)} ops in an order other than the graph's {len(graph.ops)}"]
    return [f"{op.location} is in no target's region" for region in regions for op in region.ops
            if region.target is None]


def check_health(after: str, graph: Graph, regions: list | None = None) -> None:
    problems = graph_problems(graph) + (partition_problems(graph, regions) if regions is not None else [])
    if problems:
        raise HealthError(f"after pass '{after}': " + "; ".join(problems[:5])
                          + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
