"""edgesdk's own figures for one model: two builds (npu,c and c), emulator runs, the memory planner's
variants and the NPU schedule's distance from the hardware lower bound."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from edgesdk.aot.memory_plan import build_buffers, place_greedy_by_size, plan_memory
from edgesdk.board import load_board
from edgesdk.compiler import BuildOptions, build, compile_model
from edgesdk.targets.npu.hw import timing
from edgesdk.reference import run_reference
from edgesdk.runner import random_inputs, run_inference

import kernel_profile

INPUT_SEED = 0


def compile_step_seconds(model_path, repeats: int) -> float:
    """Median wall time of the compiler passes (import .. executor; no C compile), in this process."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        compile_model(model_path, BuildOptions())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compile_step_cold_seconds(model_path, repeats: int) -> float:
    """Median wall time of a fresh Python process that imports edgesdk and runs the compiler passes once."""
    code = ("import sys; from edgesdk.compiler import BuildOptions, compile_model; "
            "compile_model(sys.argv[1], BuildOptions())")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code, str(model_path)], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def warm_up_emulator() -> None:
    """Build (or load) the emulator's native library now, so no timed run pays for compiling it."""
    from edgesdk.board import load_board
    from edgesdk.emulator.machine import native_library, native_peripherals

    native_library([spec for _, spec in native_peripherals(load_board("riscv-npu"))])


def macs_per_op_type(graph) -> dict:
    """MACs of the CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED layers, every kernel tap counted (padding
    taps too), as the usual MAC figures and the issue's instructions-per-MAC figures count them."""
    totals = {"CONV_2D": 0, "DEPTHWISE_CONV_2D": 0, "FULLY_CONNECTED": 0}
    for op in graph.ops:
        if op.type not in totals:
            continue
        y, w = op.outputs[0], op.inputs[1]
        if op.type == "CONV_2D":  # weights [O, KH, KW, I]
            totals[op.type] += y.num_elements * w.shape[1] * w.shape[2] * w.shape[3]
        elif op.type == "DEPTHWISE_CONV_2D":  # weights [1, KH, KW, O]
            totals[op.type] += y.num_elements * w.shape[1] * w.shape[2]
        else:  # weights [O, K]
            totals[op.type] += y.num_elements * w.shape[1]
    return totals


def planner_variants(compiled) -> dict:
    """Arena bytes of the same graph (and scratch) under weaker planners, for comparison."""
    from edgesdk.aot.executor import collect_scratch_sizes

    graph = compiled.graph
    scratch = collect_scratch_sizes(graph, compiled.regions, compiled.codegen_options)
    greedy = place_greedy_by_size(build_buffers(graph, scratch), 16)
    searched = plan_memory(graph, scratch, in_place=False)
    return {"greedy_by_size": greedy, "search": searched.arena_bytes, "search_lower_bound": searched.lower_bound,
            "search_in_place": compiled.plan.arena_bytes, "in_place_lower_bound": compiled.plan.lower_bound}


def large_model_sram(model_path, target: str, board: str = "riscv-npu") -> dict:
    """Peak activation SRAM of a model that may not fit `board` op by op (issue 13, part 1), compile only: the
    op-by-op arena, the default build's (cascades included; a model that does not fit gets the fit search), the
    lower bounds (the default plan's per-step bound and the graph's: inputs whole, every tensor of an op no
    target can stripe), the input bytes, the groups, and whether it fits the board."""
    from edgesdk.aot.cascade import cascade_report
    from edgesdk.compiler import sram_fits, sram_lower_bound

    whole = compile_model(model_path, BuildOptions(board=board, target=target, compile_firmware=False, cascade=False),
                          check_fit=False)
    cascaded = compile_model(model_path, BuildOptions(board=board, target=target, compile_firmware=False),
                             check_fit=False)
    arena = cascaded.plan.arena_bytes
    return {"op_by_op": whole.plan.arena_bytes, "arena": arena, "plan_lower_bound": cascaded.plan.lower_bound,
            "graph_lower_bound": sram_lower_bound(cascaded.graph, cascaded.regions),
            "input_bytes": sum(t.nbytes for t in cascaded.graph.inputs),
            "groups": [(g["ops"], g["stripe_height"]) for g in cascade_report(cascaded.plan)],
            "fits": sram_fits(arena, cascaded.board)}


def largest_op(graph) -> dict:
    """The op whose activation inputs + output are largest, and what else is live at its step."""
    best = None
    for step, op in enumerate(graph.ops):
        touched = {t for t in op.inputs + op.outputs if t is not None and not t.is_const}
        size = sum(t.nbytes for t in touched)
        if best is None or size > best["bytes"]:
            best = {"step": step, "op": op.index, "type": op.type, "bytes": size,
                    "inputs": [t.nbytes for t in op.inputs if t is not None and not t.is_const],
                    "output": op.outputs[0].nbytes}
    return best


def peak_step(plan) -> dict:
    """The step at which the most planned bytes are live, and those buffers (name, size)."""
    steps = {}
    for b in plan.buffers:
        for s in range(b.first, b.last + 1):
            steps.setdefault(s, []).append(b)
    step = max(steps, key=lambda s: sum(b.size for b in steps[s]))
    return {"step": step, "bytes": sum(b.size for b in steps[step]),
            "buffers": sorted((b.size for b in steps[step]), reverse=True)}


