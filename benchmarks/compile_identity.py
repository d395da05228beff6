"""A manifest of everything a compile-only build writes, to check that a compiler change (a speed-up) changes
no output: build each MLPerf Tiny model with `--no-firmware --dump-after all` under a few option sets
(default npu,c; --target c; --rounding tflm; --no-cascade) and print one sha256 per output file (generated
sources, report.json without its wall-time `timing` block, report.html, figures, the pass dumps).

    PYTHONPATH=<tree A> python3 benchmarks/compile_identity.py /tmp/a > a.txt
    PYTHONPATH=<tree B> python3 benchmarks/compile_identity.py /tmp/b > b.txt
    diff a.txt b.txt        # empty: byte-identical outputs

Run it from outside both trees (or from the tree under test): `python -m edgesdk` imports from the first
`edgesdk` on sys.path.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

MODELS_DIR = (Path(__file__).resolve().parents[1].parent / "shared" / "models" / "mlcommons_tiny").resolve()
# (resolved: report.json names the model path, which must not depend on the tree the script runs from)
VARIANTS = {"default": [], "c": ["--target", "c"], "tflm": ["--rounding", "tflm"], "nocascade": ["--no-cascade"]}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    models = argv[1].split(",") if len(argv) > 1 else sorted(p.name for p in MODELS_DIR.glob("*.tflite"))
    for model in models:
        for variant, extra in VARIANTS.items():
            build = out / f"{model}-{variant}"
            run = subprocess.run([sys.executable, "-m", "edgesdk", "build", str(MODELS_DIR / model), "-o", str(build),
                                  "--no-firmware", "-q", "--dump-after", "all", *extra], capture_output=True, text=True)
            build.mkdir(parents=True, exist_ok=True)
            (build / "dump.txt").write_text(run.stderr + run.stdout + f"rc={run.returncode}\n")
            for path in sorted(p for p in build.rglob("*") if p.is_file()):
                data = path.read_bytes()
                if path.name == "report.json":  # wall times differ run to run; everything else must not
                    report = json.loads(data)
                    report.pop("timing", None)
                    report.pop("board_file", None)  # the board.json of the tree that runs (its path names the tree)
                    data = json.dumps(report, sort_keys=True).encode()
                print(hashlib.sha256(data).hexdigest()[:16], path.relative_to(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
