"""`edgesdk tune`: search per-layer schedules against the cost models, measure the best on the emulator,
write the tuning log.

    1. the default build's schedule is the baseline and the search's start (search.py);
    2. the search ranks candidates by their predicted figures (objective "latency" or "sram");
    3. the best `verify` candidates are built and run on the emulator (measure.py); with verify >= 2 the
       baseline is always among them, so the choice never measures worse than the default build. With
       `workers` > 1 or a `cluster` they are measured in parallel as Ray tasks (edgesdk/farm/pool.py); the
       figures are collected per candidate, so the log is the serial run's whatever order they finish in;
    4. the chosen candidate is the best by the measured figure (latency: measured latency; sram: arena,
       then measured latency), bit-exact against the reference; the runner-up is the next one;
    5. the log (log.py) records the chosen schedule and both candidates' figures.
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import __version__
from ..dataclass_cache import dataclass, replace
from ..errors import EmulatorError, MemoryFitError, UsageError
from .log import LOG_FORMAT, LOG_VERSION, file_sha256
from .search import OBJECTIVES, Evaluator, Search, objective_key


@dataclass
class TuneOptions:
    board: str = "riscv-npu"
    target: str | None = None  # None: the board's default_targets
    rounding: str = "ref"
    objective: str = "latency"
    verify: int = 2  # candidates built and run on the emulator
    seconds: float = 60.0  # time budget of the search (the emulator runs come on top)
    seed: int = 0  # order of the coordinates; also the seed of the measured run's random input
    workers: int = 1  # measurements in parallel on local Ray worker processes (1: serially, in this process)
    cluster: str | None = None  # or on this Ray cluster (edgesdk/farm/pool.py)


def tune(model_path, options: TuneOptions, progress=None) -> dict:
    """Run the tuner; return the tuning log (a dict; log.write_tuning_log writes it)."""
    from ..board import load_board
    from ..targets import default_target_list, parse_target_list

    say = progress or (lambda text: None)
    _check_options(options)
    board = load_board(options.board)
    targets = parse_target_list(options.target or default_target_list(board), board)
    started = time.monotonic()
    evaluator = Evaluator(model_path, options.board, targets, options.rounding)
    baseline = evaluator.evaluate(None)
    say(f"baseline (default build): {_figures_text(baseline.figures)}")
    search = Search(evaluator, options.objective, options.seed, options.seconds)
    search.on_pass = lambda s: say(f"search pass {s.passes}: {len(evaluator.candidates)} candidates, "
                                   f"{time.monotonic() - started:.1f} s of the {options.seconds:g} s budget used")
    best = search.run(baseline)
    search_s = time.monotonic() - started
    say(f"search: {len(evaluator.candidates)} candidates in {search_s:.1f} s, {search.passes} pass(es)"
        f"{'' if search.complete else ' (stopped by the time budget)'}; best predicted: {_figures_text(best.figures)}")
    ranked = _ranked(evaluator.candidates, options.objective, baseline)
    if not ranked[0].figures.fits:
        raise MemoryFitError(f"No schedule tried fits board '{board.name}': {ranked[0].figures.misfit} (best of "
                             f"{len(ranked)} candidates by objective '{options.objective}').")
    measured = _measure(model_path, evaluator, _to_measure(ranked, baseline, options.verify), options, say)
    final = _final_order(ranked, measured, options.objective)
    chosen = final[0]
    runner_up = final[1] if len(final) > 1 else None
    return {
        "format": LOG_FORMAT,
        "format_version": LOG_VERSION,
        "edgesdk_version": __version__,
        "model": Path(model_path).name,
        "model_sha256": file_sha256(model_path),
        "board": board.name,
        "targets": targets,
        "rounding": options.rounding,
        "objective": options.objective,
        "schedule": chosen.schedule.to_json(),
        "chosen": _candidate_json(chosen, baseline, measured),
        "runner_up": _candidate_json(runner_up, baseline, measured, with_schedule=True) if runner_up else None,
        "baseline": _candidate_json(baseline, baseline, measured),
        "search": {"seed": options.seed, "seconds": options.seconds, "search_s": round(search_s, 2),
                   "evaluations": len(evaluator.candidates), "passes": search.passes, "complete": search.complete,
                   "verified": len(measured), "total_s": round(time.monotonic() - started, 2)},
    }


def _check_options(options: TuneOptions) -> None:
    from ..farm.pool import check_pool_options

    check_pool_options(options.workers, options.cluster, "edgesdk tune --workers/--cluster")
    if options.objective not in OBJECTIVES:
        raise UsageError(f"--objective must be one of {', '.join(OBJECTIVES)}, not '{options.objective}'.")
    if options.verify < 0:
        raise UsageError(f"--verify must be 0 or more candidates to run on the emulator, not {options.verify}.")
    if not options.seconds > 0:
        raise UsageError(f"--seconds must be a positive time budget, not {options.seconds}.")


def _ranked(candidates: list, objective: str, baseline) -> list:
    """Candidates by predicted objective; ties: fewer changes from the default, then evaluation order."""
    return sorted(candidates, key=lambda c: (objective_key(c.figures, objective),
                                             len(c.schedule.differences(baseline.schedule)), c.order))


def _to_measure(ranked: list, baseline, verify: int) -> list:
    chosen = [c for c in ranked if c.figures.fits][:verify]
    if verify >= 2 and baseline.figures.fits and baseline not in chosen:
        chosen[-1] = baseline  # always measure the default build against the tuned ones
    return chosen


def _measure(model_path, evaluator, candidates: list, options: TuneOptions, say) -> dict:
    """candidate -> measured figures (or {"error": ...} when its firmware does not build or run), measured by the
    pool's workers (serially here by default); each result goes to its candidate, whatever order they finish in."""
    from ..farm.pool import worker_pool
    from .measure import MeasureTask, measure_task

    if not candidates:
        return {}
    model = Path(model_path)
    tasks = [MeasureTask(model.name, model.read_bytes(), replace(evaluator.options(c.schedule), compile_firmware=True),
                         options.seed) for c in candidates]
    finished = []

    def report(index, figures):
        finished.append(index)
        say(f"measured candidate {index + 1}/{len(candidates)} ({len(finished)} done): {_measured_text(figures)}")

    with worker_pool(options.workers, options.cluster, "edgesdk tune --workers/--cluster") as pool:
        if pool.workers > 1:
            say(f"measuring {len(candidates)} candidates on {pool.description}")
        figures = pool.map(measure_task, tasks, on_result=report)
    return dict(zip(candidates, figures))