def npu_schedule(compiled) -> dict:
    memory = timing.MemoryMap.for_board(compiled.board)
    cycles = lower = 0
    tables = []
    for table in compiled.executor.target_data.get("npu", []):
        cost = timing.table_cost(table.commands, memory)
        cycles += cost.cycles
        lower += cost.lower_bound_cycles
        tables.append({"symbol": table.symbol, "cycles": cost.cycles, "lower_bound": cost.lower_bound_cycles})
    return {"cycles": cycles, "lower_bound": lower, "ratio": cycles / lower if lower else None, "tables": tables}


def _bit_exact(build_dir: Path, inputs: list, outputs: list) -> bool:
    expected = run_reference(build_dir / "model.tflite", inputs)
    return all(np.array_equal(np.asarray(e).reshape(o.shape), o) for e, o in zip(expected, outputs))


def _timed_run(build_dir: Path, inputs: list):
    start = time.perf_counter()
    result = run_inference(build_dir, inputs)
    return result, time.perf_counter() - start


def _op_by_op_instructions(model_path: Path, out: Path, inputs: list) -> int:
    """Inference instructions of a `--target c --no-cascade` build: the host kernels alone, as the kernel
    libraries it is compared with run them (the default build may trade a few instructions for a smaller
    arena through host cascades)."""
    build(model_path, out, BuildOptions(target="c", cascade=False))
    return run_inference(out, inputs).inference_instructions


def measure(name: str, model_path: Path, work_dir: Path, results_dir: Path, profile: bool) -> dict:
    board = load_board("riscv-npu")
    figures = {"model": model_path.name}
    compiled = compile_model(model_path, BuildOptions())
    figures["planner"] = planner_variants(compiled)
    figures["largest_op"] = largest_op(compiled.graph)
    figures["peak_step"] = peak_step(compiled.plan)
    figures["npu_schedule"] = npu_schedule(compiled)
    figures["macs"] = macs_per_op_type(compiled.graph)

    npu_dir, cpu_dir = work_dir / f"{name}-npu", work_dir / f"{name}-cpu"
    npu_report = build(model_path, npu_dir, BuildOptions(target="npu,c"))
    cpu_report = build(model_path, cpu_dir, BuildOptions(target="c"))
    memory = npu_report["memory"]
    figures["sram_peak_bytes"] = memory["sram_peak_bytes"]
    figures["flash_bytes"] = memory["flash_bytes"]
    figures["in_place_ops"] = len(memory["in_place"])
    figures["timing"] = npu_report["timing"]
    figures["cpu_build"] = {"sram_peak_bytes": cpu_report["memory"]["sram_peak_bytes"],
                            "flash_bytes": cpu_report["memory"]["flash_bytes"],
                            "text_bytes": cpu_report["memory"]["sections"].get("text", 0),
                            "timing": cpu_report["timing"]}
    timeline = results_dir / f"{name}_memory_timeline.svg"
    shutil.copyfile(npu_dir / memory["timeline_svg"], timeline)
    figures["timeline_svg"] = str(timeline)

    inputs = random_inputs(npu_report, INPUT_SEED)
    npu_run, npu_wall = _timed_run(npu_dir, inputs)
    cpu_run, cpu_wall = _timed_run(cpu_dir, inputs)
    figures["npu_cycles_estimate"] = npu_report["target_reports"]["npu"]["cycles"]
    figures["npu_cycles"] = npu_run.cycles_of("npu")
    figures["npu_build_cpu_instructions"] = npu_run.inference_instructions
    figures["cpu_instructions"] = cpu_run.inference_instructions
    figures["cpu_cascades"] = len(cpu_report["memory"]["cascades"])
    figures["cpu_instructions_op_by_op"] = _op_by_op_instructions(model_path, work_dir / f"{name}-cpu-whole", inputs) \
        if figures["cpu_cascades"] else cpu_run.inference_instructions
    figures["emulator_wall_s"] = {"npu,c": npu_wall, "c": cpu_wall}
    figures["bit_exact"] = {"npu,c": _bit_exact(npu_dir, inputs, npu_run.outputs),
                            "c": _bit_exact(cpu_dir, inputs, cpu_run.outputs)}
    cpu_hz = board.cpu["clock_hz"]
    npu = timing.npu_peripheral(board)
    npu_hz = npu.props.get("clock_hz") if npu is not None and npu.props else None
    figures["clocks_hz"] = {"cpu": cpu_hz, "npu": npu_hz}
    figures["latency_us"] = (npu_run.inference_instructions / cpu_hz + npu_run.cycles_of("npu") / npu_hz) * 1e6

    guard_npu = kernel_profile.profile_run(npu_dir, inputs)
    figures["guard"] = {"npu,c": [guard_npu.guard_bytes, guard_npu.guard_intact]}
    if profile:
        run = kernel_profile.profile_run(cpu_dir, inputs)
        figures["guard"]["c"] = [run.guard_bytes, run.guard_intact]
        per_type = {}
        for function, count in run.calls:
            kind = kernel_profile.category(function)
            per_type[kind] = per_type.get(kind, 0) + count
        figures["kernel_instructions"] = per_type
        figures["instructions_per_mac"] = {k: per_type[k] / m for k, m in figures["macs"].items()
                                           if m and k in per_type}
        figures["profiled_share"] = sum(c for _, c in run.calls) / run.inference_instructions
    total_macs = sum(figures["macs"].values())
    figures["instructions_per_mac_total"] = cpu_run.inference_instructions / total_macs if total_macs else None
    return figures
