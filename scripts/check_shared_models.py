#!/usr/bin/env python3
"""Every shared model (../shared/models, see its MANIFEST.tsv) x target list x rounding mode: build the firmware
and run it on the emulator with `edgesdk run --check` for each seed; one line per run, a summary at the end.

    python3 scripts/check_shared_models.py                     # everything, every model on riscv-npu
    python3 scripts/check_shared_models.py --models kws,har --targets c --roundings ref --seeds 0
    python3 scripts/check_shared_models.py --large-only --tsv large.tsv   # the benchmark of the two large models
    python3 scripts/check_shared_models.py --summarize sweep.tsv          # a --tsv file as docs/shared-models.md's table

Every model is built for `--board` (riscv-npu); the models in `large/` fit its 512 KiB of SRAM through cascades
(issue 13), and `--large-board riscv-npu-large` (4 MiB of SRAM, 16 MiB of flash) builds them op by op as before
they did. Each build and
run is a child `edgesdk` process, so a crash fails one line, not the sweep; `--tsv` writes the lines (model,
target, rounding, seed, status, exit code, CPU instructions, NPU cycles, build and run seconds, message).
Exit status 0 when every run is bit-exact (or the reference cannot run the model, reported as such), 1 otherwise.
TFLite Micro refuses uint8 models ("Hybrid models are not supported"), so their `--rounding tflm` builds are
checked for building only.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO.parent / "shared" / "models"
CHECK_MISMATCH = 8  # edgesdk's exit code for a --check mismatch (edgesdk/errors.py)


def shared_models(models_dir: Path) -> list:
    """The .tflite files MANIFEST.tsv lists, in its order."""
    with open(models_dir / "MANIFEST.tsv", newline="") as f:
        return [row["file"] for row in csv.DictReader(f, delimiter="\t") if row["file"].endswith(".tflite")]


def short_name(path: str) -> str:
    return Path(path).stem


def edgesdk(args: list, timeout: float) -> tuple:
    """(exit code, stdout, stderr, seconds) of one `python3 -m edgesdk ...` child."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "edgesdk", *args], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {timeout:g} s", time.monotonic() - start
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


def is_uint8(model: Path) -> bool:
    import tflite

    sg = tflite.Model.GetRootAsModel(model.read_bytes(), 0).Subgraphs(0)
    return any(sg.Tensors(sg.Inputs(i)).Type() == tflite.TensorType.UINT8 for i in range(sg.InputsLength()))


def first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def check_one(model: Path, target: str, rounding: str, seeds: list, work: Path, args) -> list:
    """Build once, run each seed; one result dict per seed (or one for a failed build)."""
    board = args.large_board or args.board if model.parent.name == "large" else args.board
    out = work / f"{short_name(model.name)}-{target.replace(',', '_')}-{rounding}"
    base = {"model": f"{model.parent.name}/{model.name}", "target": target, "rounding": rounding, "board": board}
    code, _, err, build_s = edgesdk(["build", str(model), "--board", board, "--target", target, "--rounding", rounding,
                                     "-o", str(out), "--werror", "--json"], args.timeout)
    if code != 0:
        return [dict(base, seed="-", status="build-failed", exit=code, build_s=round(build_s, 1), message=first_line(err))]
    check = not (rounding == "tflm" and is_uint8(model))
    results = []
    for seed in seeds:
        run_args = ["run", str(out), "--random-input", str(seed), "--json", "--timeout", str(args.timeout)]
        code, stdout, err, run_s = edgesdk(run_args + (["--check"] if check else []), args.timeout + 60)
        summary = {}
        try:
            summary = json.loads(stdout) if stdout.strip() else {}
        except json.JSONDecodeError:
            pass
        if code == 0:
            status = "bit-exact" if check else "ran (TFLite Micro refuses uint8 models: not checked)"
        elif code == CHECK_MISMATCH:
            status = "MISMATCH"
        else:
            status = "run-failed"
        results.append(dict(base, seed=seed, status=status, exit=code, build_s=round(build_s, 1),
                            run_s=round(run_s, 1), cpu_instructions=summary.get("cpu_instructions"),
                            accelerator_cycles=cycles_cell(summary.get("peripheral_cycles")), message="" if code == 0 else first_line(err or stdout)))
    if not args.keep:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
    return results


FIELDS = ["model", "target", "rounding", "board", "seed", "status", "exit", "cpu_instructions", "accelerator_cycles",
          "build_s", "run_s", "message"]


