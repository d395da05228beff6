"""The compile step against Vela in CPU time, for a loaded machine: the rows "compile step, in-process" and
"compile step, fresh process" of benchmarks/run.py measure wall time, which on a shared machine mostly
measures the other jobs. Here each figure is the CPU time of the work itself (user + system), the tools
alternate run by run, and medians of `--repeats` are printed with the load average before and after.

    python3 benchmarks/compile_cpu.py [--models kws,vww,ic,ad] [--repeats 7]

* in-process: `compile_model(model, BuildOptions())` (import to executor, no C; after a warm-up) against
  `vela.main()` with run.py's arguments (`--accelerator-config ethos-u55-128 --optimise Performance`), both
  in this process (`time.process_time`);
* fresh process: `python -c` importing edgesdk and compiling once, against the `vela` command beside this
  interpreter (as run.py runs them), CPU time of the child (`resource.getrusage(RUSAGE_CHILDREN)`).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402
from goals import MODELS  # noqa: E402

MODELS_DIR = HERE.parent.parent / "shared" / "models" / "mlcommons_tiny"
FRESH_COMPILE = ("import sys; from edgesdk.compiler import BuildOptions, compile_model; "
                 "compile_model(sys.argv[1], BuildOptions())")


def in_process_cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def child_cpu(command: list) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def vela_command(model: Path, out: str) -> list:
    return [baselines.vela_command(), str(model), "--accelerator-config", baselines.VELA_ACCELERATOR,
            "--optimise", "Performance", "--output-dir", out]


def measure(model: Path, repeats: int) -> dict:
    """CPU seconds, medians of `repeats`, the four figures interleaved run by run."""
    from edgesdk.compiler import BuildOptions, compile_model

    compile_model(model, BuildOptions())  # warm-up: imports, caches
    baselines.run_vela(model, "Performance")
    runs = {"edgesdk_in_process": [], "vela_in_process": [], "edgesdk_fresh_process": [], "vela_fresh_process": []}
    for _ in range(repeats):
        runs["edgesdk_in_process"].append(in_process_cpu(lambda: compile_model(model, BuildOptions())))
        runs["vela_in_process"].append(in_process_cpu(lambda: baselines.run_vela(model, "Performance")))
        runs["edgesdk_fresh_process"].append(child_cpu([sys.executable, "-c", FRESH_COMPILE, str(model)]))
        with tempfile.TemporaryDirectory(prefix="edgesdk-bench-vela-") as out:
            runs["vela_fresh_process"].append(child_cpu(vela_command(model, out)))
    return {key: statistics.median(values) for key, values in runs.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    print(f"{'model':<6} {'in-process: edgesdk / Vela, s':<32} {'fresh process: edgesdk / Vela, s':<34}")
    for name in (m.strip() for m in args.models.split(",") if m.strip()):
        s = measure(MODELS_DIR / MODELS[name], args.repeats)
        inside = f"{s['edgesdk_in_process']:.4f} / {s['vela_in_process']:.4f}"
        fresh = f"{s['edgesdk_fresh_process']:.3f} / {s['vela_fresh_process']:.3f}"
        met = ("met" if s["edgesdk_in_process"] <= s["vela_in_process"] else "not met",
               "met" if s["edgesdk_fresh_process"] <= s["vela_fresh_process"] else "not met")
        print(f"{name:<6} {inside + f' ({met[0]})':<32} {fresh + f' ({met[1]})':<34}", flush=True)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
