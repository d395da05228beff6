"""Instructions per multiply-accumulate of every host kernel (`--target c`), by kernel and dtype.

    python3 benchmarks/kernel_ipm.py                  # MLPerf Tiny (KWS, VWW, IC, AD) + the int16 DS-CNN
    python3 benchmarks/kernel_ipm.py --json           # machine-readable
    python3 benchmarks/kernel_ipm.py MODEL.tflite ... # other models

Each model is built as `edgesdk build MODEL --target c` builds it and run once on the emulator with a seeded
random input; benchmarks/kernels.py attributes the exact instruction count to the layers. This script groups
the CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED layers by (op, input dtype, kernel path the code generator
chose) and prints per layer and per group the instructions per MAC (every kernel tap counted as a MAC, the
requantization and the loop set-up included: the whole kernel call over its MACs).

Library use (benchmarks/run.py): kernel_ipm(models=None, rounding="ref", seed=0) -> dict with "layers" (one row
per MAC layer of every model) and "kernels" (one row per op / dtype / kernel path: layers, MACs, instructions,
instructions per MAC overall, lowest and highest of a layer).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels  # noqa: E402  (benchmarks/kernels.py)

INT16_MODEL = kernels.ROOT.parent / "shared" / "models" / "arm_ml_zoo" / "ds_cnn_s_int16.tflite"


def default_models() -> list:
    """The four MLPerf Tiny models and the int16 (16x8) DS-CNN of the shared models."""
    return [kernels.MLPERF_DIR / name for name in kernels.MLPERF_MODELS.values()] + [INT16_MODEL]


def _input_dtypes(model_path: Path) -> dict:
    from edgesdk.importer import import_tflite

    return {op.index: op.inputs[0].dtype for op in import_tflite(model_path).ops}


def model_layers(model_path: Path, work_dir: Path, rounding: str = "ref", seed: int = 0) -> tuple:
    """(profile_model's result, one row per MAC layer with its dtype and kernel path)."""
    result = kernels.profile_model(Path(model_path), Path(work_dir), rounding, seed)
    dtypes = _input_dtypes(Path(model_path))
    rows = []
    for layer in result["layers"]:
        if not layer["macs"]:
            continue
        rows.append({"model": result["model"], "index": layer["index"], "op": layer["type"],
                     "dtype": str(dtypes.get(layer["index"], "?")), "kernel": kernel_name(layer["kernel"]),
                     "shape": layer["shape"], "macs": layer["macs"], "instructions": layer["instructions"],
                     "instructions_per_mac": layer["instructions"] / layer["macs"]})
    return result, rows


def kernel_name(path: str) -> str:
    """The code generator's path word (model.c's layer comment), 'generic' when the note names none."""
    if not path:
        return "generic"
    return "reference loops" if path.startswith("reference loops") else path


def group_kernels(rows: list) -> list:
    """Per (op, dtype, kernel): layers, MACs, instructions, instructions per MAC overall and its range."""
    groups: dict = {}
    for row in rows:
        groups.setdefault((row["op"], row["dtype"], row["kernel"]), []).append(row)
    out = []
    for (op, dtype, kernel), members in sorted(groups.items()):
        macs = sum(r["macs"] for r in members)
        instructions = sum(r["instructions"] for r in members)
        per_mac = [r["instructions_per_mac"] for r in members]
        out.append({"op": op, "dtype": dtype, "kernel": kernel, "layers": len(members), "macs": macs,
                    "instructions": instructions, "instructions_per_mac": instructions / macs,
                    "lowest": min(per_mac), "highest": max(per_mac)})
    return out


def kernel_ipm(models=None, rounding: str = "ref", seed: int = 0, work_dir=None) -> dict:
    """Build and profile `models` (default: default_models()); per-layer and per-kernel instructions per MAC,
    and per model its inference instructions, .text and flash bytes."""
    models = [Path(m) for m in (models or default_models())]
    with tempfile.TemporaryDirectory(prefix="edgesdk-ipm-") as tmp:
        work = Path(work_dir) if work_dir else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows, totals = [], []
        for model in models:
            result, layer_rows = model_layers(model, work, rounding, seed)
            rows += layer_rows
            totals.append({"model": result["model"], "inference_instructions": result["inference_instructions"],
                           "macs": result["macs"], "text_bytes": result["text_bytes"],
                           "flash_bytes": result["flash_bytes"]})
    return {"rounding": rounding, "seed": seed, "models": totals, "layers": rows, "kernels": group_kernels(rows)}


def print_tables(result: dict) -> None:
    print(f"per layer (rounding {result['rounding']}, seed {result['seed']})")
    print(f"  {'model':<30} {'layer':>5}  {'op':<18} {'dtype':<6} {'kernel':<16} {'shape':<34} {'MACs':>10} "
          f"{'instr':>11} {'instr/MAC':>9}")
    for r in result["layers"]:
        print(f"  {r['model']:<30} {r['index']:>5}  {r['op']:<18} {r['dtype']:<6} {r['kernel']:<16} {r['shape']:<34} "
              f"{r['macs']:>10,} {r['instructions']:>11,} {r['instructions_per_mac']:>9.2f}")
    print("\nper kernel and dtype (all layers above)")
    print(f"  {'op':<18} {'dtype':<6} {'kernel':<16} {'layers':>6} {'MACs':>11} {'instructions':>13} "
          f"{'instr/MAC':>9} {'range':>13}")
    for g in result["kernels"]:
        span = f"{g['lowest']:.2f}-{g['highest']:.2f}"
        print(f"  {g['op']:<18} {g['dtype']:<6} {g['kernel']:<16} {g['layers']:>6} {g['macs']:>11,} "
              f"{g['instructions']:>13,} {g['instructions_per_mac']:>9.2f} {span:>13}")
    print("\nper model")
    for m in result["models"]:
        print(f"  {m['model']:<30} {m['inference_instructions']:>12,} instructions, {m['macs']:>11,} MACs, "
              f".text {m['text_bytes']:,} B, flash {m['flash_bytes']:,} B")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="model files (default: MLPerf Tiny and the int16 DS-CNN)")
    parser.add_argument("--rounding", default="ref", choices=("ref", "tflm"))
    parser.add_argument("--seed", type=int, default=0, help="random input seed")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--work-dir", help="keep the builds here (default: a temporary directory)")
    args = parser.parse_args(argv)
    result = kernel_ipm(args.models or None, args.rounding, args.seed, args.work_dir)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_tables(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