def cycles_cell(peripheral_cycles) -> str:
    """`edgesdk run --json` "peripheral_cycles" as one TSV cell: "npu0=48008 dsp0=120" (empty: none)."""
    return " ".join(f"{name}={cycles}" for name, cycles in (peripheral_cycles or {}).items())


def shown_cycles(cell) -> str:
    """A TSV cycles cell for the table: "npu0 48,008", several joined by ", "; "-" when none."""
    pairs = [item.split("=", 1) for item in str(cell or "").split()]
    return ", ".join(f"{name} {int(value):,}" for name, value in pairs) or "-"


def summary_table(rows: list) -> str:
    """Markdown: one line per model x target x rounding, the seeds' status and seed 0's counters."""
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["target"], r["rounding"], r["board"]), []).append(r)
    lines = ["| Model | Board | Target | Rounding | Result (seeds) | CPU instructions (seed 0) | Accelerator cycles |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (model, target, rounding, board), runs in groups.items():
        statuses = sorted({r["status"].replace("ran (TFLite Micro refuses uint8 models: not checked)",
                                               "ran, unchecked (TFLite Micro refuses uint8)") for r in runs})
        seeds = ",".join(str(r["seed"]) for r in runs)
        first = runs[0]
        count = lambda v: f"{int(v):,}" if str(v).strip() not in ("", "None") else "-"  # noqa: E731
        lines.append(f"| {model} | {board} | {target} | {rounding} | {' / '.join(statuses)} ({seeds}) | "
                     f"{count(first.get('cpu_instructions'))} | {shown_cycles(first.get('accelerator_cycles'))} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models-dir", type=Path, default=MODELS_DIR)
    p.add_argument("--models", default="", help="comma-separated substrings of model file names (default: all)")
    p.add_argument("--large-only", action="store_true", help="only the models in large/")
    p.add_argument("--no-large", action="store_true", help="skip the models in large/")
    p.add_argument("--targets", default="npu,c;c", help="target lists separated by ';' (default 'npu,c;c')")
    p.add_argument("--roundings", default="ref,tflm")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--board", default="riscv-npu", help="board of every model")
    p.add_argument("--large-board", help="board of the models in large/ (default: --board)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per build or run (a hang stops there)")
    p.add_argument("--work-dir", type=Path, help="where the builds go (default: a temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the build directories")
    p.add_argument("--tsv", type=Path, help="also write the results here")
    p.add_argument("--summarize", type=Path, metavar="TSV", help="print a --tsv file as a markdown table, run nothing")
    args = p.parse_args(argv)
    if args.summarize:
        with open(args.summarize, newline="") as f:
            print(summary_table(list(csv.DictReader(f, delimiter="\t"))))
        return 0

    models = [args.models_dir / m for m in shared_models(args.models_dir)]
    if args.models:
        wanted = [w for w in args.models.split(",") if w]
        models = [m for m in models if any(w in m.name for w in wanted)]
    if args.large_only:
        models = [m for m in models if m.parent.name == "large"]
    if args.no_large:
        models = [m for m in models if m.parent.name != "large"]
    seeds = [int(s) for s in args.seeds.split(",") if s != ""]
    results = []
    with tempfile.TemporaryDirectory(prefix="edgesdk-shared-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        writer = None
        tsv = open(args.tsv, "w", newline="") if args.tsv else None
        if tsv:
            writer = csv.DictWriter(tsv, FIELDS, delimiter="\t", extrasaction="ignore")
            writer.writeheader()
        for model in models:
            for target in [t for t in args.targets.split(";") if t]:
                for rounding in [r for r in args.roundings.split(",") if r]:
                    for r in check_one(model, target, rounding, seeds, work, args):
                        results.append(r)
                        print("\t".join(str(r.get(k, "")) for k in FIELDS), flush=True)
                        if writer:
                            writer.writerow(r)
                            tsv.flush()
        if tsv:
            tsv.close()
    bad = [r for r in results if r["status"] in ("MISMATCH", "run-failed", "build-failed")]
    print(f"\n{len(results) - len(bad)} of {len(results)} runs passed", flush=True)
    for r in bad:
        print(f"FAILED {r['model']} --target {r['target']} --rounding {r['rounding']} seed {r['seed']}: {r['status']} "
              f"(exit {r['exit']}) {r['message']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
