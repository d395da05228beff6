"""Issue 13's figures and goals (performance round 2), measured in the same run as the MLPerf Tiny table.

* Big models on small boards: the two models of ../shared/models/large/ op by op and with cascading, on
  both target lists: activation SRAM (and its lower bound), measured NPU cycles or CPU instructions, the
  cascade's cost over op by op, bit-exactness. A cascaded build is made (and runs) for `riscv-npu` when it
  fits there, otherwise for `riscv-npu-large`; an op-by-op build always for `riscv-npu-large`.
* Host kernels: `--target c` instructions against half of muRISCV-NN's scalar figures (issue table).
* The NPU schedule: cycles over the hardware lower bound.
* Tools: the compile step against Vela (from run.py's table), and `edgesdk build` wall time, model to ELF,
  in a fresh process with a warm compiler cache and with an empty one.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from edgesdk.compiler import BuildOptions, build, compile_model
from edgesdk.errors import EdgesdkError
from edgesdk.runner import random_inputs, run_inference

import goals
from edgesdk_figures import _bit_exact
from kernels import HOST_GOAL_INSTRUCTIONS  # issue 13 part 2: half of muRISCV-NN's scalar instructions

TEXT_GOAL = goals.TFLM_TEXT_BYTES // 2
NPU_BOUND_RATIO_GOAL = 1.15
BUILD_WALL_WARM_GOAL_S = 1.5
BUILD_WALL_COLD_GOAL_S = 5.0

# Issue 13 part 1.
LARGE_MODELS = {
    "mbv2": "mobilenet_v2_1.0_224_inat_bird_quant.tflite",
    "ssd": "ssd_mobilenet_v3_int8.tflite",
}
LARGE_TITLES = {"mbv2": "MobileNetV2-1.0 224 (uint8)", "ssd": "SSD MobileNetV3 320 (int8)"}
SMALL_BOARD, LARGE_BOARD = "riscv-npu", "riscv-npu-large"
LARGE_SRAM_GOAL = {"mbv2": 256 * 1024, "ssd": None}  # None: fit the small board
MAX_CASCADE_COST = 1.15  # cycles / instructions of the cascaded schedule over op by op


def build_wall_seconds(model: Path, work: Path, repeats: int) -> dict:
    """Wall time of `edgesdk build MODEL` (model to ELF) in a fresh process: warm (after one build that fills
    the compiler cache; median of `repeats`) and cold (an empty $EDGESDK_CACHE)."""
    out = work / f"wall-{model.stem}"
    command = [sys.executable, "-m", "edgesdk", "build", "-q", str(model), "-o", str(out)]

    def timed(env=None) -> float:
        start = time.perf_counter()
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    with tempfile.TemporaryDirectory(prefix="edgesdk-cold-cache-") as empty:
        cold = timed({**os.environ, "EDGESDK_CACHE": empty, "CCACHE_DIR": os.path.join(empty, "ccache")})
    timed()  # fills the machine's cache, should the cold run above not share it
    warm = statistics.median(timed() for _ in range(max(1, repeats)))
    return {"warm_s": warm, "cold_s": cold}


def _arena(model: Path, target: str, cascade: bool, board: str = LARGE_BOARD, stream: bool = False) -> dict:
    compiled = compile_model(model, BuildOptions(board=board, target=target, cascade=cascade,
                                                 compile_firmware=False, stream_input=stream))
    return {"sram": compiled.plan.arena_bytes, "lower_bound": compiled.plan.lower_bound,
            "groups": len(compiled.plan.cascades)}


def _run(model: Path, out: Path, board: str, target: str, cascade: bool, stream: bool = False) -> dict:
    report = build(model, out, BuildOptions(board=board, target=target, cascade=cascade, stream_input=stream))
    inputs = random_inputs(report, 0)
    result = run_inference(out, inputs)
    return {"board": board, "sram": report["memory"]["sram_peak_bytes"], "npu_cycles": result.cycles_of("npu"),
            "instructions": result.inference_instructions, "bit_exact": _bit_exact(out, inputs, result.outputs)}


def large_model(name: str, model: Path, work: Path) -> dict:
    """Op by op and cascaded, per target list: arenas from the compiler, costs and bit-exactness from runs."""
    figures = {}
    for target in ("npu,c", "c"):
        whole = _arena(model, target, False)
        try:  # the default build for the small board, if the model fits it
            cascaded, small = _arena(model, target, True, SMALL_BOARD), True
        except EdgesdkError:
            cascaded, small = _arena(model, target, True, LARGE_BOARD), False
        op_run = _run(model, work / f"{name}-{target}-whole", LARGE_BOARD, target, False)
        cascade_run = _run(model, work / f"{name}-{target}-cascade", SMALL_BOARD if small else LARGE_BOARD,
                           target, True)
        metric = "npu_cycles" if target != "c" else "instructions"
        cost = cascade_run[metric] / op_run[metric] if op_run[metric] else None
        figures[target] = {"op_by_op": {**whole, **op_run}, "cascaded": {**cascaded, **cascade_run},
                           "fits_small_board": small, "metric": metric, "cost_ratio": cost,
                           "streamed": _streamed(model, work / f"{name}-{target}-stream", target, metric, op_run)}
    return figures


def _streamed(model: Path, out: Path, target: str, metric: str, op_run: dict) -> dict | None:
    """The build with --stream-input (the caller gives the image in rows) on the small board; None if the
    model cannot stream its input there."""
    try:
        arena = _arena(model, target, True, SMALL_BOARD, stream=True)
        run = _run(model, out, SMALL_BOARD, target, True, stream=True)
    except EdgesdkError:
        return None
    cost = run[metric] / op_run[metric] if op_run[metric] else None
    return {**arena, **run, "cost_ratio": cost}


def large_rows(name: str, figures: dict) -> tuple:
    """(table rows, verdicts) for one large model."""
    rows, verdicts = [], {}
    goal = LARGE_SRAM_GOAL[name]
    for target, f in figures.items():
        whole, cascaded = f["op_by_op"], f["cascaded"]
        rows.append((f"activation SRAM, op by op ({target}), B", f"{whole['sram']:,} (bound {whole['lower_bound']:,})",
                     "", ""))
        sram_goal = goal if goal is not None else "fits riscv-npu"
        met = cascaded["sram"] <= goal if goal is not None else f["fits_small_board"]
        shown_goal = f"<= {goal:,}" if goal is not None else sram_goal
        rows.append((f"activation SRAM, cascaded ({target}), B",
                     f"{cascaded['sram']:,} (bound {cascaded['lower_bound']:,}, {cascaded['groups']} groups)",
                     shown_goal, _yes(met)))
        verdicts[f"SRAM ({target})"] = (cascaded["sram"], shown_goal, met)
        label = "NPU cycles" if f["metric"] == "npu_cycles" else "CPU instructions"
        ratio = f["cost_ratio"]
        ratio_ok = ratio is not None and ratio <= MAX_CASCADE_COST
        rows.append((f"{label}, cascaded / op by op ({target})",
                     f"{cascaded[f['metric']]:,} / {whole[f['metric']]:,} = {ratio:.3f}" if ratio else "-",
                     f"<= {MAX_CASCADE_COST}", _yes(ratio_ok)))
        verdicts[f"cascade cost ({target})"] = (round(ratio, 3) if ratio else None, f"<= {MAX_CASCADE_COST}",
                                                ratio_ok)
        rows.append((f"runs on / bit-exact ({target})",
                     f"{cascaded['board']} / {_yes(cascaded['bit_exact'])}; op by op {whole['board']} / "
                     f"{_yes(whole['bit_exact'])}", "", ""))
        streamed = f.get("streamed")
        if streamed is not None:
            met = (streamed["sram"] <= goal if goal is not None else True) and streamed["cost_ratio"] is not None \
                and streamed["cost_ratio"] <= MAX_CASCADE_COST and streamed["bit_exact"]
            rows.append((f"--stream-input: SRAM, B / {label} ratio / bit-exact ({target})",
                         f"{streamed['sram']:,} (bound {streamed['lower_bound']:,}) / {streamed['cost_ratio']:.3f} / "
                         f"{_yes(streamed['bit_exact'])}", f"{shown_goal} at <= {MAX_CASCADE_COST}", _yes(met)))
            verdicts[f"SRAM streamed ({target})"] = (streamed["sram"], shown_goal, met)
    return rows, verdicts


def mlperf_verdicts(name: str, figures: dict, build_wall: dict) -> dict:
    """Issue 13's goals on one MLPerf Tiny model, from run.py's figures for it."""
    instr = figures["cpu_instructions_op_by_op"]  # the kernels, op by op (the default may cascade the host)
    ratio = figures["npu_schedule"]["ratio"]
    speed = figures["compile_speed"]
    verdicts = {
        "CPU instr. (c, op by op) <= muRISCV-NN/2": (instr, f"<= {HOST_GOAL_INSTRUCTIONS[name]:,.0f}",
                                                     instr <= HOST_GOAL_INSTRUCTIONS[name]),
        ".text (c)": (figures["cpu_build"]["text_bytes"], f"<= {TEXT_GOAL:,}",
                      figures["cpu_build"]["text_bytes"] <= TEXT_GOAL),
        "NPU cycles / lower bound": (round(ratio, 3), f"<= {NPU_BOUND_RATIO_GOAL}", ratio <= NPU_BOUND_RATIO_GOAL),
        "build wall, warm cache, s": (round(build_wall["warm_s"], 2), f"<= {BUILD_WALL_WARM_GOAL_S}",
                                      build_wall["warm_s"] <= BUILD_WALL_WARM_GOAL_S),
        "build wall, cold cache, s": (round(build_wall["cold_s"], 2), f"<= {BUILD_WALL_COLD_GOAL_S}",
                                      build_wall["cold_s"] <= BUILD_WALL_COLD_GOAL_S),
    }
    for kind, label in (("edgesdk_in_process", "in-process"), ("edgesdk_fresh_process", "fresh process")):
        vela = speed["vela_in_process" if kind == "edgesdk_in_process" else "vela_fresh_process"]
        shown = f"<= {vela:.3f} (Vela)" if vela is not None else "<= Vela (absent)"
        verdicts[f"compile step, {label}, s"] = (round(speed[kind], 3), shown,
                                                 None if vela is None else speed[kind] <= vela)
    return verdicts


def _yes(ok) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def int16_kernels(work: Path) -> dict | None:
    """Issue 13 part 2's int16 item: benchmarks/tflm_int16.py's comparison (None without TFLite Micro's sources)."""
    import tflm_int16

    return tflm_int16.compare(work_dir=work / "int16")


def int16_verdicts(result: dict) -> dict:
    """Per op and over all int16 layers: edgesdk's instructions against a third of TFLite Micro's int16 reference
    kernels (the edgesdk figure is the ratio; bit-exactness of the anchor with LiteRT is part of the row)."""
    import tflm_int16

    verdicts = {}
    groups = [(f"int16 {g['op']}", g) for g in result["ops"]]
    groups.append(("int16 all layers", tflm_int16._totals(("op", "all"), result["layers"])))
    for label, g in groups:
        shown = (f"{g['edgesdk_instructions']:,} / {g['tflm_instructions']:,} = {g['ratio']:.3f}"
                 + ("" if g["checked"] else " (TFLM output unchecked)"))
        verdicts[f"{label} vs TFLM ref, {g['layers']} layers"] = (shown, "<= 0.333", g["met"])
    return verdicts
