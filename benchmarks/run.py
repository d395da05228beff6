#!/usr/bin/env python3
"""The MLPerf Tiny benchmark: edgesdk beside TFLite Micro and Vela, with the goals of issues 5 and 13.

    python3 benchmarks/run.py [--models kws,vww,ic,ad] [--out benchmarks/results] [--repeats 3]
                              [--no-vela] [--no-profile] [--no-large] [--keep-builds DIR]

For each model it builds the firmware twice (`--target npu,c` and `--target c`), runs both on the
emulator with the same seeded random input, checks both against LiteRT's reference kernels, and prints one
table. In the same run it asks TFLite Micro (PyPI `tflite-micro`) for its arena and, if installed, compiles
the model with Vela (PyPI `ethos-u-vela`, `pip install -e .[bench]`) for its SRAM, cycles and compile time.
Then it measures issue 13's figures (benchmarks/issue13.py): `edgesdk build` wall time per model (warm and
cold compiler cache), and the two models of ../shared/models/large/ op by op and cascaded on both target
lists (skip them with --no-large), and prints issue 13's goals with whether each is met.
Writes results.txt (the printed tables), results.json (every figure) and <model>_memory_timeline.svg
into --out. docs/performance.md explains each figure.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402
import goals  # noqa: E402
import issue13  # noqa: E402

MODELS_DIR = HERE.parent.parent / "shared" / "models" / "mlcommons_tiny"
LARGE_MODELS_DIR = HERE.parent.parent / "shared" / "models" / "large"


def _n(value, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and digits:
        return f"{value:,.{digits}f}"
    return f"{round(value):,}"


def _yes(ok) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def _table(rows: list, header=("figure", "edgesdk", "TFLite Micro", "Vela", "goal", "met")) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def model_rows(name: str, f: dict, tflm: dict | None, vela: dict | None) -> tuple:
    """(table rows, goal verdicts {goal: (edgesdk figure, goal figure, met)})."""
    verdicts = {}
    plan = f["planner"]
    sram_goal = goals.SRAM_GOAL[name]
    sram_ok = f["sram_peak_bytes"] <= sram_goal
    verdicts["SRAM peak, B"] = (f["sram_peak_bytes"], f"<= {sram_goal:,}", sram_ok)
    vela_sram = vela and f"{_n(vela['Performance']['sram_bytes'])} Perf / {_n(vela['Size']['sram_bytes'])} Size"
    tflm_text = tflm and f"{_n(tflm['head'])} head / {_n(tflm['total'])} total"
    rows = [
        ("SRAM peak (arena incl. I/O, scratch), B", _n(f["sram_peak_bytes"]), tflm_text or "-", vela_sram or vela_note(vela),
         f"<= {sram_goal:,}", _yes(sram_ok)),
        ("  --target c build", f"{_n(f['cpu_build']['sram_peak_bytes'])} ({f['cpu_cascades']} cascade group(s))",
         "", "", "", ""),
        ("  planner: greedy by size / search / + in place", f"{_n(plan['greedy_by_size'])} / {_n(plan['search'])} / "
         f"{_n(plan['search_in_place'])}", "", "", "", ""),
        ("  lower bound: op by op / with in-place rules", f"{_n(plan['search_lower_bound'])} / "
         f"{_n(plan['in_place_lower_bound'])}", "", "", "", ""),
        ("  busiest step: live buffers (before overlap), B", f"step {f['peak_step']['step']}: " +
         " + ".join(_n(b) for b in f["peak_step"]["buffers"][:4]) + (" + ..." if len(f["peak_step"]["buffers"]) > 4 else ""),
         "", "", "", ""),
        ("flash bytes (npu,c firmware)", _n(f["flash_bytes"]), "", "", "", ""),
    ]
    cycles = f["npu_cycles"]
    cycles_goal = goals.VELA_CYCLES[name]
    cycles_ok = cycles < cycles_goal and (vela is None or cycles < vela["Performance"]["cycles"])
    verdicts["NPU cycles"] = (cycles, f"< {cycles_goal:,}", cycles_ok)
    schedule = f["npu_schedule"]
    rows += [
        ("NPU cycles (emulator PERF_CYCLES)", _n(cycles) + ("" if cycles == f["npu_cycles_estimate"] else
                                                           f" (estimate {_n(f['npu_cycles_estimate'])})"),
         "", _n(vela["Performance"]["cycles"]) + " Perf" if vela else vela_note(vela),
         f"< {cycles_goal:,} (Vela, issue)", _yes(cycles_ok)),
        ("NPU cycles / hardware lower bound", f"{schedule['ratio']:.3f} ({_n(schedule['cycles'])} / "
         f"{_n(schedule['lower_bound'])})" if schedule["ratio"] else "-", "", "", "", ""),
    ]
    instr = f["cpu_instructions"]
    instr_goal = goals.TFLM_INSTRUCTIONS[name] / 3
    instr_ok = instr <= instr_goal
    verdicts["CPU instructions (--target c)"] = (instr, f"<= {instr_goal:,.0f}", instr_ok)
    tflm_instr = goals.TFLM_INSTRUCTIONS[name]
    rows.append(("CPU instructions per inference (--target c)", _n(instr), f"{tflm_instr:,} (issue)", "",
                 f"<= {instr_goal:,.0f}", _yes(instr_ok)))
    if f["cpu_cascades"]:
        rows.append(("  the same op by op (--target c --no-cascade)", _n(f["cpu_instructions_op_by_op"]), "", "",
                     "", ""))
    per_mac = f.get("instructions_per_mac") or {}
    labels = {"CONV_2D": "conv", "DEPTHWISE_CONV_2D": "depthwise", "FULLY_CONNECTED": "FC"}
    if per_mac:
        text = " / ".join(f"{labels[k]} {v:.2f}" for k, v in per_mac.items())
        rows.append(("  instructions per MAC, by layer type", text,
                     f"{tflm_instr / sum(f['macs'].values()):.1f} (all layers)", "", "", ""))
    rows.append(("  instructions per MAC, whole model", f"{f['instructions_per_mac_total']:.2f}", "", "", "", ""))
    text_bytes = f["cpu_build"]["text_bytes"]
    text_goal = goals.TFLM_TEXT_BYTES // 2
    verdicts[".text (--target c)"] = (text_bytes, f"<= {text_goal:,}", text_bytes <= text_goal)
    rows.append(("firmware .text, whole (--target c), B", _n(text_bytes), f"{goals.TFLM_TEXT_BYTES:,} (issue)", "",
                 f"<= {text_goal:,}", _yes(text_bytes <= text_goal)))
    clocks = f["clocks_hz"]
    rows.append((f"end-to-end latency at {clocks['cpu'] / 1e6:g}/{clocks['npu'] / 1e6:g} MHz, us",
                 f"{f['latency_us']:,.1f} ({_n(f['npu_build_cpu_instructions'])} CPU instr. + {_n(cycles)} NPU cyc.)",
                 "", f"{1e6 * vela['Performance']['cycles'] / 500e6:,.1f} (NPU only)" if vela else "", "", ""))
    t = f["timing"]
    rows.append(("build time: compiler / firmware compile, s", f"{t['compile_s']:.3f} / {t['firmware_build_s']:.3f}",
                 "", "", "", ""))
    speed = f["compile_speed"]
    step, vela_step = speed["edgesdk_in_process"], speed["vela_in_process"]
    compile_ok = None if vela_step is None else step <= vela_step
    verdicts["compile step vs Vela (in-process)"] = (round(step, 4), "<= Vela", compile_ok)
    rows.append(("compile step, in-process median, s", f"{step:.4f}", "",
                 f"{vela_step:.4f}" if vela_step is not None else vela_note(vela), "<= Vela", _yes(compile_ok)))
    cold, vela_cold = speed["edgesdk_fresh_process"], speed["vela_fresh_process"]
    cold_ok = None if vela_cold is None else cold <= vela_cold
    verdicts["compile step vs Vela (fresh process)"] = (round(cold, 3), "<= Vela", cold_ok)
    rows.append(("compile step, fresh process, median, s", f"{cold:.3f}", "", f"{vela_cold:.3f} (vela command)"
                 if vela_cold is not None else vela_note(vela), "<= Vela", _yes(cold_ok)))
    wall = f["emulator_wall_s"]
    rows.append(("emulator wall time per inference (npu,c; c), s", f"{wall['npu,c']:.3f}; {wall['c']:.3f}", "", "", "", ""))
    exact = f["bit_exact"]
    rows.append(("bit-exact vs LiteRT reference (npu,c; c)", f"{_yes(exact['npu,c'])}; {_yes(exact['c'])}", "", "", "",
                 ""))
    guard = f["guard"]
    rows.append(("arena bytes outside the plan still 0xA5 (npu,c; c)",
                 "; ".join(f"{_yes(ok)} ({n} B)" for n, ok in guard.values()), "", "", "", ""))
    return rows, verdicts


def compile_speed(path: Path, repeats: int, use_vela: bool) -> dict:
    """Compile times of edgesdk's compiler step and Vela, interleaved run by run (the machine is shared:
    alternating keeps load changes from favouring either), medians of `repeats`."""
    import edgesdk_figures

    runs = {"edgesdk_in_process": [], "edgesdk_fresh_process": [], "vela_in_process": [], "vela_fresh_process": []}
    for _ in range(repeats):
        runs["edgesdk_in_process"].append(edgesdk_figures.compile_step_seconds(path, 1))
        if use_vela:
            runs["vela_in_process"].append(baselines.run_vela(path, "Performance")["compile_s"])
        runs["edgesdk_fresh_process"].append(edgesdk_figures.compile_step_cold_seconds(path, 1))
        if use_vela:
            runs["vela_fresh_process"].append(baselines.vela_cli_seconds(path))
    return {k: statistics.median(v) if v else None for k, v in runs.items()}


def _goal_json(verdicts: dict) -> dict:
    return {k: {"edgesdk": v[0], "goal": v[1], "met": v[2]} for k, v in verdicts.items()}


def measure_large(models_dir: Path, work: Path, text: list) -> dict:
    """Issue 13 part 1 on the models of ../shared/models/large/, printed as one table per model."""
    large = {}
    for name, file in issue13.LARGE_MODELS.items():
        path = models_dir / file
        figures = issue13.large_model(name, path, work)
        rows, verdicts = issue13.large_rows(name, figures)
        block = f"\n{issue13.LARGE_TITLES[name]} ({file}; issue 13 part 1)\n" + _table(rows, ("figure", "edgesdk", "goal", "met"))
        print(block, flush=True)
        text.append(block)
        large[name] = {"edgesdk": figures, "goals_issue13": _goal_json(verdicts)}
    return large


def measure_int16(work: Path, text: list) -> dict:
    """Issue 13 part 2's int16 item (benchmarks/tflm_int16.py): {"int16": ...}, or {} without TFLite Micro's
    sources."""
    result = issue13.int16_kernels(work)
    if result is None:
        block = "\nint16 kernels vs TFLite Micro: skipped (its sources are not on this machine; see tflm_int16.py)"
        print(block, flush=True)
        text.append(block)
        return {}
    rows = [(f"{g.get('op', g.get('model'))}, {g['layers']} layers", f"{g['edgesdk_instructions']:,}",
             f"{g['tflm_instructions']:,}", f"{g['ratio']:.3f} (worst layer {g['worst_layer_ratio']:.3f})",
             _yes(g["met"])) for g in result["ops"] + result["models"]]
    block = ("\nint16 (16x8) kernels: edgesdk --target c vs TFLite Micro's int16 reference kernels, Invoke() "
             "instructions of the layers (issue 13 part 2; goal <= 1/3)\n"
             + _table(rows, ("op / model", "edgesdk", "TFLite Micro", "ratio", "met")))
    print(block, flush=True)
    text.append(block)
    return {"int16": {"edgesdk": result, "goals_issue13": _goal_json(issue13.int16_verdicts(result))}}


VELA_ABSENT = "not installed"  # or "skipped" with --no-vela


def vela_note(vela) -> str:
    return VELA_ABSENT if vela is None else "-"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--models", default=",".join(goals.MODELS), help="comma-separated: " + ", ".join(goals.MODELS))
    parser.add_argument("--models-dir", type=Path, default=MODELS_DIR)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--repeats", type=int, default=5, help="timed compiles per tool (median)")
    parser.add_argument("--no-vela", action="store_true", help="skip Vela even if installed")
    parser.add_argument("--no-profile", action="store_true", help="skip the per-kernel instruction profile")
    parser.add_argument("--no-large", action="store_true", help="skip the models of ../shared/models/large")
    parser.add_argument("--large-models-dir", type=Path, default=LARGE_MODELS_DIR)
    parser.add_argument("--no-int16", action="store_true",
                        help="skip the int16 kernels against TFLite Micro's int16 reference kernels")
    parser.add_argument("--keep-builds", type=Path, help="build into this directory and keep it")
    args = parser.parse_args(argv)

    import edgesdk_figures  # after sys.path is set; imports edgesdk

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in goals.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(goals.MODELS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    global VELA_ABSENT
    use_vela = not args.no_vela and baselines.vela_available()
    if args.no_vela:
        VELA_ABSENT = "skipped"
    work = Path(tempfile.mkdtemp(prefix="edgesdk-bench-")) if args.keep_builds is None else args.keep_builds
    work.mkdir(parents=True, exist_ok=True)
    header = [f"edgesdk MLPerf Tiny benchmark, {time.strftime('%Y-%m-%d %H:%M:%S')}; board riscv-npu; "
              f"Vela {baselines.vela_version() + ' (ethos-u55-128)' if use_vela else VELA_ABSENT}"]
    print(header[0], flush=True)
    # Warm-up: imports and first-call costs are paid once, before anything is timed, for both compilers.
    first = args.models_dir / goals.MODELS[names[0]]
    edgesdk_figures.compile_step_seconds(first, 1)
    edgesdk_figures.warm_up_emulator()
    if use_vela:
        baselines.run_vela(first, "Performance")
    results, text = {}, list(header)
    for name in names:
        path = args.models_dir / goals.MODELS[name]
        figures = edgesdk_figures.measure(name, path, work, args.out, not args.no_profile)
        figures["compile_speed"] = compile_speed(path, args.repeats, use_vela)
        tflm = baselines.tflm_arena(path)
        vela = {o: baselines.run_vela(path, o) for o in ("Performance", "Size")} if use_vela else None
        figures["build_wall"] = issue13.build_wall_seconds(path, work, args.repeats)
        rows, verdicts = model_rows(name, figures, tflm, vela)
        rows.append(("edgesdk build wall time, warm / cold cache, s",
                     f"{figures['build_wall']['warm_s']:.2f} / {figures['build_wall']['cold_s']:.2f}", "", "",
                     f"<= {issue13.BUILD_WALL_WARM_GOAL_S} / {issue13.BUILD_WALL_COLD_GOAL_S}", ""))
        block = f"\n{goals.TITLES[name]} ({path.name})\n" + _table(rows) + \
            f"\nmemory timeline: {figures['timeline_svg']}"
        print(block, flush=True)
        text.append(block)
        results[name] = {"edgesdk": figures, "tflite_micro": tflm, "vela": vela,
                         "goals": {k: {"edgesdk": v[0], "goal": v[1], "met": v[2]} for k, v in verdicts.items()},
                         "goals_issue13": _goal_json(issue13.mlperf_verdicts(name, figures, figures["build_wall"]))}
    large = {} if args.no_large else measure_large(args.large_models_dir, work, text)
    int16 = {} if args.no_int16 else measure_int16(work, text)
    summary = ["\nGoals (issue 5)", "model  goal                                  edgesdk          goal            met"]
    for name, r in results.items():
        for goal, v in r["goals"].items():
            summary.append(f"{name:<6} {goal:<37} {_n(v['edgesdk']) if isinstance(v['edgesdk'], int) else v['edgesdk']:<16} "
                           f"{v['goal']:<15} {_yes(v['met'])}")
    summary += ["\nGoals (issue 13)", "model  goal                                       edgesdk          goal            met"]
    for name, r in list(results.items()) + list(large.items()) + list(int16.items()):
        for goal, v in r["goals_issue13"].items():
            summary.append(f"{name:<6} {goal:<42} {_n(v['edgesdk']) if isinstance(v['edgesdk'], int) else v['edgesdk']!s:<16} "
                           f"{v['goal']:<15} {_yes(v['met'])}")
    print("\n".join(summary))
    text += summary
    results.update({f"large/{k}": v for k, v in large.items()})
    results.update(int16)
    (args.out / "results.txt").write_text("\n".join(text) + "\n")
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    if args.keep_builds is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nwrote {args.out / 'results.txt'}, {args.out / 'results.json'} and the memory timelines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
