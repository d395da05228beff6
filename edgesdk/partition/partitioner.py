"""Step 3: assign every op to a target and merge neighbours into regions (BYOC style).

1. annotate: for each op, try the targets in priority order; the first whose constraints all hold takes it.
   The reason recorded for an op that did not land on the first-choice target names the constraint that
   failed there.
2. check the fallback: an op that even the last target rejects is unsupported; all such ops are reported
   together, each with its location and reason.
3. merge: consecutive ops (in execution order) with the same target form one region; an NPU region becomes
   one command table run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UnsupportedOpError, UsageError
from ..ir.graph import Graph
from ..targets import target_support


@dataclass
class Region:
    target: str
    ops: list = field(default_factory=list)

    @property
    def index_range(self) -> str:
        idx = [op.index for op in self.ops]
        return f"{idx[0]}..{idx[-1]}" if len(idx) > 1 else f"{idx[0]}"


def annotate(graph: Graph, targets: list, supports: list | None = None, forced: dict | None = None) -> list:
    """Set op.target/op.reason; return the ops no target accepts.

    `supports` (TargetSupport per target) defaults to the registered targets' tables. `forced` (operator
    index -> target, from a tuning schedule, edgesdk/tune) overrides the priority order for those ops; the
    forced target must be in the list and accept the op.
    """
    supports = supports or [target_support(t) for t in targets]
    rejected = []
    for op in graph.ops:
        if forced and op.index in forced:
            _force_target(op, forced[op.index], targets, supports)
            continue
        reasons = []
        for name, support in zip(targets, supports):
            ok, detail = support.check(op)
            if ok:
                op.target = name
                op.reason = "; ".join(reasons) if reasons else f"{name}: all constraints met"
                break
            reasons.append(f"not {name}: {detail}")
        else:
            op.target = None
            op.reason = "; ".join(reasons)
            rejected.append(op)
    return rejected


def _force_target(op, name: str, targets: list, supports: list) -> None:
    """Put `op` on target `name` as a tuning schedule asks, if that target is in the list and accepts it."""
    if name not in targets:
        raise UsageError(f"The tuning schedule puts {op.location} on target '{name}', which is not in the target "
                         f"list {','.join(targets)}. Build with the target list the schedule was tuned for, or "
                         "re-run 'edgesdk tune'.")
    ok, detail = supports[targets.index(name)].check(op)
    if not ok:
        raise UsageError(f"The tuning schedule puts {op.location} on target '{name}', which cannot run it: "
                         f"{detail}. Re-run 'edgesdk tune' for this model and edgesdk version.")
    op.target = name
    op.reason = f"{name}: chosen by the tuning schedule (all constraints met)"


def merge_regions(ops: list) -> list:
    """Consecutive ops with the same target -> one Region each."""
    regions: list = []
    for op in ops:
        if regions and regions[-1].target == op.target:
            regions[-1].ops.append(op)
        else:
            regions.append(Region(op.target, [op]))
    return regions


def partition(graph: Graph, targets: list, supports: list | None = None, forced: dict | None = None) -> list:
    """Annotate and merge; raise UnsupportedOpError naming every op that no target can run. `forced`: see
    annotate."""
    rejected = annotate(graph, targets, supports, forced)
    if rejected:
        lines = [f"{op.location}: {op.reason}" for op in rejected]
        raise UnsupportedOpError(
            f"{len(rejected)} operator(s) cannot run on any of the targets {','.join(targets)}: "
            + " | ".join(lines)
            + ". Change the model (e.g. re-quantize to int8 with supported parameters) or add a target that supports them."
        )
    return merge_regions(graph.ops)
