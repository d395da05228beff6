"""The search over cascade groups: which chains of layers run in row stripes (edgesdk/ops/stripes.py).

A core step that knows no target: it asks each region's target which ops it can run in stripes
(`Target.can_stripe`) and what a group costs it (`Target.stripe_cost`, through an explicit dry codegen
context), and asks the memory planner (a `MemoryProblem`) what arena each set of groups gives. A group and
stripe height is kept only when the arena shrinks and its cycles stay within a budget.
"""

from __future__ import annotations

from ..errors import UsageError
from .memory_plan import MemoryProblem
from ..ops.stripes import CascadeGroup, MAX_CHAIN_OPS, chain_ok, consumers, nhwc, stripe_heights

# A group may cost at most this fraction of extra cycles over its ops run whole: every stripe command pays the
# fixed command overhead and may re-read its weights, which is nearly free for a compute-bound layer cut into a
# few stripes and doubles the time of a weight-bound one cut into many.
MAX_CYCLE_INCREASE = 0.05


class Striping:
    """What the targets of a partition offer for striping: `can_stripe(op)` and `cost(group)` ->
    (cycles in stripes, cycles whole), each asked of the op's own target. Costs come from a dry codegen
    context (nothing it makes reaches the build)."""

    def __init__(self, regions, options):
        """`options`: the build's CodegenOptions (edgesdk/targets/api.py)."""
        from ..targets import get_target
        from .executor import dry_context

        self._target_of = {op: get_target(region.target) for region in regions for op in region.ops}
        self._ctx = dry_context("striping", options)

    def can_stripe(self, op) -> bool:
        target = self._target_of.get(op)
        return target is not None and target.can_stripe(op)

    def same_target(self, ops) -> bool:
        return len({id(self._target_of.get(op)) for op in ops}) == 1

    def cost(self, group) -> tuple | None:
        """(cycles in stripes, cycles whole), or None when the target cannot lower this group."""
        return self._target_of[group.ops[0]].stripe_cost(group, self._ctx)


def candidate_chains(graph, regions, striping: Striping) -> list:
    """Every run of consecutive ops of one region that its target can run in stripes and that may form a
    cascade group, with its first step, as (first_step, ops); shortest first."""
    step_of = {op: i for i, op in enumerate(graph.ops)}
    users = consumers(graph.ops)
    result = []
    for region in regions:
        ops = list(region.ops)
        for i in range(len(ops)):
            for j in range(i + 2, min(i + MAX_CHAIN_OPS, len(ops)) + 1):
                chain = tuple(ops[i:j])
                steps = [step_of[op] for op in chain]
                if steps != list(range(steps[0], steps[0] + len(chain))):
                    break
                if not striping.can_stripe(chain[-1]):
                    break  # longer chains contain this op too
                if nhwc(chain[-1].outputs[0].shape)[1] < 2:
                    continue  # one output row: nothing to stripe
                if not all(op.file_operator for op in chain):
                    break  # inlined WHILE / IF subgraphs are not cascaded (schedules name groups by operator index)
                if all(striping.can_stripe(op) for op in chain) and chain_ok(chain, graph, users):
                    result.append((steps[0], chain))
    return sorted(result, key=lambda c: (len(c[1]), c[0]))


def busiest_steps(plan) -> set:
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


def choose_cascades(problem: MemoryProblem, regions, baseline, striping: Striping,
                    max_cycle_increase: float = MAX_CYCLE_INCREASE):
    """Add cascade groups to the plan while one lowers the arena. Each round tries every candidate chain
    (not overlapping the groups chosen so far) that covers a busiest step of the current plan at every
    stripe height within the cycle budget, and keeps the smallest arena; ties go to the fewer cycles.
    Returns the best plan (`baseline` itself when no group helps)."""
    candidates = candidate_chains(problem.graph, regions, striping)
    if not candidates:
        return baseline
    best, chosen = baseline, []
    while True:
        taken = {op for g in chosen for op in g.ops}
        busiest = busiest_steps(best)
        round_best = None  # (arena, extra cycles, plan)
        for first, chain in candidates:
            if taken & set(chain) or not busiest & set(range(first, first + len(chain))):
                continue
            for height in stripe_heights(chain):  # largest first: lower stripes only cost more cycles
                group = CascadeGroup(chain, height, first)
                cost = striping.cost(group)
                if cost is None:
                    continue  # the target cannot run this group's row ranges (another height may do)
                striped, whole = cost
                if striped > whole * (1 + max_cycle_increase):
                    break
                below = round_best[0] + 1 if round_best else best.arena_bytes
                plan = problem.plan_below(chosen + [group], below)
                if plan is not None and (round_best is None or (plan.arena_bytes, striped - whole) < round_best[:2]):
                    round_best = (plan.arena_bytes, striped - whole, plan)
        if round_best is None:
            return best
        best = round_best[2]
        chosen = list(best.cascades)


