"""The search over cascade groups: which chains of layers run in row stripes (edgesdk/ops/stripes.py).

A core step that knows no target: it asks each region's target which ops it can run in stripes
(`Target.can_stripe`) and what a group costs it (`Target.stripe_cost`, through an explicit dry codegen
context), and asks the memory planner (a `MemoryProblem`) what arena each set of groups gives. A group and
stripe height is kept only when the arena shrinks and its cycles stay within a budget.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import accumulate

from ..errors import UsageError
from .memory_plan import MemoryProblem
from ..ops.stripes import (CascadeGroup, ChainTable, MAX_CHAIN_OPS, consumers, group_parts, nhwc, streamable_inputs,
                           stripe_heights)

# A default build's cascade groups may together add at most this fraction of the model's op-by-op cost on each
# target (its NPU cycles, its CPU instructions: `model_cycles`), unless the target declares its own
# (`Target.default_model_increase`). Issue 13 part 1 bounds the model's cost, not each group's: a group that
# doubles two small layers may cost the model 1 % (HAR's first convolution and pooling on the NPU, +61 % of those
# layers, +1.3 % of the model, for 9 KB of its 23 KB arena).
DEFAULT_MODEL_INCREASE = 0.05
# For a model that does not fit the board op by op (or with the groups above): what the groups may cost the
# model to make it fit, through the fit search.
FIT_MAX_INCREASE = 0.15


class Striping:
    """What the targets of a partition offer for striping: `can_stripe(op)` and `costs(group)` -> {target name:
    (cycles in stripes, cycles whole)}, each asked of the op's own target. A group may cross targets (an NPU
    convolution feeding a host layer) when every target in it says `stripes_with_other_targets`: each
    target then prices its own part of the group's events (ops.stripes.group_parts) in its own cycles, and
    each part counts against its own target's budget. Costs come from a dry codegen context (nothing it makes
    reaches the build)."""

    def __init__(self, regions, options, stream_inputs=()):
        """`options`: the build's CodegenOptions (edgesdk/targets/api.py). `stream_inputs`: the graph inputs the
        caller provides in rows (`edgesdk build --stream-input`): every group that alone reads one streams it."""
        from ..targets import get_target
        from .executor import dry_context

        self._target_of = {op: get_target(region.target) for region in regions for op in region.ops}
        self._region_of = {op: k for k, region in enumerate(regions) for op in region.ops}
        self._ctx = dry_context("striping", options)
        # op-by-op costs lower every layer once more: their weights must not count against the flash budget
        self._whole_ctx = dry_context("op-by-op costs", replace(options, flash_limit=None))
        self.stream_inputs = tuple(stream_inputs)
        self._users = None
        # A group's schedule and costs depend only on its ops, stripe height and streamed inputs; the search
        # asks about the same groups again in every round, so they are remembered for this build (and each
        # op's row windows, which every schedule of a group with that op reads).
        self._schedules, self._costs, self._windows = {}, {}, {}
        self._floors = {}

    def group(self, chain, height: int, first: int, graph, lead_rows: int = 0) -> CascadeGroup:
        """The cascade group of `chain` in stripes of `height` rows (the first of `lead_rows`, if not 0),
        streaming the inputs it alone reads."""
        streamed = ()
        if self.stream_inputs:
            if self._users is None:
                self._users = consumers(graph.ops)
            streamed = streamable_inputs(chain, self.stream_inputs, self._users)
        group = CascadeGroup(tuple(chain), height, first, streamed, tuple(graph.inputs.index(x) for x in streamed),
                             tuple(graph.stream_sources.get(x, x) for x in streamed), lead_rows=lead_rows)
        group._schedule = self._schedules.get(_group_key(group))
        group._windows = self._windows
        return group

    def can_stripe(self, op) -> bool:
        target = self._target_of.get(op)
        return target is not None and target.can_stripe(op)

    def can_join(self, chain) -> bool:
        """May these consecutive ops form one group as far as their targets go? Ops of one region; or, where
        the target changes, two targets that both run their stripes between another target's."""
        for a, b in zip(chain, chain[1:]):
            if self._region_of[a] == self._region_of[b]:
                continue
            ta, tb = self._target_of[a], self._target_of[b]
            if ta is tb or not (ta.stripes_with_other_targets and tb.stripes_with_other_targets):
                return False
        return True

    def parts(self, group) -> dict:
        """{target name: the part of the group that target runs} (the group itself for one target)."""
        return group_parts(group, self.target_name_of)

    def target_name_of(self, op) -> str:
        return self._target_of[op].name

    def whole_cost(self, op) -> int | None:
        """Cycles of one layer as an op-by-op build runs it, if its target says (Target.whole_cost)."""
        target = self._target_of.get(op)
        return None if target is None else target.whole_cost((op,), self._whole_ctx)

    def same_target(self, ops) -> bool:
        return len({id(self._target_of.get(op)) for op in ops}) == 1

    def default_budget(self, graph, regions) -> dict:
        """{target name: the extra cycles a default build's groups may add on it}: the target's
        `default_model_increase` (else DEFAULT_MODEL_INCREASE) of the model's cycles on it (`model_cycles`)."""
        from ..targets import get_target

        budget = {}
        for name, total in model_cycles(graph, regions, self).items():
            own = get_target(name).default_model_increase
            budget[name] = total * (DEFAULT_MODEL_INCREASE if own is None else own)
        return budget

    def costs(self, group) -> dict | None:
        """{target name: (cycles of its part in stripes, of its ops as an op-by-op build runs them)}, or None
        when a target cannot lower its part. The ops whole are priced by the target's `whole_cost` where it
        gives one: the stripes replace that (an NPU convolution runs folded op by op, unfolded in stripes)."""
        key = _group_key(group)
        if key not in self._costs:
            self._costs[key] = self._price(group)
            if isinstance(group, CascadeGroup):
                self._schedules.setdefault(key, group.schedule())
        known = self._costs[key]
        return None if known is None else dict(known)

    def floor_costs(self, group) -> dict | None:
        """{target name: (a lower bound on its part's cycles in stripes, its ops' cycles whole)} when every
        target of the group bounds its part (Target.stripe_cost_floor) and prices its ops whole (whole_cost,
        remembered per layer since model_cycles), else None; None too once the group is priced (`costs` is
        exact). Each bound is at most the part's price and promises the price is not None, so a group whose
        floors are over a budget is over it priced: the search skips pricing it, with the same decisions."""
        key = _group_key(group)
        if key in self._costs:
            return None
        if key not in self._floors:
            self._floors[key] = self._floor(group)
        known = self._floors[key]
        return None if known is None else dict(known)

    def _floor(self, group) -> dict | None:
        result = {}
        for name, part in self.parts(group).items():
            target = self._target_of[part.ops[0]]
            floor = target.stripe_cost_floor(part, self._ctx)
            whole = None if floor is None else target.whole_cost(part.ops, self._whole_ctx)
            if whole is None:
                return None
            result[name] = (floor, whole)
        return result

    def _price(self, group) -> dict | None:
        result = {}
        for name, part in self.parts(group).items():
            target = self._target_of[part.ops[0]]
            cost = target.stripe_cost(part, self._ctx)
            if cost is None:
                return None
            actual = target.whole_cost(part.ops, self._whole_ctx)
            result[name] = cost if actual is None else (cost[0], actual)
        return result

    def cost(self, group) -> tuple | None:
        """(cycles in stripes, cycles whole) summed over the group's targets, or None (`costs`). For a group
        of one target its own cycles; the sum of a mixed group's NPU cycles and CPU instructions only orders
        groups, no budget is applied to it (`within`)."""
        costs = self.costs(group)
        if costs is None:
            return None
        return sum(c[0] for c in costs.values()), sum(c[1] for c in costs.values())

    def within(self, costs: dict, max_increase: float) -> bool:
        """Does every target's part stay within `max_increase` of its ops run whole?"""
        return all(striped <= whole * (1 + max_increase) for striped, whole in costs.values())

    def extra(self, groups) -> dict:
        """{target name: the extra cycles of these groups on it, over their ops as an op-by-op build runs them}."""
        extra = {}
        for group in groups:
            for name, (striped, whole) in (self.costs(group) or {}).items():
                extra[name] = extra.get(name, 0) + striped - whole
        return extra