def _measured_ok(figures: dict | None) -> bool:
    return bool(figures) and "error" not in figures and figures.get("bit_exact") is not False


def _final_order(ranked: list, measured: dict, objective: str) -> list:
    """Measured candidates first (bit-exact ones by the measured figure), then the rest by prediction."""
    good = [c for c in ranked if _measured_ok(measured.get(c))]
    if measured and not good:
        problems = "; ".join(_measured_text(m) for m in measured.values())
        raise EmulatorError(f"None of the {len(measured)} measured candidates ran bit-exact on the emulator "
                            f"({problems}). This is a bug in edgesdk; please report it with the model.")

    def measured_key(c):
        m = measured[c]
        figure = (m["arena_bytes"], m["latency_us"]) if objective == "sram" else (m["latency_us"], m["arena_bytes"])
        return figure + (ranked.index(c),)

    rest = [c for c in ranked if c not in good]
    return sorted(good, key=measured_key) + rest


def _candidate_json(candidate, baseline, measured: dict, with_schedule: bool = False) -> dict:
    entry = {"changes": candidate.schedule.differences(baseline.schedule),
             "predicted": candidate.figures.to_json(), "measured": measured.get(candidate)}
    if with_schedule:
        entry["schedule"] = candidate.schedule.to_json()
    return entry


def _figures_text(f) -> str:
    return (f"arena {f.arena_bytes:,} B, flash data {f.flash_data_bytes:,} B, latency {f.latency_us:,.1f} us"
            + ("" if f.fits else " (does not fit)"))


def _measured_text(m: dict) -> str:
    if "error" in m:
        return f"failed: {m['error']}"
    exact = {True: "bit-exact", False: "NOT bit-exact", None: "no reference"}[m["bit_exact"]]
    return f"arena {m['arena_bytes']:,} B, flash {m['flash_bytes']:,} B, latency {m['latency_us']:,.1f} us, {exact}"


def summary(log: dict) -> str:
    """The CLI's text summary of a tuning log."""
    lines = [f"edgesdk tune: {log['model']} (board {log['board']}, targets {','.join(log['targets'])}, "
             f"objective {log['objective']})"]
    for name in ("baseline", "chosen", "runner_up"):
        entry = log.get(name)
        if not entry:
            continue
        p, m = entry["predicted"], entry["measured"]
        text = f"  {name:<9} predicted arena {p['arena_bytes']:,} B, latency {p['latency_us']:,.1f} us"
        if m:
            text += f"; measured {_measured_text(m)}"
        lines.append(text)
        if name != "baseline":
            lines += [f"            {change}" for change in entry["changes"] or ["(the default schedule)"]]
    s = log["search"]
    lines.append(f"search: {s['evaluations']} candidates, {s['passes']} pass(es), "
                 f"{'finished' if s['complete'] else 'stopped by --seconds'}; {s['verified']} run on the emulator")
    return "\n".join(lines)