def forced_groups(graph, regions, specs, striping: Striping) -> list:
    """The cascade groups a tuning schedule names, as CascadeGroups: `specs` is a list of (operator indices,
    stripe height). Each must be a candidate chain of the current partition (`candidate_chains`) with a
    stripe height from 1 to below its output height, and no two may share an op; else UsageError."""
    chains = {tuple(op.index for op in chain): (first, chain)
              for first, chain in candidate_chains(graph, regions, striping)}
    groups, taken = [], set()
    for indices, height in specs:
        indices = tuple(indices)
        if indices not in chains:
            raise UsageError(f"The tuning schedule runs ops {list(indices)} as a cascade group, but they are not a "
                             "chain of consecutive layers that can run in stripes in this build. Re-run "
                             "'edgesdk tune' for this model, board and target list.")
        first, chain = chains[indices]
        out_height = nhwc(chain[-1].outputs[0].shape)[1]
        if not 1 <= height < out_height or taken & set(indices):
            raise UsageError(f"The tuning schedule's cascade group of ops {list(indices)} has stripe height {height} "
                             f"(the output has {out_height} rows) or shares an op with another group. Re-run "
                             "'edgesdk tune'.")
        group = CascadeGroup(chain, int(height), first)
        if striping.cost(group) is None:
            raise UsageError(f"The tuning schedule runs ops {list(indices)} in stripes of {height} rows, which their "
                             "target cannot run. Re-run 'edgesdk tune'.")
        taken |= set(indices)
        groups.append(group)
    return groups


def plan_with_groups(problem: MemoryProblem, regions, specs, striping: Striping):
    """The memory plan with exactly the cascade groups `specs` (see forced_groups), without searching: how
    a tuning schedule's groups are applied."""
    return problem.plan(forced_groups(problem.graph, regions, specs, striping))


def arena_reducing_groups(problem: MemoryProblem, regions, plan, striping: Striping) -> list:
    """Every group (candidate chain not overlapping plan.cascades, covering a busiest step, at any stripe
    height, whatever its cycles) that, added to the plan's groups, gives a smaller arena: a list of
    (arena bytes, first step, chain, stripe height), smallest arena first, then larger stripes. The tuner's
    "add a group" moves (edgesdk/tune/search.py); `choose_cascades` is the same search under a cycle budget."""
    chosen = list(plan.cascades)
    taken = {op for g in chosen for op in g.ops}
    busiest = busiest_steps(plan)
    found = []
    for first, chain in candidate_chains(problem.graph, regions, striping):
        if taken & set(chain) or not busiest & set(range(first, first + len(chain))):
            continue
        for height in stripe_heights(chain):
            if striping.cost(CascadeGroup(chain, height, first)) is None:
                continue  # its target cannot lower it
            trial = problem.plan_below(chosen + [CascadeGroup(chain, height, first)], plan.arena_bytes)
            if trial is not None:
                found.append((trial.arena_bytes, first, chain, height))
    return sorted(found, key=lambda f: (f[0], f[1], len(f[2]), -f[3]))


def cascade_report(plan) -> list:
    """report.json memory.cascades: each group's ops, stripe height and stripe buffers (offsets included)."""
    result = []
    for g in getattr(plan, "cascades", None) or ():
        entry = g.describe()
        for buf, t in zip(entry["buffers"], g.intermediates):
            buf["offset"] = plan.offsets.get(t)
        result.append(entry)
    return result