def _within_budget(extra: dict, budget: dict) -> bool:
    return all(cycles <= budget.get(name, 0) for name, cycles in extra.items())


def _group_key(group) -> tuple:
    """What a group's schedule and costs depend on."""
    return group.ops, group.stripe_height, group.first_step, tuple(group.streamed), group.lead_rows


def candidate_chains(graph, regions, striping: Striping) -> list:
    """Every run of consecutive ops that their targets can run in stripes and that may form a cascade group
    (of one region, or across targets that allow it: Striping.can_join), with its first step, as
    (first_step, ops); shortest first. `regions`: the partition `striping` was made for."""
    users = consumers(graph.ops)
    ops = list(graph.ops)  # in steps
    table = ChainTable(ops, graph, users)
    # per op, asked once: may it end a chain (its target stripes it, it comes from the model file: inlined
    # WHILE / IF subgraphs are not cascaded, schedules name groups by operator index), its output's rows; per
    # pair of neighbours (joins[k]: ops k and k + 1), may both be in one chain
    usable = [striping.can_stripe(op) and bool(op.file_operator) for op in ops]
    rows = [nhwc(op.outputs[0].shape)[1] if use else 0 for op, use in zip(ops, usable)]
    joins = [usable[k] and usable[k + 1] and striping.can_join(ops[k:k + 2]) for k in range(len(ops) - 1)]
    result = []
    for i in range(len(ops)):
        if not usable[i]:
            continue
        for j in range(i + 2, min(i + MAX_CHAIN_OPS, len(ops)) + 1):
            if not usable[j - 1] or not joins[j - 2]:
                break  # longer chains contain this op too (ops i..j - 2 passed at shorter j)
            if rows[j - 1] < 2:
                continue  # one output row: nothing to stripe
            if table.ok(i, j):
                result.append((i, tuple(ops[i:j])))
    return sorted(result, key=lambda c: (len(c[1]), c[0]))


