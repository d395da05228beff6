#!/usr/bin/env python3
"""Fuzz the edgesdk importer and compiler with mutated models (docs/reliability.md).

    scripts/fuzz.py --seconds 1500 --seed 1 --firmware-every 100   # the long run in docs/reliability.md
    scripts/fuzz.py --iterations 20000 --seed 7         # a fixed number of inputs (reproducible)
    scripts/fuzz.py --seconds 1800 --firmware-every 100 # also build + run every 100th compiling model
    scripts/fuzz.py --engine atheris -- -max_total_time=600   # coverage-guided, if atheris is installed

Seeds: the nine models in ../shared/models plus edgesdk's single-op test models (every supported op).
Each input is compiled in a supervised worker process (per-input time limit, address-space limit); the
run prints its figures (inputs tried, outcomes, crashes, hangs, memory blow-ups, unsafe outputs) and
saves every finding (and every input only the safety proof caught) with a .json note in --findings-dir.
Exit status 1 if there was any finding. Turn each finding into a regression input: copy it to
tests/fuzz/regressions/ and add it to manifest.json there (tests/test_fuzz.py replays them all).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fuzz.harness import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, fuzz, seed_corpus  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, help="stop after this much wall-clock time")
    parser.add_argument("--iterations", type=int, help="stop after this many inputs")
    parser.add_argument("--seed", type=int, default=0, help="random seed (same seed + same limits = same inputs)")
    parser.add_argument("--findings-dir", default="fuzz-findings", help="where findings are saved (default ./fuzz-findings)")
    parser.add_argument("--firmware-every", type=int, default=0, metavar="N",
                        help="build and emulate every Nth model that compiles (slow: ~5 s each)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per-input budget in CPU seconds (a hang when used up; a 10x wall-clock backstop for blocked workers)")
    parser.add_argument("--memory-mb", type=int, default=DEFAULT_MEMORY_MB, help="worker address-space limit")
    parser.add_argument("--only-shared-models", action="store_true", help="seed with ../shared/models only")
    parser.add_argument("--json", help="also write the summary as JSON to this file")
    parser.add_argument("--engine", choices=["mutate", "atheris"], default="mutate")
    parser.add_argument("engine_args", nargs="*", help="after --: arguments for atheris/libFuzzer")
    args = parser.parse_args(argv)
    if args.engine == "atheris":
        from fuzz.atheris_fuzz import run_atheris

        return run_atheris(args.engine_args)
    if args.seconds is None and args.iterations is None:
        parser.error("give --seconds and/or --iterations")
    seeds = seed_corpus(single_ops=not args.only_shared_models)
    print(f"edgesdk fuzz: {len(seeds)} seed models, seed {args.seed}, "
          f"limits: {args.iterations or 'no'} inputs / {args.seconds or 'no'} s", flush=True)
    stats = fuzz(seeds, iterations=args.iterations, seconds=args.seconds, seed=args.seed,
                 findings_dir=args.findings_dir, firmware_every=args.firmware_every, timeout_s=args.timeout,
                 memory_mb=args.memory_mb, log=lambda message: print(message, flush=True))
    summary = stats.summary()
    figures = {k: v for k, v in summary.items() if k != "findings"}
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"seed": args.seed, **summary}, indent=2) + "\n")
    return 1 if stats.findings else 0


if __name__ == "__main__":
    sys.exit(main())
