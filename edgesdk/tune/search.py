"""The tuner's search over per-layer schedule choices, against the compiler's cost models.

A candidate is a Schedule (schedule.py); evaluating it is one `compile_model` (no C, no firmware) with the
schedule applied, which gives its predicted figures: the arena, the flash data (weights, constants, command
tables) and the latency at the board's clocks, the sum over the regions' cost-model estimates
(`Target.estimate`: CPU cycles at cpu.clock_hz, each accelerator's cycles at its peripheral's clock).

Objectives (candidates that do not fit the board always rank after those that do):
    latency   least predicted latency; then arena, flash
    sram      least arena; then latency, flash

The search is coordinate descent from the default build's schedule. The coordinates are:
    cascades          the cascade groups: remove a group, give a group another stripe height, or add a group
                      that lowers the arena (cascade.arena_reducing_groups, at any cycle cost; only tried for
                      the sram objective or while the arena does not fit the board), repeated while it helps
    target of op i    each other target of the list whose constraints accept the op (groups holding it go)
    switch of op i    each switch the op's target declares for it (Target.layer_switches), flipped
Each pass takes the cascades first, then the other coordinates in an order shuffled by the seed; at each
coordinate the best alternative replaces the current schedule if it ranks strictly better. Passes repeat
until one changes nothing or the time budget runs out. Same model, options and seed: same evaluations in
the same order, so the same result whenever the search finishes within its budget.
"""

from __future__ import annotations

import hashlib
import random
import time

from ..dataclass_cache import dataclass, field
from ..errors import EdgesdkError, MemoryFitError
from .schedule import CascadeChoice, Schedule, schedule_of

OBJECTIVES = ("latency", "sram")
MAX_PASSES = 8
MAX_ADDS_PER_ROUND = 8  # "add a group" moves fully evaluated per round (smallest arenas first)


@dataclass(frozen=True)
class Figures:
    """Predicted figures of one candidate."""

    arena_bytes: int
    flash_data_bytes: int  # weights, constant arrays and command tables / blobs (code not included)
    latency_us: float
    cycles: dict  # unit (RegionEstimate.unit: "cpu" or what a target's estimate names) -> cycles of its regions
    fits: bool
    misfit: str = ""  # why it does not fit the board

    def to_json(self) -> dict:
        entry = {"arena_bytes": self.arena_bytes, "flash_data_bytes": self.flash_data_bytes,
                 "latency_us": round(self.latency_us, 3), "cycles": dict(self.cycles), "fits": self.fits}
        if self.misfit:
            entry["misfit"] = self.misfit
        return entry


@dataclass(eq=False)
class Candidate:
    schedule: Schedule  # as the build applied it (schedule_of): switches normalized
    figures: Figures
    order: int  # evaluation number, for deterministic ties
    compiled: object = field(default=None, repr=False)


def predicted_figures(compiled) -> Figures:
    from ..compiler import check_flash_fits, check_sram_fits, generated_flash_bytes

    cycles, latency = {}, 0.0
    for estimate in compiled.executor.region_estimates:
        if estimate is None:
            continue
        cycles[estimate.unit] = cycles.get(estimate.unit, 0) + estimate.cycles
        latency += estimate.microseconds
    misfit = ""
    try:
        check_sram_fits(compiled.plan.arena_bytes, compiled.board)
        check_flash_fits(compiled.executor, compiled.board)
    except MemoryFitError as exc:
        misfit = str(exc)
    return Figures(compiled.plan.arena_bytes, generated_flash_bytes(compiled.executor), latency,
                   dict(sorted(cycles.items())), not misfit, misfit)


def objective_key(figures: Figures, objective: str) -> tuple:
    if objective == "sram":
        return (not figures.fits, figures.arena_bytes, figures.latency_us, figures.flash_data_bytes)
    return (not figures.fits, figures.latency_us, figures.arena_bytes, figures.flash_data_bytes)