def busiest_steps(plan, placed: bool = False) -> set:
    """Steps at which the live bytes (before overlap) reach their maximum: only a group covering one of
    them can lower the peak. `placed`: the steps at which the plan's buffers reach the top of the arena
    instead (where the placement, not the live bytes, sets the peak)."""
    buffers = [b for b in plan.buffers if b.size]
    if not buffers:
        return set()
    first = min(b.first for b in buffers)
    steps = max(b.last for b in buffers) - first + 1
    if placed:  # the highest byte in use at each step
        load = [0] * steps
        for b in buffers:
            top = b.offset + b.size
            for k in range(b.first - first, b.last - first + 1):
                if load[k] < top:
                    load[k] = top
    else:  # the bytes live at each step: a difference array
        delta = [0] * (steps + 1)
        for b in buffers:
            delta[b.first - first] += b.size
            delta[b.last - first + 1] -= b.size
        load = list(accumulate(delta[:-1]))
    top = max(load)
    return {first + k for k, v in enumerate(load) if v == top}


def choose_cascades(problem: MemoryProblem, regions, baseline, striping: Striping,
                    max_cycle_increase: float | None = None, placed: bool = False, replace: bool = False,
                    prune: bool = True):
    """Add cascade groups to the plan while one lowers the arena. Each round tries every candidate chain that
    covers a busiest step of the current plan, does not overlap the groups chosen so far (`replace`: or takes
    the place of those it overlaps), at every stripe height within the cycle budget (`max_cycle_increase`;
    None: the default build's model-level budget, `Striping.default_budget`: the groups chosen together may add
    at most each target's default fraction of the model's cycles on it), and keeps the smallest arena; ties go
    to the fewer cycles, then to the first tried.
    The search starts from `baseline`'s groups; `placed` picks the busiest steps by the placement
    (busiest_steps). Returns the best plan (`baseline` itself when no group helps); a plan of its own is proven
    (MemoryProblem.prove), `baseline` is returned as the caller gave it.

    `prune` (the default) gives the same plan with fewer placements and prices: a round places its candidates in
    order of their plan's lower bound (`MemoryProblem.trial`), stops at the first whose bound is above the best
    arena found, and places one whose bound equals it only when it would win the tie; a height whose bound is
    not below the best arena is priced only if a later height of its chain is tried (its price then says
    whether the chain stops there, as it would have). False: each candidate is priced, and placed as it is
    tried unless its bound is above the round's best arena (the reference for the tests)."""
    candidates = candidate_chains(problem.graph, regions, striping)
    if not candidates:
        return baseline
    budget = striping.default_budget(problem.graph, regions) if max_cycle_increase is None else None
    best, chosen = baseline, list(baseline.cascades)
    while True:
        busiest = busiest_steps(best, placed)
        tried = []  # each candidate within the budget, as _place_best takes it
        round_best = None  # (arena, extra cycles, order tried, plan)
        for first, chain in candidates:
            if not busiest & set(range(first, first + len(chain))):
                continue
            members = set(chain)  # a chain over chosen groups may replace them (a longer group may beat two)
            kept = [g for g in chosen if not members & set(g.ops)]
            if len(kept) < len(chosen) and not replace:
                continue
            kept_extra = striping.extra(kept) if budget is not None else None

            def over(costs) -> bool:
                return _over(costs, striping, max_cycle_increase, kept_extra, budget)

            unpriced = []  # (prune) the heights so far that cannot be placed below the best arena, not priced yet
            for height in stripe_heights(chain):  # largest first: lower stripes only cost more cycles
                group = striping.group(chain, height, first, problem.graph)
                floors = striping.floor_costs(group)
                if floors is not None and over(floors):
                    break  # over at its price too (floor <= price): not priced
                if prune:  # placed below, lowest bound first
                    trial = problem.trial(kept + [group])
                    if trial[0] >= best.arena_bytes:
                        unpriced.append(group)  # never tried: its price would only say whether the chain stops
                        continue
                    if _stops(unpriced, striping, over):
                        break
                    unpriced = []
                costs = striping.costs(group)
                if costs is None:
                    continue  # a target cannot run this group's row ranges (another height may do)
                if over(costs):
                    break
                extra = sum(striped - whole for striped, whole in costs.values())
                if prune:
                    tried.append((trial[0], len(tried), extra, kept + [group], trial))
                    continue
                below = round_best[0] + 1 if round_best else best.arena_bytes
                plan = problem.plan_below(kept + [group], below, prove=False)
                if plan is not None and (round_best is None or (plan.arena_bytes, extra) < round_best[:2]):
                    round_best = (plan.arena_bytes, extra, 0, plan)
        round_best = _place_best(problem, tried, best.arena_bytes) or round_best
        if round_best is None:
            if best is not baseline:  # the rounds' plans are placed unproven: prove the one kept
                problem.prove(best)
            return best
        best = round_best[3]
        chosen = list(best.cascades)


