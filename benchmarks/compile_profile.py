"""Where the compile step's time goes: the CPU time of each pass of compile_model() as it runs them, the plan
pass split into the op-by-op plan and the cascade search, and the cost of starting a fresh process
(interpreter, numpy, the tflite flatbuffer classes, edgesdk's own modules).

    python3 benchmarks/compile_profile.py [--models kws,vww,ic,ad] [--repeats 5]

Each figure is taken from a real `compile_model(model, BuildOptions())` call (a default `npu,c` build for the
board's default targets): the passes of edgesdk.compiler.PASSES and the cascade search's steps are wrapped
with a timer for the duration of the call, so they run inside compile_model's own remembered_answers() /
compile_scope() with the per-compile memos on, and the profile follows the driver when it changes. CPU time
(time.process_time), medians of `--repeats` after a warm-up compile; it explains the "compile step vs Vela"
rows of benchmarks/run.py (benchmarks/compile_cpu.py measures them in CPU time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.goals import MODELS  # noqa: E402  (short name -> file name)

MODELS_DIR = REPO.parent / "shared" / "models" / "mlcommons_tiny"
SEARCH = "cascade search"
# The cascade search's parts (timed inside it only; a part may call another: pricing within the budget)
SEARCH_PARTS = (("aot.cascade", "Striping", "default_budget", "budget (model_cycles)"),
                ("aot.cascade", "Striping", "costs", "group pricing"),
                ("aot.memory_plan", "MemoryProblem", "trial", "buffers + lower bounds"),
                ("aot.memory_plan", "MemoryProblem", "_place", "placements"))


class PassClock:
    """CPU seconds per label, accumulated over the wrapped calls (a call inside another counts in both)."""

    def __init__(self):
        self.seconds = {}
        self.active = []  # labels of the wrapped calls under way

    def wrap(self, label: str, fn, inside: str | None = None):
        def timed(*args, **kwargs):
            if inside is not None and inside not in self.active:
                return fn(*args, **kwargs)
            self.active.append(label)
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.process_time() - start
                self.active.pop()
        return timed


@contextmanager
def _patched(owner, name: str, value):
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def time_passes(model_path: Path) -> dict:
    """CPU seconds of each part of one `compile_model(model_path, BuildOptions())`, by label, in order."""
    import importlib

    import edgesdk.compiler as compiler

    clock = PassClock()
    with ExitStack() as patches:
        passes = tuple((name, clock.wrap(name, run)) for name, run in compiler.PASSES)
        patches.enter_context(_patched(compiler, "PASSES", passes))
        for search in ("choose_cascades", "fit_plan", "streamed_plan"):  # the plan pass's searches, as it calls them
            patches.enter_context(_patched(compiler, search, clock.wrap(SEARCH, getattr(compiler, search))))
        for module, cls, method, label in SEARCH_PARTS:
            owner = getattr(importlib.import_module(f"edgesdk.{module}"), cls)
            patches.enter_context(_patched(owner, method, clock.wrap(label, getattr(owner, method), inside=SEARCH)))
        start = time.process_time()
        compiler.compile_model(model_path, compiler.BuildOptions())
        total = time.process_time() - start
    times = {}
    for name, _ in compiler.PASSES:
        times[name] = clock.seconds.get(name, 0.0)
        if name == "plan":
            times["  op by op (and set-up)"] = times[name] - clock.seconds.get(SEARCH, 0.0)
            times[f"  {SEARCH}"] = clock.seconds.get(SEARCH, 0.0)
            for _, _, _, label in SEARCH_PARTS:
                times[f"    {label}"] = clock.seconds.get(label, 0.0)
    times["compile_model"] = total
    return times


def fresh_process_seconds(code: str, empty_cache: bool = False) -> float:
    """Wall seconds of `python -c code`; with `empty_cache`, in an empty $EDGESDK_CACHE (edgesdk/dataclass_cache.py
    then compiles every dataclass method, as the first process after an install or an edit does)."""
    env = None
    with tempfile.TemporaryDirectory(prefix="edgesdk-profile-cache-") as cache:
        if empty_cache:
            env = {**os.environ, "EDGESDK_CACHE": cache}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env=env)
        return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-startup", action="store_true", help="skip the fresh-process figures")
    args = parser.parse_args(argv)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for name in names:
        path = MODELS_DIR / MODELS[name]
        time_passes(path)  # warm-up: imports, caches
        runs = [time_passes(path) for _ in range(args.repeats)]
        print(f"{name} ({path.name}), CPU ms, median of {args.repeats} (indented rows are within the row above):")
        for step in runs[0]:
            ms = 1000 * statistics.median(r[step] for r in runs)
            print(f"  {step:<28} {ms:8.1f}")
    if args.no_startup:
        return 0
    ad = MODELS_DIR / MODELS["ad"]
    # (edgesdk loads the tflite package's classes one by one, importer/tflite_schema.py, and its dataclasses'
    # methods from $EDGESDK_CACHE, dataclass_cache.py: the last row starts with that cache empty)
    startup = {
        "python + numpy": "import numpy",
        "+ edgesdk.compiler": "import edgesdk.compiler",
        "+ compile AD": f"import edgesdk.compiler as c; c.compile_model({str(ad)!r}, c.BuildOptions())",
    }
    print(f"fresh process start-up, wall ms, median of {args.repeats}:")
    for label, code in startup.items():
        ms = 1000 * statistics.median(fresh_process_seconds(code) for _ in range(args.repeats))
        print(f"  {label:<28} {ms:8.1f}")
    ms = 1000 * statistics.median(fresh_process_seconds(startup["+ compile AD"], True) for _ in range(args.repeats))
    print(f"  {'  (empty dataclass cache)':<28} {ms:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
