"""Where the compile step's time goes: each compiler pass of compile_model() timed on its own, and the cost
of starting a fresh process (interpreter, numpy, the tflite flatbuffer classes, edgesdk's own modules).

    python3 benchmarks/compile_profile.py [--models kws,vww,ic,ad] [--repeats 5]

The passes are the ones edgesdk.compiler.compile_model runs for a default `--target npu,c` build, called
in the same order with the same arguments; the medians are printed per model. It explains the
"compile step vs Vela" rows of benchmarks/run.py.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.goals import MODELS  # noqa: E402  (short name -> file name)

MODELS_DIR = REPO.parent / "shared" / "models" / "mlcommons_tiny"


def time_passes(model_path: Path) -> dict:
    """Seconds of each pass of one default compile."""
    from edgesdk.aot.executor import build_executor, collect_scratch_sizes
    from edgesdk.aot.cascade import Striping, choose_cascades
    from edgesdk.aot.memory_plan import MemoryProblem
    from edgesdk.board import load_board
    from edgesdk.importer import import_model
    from edgesdk.partition.partitioner import partition
    from edgesdk.targets import parse_target_list
    from edgesdk.ops.folding import fold_constants
    from edgesdk.targets.api import CodegenOptions
    from edgesdk.verify import verify_build
    from edgesdk.compiler import Compiled, targets_in_place_rules

    times = {}

    def timed(name, fn, *args):
        start = time.perf_counter()
        result = fn(*args)
        times[name] = time.perf_counter() - start
        return result

    board = load_board("riscv-npu")
    targets = parse_target_list("npu,c", board)
    codegen = CodegenOptions("ref", board, None, board.image_flash_bytes)
    graph = timed("import", import_model, model_path)
    timed("fold", fold_constants, graph)
    regions = timed("partition", lambda: partition(graph, targets, modes=("ref",)))
    scratch = timed("scratch sizes", collect_scratch_sizes, graph, regions, codegen)
    problem = MemoryProblem(graph, scratch, in_place=targets_in_place_rules(regions))
    plan = timed("memory plan", problem.plan)
    striping = timed("striping offers", Striping, regions, codegen)
    plan = timed("cascade search", choose_cascades, problem, regions, plan, striping)
    executor = timed("codegen (executor)", build_executor, graph, regions, plan, codegen)
    timed("safety proof", verify_build, Compiled(board, targets, graph, regions, plan, executor, codegen_options=codegen))
    return times


def fresh_process_seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for name in names:
        path = MODELS_DIR / MODELS[name]
        time_passes(path)  # warm-up: imports, caches
        runs = [time_passes(path) for _ in range(args.repeats)]
        print(f"{name} ({path.name}), median of {args.repeats}, ms:")
        total = 0.0
        for step in runs[0]:
            ms = 1000 * statistics.median(r[step] for r in runs)
            total += ms
            print(f"  {step:<20} {ms:8.1f}")
        print(f"  {'sum':<20} {total:8.1f}")
    ad = MODELS_DIR / MODELS["ad"]
    startup = {  # (edgesdk loads the tflite package's classes one by one: importer/tflite_schema.py)
        "python + numpy": "import numpy",
        "+ edgesdk.compiler": "import edgesdk.compiler",
        "+ compile AD": f"import edgesdk.compiler as c; c.compile_model({str(ad)!r}, c.BuildOptions())",
    }
    print(f"fresh process start-up, median of {args.repeats}, ms:")
    for label, code in startup.items():
        ms = 1000 * statistics.median(fresh_process_seconds(code) for _ in range(args.repeats))
        print(f"  {label:<20} {ms:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