def _stops(groups: list, striping: Striping, over) -> bool:
    """Does the height loop stop at one of these heights of a chain (in the order tried): is one over the cycle
    budget (`over`) at its price? Asked only when a later height may be tried, so that the heights whose bound
    already says they cannot win are priced only when their price decides something."""
    for group in groups:
        costs = striping.costs(group)
        if costs is not None and over(costs):
            return True
    return False


def _over(costs: dict, striping: Striping, max_cycle_increase, kept_extra, budget) -> bool:
    """Is a candidate with these costs ({target name: (striped, whole)}) over choose_cascades' cycle budget:
    each part's `max_cycle_increase` of its ops whole, or (None) with the kept groups' `kept_extra`, a
    target's model-level `budget`?"""
    if budget is None:
        return not striping.within(costs, max_cycle_increase)
    total = dict(kept_extra)
    for name, (striped, whole) in costs.items():
        total[name] = total.get(name, 0) + striped - whole
    return not _within_budget(total, budget)


def _place_best(problem: MemoryProblem, tried: list, below) -> tuple | None:
    """The candidate with the smallest arena below `below`, then the fewest extra cycles, then the first tried,
    as (arena, extra cycles, order tried, plan); None if none is below. `tried`: (lower bound, order tried,
    extra cycles, groups, MemoryProblem.trial) of each candidate. Placed lowest bound first: once a bound is
    above the best arena found, no candidate left can win or tie; one whose bound equals it is placed only
    if it would win the tie. The plans are not proven (MemoryProblem.prove): the caller proves the one it
    keeps."""
    best = None
    for bound, order, extra, groups, trial in sorted(tried, key=lambda t: t[:2]):
        limit = below
        if best is not None:
            if bound > best[0]:
                break
            limit = best[0] + ((extra, order) < best[1:3])  # arena ties go to fewer cycles, then the first tried
        plan = problem.plan_below(groups, limit, trial, prove=False)
        if plan is not None:
            best = (plan.arena_bytes, extra, order, plan)
    return best


