"""The host core's per-layer estimate (report.json `layers`) against the emulator's per-block count.

    PYTHONPATH=$PWD python3 benchmarks/host_estimate.py                 # the shared models, --target c
    PYTHONPATH=$PWD python3 benchmarks/host_estimate.py MODEL.tflite ... [--json]

Each model is built as `edgesdk build MODEL --target c` builds it (the large models on riscv-npu-large) and run
once with `edgesdk run --random-input 1 --profile`: the profile counts each block of the run function exactly
(one block per host layer, one per cascade group) and holds the build's estimate of each layer beside it. Per
family (op type and the model's input dtype; "group" for a cascade group's block) it prints the estimate
over the measure of the blocks together, the lowest and highest block of 20,000 instructions or more, and
the same for the generic model the estimate used before 2026-11-25 (`op_instructions`, a flat rate per MAC
or per element) unless --no-generic.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"
DEFAULT_MODELS = ["mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8", "mlcommons_tiny/pretrainedResnet_quant",
                  "mlcommons_tiny/ad01_int8", "tflite_micro/micro_speech_quantized",
                  "arm_ml_examples/ds_cnn_s_quantized", "arm_ml_zoo/har_int8", "arm_ml_zoo/ds_cnn_s_int16",
                  "coral/mobilenet_v1_0.25_128_quant", "coral/mobilenet_v1_0.5_160_quant",
                  "large/mobilenet_v2_1.0_224_inat_bird_quant", "large/ssd_mobilenet_v3_int8"]
SMALL_BLOCK = 20_000


def _edgesdk(*args) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return proc.stdout


def generic_counts(model: Path, board: str) -> dict:
    """{(op index, occurrence): op_instructions(op)} of the model's layers as `--target c` partitions them."""
    from edgesdk.compiler import BuildOptions, compile_model
    from edgesdk.targets.c import op_instructions

    compiled = compile_model(model, BuildOptions(target="c", board=board, compile_firmware=False))
    counts, seen = {}, {}
    for region in compiled.regions:
        for op in region.ops:
            k = seen[op.index] = seen.get(op.index, -1) + 1
            counts[(op.index, k)] = op_instructions(op)
    return counts


def blocks(model: Path, work: Path, generic: bool) -> list:
    """(family, estimate, generic estimate or None, measured) per host block of one profiled run."""
    from edgesdk.importer import import_tflite

    board = "riscv-npu-large" if model.parent.name == "large" else "riscv-npu"
    out = work / model.stem
    _edgesdk("build", model, "--target", "c", "--board", board, "-o", out, "-q")
    profile = json.loads(_edgesdk("run", out, "--random-input", "1", "--profile", "--json",
                                  "--output-dir", work / f"{model.stem}-run"))["profile"]
    dtype = str(import_tflite(model).inputs[0].dtype)
    old = generic_counts(model, board) if generic else None
    seen, rows = {}, []
    for step in profile["steps"]:
        layers = [layer for layer in profile["layers"] if layer["step"] == step["step"]]
        keys = []
        for layer in layers:
            k = seen[layer["index"]] = seen.get(layer["index"], -1) + 1
            keys.append((layer["index"], k))
        if step["target"] != "c":
            continue
        family = "group" if len(layers) > 1 else layers[0]["type"]
        rows.append((f"{family} ({dtype})", sum(layer["estimate"]["count"] for layer in layers),
                     sum(old[key] for key in keys) if old else None, step["instructions"]))
    return rows


def summary(rows: list) -> dict:
    families = {}
    for family, estimate, generic, measured in rows:
        f = families.setdefault(family, {"blocks": 0, "measured": 0, "estimate": 0, "generic": 0, "ratios": [],
                                         "generic_ratios": []})
        f["blocks"] += 1
        f["measured"] += measured
        f["estimate"] += estimate
        f["generic"] += generic or 0
        if measured >= SMALL_BLOCK:
            f["ratios"].append(estimate / measured)
            if generic is not None:
                f["generic_ratios"].append(generic / measured)
    return families


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-generic", action="store_true")
    args = ap.parse_args(argv)
    models = [Path(m) for m in args.models] or [MODELS / f"{m}.tflite" for m in DEFAULT_MODELS]
    rows = []
    with tempfile.TemporaryDirectory(prefix="host_estimate_") as work:
        for model in models:
            rows += blocks(model, Path(work), not args.no_generic)
    families = summary(rows)
    if args.json:
        print(json.dumps(families, indent=1))
        return 0
    print(f"{'family':32s} {'blocks':>6s} {'measured':>15s} {'est/meas':>8s} {'blocks >= 20k':>13s} "
          f"{'generic/meas':>12s} {'blocks >= 20k':>13s}")
    for name, f in sorted(families.items()):
        r, g = f["ratios"], f["generic_ratios"]
        span = f"{min(r):.2f}-{max(r):.2f}" if r else "-"
        gspan = f"{min(g):.2f}-{max(g):.2f}" if g else "-"
        print(f"{name:32s} {f['blocks']:6d} {f['measured']:15,d} {f['estimate'] / max(f['measured'], 1):8.3f} "
              f"{span:>13s} {f['generic'] / max(f['measured'], 1):12.3f} {gspan:>13s}")
    total = sum(f["measured"] for f in families.values())
    print(f"all host blocks: estimate / measured {sum(f['estimate'] for f in families.values()) / total:.3f}, "
          f"generic {sum(f['generic'] for f in families.values()) / total:.3f} ({total:,} instructions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