class Evaluator:
    """Compiles candidates (cached by schedule) and keeps every one that compiled, in evaluation order."""

    def __init__(self, model_path, board: str, targets: list, rounding: str):
        self.model_path, self.board, self.targets, self.rounding = model_path, board, list(targets), rounding
        self.cache = {}  # schedule key -> Candidate | None
        self.candidates = []

    def options(self, schedule):
        from ..compiler import BuildOptions

        return BuildOptions(board=self.board, target=",".join(self.targets), rounding=self.rounding,
                            compile_firmware=False, schedule=schedule)

    def evaluate(self, schedule: Schedule | None) -> Candidate | None:
        """The candidate for `schedule` (None: the default build); None if the compiler refuses it."""
        from ..compiler import compile_model

        key = "default" if schedule is None else schedule.key()
        if key in self.cache:
            return self.cache[key]
        try:
            compiled = compile_model(self.model_path, self.options(schedule), check_fit=False)
        except EdgesdkError:
            if schedule is None:
                raise  # the default build itself fails: nothing to tune
            self.cache[key] = None  # e.g. a target whose lowering refuses the op after all
            return None
        # A switch without effect (weights that do not compress, say) gives the same firmware as the schedule
        # without it: keep the first spelling, so that ties never hide behind choices that change nothing.
        fingerprint = output_fingerprint(compiled)
        candidate = self.cache.get(fingerprint)
        if candidate is None:
            candidate = Candidate(schedule_of(compiled), predicted_figures(compiled), len(self.candidates), compiled)
            self.candidates.append(candidate)
            self.cache[fingerprint] = candidate
        self.cache[key] = candidate
        return candidate

    def compiled(self, candidate: Candidate):
        """The candidate's compiled build (compiled again if the search released it)."""
        from ..compiler import compile_model

        if candidate.compiled is None:
            candidate.compiled = compile_model(self.model_path, self.options(candidate.schedule), check_fit=False)
        return candidate.compiled


def output_fingerprint(compiled) -> str:
    """sha256 of what the build would generate: the run function's code, declarations, constant data, blobs,
    the targets' generated data (their tables, graphs: items with a `data` attribute), the arena size, and
    each region's estimate: a target's own records the core cannot read (a plugin's job list, say) show there
    when a switch changes them, so such a candidate is not taken for one that changes nothing."""
    ex = compiled.executor
    h = hashlib.sha256(f"arena {compiled.plan.arena_bytes}".encode())
    for estimate in ex.region_estimates:
        h.update(repr(None if estimate is None else (estimate.unit, estimate.cycles)).encode())
    for text in [step.code for step in ex.steps] + ex.declarations + ex.functions:
        h.update(text.encode() + b"\0")
    for const in ex.consts:
        h.update(const.symbol.encode() + b"\0" + const.values.tobytes())
    for name in sorted(ex.blobs):
        h.update(name.encode() + b"\0" + bytes(ex.blobs[name].data))
    for name in sorted(ex.target_data):
        for item in ex.target_data[name] if isinstance(ex.target_data[name], list) else []:
            h.update(bytes(getattr(item, "data", b"")))
    return "output:" + h.hexdigest()


class OutOfTime(Exception):
    pass