def fit_cascades(problem: MemoryProblem, regions, striping: Striping, max_increase: float = FIT_MAX_INCREASE):
    """The set of cascade groups with the lowest peak of per-step lower bounds whose extra cycles stay within
    `max_increase` of the model's (issue 13: the bound is on the model's NPU cycles and CPU instructions, not
    on each group): each group's extra cycles count as a fraction of its target's cycles for the model's
    layers it can stripe, run whole (`model_cycles`; the layers it cannot stripe would only lower the
    fraction), summed over all groups of all targets. Among the sets with that peak, the one with the
    fewest extra cycles; None when no group is within the budget. For a model that does not fit op by op,
    where the greedy `choose_cascades` stops early: a group chosen for one busiest step can leave another
    step's peak where only a group overlapping it could lower it.

    A dynamic program over the steps: a group changes the live bytes only at its own steps (its stripe
    buffers, and every tensor it touches live over all of its steps), so the peak of a set of disjoint groups
    is the maximum of each group's own peak and the ungrouped steps' bounds; the fewest extra cycles under a
    peak limit is a shortest path, and the lowest limit within the budget a bisection (a higher limit never
    costs more)."""
    whole = problem.step_bounds()
    if not whole:
        return None
    steps = max(whole) + 1
    totals = model_cycles(problem.graph, regions, striping)
    ending = {}  # last step -> [(peak over the group's steps, extra cycles as a fraction, group)]
    for first, chain in candidate_chains(problem.graph, regions, striping):
        for height in stripe_heights(chain, finer=True):  # largest first: lower stripes cost more
            over, even = False, None
            for lead in _lead_rows(height):
                group = striping.group(chain, height, first, problem.graph, lead)
                if even is None:
                    even = group
                elif not _smaller_buffers(group, even):
                    continue  # the same buffers in one stripe more: never a lower peak
                floors = striping.floor_costs(group)
                if floors is not None and _share_of_model(floors, totals) > max_increase:
                    over = over or not lead  # over at its price too (floor <= price): not priced
                    continue
                cost = striping.costs(group)
                if cost is None:
                    continue
                extra = _share_of_model(cost, totals)
                if extra > max_increase:
                    over = over or not lead
                    continue
                bounds = problem.step_bounds([group])
                peak = max(bounds.get(s, 0) for s in range(first, group.last_step + 1))
                ending.setdefault(group.last_step, []).append((peak, extra, group))
            if over:
                break
    if not ending:
        return None
    limits = sorted(set(whole.values()) | {peak for entries in ending.values() for peak, _, _ in entries})
    low, high = 0, len(limits) - 1  # the highest limit takes no group at all: always within the budget
    while low < high:
        mid = (low + high) // 2
        extra = _cheapest_within(steps, whole, ending, limits[mid])[0]
        if extra != float("inf") and extra <= max_increase:
            high = mid
        else:
            low = mid + 1
    return _cheapest_within(steps, whole, ending, limits[low])[1]


def _lead_rows(height: int) -> tuple:
    """First-stripe heights the fit search tries at a stripe height: the height itself (0), and one row less,
    which keeps the buffers a strided window's first stripe alone sizes at the steady stripes' rows
    (ops.stripes.build_schedule): MobileNetV2-224's first block on the NPU, 1-row stripes 18.7 % more NPU
    cycles, fits 256 KiB this way at 2-row stripes."""
    return (0, height - 1) if height > 1 else (0,)


def _smaller_buffers(group, other) -> bool:
    """Does `group` hold some stripe buffer in fewer rows than `other`, a group of the same ops?"""
    rows, others = group.schedule().rows, other.schedule().rows
    return any(rows[t] < others[t] for t in rows)


def model_cycles(graph, regions, striping: Striping) -> dict:
    """{target name: the model's cycles on it op by op}: what the fit search's budget is a fraction of. Each
    layer by its target's `whole_cost`; a target without one counts only the layers it can stripe, by its
    stripe cost model (a one-layer group in one stripe), which can only make the budget smaller."""
    totals = {}
    for step, op in enumerate(graph.ops):
        actual = striping.whole_cost(op)
        if actual is None:
            if not striping.can_stripe(op) or len(op.outputs) != 1 or len(op.outputs[0].shape) != 4:
                continue
            cost = striping.cost(CascadeGroup((op,), nhwc(op.outputs[0].shape)[1], step))
            if cost is None:
                continue
            actual = cost[1]
        name = striping.target_name_of(op)
        totals[name] = totals.get(name, 0) + actual
    return totals


def _share_of_model(costs: dict, totals: dict) -> float:
    """A group's extra cycles as a fraction of its target's cycles for the whole model (model_cycles), summed
    over its targets (Striping.costs): what the fit budget bounds."""
    return sum((striped - whole) / max(totals.get(name, 0), 1) for name, (striped, whole) in costs.items())


