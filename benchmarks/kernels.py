"""Per-layer instruction counts of the host C kernels (`--target c`) on the emulated RV32IMAC core.

    python3 benchmarks/kernels.py                       # the four MLPerf Tiny models
    python3 benchmarks/kernels.py MODEL.tflite --json   # any model; machine-readable

For each model: builds the firmware exactly as `edgesdk build MODEL --target c` does, runs one inference
(seeded random input) on the built-in emulator and attributes the executed instructions to the layers of
the generated executor. Prints, per layer, the instructions, the multiply-accumulates (MACs) and
instructions per MAC; per model the inference total (the same number `edgesdk run --json` reports as
inference_instructions), the instructions per MAC of the CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED
layers together, the code size (.text), the goal of issue 5 (a third of TFLite Micro's count) and that of
issue 13 (half of muRISCV-NN's scalar kernels' count).

How a layer is measured: a block hook on the executor function (`edgesdk_<name>_run`) records the
emulator's exact instruction counter at each basic block of that function; a block that ends with a call
and the block the call returns to bracket the callee, whose address is decoded from the call instruction.
The calls to edgesdk_* kernels happen in the order of the `/* layer N: ... */` steps of the generated
model.c, which is how they are matched to layers (the callee names are checked against model.c). The
instructions the executor runs itself (argument set-up, its calls to other functions such as input/output
copies or arena guard checks) are listed as "executor", so the figures add up to the total exactly.

Library use (benchmarks/run.py): profile_model(model_path, work_dir, rounding, seed) -> dict, or
profile_build(build_dir, seed) for an existing `--target c` build.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import kernel_profile  # benchmarks/kernel_profile.py: calls_kernel, the call-attribution rule

ROOT = Path(__file__).resolve().parents[1]
MLPERF_DIR = ROOT.parent / "shared" / "models" / "mlcommons_tiny"
MLPERF_MODELS = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
# Issue 5: TFLite Micro (reference kernels, riscv32_generic, GCC 12.2 -O2) instructions per inference, and
# the goal for --target c builds: at most a third of it. Code goal: at most half of TFLM's .text (85,844 B).
TFLM_INSTRUCTIONS = {"kws": 45.75e6, "vww": 114.56e6, "ic": 127.25e6, "ad": 2.51e6}
GOAL_INSTRUCTIONS = {"kws": 15.25e6, "vww": 38.19e6, "ic": 42.42e6, "ad": 0.837e6}
GOAL_TEXT_BYTES = 42_922
# Issue 13: muRISCV-NN's scalar kernels in TFLite Micro on the same core, and the goal: at most half of it.
MURISCV_NN_INSTRUCTIONS = {"kws": 15.15e6, "vww": 45.36e6, "ic": 54.77e6, "ad": 1.341e6}
HOST_GOAL_INSTRUCTIONS = {"kws": 7.6e6, "vww": 22.7e6, "ic": 27.4e6, "ad": 0.67e6}
MAC_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
LAYER_COMMENT = re.compile(r"/\* layer (\d+): (\w+)")
KERNEL_PATH = re.compile(r"/\* layer (\d+): .*, (blocked|sliding|paired|reference loops: [^)]*)\) \*/")


@dataclass
class Layer:
    index: int
    type: str
    summary: str
    macs: int
    instructions: int = 0
    kernel: str = ""  # the fast path the compiler chose (or why it kept the reference loops)

    @property
    def per_mac(self) -> float | None:
        return self.instructions / self.macs if self.macs else None


def layer_macs(op) -> int:
    """Multiply-accumulates of a CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED op (0 for other ops)."""
    if op.type not in MAC_OPS:
        return 0
    y, w = op.outputs[0], op.inputs[1]
    if op.type == "CONV_2D":
        return int(np.prod(y.shape)) * int(np.prod(w.shape[1:]))
    if op.type == "DEPTHWISE_CONV_2D":
        return int(np.prod(y.shape)) * int(w.shape[1]) * int(w.shape[2])
    out_depth, in_depth = w.shape
    return int(op.inputs[0].num_elements // in_depth) * int(out_depth) * int(in_depth)


def layer_summary(op) -> str:
    x, y = op.inputs[0], op.outputs[0]
    if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w, a = op.inputs[1], op.attrs
        kind = "dw" if op.type == "DEPTHWISE_CONV_2D" else "conv"
        return (f"{kind} {w.shape[1]}x{w.shape[2]}/{a['stride_h']} {x.shape[1]}x{x.shape[2]}x{x.shape[3]}"
                f"->{y.shape[1]}x{y.shape[2]}x{y.shape[3]}")
    if op.type == "FULLY_CONNECTED":
        return f"fc {op.inputs[1].shape[1]}->{op.inputs[1].shape[0]}"
    return f"{'x'.join(map(str, x.shape))}->{'x'.join(map(str, y.shape))}"


# -- attributing executed instructions to layers --------------------------------------------------------

def _instruction_lengths(code: bytes) -> list:
    """Byte lengths of the instructions in `code` (RVC: 2 bytes unless the low two bits are 11)."""
    lengths, pos = [], 0
    while pos < len(code):
        n = 4 if (code[pos] & 3) == 3 else 2
        lengths.append(n)
        pos += n
    return lengths


def _is_call(insn: bytes) -> bool:
    """jal/jalr with rd = ra, or c.jal / c.jalr (both link ra)."""
    if len(insn) == 4:
        word = int.from_bytes(insn, "little")
        opcode, rd = word & 0x7F, (word >> 7) & 0x1F
        return opcode in (0x6F, 0x67) and rd == 1
    half = int.from_bytes(insn, "little")
    if (half & 3) == 1 and (half >> 13) == 0b001:  # c.jal (RV32 only)
        return True
    # c.jalr: funct4 1001, rs1 != 0, rs2 == 0
    return (half & 3) == 2 and (half >> 12) == 0b1001 and ((half >> 7) & 0x1F) != 0 and ((half >> 2) & 0x1F) == 0


def _call_target(site: int, insn: bytes) -> int | None:
    """Target address of a direct call (jal / c.jal), None for a call through a register."""
    if len(insn) == 4:
        word = int.from_bytes(insn, "little")
        if word & 0x7F != 0x6F:
            return None
        imm = (((word >> 31) & 1) << 20) | (((word >> 12) & 0xFF) << 12) | (((word >> 20) & 1) << 11) \
            | (((word >> 21) & 0x3FF) << 1)
        return site + (imm - (1 << 21) if imm & (1 << 20) else imm)
    half = int.from_bytes(insn, "little")
    if (half & 3) != 1:
        return None
    order = {11: 12, 4: 11, 9: 10, 8: 9, 10: 8, 6: 7, 7: 6, 3: 5, 2: 4, 1: 3, 5: 2}
    imm = 0
    for imm_bit, insn_bit in order.items():
        imm |= ((half >> insn_bit) & 1) << imm_bit
    return site + (imm - (1 << 12) if imm & (1 << 11) else imm)


def _step_calls(model_c: str) -> list:
    """(layer index, called function name) of every call in the layer steps of model.c, in source order."""
    calls, current = [], None
    for text in model_c.splitlines():
        match = LAYER_COMMENT.search(text)
        if match:
            current = int(match.group(1))
            continue
        if current is None:
            continue
        if not text.strip() or text.lstrip().startswith("/*") or text.startswith("}"):
            current = None if text.startswith("}") else current
            continue
        calls += [(current, name) for name in re.findall(r"\b(edgesdk_\w+)\s*\(", text)]
    return calls


def _function_name(functions: tuple, address: int) -> str | None:
    for start, size, name in functions:
        if start == address:
            return name
    return None


def _run_function(elf) -> tuple:
    for address, size, name in elf.functions:
        if re.fullmatch(r"edgesdk_\w+_run", name) and size:
            return address, size, name
    raise RuntimeError("no edgesdk_<model>_run function in the firmware")


def profile_build(build_dir, seed: int = 0) -> dict:
    """Run one inference of the built firmware; per-layer instructions and the totals."""
    import unicorn

    from edgesdk.board import load_board
    from edgesdk.emulator.machine import Machine
    from edgesdk.runner import coerce_input, load_report, random_inputs

    build_dir = Path(build_dir)
    report = load_report(build_dir)
    elf_path = build_dir / "firmware.elf"
    machine = Machine(load_board(report["board"]), elf_path)
    try:
        arena = machine.elf.symbols["edgesdk_arena"]
        for i, (x, spec) in enumerate(zip(random_inputs(report, seed), report["io"]["inputs"])):
            machine.write(arena + spec["arena_offset"], coerce_input(x, spec, i).tobytes())
        start, size, run_name = _run_function(machine.elf)
        blocks = []  # (address, size, instruction counter) of every executed block of the run function

        def on_block(uc, address, block_size, user_data):
            blocks.append((address, block_size, machine.instructions()))

        machine.uc.hook_add(unicorn.UC_HOOK_BLOCK, on_block, begin=start, end=start + size - 1)
        machine.run(timeout_s=600.0)
        inference = machine.inference_instructions()
        code = machine.read(start, size)
        functions = machine.elf.functions
    finally:
        machine.close()

    def block_instructions(address, block_size):
        return len(_instruction_lengths(code[address - start:address - start + block_size]))

    def last_instruction(address, block_size):
        offset = address - start
        lengths = _instruction_lengths(code[offset:offset + block_size])
        last = offset + sum(lengths[:-1])
        return start + last, code[last:last + lengths[-1]]

    # The counter is bumped when a block starts, before our hook runs: the callee of the call that ends block
    # k ran between the two snapshots, minus block k+1 itself.
    calls = []
    for (a0, s0, c0), (a1, s1, c1) in zip(blocks, blocks[1:]):
        site, insn = last_instruction(a0, s0)
        if _is_call(insn):
            calls.append((site, insn, c1 - c0 - block_instructions(a1, s1)))
    expected = _step_calls((build_dir / "src" / "model.c").read_text())
    per_layer, copies, k = {}, 0, 0
    for site, insn, count in calls:
        target = _call_target(site, insn)
        name = _function_name(functions, target) if target is not None else None
        if name is not None and not name.startswith("edgesdk_"):
            copies += count  # the executor's own helpers: input/output copies, arena guard checks
            continue
        if k >= len(expected) or (name is not None and not kernel_profile.calls_kernel(name, expected[k][1])):
            want = expected[k][1] if k < len(expected) else "no more calls"
            raise RuntimeError(f"call {k} of {run_name} goes to {name}, model.c says {want}: cannot attribute")
        layer = expected[k][0]
        per_layer[layer] = per_layer.get(layer, 0) + count
        k += 1
    if k != len(expected):
        raise RuntimeError(f"{run_name} made {k} layer calls, model.c has {len(expected)}")
    unattributed = copies
    executor = inference - sum(per_layer.values()) - unattributed
    kernels = {int(m.group(1)): m.group(2) for m in KERNEL_PATH.finditer((build_dir / "src" / "model.c").read_text())}
    return {"inference_instructions": inference, "per_layer": per_layer, "other_calls": unattributed,
            "executor": executor, "run_function": run_name, "kernels": kernels}


# -- building and reporting -----------------------------------------------------------------------------------

def text_bytes(elf_path: Path) -> int:
    from elftools.elf.elffile import ELFFile

    with Path(elf_path).open("rb") as f:
        section = ELFFile(f).get_section_by_name(".text")
        return section["sh_size"] if section is not None else 0


def profile_model(model_path: Path, work_dir: Path, rounding: str = "ref", seed: int = 0,
                  cascade: bool = True) -> dict:
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.importer import import_tflite
    from edgesdk.runner import load_report

    out = work_dir / model_path.stem
    build(model_path, out, BuildOptions(target="c", rounding=rounding, cascade=cascade))
    graph = import_tflite(model_path)
    measured = profile_build(out, seed)
    layers = []
    for op in graph.ops:
        layers.append(Layer(op.index, op.type, layer_summary(op), layer_macs(op),
                            measured["per_layer"].get(op.index, 0), measured["kernels"].get(op.index, "")))
    mac_layers = [layer for layer in layers if layer.macs]
    return {
        "model": model_path.name,
        "rounding": rounding,
        "inference_instructions": measured["inference_instructions"],
        "executor_instructions": measured["executor"] + measured["other_calls"],
        "macs": sum(layer.macs for layer in layers),
        "mac_layer_instructions": sum(layer.instructions for layer in mac_layers),
        "text_bytes": text_bytes(out / "firmware.elf"),
        "flash_bytes": load_report(out)["memory"].get("flash_bytes"),
        "layers": [{"index": layer.index, "type": layer.type, "shape": layer.summary, "macs": layer.macs,
                    "instructions": layer.instructions, "kernel": layer.kernel,
                    "instructions_per_mac": round(layer.per_mac, 3) if layer.macs else None} for layer in layers],
    }


def print_profile(result: dict, key: str | None) -> None:
    print(f"\n{result['model']} (rounding {result['rounding']})")
    print(f"  {'layer':>5}  {'type':<18} {'shape':<34} {'MACs':>10} {'instructions':>13} {'instr/MAC':>9}  kernel")
    for layer in result["layers"]:
        per_mac = f"{layer['instructions_per_mac']:.2f}" if layer["instructions_per_mac"] is not None else ""
        print(f"  {layer['index']:>5}  {layer['type']:<18} {layer['shape']:<34} {layer['macs']:>10,} "
              f"{layer['instructions']:>13,} {per_mac:>9}  {layer['kernel']}")
    print(f"  {'':>5}  {'executor':<18} {'':<34} {'':>10} {result['executor_instructions']:>13,}")
    total, macs = result["inference_instructions"], result["macs"]
    mac_instr = result["mac_layer_instructions"]
    print(f"  inference: {total:,} instructions, {macs:,} MACs, {total / macs:.2f} instructions/MAC overall; "
          f"conv/depthwise/FC layers {mac_instr:,} ({mac_instr / macs:.2f}/MAC)")
    line = f"  .text: {result['text_bytes']:,} B (goal <= {GOAL_TEXT_BYTES:,} B), flash {result['flash_bytes']:,} B"
    if key in GOAL_INSTRUCTIONS:
        goal, tflm = GOAL_INSTRUCTIONS[key], TFLM_INSTRUCTIONS[key]
        verdict = "met" if total <= goal else "NOT met"
        line += (f"; instructions goal <= {goal / 1e6:.3f} M (TFLM {tflm / 1e6:.2f} M): {verdict}, "
                 f"{total / tflm:.3f} x TFLM")
    print(line)
    if key in HOST_GOAL_INSTRUCTIONS:
        goal, muriscv = HOST_GOAL_INSTRUCTIONS[key], MURISCV_NN_INSTRUCTIONS[key]
        verdict = "met" if total <= goal else "NOT met"
        print(f"  issue 13 goal <= {goal / 1e6:.3f} M (half of muRISCV-NN's {muriscv / 1e6:.2f} M): {verdict}, "
              f"{total / muriscv:.3f} x muRISCV-NN")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="model files or MLPerf keys (kws, vww, ic, ad); default: all four")
    parser.add_argument("--rounding", default="ref", choices=("ref", "tflm"))
    parser.add_argument("--seed", type=int, default=0, help="random input seed")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--no-cascade", action="store_true",
                        help="op by op, as `edgesdk build --no-cascade` (issue 13's host-kernel figures)")
    parser.add_argument("--work-dir", help="keep the builds here (default: a temporary directory)")
    args = parser.parse_args(argv)
    chosen = args.models or list(MLPERF_MODELS)
    results = []
    with tempfile.TemporaryDirectory(prefix="edgesdk-kernels-") as tmp:
        work = Path(args.work_dir) if args.work_dir else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in chosen:
            key = name if name in MLPERF_MODELS else None
            path = MLPERF_DIR / MLPERF_MODELS[name] if key else Path(name)
            result = profile_model(path, work, args.rounding, args.seed, cascade=not args.no_cascade)
            result["key"] = key
            results.append(result)
            if not args.json:
                print_profile(result, key)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