class Search:
    def __init__(self, evaluator: Evaluator, objective: str, seed: int, seconds: float):
        if objective not in OBJECTIVES:
            from ..errors import UsageError
            raise UsageError(f"--objective must be one of {', '.join(OBJECTIVES)}, not '{objective}'.")
        self.evaluator, self.objective = evaluator, objective
        self.rng = random.Random(seed)
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds
        self.complete = False
        self.passes = 0
        self.on_pass = None  # progress: called with the Search after every pass

    def key(self, candidate: Candidate) -> tuple:
        return objective_key(candidate.figures, self.objective)

    def evaluate(self, schedule: Schedule) -> Candidate | None:
        if time.monotonic() > self.deadline:
            raise OutOfTime
        return self.evaluator.evaluate(schedule)

    def run(self, start: Candidate) -> Candidate:
        """Coordinate descent from `start`; the best candidate found (start if nothing beats it)."""
        current = start
        accepting = self._accepting_targets(start)
        try:
            for _ in range(MAX_PASSES):
                self.passes += 1
                before = current
                current = self._descend_cascades(current)
                coordinates = self.coordinates(current.schedule, accepting)
                self.rng.shuffle(coordinates)
                for coordinate in coordinates:
                    current = self._best_of(current, self._alternatives(current.schedule, coordinate, accepting))
                if self.on_pass is not None:
                    self.on_pass(self)
                if current is before:
                    self.complete = True
                    break
        except OutOfTime:
            pass
        return current

    # -- coordinates ------------------------------------------------------------------------------------------
    @staticmethod
    def coordinates(schedule: Schedule, accepting: dict) -> list:
        """("target", op index) where more than one target accepts the op, and ("switch", op index, name) for
        every switch the op's target declares (a schedule from schedule_of holds exactly those)."""
        return ([("target", i) for i in sorted(accepting) if len(accepting[i]) > 1]
                + [("switch", layer.index, name) for layer in schedule.layers for name in layer.switch_names()])

    def _best_of(self, current: Candidate, schedules) -> Candidate:
        best = current
        for schedule in schedules:
            candidate = self.evaluate(schedule)
            if candidate is None or candidate is best:
                continue
            if self.key(candidate) < self.key(best):
                candidate, best = best, candidate
            if candidate is not current:
                candidate.compiled = None  # only the current candidate's build is needed again; free the rest
        return best

    def _alternatives(self, schedule: Schedule, coordinate: tuple, accepting: dict) -> list:
        if coordinate[0] == "target":
            index = coordinate[1]
            layer = schedule.layer(index)
            if layer is None:
                return []
            keep = [c for c in schedule.cascades if index not in c.ops]  # a group's ops stay on the target that cascades them
            return [schedule.with_layer(index, target=t).with_cascades(keep)  # t's own switches: its defaults
                    for t in accepting[index] if t != layer.target]
        _, index, name = coordinate
        value = schedule.switch(index, name)
        return [] if value is None else [schedule.with_layer(index, **{name: not value})]

    def _descend_cascades(self, current: Candidate) -> Candidate:
        """Cascade moves, repeated while one ranks better."""
        while True:
            moves = self._cascade_moves(current)
            best = self._best_of(current, moves)
            if best is current:
                return current
            current = best

    def _cascade_moves(self, current: Candidate) -> list:
        from ..ops.stripes import stripe_heights

        schedule, compiled = current.schedule, self.evaluator.compiled(current)
        chains = {tuple(op.index for op in g.ops): g.ops for g in compiled.plan.cascades}
        moves = []
        for k, group in enumerate(schedule.cascades):
            others = [c for j, c in enumerate(schedule.cascades) if j != k]
            moves.append(schedule.with_cascades(others))  # run the chain whole again
            for height in stripe_heights(chains[group.ops]):
                if height != group.stripe_height:
                    moves.append(schedule.with_cascades(
                        [c if j != k else CascadeChoice(group.ops, height) for j, c in enumerate(schedule.cascades)]))
        if self.objective == "sram" or not self._arena_fits(current):
            moves += self._cascade_additions(current)
        return moves

    def _cascade_additions(self, current: Candidate) -> list:
        """Schedules with one more group, each lowering the arena; the smallest arenas first."""
        from ..aot.cascade import Striping, arena_reducing_groups

        if time.monotonic() > self.deadline:
            raise OutOfTime
        c = self.evaluator.compiled(current)
        striping = Striping(c.regions, c.codegen_options)
        found = arena_reducing_groups(c.memory_problem, c.regions, c.plan, striping)
        schedule = current.schedule
        return [schedule.with_cascades(list(schedule.cascades) + [CascadeChoice(tuple(op.index for op in chain), h)])
                for _arena, _first, chain, h in found[:MAX_ADDS_PER_ROUND]]

    def _arena_fits(self, candidate: Candidate) -> bool:
        from ..compiler import check_sram_fits

        try:
            check_sram_fits(candidate.figures.arena_bytes, self.evaluator.compiled(candidate).board)
        except MemoryFitError:
            return False
        return True

    def _accepting_targets(self, start: Candidate) -> dict:
        """operator index -> the targets of the list whose constraints accept it (list order)."""
        from ..targets import target_support

        supports = [(t, target_support(t)) for t in self.evaluator.targets]
        return {op.index: [t for t, s in supports if s.check(op, (self.evaluator.rounding,))[0]]
                for op in self.evaluator.compiled(start).graph.ops if op.file_operator}