def plan_increase(plan, striping: Striping, totals: dict) -> float:
    """The extra cycles of a plan's groups, as fit_cascades counts them."""
    extra = 0.0
    for group in plan.cascades:
        cost = striping.costs(group)
        extra += _share_of_model(cost, totals) if cost else 0.0
    return extra


def fit_plan(problem: MemoryProblem, regions, plan, striping: Striping, max_increase: float = FIT_MAX_INCREASE):
    """The smallest plan found for a model that does not fit with `plan`: the groups of `fit_cascades`, then
    the greedy search from them at the steps where the placement reaches the top (the placement may stay
    above the per-step bounds the program minimizes), kept when the model's extra cycles stay within
    `max_increase`. `plan` itself if none is smaller."""
    groups = fit_cascades(problem, regions, striping, max_increase)
    if not groups:
        return plan
    fitted = problem.plan(groups)
    greedy = choose_cascades(problem, regions, fitted, striping, max_increase, placed=True, replace=True)
    if greedy is not fitted and \
            plan_increase(greedy, striping, model_cycles(problem.graph, regions, striping)) <= max_increase:
        fitted = greedy
    return fitted if fitted.arena_bytes < plan.arena_bytes else plan


def streamable_graph_inputs(graph) -> list:
    """The graph inputs `--stream-input` may stream: images (batch 1, NHWC, more than one row), not state."""
    return [t for t in graph.inputs if len(t.shape) == 4 and nhwc(t.shape)[0] == 1 and nhwc(t.shape)[1] > 1
            and not t.persistent]


def streamed_plan(problem: MemoryProblem, regions, plan, striping: Striping, max_increase: float = FIT_MAX_INCREASE):
    """With `edgesdk build --stream-input`: a plan whose groups stream every input of `striping.stream_inputs`.
    `plan` itself when they already do; else the smallest arena (then the fewest extra cycles) among `plan`
    with one more group, costing at most `max_increase` of the model's cycles (as in fit_cascades), that
    streams them (replacing the groups it overlaps), then
    the greedy search from it. UsageError when no group of the layers that read an input can stream it.

    The same search from the plan without `plan`'s groups too, keeping the smaller arena (then the fewer
    extra cycles): `plan`'s groups were chosen with the input whole, and one may stand where a longer streaming
    group would do better (MobileNet v1 0.5 on the host: the default group over layers 2-4 keeps layers 0-1
    streaming alone, 111,360 B; from scratch the streaming groups take layers 0-3 and 4-7, 76,800 B)."""
    missing = set(striping.stream_inputs) - {x for g in plan.cascades for x in g.streamed}
    if not missing:
        return plan
    searched = _streamed_search(problem, regions, plan, striping, max_increase, missing)
    if not plan.cascades:
        return searched
    alone = _streamed_search(problem, regions, problem.plan(prove=False), striping, max_increase, missing)
    if alone.arena_bytes < searched.arena_bytes:
        return alone
    if alone.arena_bytes == searched.arena_bytes:
        totals = model_cycles(problem.graph, regions, striping)
        if plan_increase(alone, striping, totals) < plan_increase(searched, striping, totals):
            return alone
    return searched


def _streamed_search(problem: MemoryProblem, regions, plan, striping: Striping, max_increase: float, missing: set):
    """streamed_plan from `plan`, whose groups stream none of `missing`."""
    tried = []  # each candidate that streams them, as _place_best takes it
    totals = model_cycles(problem.graph, regions, striping)
    for first, chain in candidate_chains(problem.graph, regions, striping):
        for height in stripe_heights(chain):
            group = striping.group(chain, height, first, problem.graph)
            if not missing <= set(group.streamed):
                break  # the chain does not read them alone, at any height
            floors = striping.floor_costs(group)
            if floors is not None and _share_of_model(floors, totals) > max_increase:
                break  # over at its price too (floor <= price): not priced
            cost = striping.costs(group)
            if cost is None:
                continue
            if _share_of_model(cost, totals) > max_increase:
                break  # more than the budget of the model's cycles (fit_cascades)
            kept = [g for g in plan.cascades if not set(g.ops) & set(chain)]
            extra = sum(striped - whole for striped, whole in cost.values())
            trial = problem.trial(kept + [group])
            tried.append((trial[0], len(tried), extra, kept + [group], trial))
    best = _place_best(problem, tried, math.inf)  # (arena, extra cycles, order tried, plan)
    if best is None:
        names = ", ".join(f"'{t.name}'" for t in sorted(missing, key=lambda t: t.name))
        raise UsageError(f"--stream-input: input {names} cannot be read in rows: the layers that read it are not a "
                         "chain of layers their targets can run in row stripes (convolutions, depthwise "
                         "convolutions, pooling, elementwise ADD/MUL) costing at most "
                         f"{max_increase:.0%} of the model's cycles more, or another layer reads it too. Build "
                         "without --stream-input.")
    searched = choose_cascades(problem, regions, best[3], striping, max_increase, placed=True, replace=True)
    still = set(striping.stream_inputs) <= {x for g in searched.cascades for x in g.streamed}
    result = searched if still else best[3]
    if result is best[3]:  # placed unproven by _place_best (choose_cascades proves a plan of its own)
        problem.prove(result)
    return result


