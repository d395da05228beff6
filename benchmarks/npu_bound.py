"""Per MLPerf Tiny model and per NPU layer: the schedule's NPU cycles, the hardware lower bound, their
ratio and the dominant loss (edgesdk/targets/npu/bound.py). No firmware build: the compiler passes only.

    PYTHONPATH=. python3 benchmarks/npu_bound.py [model.tflite ...] [--json]

`model_bound(path)` is the per-model figure (cycles, lower_bound, ratio, ideal, layers) for other scripts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edgesdk.compiler import BuildOptions, compile_model  # noqa: E402
from edgesdk.targets.npu.bound import schedule_bound  # noqa: E402

MODELS_DIR = ROOT.parent.parent / "shared" / "models" / "mlcommons_tiny"
MLPERF_TINY = {"KWS": "kws_ref_model.tflite", "VWW": "vww_96_int8.tflite", "IC": "pretrainedResnet_quant.tflite",
               "AD": "ad01_int8.tflite"}
GOAL = 1.15  # issue 13: cycles over the bound on every model


def model_bound(path, options: BuildOptions | None = None) -> dict:
    """The NPU schedule of one model (default build options) against the lower bound."""
    compiled = compile_model(path, options or BuildOptions())
    return schedule_bound(compiled.executor, compiled.board)


def _models_dir() -> Path:
    for candidate in (MODELS_DIR, Path("/work/shared/models/mlcommons_tiny")):
        if candidate.is_dir():
            return candidate
    return MODELS_DIR


def print_model(name: str, figures: dict) -> None:
    ratio = figures["ratio"]
    print(f"{name}: {figures['cycles']:,} cycles, lower bound {figures['lower_bound']:,}, ratio {ratio:.3f} "
          f"({'meets' if ratio <= GOAL else 'misses'} <= {GOAL}); schedule-independent bound "
          f"{figures['ideal']:,} (ratio {figures['ratio_to_ideal']:.3f})")
    print(f"  {'layer':>5} {'type':<18} {'cmds':>4} {'cycles':>8} {'bound':>8} {'ratio':>6} {'ideal':>8}  "
          "dominant loss")
    for e in figures["layers"]:
        r = f"{e['cycles'] / e['lower_bound']:.3f}" if e["lower_bound"] else "-"
        loss = e["dominant"] or "-"
        detail = ", ".join(f"{k} {v:,}" for k, v in sorted(e["losses"].items(), key=lambda kv: -kv[1]))
        print(f"  {e['index']:>5} {e['type']:<18} {e['commands']:>4} {e['cycles']:>8,} {e['lower_bound']:>8,} "
              f"{r:>6} {e['ideal']:>8,}  {loss} ({detail})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="model files (default: the four MLPerf Tiny models)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    models = {Path(m).stem: Path(m) for m in args.models} or \
        {name: _models_dir() / file for name, file in MLPERF_TINY.items()}
    results = {name: model_bound(path) for name, path in models.items()}
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for name, figures in results.items():
        print_model(name, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
