"""Cascade groups' cost model against the emulator: estimate and measured cost of given groups.

For a model, a target list and cascade groups (op indices first-last, stripe height), build the firmware op by op
(`--no-cascade`) and with exactly those groups (as a tuning schedule applies them), run both on the emulator on
the same seeded random input, check both outputs bit-exact against LiteRT's reference kernels, and print per
group: the estimate (each target's part: cycles in stripes against its ops as an op-by-op build runs them) and
the measure (CPU instructions of the group's host calls, from kernel_profile's per-call counts; the NPU's
cycles of the whole run, equal to its timing model). Without --group: the default build's own groups.

    PYTHONPATH=$PWD python3 benchmarks/stripe_cost.py MODEL --target c --group 1-4:1 [--group 6-8:2 ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_profile  # noqa: E402

from edgesdk import compiler  # noqa: E402
from edgesdk.aot.cascade import Striping, plan_with_groups  # noqa: E402
from edgesdk.compiler import BuildOptions, build, compile_model  # noqa: E402
from edgesdk.reference import run_reference  # noqa: E402
from edgesdk.runner import random_inputs, run_inference  # noqa: E402


def parse_group(text: str) -> tuple:
    ops, height = text.split(":")
    first, last = (int(x) for x in ops.split("-"))
    return tuple(range(first, last + 1)), int(height)


def _forced(specs):
    def choose(problem, regions, plan, striping, **_):
        return plan_with_groups(problem, regions, specs, striping)
    return choose


def build_with(model, out: Path, target: str, board: str, specs) -> dict:
    """Firmware with exactly the groups `specs` (empty: op by op; None: the default build's own)."""
    if specs is None:
        return build(model, out, BuildOptions(target=target, board=board))
    options = BuildOptions(target=target, board=board, cascade=bool(specs))
    saved = compiler.choose_cascades
    compiler.choose_cascades = _forced(specs)
    try:
        return build(model, out, options)
    finally:
        compiler.choose_cascades = saved


def profiled_calls(build_dir: Path, inputs) -> list:
    """(function, instructions) of every call the run function makes."""
    return kernel_profile.profile_run(build_dir, inputs, timeout_s=3000).calls


def compiled_with(model, target: str, board: str, specs):
    if specs is None:
        return compile_model(model, BuildOptions(target=target, board=board, compile_firmware=False))
    options = BuildOptions(target=target, board=board, compile_firmware=False, cascade=bool(specs))
    saved = compiler.choose_cascades
    compiler.choose_cascades = _forced(specs)
    try:
        return compile_model(model, options)
    finally:
        compiler.choose_cascades = saved


def per_op(calls: list, host_layers: list) -> dict:
    """{op index: instructions of its kernel calls; "shift": of the groups' row shifts}: the profiled calls
    matched in order to the generated host calls (KernelCall.op names the layer a stripe call computes)."""
    wanted = [c for layer in host_layers for c in layer.calls if hasattr(c, "kernel")]
    names = {c.kernel for c in wanted}
    profiled = [(n, i) for n, i in calls if any(kernel_profile.calls_kernel(n, name) for name in names)]
    if len(profiled) != len(wanted) or not all(kernel_profile.calls_kernel(n, c.kernel)
                                               for (n, _), c in zip(profiled, wanted)):
        raise SystemExit(f"the profiled calls do not match the generated ones ({len(profiled)} vs {len(wanted)})")
    result, k = {}, 0
    for layer in host_layers:
        for call in layer.calls:
            if not hasattr(call, "kernel"):
                continue
            key = call.op.index if call.op is not None else (f"shift{layer.ops[0].index}" if layer.ops else layer.op.index)
            result[key] = result.get(key, 0) + profiled[k][1]
            k += 1
    return result


def run_checked(build_dir: Path, report: dict, model, seed: int = 0):
    inputs = random_inputs(report, seed)
    result = run_inference(build_dir, inputs, timeout_s=3000)
    if result.exit_code != 0:
        raise SystemExit(f"{build_dir}: exit {result.exit_code}\n{result.uart}")
    want = run_reference(model, inputs, "ref")
    exact = all(np.array_equal(a, b) for a, b in zip(result.outputs, want))
    return inputs, result, exact


def measure(model, target: str, specs, work: Path, board: str = "riscv-npu", host_target: str = "c") -> dict:
    """Build and run `model` op by op and with exactly the groups `specs` (None: the default build's); per group
    its estimate and, for its host layers, its measure."""
    runs = {}
    for name, groups in (("op_by_op", []), ("groups", specs)):
        report = build_with(model, work / name, target, board, groups)
        inputs, result, exact = run_checked(work / name, report, model)
        compiled = compiled_with(model, target, board, groups)
        layers = compiled.executor.target_data.get(host_target, [])
        runs[name] = {"instructions": result.inference_instructions, "npu_cycles": result.cycles_of("npu"),
                      "bit_exact": exact, "arena_bytes": report["memory"]["arena_bytes"],
                      "host_ops": per_op(profiled_calls(work / name, inputs), layers) if layers else {}}
    compiled = compiled_with(model, target, board, specs)
    striping = Striping(compiled.regions, compiled.codegen_options)
    plain, grouped = runs["op_by_op"]["host_ops"], runs["groups"]["host_ops"]
    groups = []
    for g in compiled.plan.cascades:
        ops = [op.index for op in g.ops]
        host = [i for i in ops if i in plain and i in grouped]
        whole = sum(plain[i] for i in host)
        shifts = sum(v for k, v in grouped.items() if k in {f"shift{i}" for i in ops})
        striped = sum(grouped.get(i, 0) for i in host) + shifts
        groups.append({"ops": ops, "stripe_height": g.stripe_height, "estimate": striping.costs(g),
                       "measured_host": (striped, whole), "per_op": {i: (grouped.get(i, 0), plain[i]) for i in host},
                       "shifts": shifts})
    return {"model": Path(model).name, "target": target, "runs": runs, "groups": groups}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--target", default="c")
    ap.add_argument("--board", default="riscv-npu")
    ap.add_argument("--group", action="append", type=parse_group, default=None,
                    help="first-last:height (repeatable); none: the default build's own groups")
    ap.add_argument("--work", default=None, help="build directory (default: a temporary one)")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="stripe_cost_"))
    result = measure(args.model, args.target, args.group, work, args.board)
    print(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
