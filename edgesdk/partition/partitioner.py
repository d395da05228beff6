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

from typing import NamedTuple

from ..dataclass_cache import dataclass, field
from ..errors import UnsupportedOpError, UsageError
from ..ir.graph import Graph
from ..targets import target_support
from .target import UNKNOWN_MODES


class Choice(NamedTuple):
    """Where annotate puts one op, and why (the failed constraint of each higher-priority target)."""

    target: str | None  # None: no target of the list accepts it
    reason: str


@dataclass
class Region:
    """Consecutive ops on one target: the partition's result (the graph IR itself is never written)."""

    target: str
    ops: list = field(default_factory=list)
    reasons: dict = field(default_factory=dict)  # op -> why it runs on this target (Choice.reason)

    @property
    def index_range(self) -> str:
        idx = [op.index for op in self.ops]
        return f"{idx[0]}..{idx[-1]}" if len(idx) > 1 else f"{idx[0]}"


def annotate(graph: Graph, targets: list, supports: list | None = None, forced: dict | None = None,
             modes: tuple = UNKNOWN_MODES) -> dict:
    """{op: Choice(target, reason)} for every op of the graph (target None: no target accepts it).

    `supports` (TargetSupport per target) defaults to the registered targets' tables. `forced` (operator
    index -> target, from a tuning schedule, edgesdk/tune) overrides the priority order for those ops; the
    forced target must be in the list and accept the op. `modes`: the rounding modes the build is for (its own;
    both TFLite references when not known yet), for the constraints whose rule depends on them.
    """
    supports = supports or [target_support(t) for t in targets]
    return {op: _forced_choice(op, forced[op.index], targets, supports, modes)
            if forced and op.file_operator and op.index in forced  # inlined WHILE / IF ops keep the priority order
            else _first_accepting(op, targets, supports, modes) for op in graph.ops}


def _first_accepting(op, targets: list, supports: list, modes: tuple) -> Choice:
    reasons = []
    for name, support in zip(targets, supports):
        ok, detail = support.check(op, modes)
        if ok:
            return Choice(name, "; ".join(reasons) if reasons else f"{name}: all constraints met")
        reasons.append(f"not {name}: {detail}")
    return Choice(None, "; ".join(reasons))


def rejected_ops(choices: dict) -> list:
    """The ops no target accepts, in graph order."""
    return [op for op, choice in choices.items() if choice.target is None]


def _forced_choice(op, name: str, targets: list, supports: list, modes: tuple) -> Choice:
    """Put `op` on target `name` as a tuning schedule asks, if that target is in the list and accepts it."""
    if name not in targets:
        raise UsageError(f"The tuning schedule puts {op.location} on target '{name}', which is not in the target "
                         f"list {','.join(targets)}. Build with the target list the schedule was tuned for, or "
                         "re-run 'edgesdk tune'.")
    ok, detail = supports[targets.index(name)].check(op, modes)
    if not ok:
        raise UsageError(f"The tuning schedule puts {op.location} on target '{name}', which cannot run it: "
                         f"{detail}. Re-run 'edgesdk tune' for this model and edgesdk version.")
    return Choice(name, f"{name}: chosen by the tuning schedule (all constraints met)")


def merge_regions(ops: list, choices: dict) -> list:
    """Consecutive ops with the same target -> one Region each."""
    regions: list = []
    for op in ops:
        target, reason = choices[op]
        if not regions or regions[-1].target != target:
            regions.append(Region(target))
        regions[-1].ops.append(op)
        regions[-1].reasons[op] = reason
    return regions


def target_of(regions: list) -> dict:
    """{op: target name} of a partition."""
    return {op: region.target for region in regions for op in region.ops}


def reason_of(regions: list) -> dict:
    """{op: why it runs on its target} of a partition."""
    return {op: reason for region in regions for op, reason in region.reasons.items()}


def partition(graph: Graph, targets: list, supports: list | None = None, forced: dict | None = None,
              modes: tuple = UNKNOWN_MODES) -> list:
    """Annotate and merge; raise UnsupportedOpError naming every op that no target can run, grouped by op type
    and reason (one message for the whole model). `forced`: see annotate."""
    supports = supports or [target_support(t) for t in targets]
    choices = annotate(graph, targets, supports, forced, modes)
    rejected = rejected_ops(choices)
    if rejected:
        raise UnsupportedOpError(unsupported_report(rejected, targets, supports, len(graph.ops), modes))
    return merge_regions(graph.ops, choices)


MAX_LOCATIONS = 8  # per group in the message; the rest are counted


def unsupported_report(rejected: list, targets: list, supports: list, total_ops: int,
                       modes: tuple = UNKNOWN_MODES) -> str:
    """Every op that cannot run, grouped by op type and the reason the fallback target gives, with counts, the
    locations, the activation types and what the user can do."""
    groups: dict = {}
    for op in rejected:
        failure = supports[-1].failure(op, modes)
        key = (op.type, failure.constraint, failure.rule, _activation_types(op))
        groups.setdefault(key, []).append((op, failure))
    lines = [f"{len(rejected)} of {total_ops} operator(s) cannot run on any of the targets {','.join(targets)}:"]
    for (op_type, constraint, rule, dtypes), members in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        count = f"{len(members)} operator{'s' if len(members) > 1 else ''}"
        if not constraint:
            lines.append(f"* {op_type} ({count}): {_no_implementation(op_type, targets)}")
        else:
            lines.append(f"* {op_type} ({count}, activations {dtypes}): on {supports[-1].name}: {constraint}: {rule}."
                         + _dtype_hint(op_type, rule, dtypes, supports))
        for op, failure in members[:MAX_LOCATIONS]:
            lines.append(f"    {op.location}" + (f": {failure.detail}" if failure.detail else ""))
        if len(members) > MAX_LOCATIONS:
            lines.append(f"    ... and {len(members) - MAX_LOCATIONS} more")
    lines.append("'edgesdk inspect MODEL' shows where every op would run and why; 'edgesdk inspect --list-ops' lists "
                 "each target's ops and constraints (docs/supported-ops.md). Change the model (for example re-quantize "
                 "to int8, or replace the op when exporting) or add a target that runs these ops.")
    return "\n".join(lines)


def _activation_types(op) -> str:
    types = sorted({t.dtype for t in op.inputs + op.outputs if t is not None and not t.is_const})
    return "/".join(types) or "none"


def _no_implementation(op_type: str, targets: list) -> str:
    from ..targets import all_targets

    elsewhere = [t.name for t in all_targets() if t.name not in targets and t.support.supports_type(op_type)]
    if elsewhere:
        return (f"none of the targets {','.join(targets)} has a {op_type} implementation; target(s) "
                f"{', '.join(elsewhere)} do: add one to --target")
    return f"edgesdk has no {op_type} implementation on any installed target"


def _dtype_hint(op_type: str, rule: str, dtypes: str, supports: list) -> str:
    """'This op exists for int8; your model is int16' when the failing rule is about the tensor type."""
    wanted = [d for d in ("int8", "int16", "float32") if d in rule]
    have = [d for d in dtypes.split("/") if d not in wanted]
    if wanted and have:
        return f" edgesdk runs {op_type} with {'/'.join(wanted)} activations; this one has {'/'.join(have)}."
    return ""