def _cheapest_within(steps: int, whole: dict, ending: dict, limit: int) -> tuple:
    """(extra cycles, the disjoint groups with the fewest extra cycles that keep every step's bound within
    `limit`); infinite extra cycles when none do."""
    inf = float("inf")
    cost, choice = [0] + [inf] * steps, [None] * (steps + 1)
    for i in range(1, steps + 1):
        if whole.get(i - 1, 0) <= limit and cost[i - 1] < inf:
            cost[i], choice[i] = cost[i - 1], None
        for group_peak, extra, group in ending.get(i - 1, ()):
            if group_peak <= limit and cost[group.first_step] + extra < cost[i]:
                cost[i], choice[i] = cost[group.first_step] + extra, group
    if cost[steps] == inf:
        return inf, []
    groups, i = [], steps
    while i > 0:
        group = choice[i]
        if group is None:
            i -= 1
        else:
            groups.append(group)
            i = group.first_step
    return cost[steps], groups[::-1]


def forced_groups(graph, regions, specs, striping: Striping) -> list:
    """The cascade groups a tuning schedule names, as CascadeGroups: `specs` is a list of (operator indices,
    stripe height[, rows of the first stripe]). Each must be a candidate chain of the current partition
    (`candidate_chains`) with a stripe height from 1 to below its output height (and a first stripe of 0, the
    stripe height, to that height), and no two may share an op; else UsageError."""
    chains = {tuple(op.index for op in chain): (first, chain)
              for first, chain in candidate_chains(graph, regions, striping)}
    groups, taken = [], set()
    for indices, height, *lead in specs:
        indices, lead = tuple(indices), int(lead[0]) if lead else 0
        if indices not in chains:
            raise UsageError(f"The tuning schedule runs ops {list(indices)} as a cascade group, but they are not a "
                             "chain of consecutive layers that can run in stripes in this build. Re-run "
                             "'edgesdk tune' for this model, board and target list.")
        first, chain = chains[indices]
        out_height = nhwc(chain[-1].outputs[0].shape)[1]
        if not 1 <= height < out_height or not 0 <= lead <= height or taken & set(indices):
            raise UsageError(f"The tuning schedule's cascade group of ops {list(indices)} has stripe height {height} "
                             f"(the output has {out_height} rows), a first stripe of {lead} rows, or shares an op "
                             "with another group. Re-run 'edgesdk tune'.")
        group = striping.group(chain, int(height), first, graph, lead)
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
            group = striping.group(chain, height, first, problem.graph)
            if striping.cost(group) is None:
                continue  # its target cannot lower it
            trial = problem.plan_below(chosen + [group], plan.arena_bytes)
            if trial is not None:
                found.append((trial.arena_bytes, first, chain, height))
    return sorted(found, key=lambda f: (f[0], f[1], len(f[2]), -f[3]))


def cascade_report(plan, regions=()) -> list:
    """report.json memory.cascades: each group's ops, the target of each (from `regions`), stripe height and
    stripe buffers (offsets included)."""
    target_of = {op: region.target for region in regions for op in region.ops}
    result = []
    for g in getattr(plan, "cascades", None) or ():
        entry = g.describe()
        if target_of:
            entry["targets"] = [target_of.get(op) for op in g.ops]
        for buf, t in zip(entry["buffers"], g.buffered):
            buf["offset"] = plan.offsets.get(t)
        result.append(entry)
    return result
