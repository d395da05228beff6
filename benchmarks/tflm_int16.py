"""TFLite Micro's int16 (16x8) reference kernels on the same emulated RV32IMAC core as edgesdk's `--target c`.

    python3 benchmarks/tflm_int16.py                  # the int16 DS-CNN and the 16x8 op models of tests/models
    python3 benchmarks/tflm_int16.py MODEL.tflite ... # other 16x8 models
    python3 benchmarks/tflm_int16.py --json

Issue 13 part 2: edgesdk's int16 kernels at most a third of the instructions of TFLite Micro's int16 reference
kernels. Per CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED layer with int16 input, this script

* builds a bare-metal firmware (the board's link.ld, edgesdk's startup code) whose main() calls TFLite Micro's
  reference kernel for that layer exactly as TFLite Micro's kernels/conv.cc, depthwise_conv.cc and
  fully_connected.cc call it for int16 (ConvPerChannel with int64 accumulation, DepthwiseConvPerChannel,
  FullyConnected / FullyConnectedPerChannel; int32 accumulation where the bias is int32), with the data those
  kernels' Prepare computes (per-channel multipliers and shifts: `edgesdk.ops.prepared(op, "tflm")`, which is
  bit-exact with TFLite Micro), compiled with GCC 12.2 at the board's flags (-O2) and -DNDEBUG;
* feeds each layer the input LiteRT's reference interpreter (BUILTIN_REF) computed for it (seeded random model
  input), counts the instructions of the kernel call between two marks (the emulator's exact counter), and
  checks the output against LiteRT's tensor for that layer (or, for a one-layer model, TFLite Micro's own
  interpreter on the host: LiteRT's reference FULLY_CONNECTED rounds once, TFLite Micro twice);
* measures edgesdk's layer as benchmarks/kernels.py does (the same seeded random model input, default
  rounding), and prints both per layer, per op and per model.

The figure for TFLite Micro is the kernel call alone: its interpreter's per-op dispatch (a few hundred
instructions per op) is left out, in its favour. TFLite Micro's sources: $EDGESDK_TFLM_SRC (a checkout of
github.com/tensorflow/tflite-micro) and $EDGESDK_GEMMLOWP_SRC (github.com/google/gemmlowp), by default the
bare mirrors under /work/.mirror. The target has no C++ library; the kernels need only header templates, taken
from the host's libstdc++ 12 headers (the same GCC release).

Library use (benchmarks/issue13.py): compare(models=None, seed=0) -> dict with "layers" and "ops" rows, or
None when TFLite Micro's sources are not available.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels  # noqa: E402  (benchmarks/kernels.py)

GOAL_RATIO = 1 / 3  # issue 13: edgesdk's int16 kernels at most a third of TFLite Micro's instructions
INT16_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
MIRRORS = Path("/work/.mirror")
TFLM_MIRROR = MIRRORS / "tensorflow+tflite-micro" / "repo"
GEMMLOWP_MIRROR = MIRRORS / "google+gemmlowp" / "repo"
TFLM_PATHS = ("tensorflow/lite/kernels", "tensorflow/lite/core", "tensorflow/lite/c", "tensorflow/lite/types",
              "tensorflow/lite/micro/micro_log.h", "tensorflow/lite/micro/debug_log.h",
              "tensorflow/compiler/mlir/lite/kernels")
OP_MODELS = kernels.ROOT / "tests" / "models" / "ops"
DEFAULT_OP_MODELS = ("conv_1x1_valid_int16", "conv_3x3_same_int16", "conv_s2_same_odd_int16",
                     "conv_dil2_valid_int16", "conv_5x5_nobias_range_int16", "dwconv_3x3_same_int16",
                     "dwconv_mult2_s2_int16", "dwconv_5x3_relu_int16", "dwconv_dil2_valid_int16",
                     "fc_16_8_int16", "fc_relu_odd_int16", "fc_batch3_nobias_int16")
# libstdc++'s target configuration headers: the host's, minus its operating-system part.
LIBSTDCXX = Path("/usr/include/c++/12")
LIBSTDCXX_CONFIG = Path("/usr/include/x86_64-linux-gnu/c++/12/bits")
LIBSTDCXX_CONFIG_FILES = ("c++config.h", "c++allocator.h", "cxxabi_tweaks.h", "atomic_word.h", "gthr.h",
                          "gthr-single.h", "error_constants.h", "ctype_base.h", "ctype_inline.h", "c++locale.h")


def default_models() -> list:
    return [kernels.ROOT.parent / "shared" / "models" / "arm_ml_zoo" / "ds_cnn_s_int16.tflite"] + \
        [OP_MODELS / f"{name}.tflite" for name in DEFAULT_OP_MODELS]


# -- TFLite Micro's sources -------------------------------------------------------------------------------

def _from_git(mirror: Path, paths, dest: Path) -> None:
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", "HEAD", *paths], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)


def source_tree(work: Path) -> Path | None:
    """A directory with TFLite Micro's kernel headers, gemmlowp's fixedpoint and the libstdc++ config; None if
    the sources (or the host's libstdc++ 12 headers) are not on this machine."""
    tflm = os.environ.get("EDGESDK_TFLM_SRC")
    gemmlowp = os.environ.get("EDGESDK_GEMMLOWP_SRC")
    tree = work / "tflm-src"
    if (tree / "ok").exists():
        return tree
    if not (LIBSTDCXX / "algorithm").exists() or not (LIBSTDCXX_CONFIG / "c++config.h").exists():
        return None  # the kernels' C++ headers come from the host's libstdc++ 12
    tree.mkdir(parents=True, exist_ok=True)
    if tflm:
        for path in TFLM_PATHS:
            source = Path(tflm) / path
            if source.is_dir():
                shutil.copytree(source, tree / path, dirs_exist_ok=True)
            elif source.exists():
                (tree / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, tree / path)
    elif TFLM_MIRROR.exists():
        _from_git(TFLM_MIRROR, TFLM_PATHS, tree)
    else:
        return None
    (tree / "gemmlowp").mkdir(exist_ok=True)
    if gemmlowp:
        shutil.copytree(Path(gemmlowp) / "fixedpoint", tree / "gemmlowp" / "fixedpoint", dirs_exist_ok=True)
        shutil.copytree(Path(gemmlowp) / "internal", tree / "gemmlowp" / "internal", dirs_exist_ok=True)
    elif GEMMLOWP_MIRROR.exists():
        _from_git(GEMMLOWP_MIRROR, ("fixedpoint", "internal"), tree / "gemmlowp")
    else:
        return None
    config = tree / "cxx" / "bits"
    config.mkdir(parents=True, exist_ok=True)
    for name in LIBSTDCXX_CONFIG_FILES:
        shutil.copy(LIBSTDCXX_CONFIG / name, config / name)
    shutil.copy(config / "gthr-single.h", config / "gthr-default.h")
    for name in ("os_defines.h", "cpu_defines.h"):  # bare metal: no operating-system or CPU specifics
        (config / name).write_text("#pragma once\n")
    (tree / "ok").write_text("")
    return tree


# -- one harness per model ----------------------------------------------------------------------------------

def _array(ctype: str, name: str, values, const: bool = True) -> str:
    flat = np.asarray(values).reshape(-1)
    body = ",".join(str(int(v)) for v in flat) or "0"
    return f"{'static const' if const else 'static'} {ctype} {name}[{max(1, flat.size)}] = {{{body}}};\n"


def _shape(dims) -> str:
    dims = [int(d) for d in dims]
    return f"tflite::RuntimeShape({len(dims)}, (const int32_t[]){{{','.join(map(str, dims))}}})"


def _layer_code(k: int, op, x: np.ndarray) -> tuple:
    """(declarations, call) of layer k: TFLite Micro's int16 kernel call for `op` on input `x`."""
    from edgesdk.ops import prepared

    data = prepared(op, "tflm")
    w, b, y = op.inputs[1], op.inputs[2] if len(op.inputs) > 2 else None, op.outputs[0]
    bias_type = "int32_t" if b is not None and b.dtype == "int32" else "int64_t"
    decl = _array("int16_t", f"in{k}", x) + _array("int8_t", f"w{k}", w.data)
    decl += _array(bias_type, f"b{k}", b.data) if b is not None else ""
    decl += _array("int32_t", f"m{k}", data.multipliers) + _array("int32_t", f"s{k}", data.shifts)
    decl += f"int16_t out{k}[{y.num_elements}];\n"
    bias = f"b{k}" if b is not None else f"(const {bias_type}*)nullptr"
    bias_shape = _shape([b.num_elements]) if b is not None else "tflite::RuntimeShape()"
    act = f"p.quantized_activation_min = {data.act_min}; p.quantized_activation_max = {data.act_max};"
    offsets = f"p.input_offset = {data.input_offset}; p.weights_offset = 0; p.output_offset = {data.output_offset};"
    if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        a = op.attrs
        params = "tflite::ConvParams" if op.type == "CONV_2D" else "tflite::DepthwiseParams"
        setup = (f"{params} p = {{}}; {offsets} {act} p.stride_height = {a['stride_h']}; "
                 f"p.stride_width = {a['stride_w']}; p.dilation_height_factor = {a['dilation_h']}; "
                 f"p.dilation_width_factor = {a['dilation_w']}; p.padding_values.height = {a['pad_top']}; "
                 f"p.padding_values.width = {a['pad_left']};")
        if op.type == "CONV_2D":
            call = (f"tflite::reference_integer_ops::ConvPerChannel<{bias_type}>(p, m{k}, s{k}, {_shape(x.shape)}, "
                    f"in{k}, {_shape(w.shape)}, w{k}, {bias_shape}, {bias}, {_shape(y.shape)}, out{k});")
        else:
            setup += f" p.depth_multiplier = {a['depth_multiplier']};"
            call = (f"tflite::reference_integer_ops::DepthwiseConvPerChannel(p, m{k}, s{k}, {_shape(x.shape)}, "
                    f"in{k}, {_shape(w.shape)}, w{k}, {bias_shape}, {bias}, {_shape(y.shape)}, out{k});")
    else:
        setup = (f"tflite::FullyConnectedParams p = {{}}; {offsets} {act} "
                 f"p.output_multiplier = m{k}[0]; p.output_shift = s{k}[0];")
        in_depth = int(w.shape[1])
        x_shape = _shape([x.size // in_depth, in_depth])
        y_shape = _shape([y.num_elements // int(w.shape[0]), int(w.shape[0])])
        if len(data.multipliers) > 1:
            call = (f"tflite::reference_integer_ops::FullyConnectedPerChannel(p, m{k}, (const int*)s{k}, {x_shape}, "
                    f"in{k}, {_shape(w.shape)}, w{k}, {bias_shape}, {bias}, {y_shape}, out{k});")
        else:
            call = (f"tflite::reference_integer_ops::FullyConnected(p, {x_shape}, in{k}, {_shape(w.shape)}, w{k}, "
                    f"{bias_shape}, {bias}, {y_shape}, out{k});")
    return decl, f"  {{ {setup}\n    edgesdk_harness_mark({2 * k + 1});\n    {call}\n    edgesdk_harness_mark({2 * k + 2}); }}\n"


HARNESS_HEAD = """// Generated by benchmarks/tflm_int16.py: TFLite Micro's int16 reference kernels, one call per layer.
#include "tensorflow/lite/kernels/internal/reference/integer_ops/conv.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/depthwise_conv.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/fully_connected.h"

extern "C" __attribute__((noinline, noipa, used)) void edgesdk_harness_mark(int which)
{
    __asm__ volatile("" : : "r"(which) : "memory");
}

"""


def harness_source(layers: list) -> str:
    decls, calls = [], []
    for k, (op, x) in enumerate(layers):
        decl, call = _layer_code(k, op, x)
        decls.append(decl)
        calls.append(call)
    return HARNESS_HEAD + "".join(decls) + "\nextern \"C\" int main(void)\n{\n" + "".join(calls) + "  return 0;\n}\n"


def build_harness(source: str, tree: Path, work: Path, board) -> Path:
    from edgesdk.firmware_build.board_files import render_board_files

    gen = work / "gen"
    render_board_files(board, gen)
    fw = kernels.ROOT / "edgesdk" / "firmware"
    cpu, flags = board.cpu, board.toolchain.get("cflags", [])
    prefix = board.toolchain["prefix"]
    arch = [f"-march={cpu['march']}", f"-mabi={cpu['mabi']}"]
    link_arch = [f"-march={cpu.get('link_march', cpu['march'])}", f"-mabi={cpu['mabi']}"]
    gcc = Path(f"/usr/lib/gcc/{prefix.rstrip('-')}")
    gcc_include = next(gcc.iterdir())
    cxx = [f"{prefix}g++", *arch, *flags, "-DNDEBUG", "-std=c++17", "-fno-exceptions", "-fno-rtti",
           "-fno-threadsafe-statics", "-nostdinc", f"-I{tree}", f"-I{tree / 'gemmlowp'}", "-isystem",
           str(tree / "cxx"), "-isystem", str(LIBSTDCXX), "-isystem",
           f"/usr/lib/picolibc/{prefix.rstrip('-')}/include", "-isystem", str(gcc_include / "include"),
           "-isystem", str(gcc_include / "include-fixed"), "-c"]
    (work / "harness.cc").write_text(source)
    objects = []
    for cc in (work / "harness.cc", tree / "tensorflow/lite/kernels/internal/common.cc",
               tree / "tensorflow/lite/kernels/internal/runtime_shape.cc"):
        objects.append(work / (cc.stem + ".o"))
        subprocess.run([*cxx, str(cc), "-o", str(objects[-1])], check=True)
    for name in ("startup.c", "console.c"):
        obj = work / (name + ".o")
        subprocess.run([f"{prefix}gcc", *arch, "--specs=picolibc.specs", *flags, f"-I{gen}", f"-I{fw}", "-c",
                        str(fw / name), "-o", str(obj)], check=True)
        objects.append(obj)
    elf = work / "tflm.elf"
    # Linked by gcc: the kernels are templates and need nothing from a C++ library (the target has none).
    subprocess.run([f"{prefix}gcc", *link_arch, "--specs=picolibc.specs", *board.toolchain.get("ldflags", []),
                    "-T", str(gen / "link.ld"), *map(str, objects), "-o", str(elf)], check=True)
    return elf


def reference_tensors(model_path: Path, seed: int) -> dict:
    """Every tensor of LiteRT's reference interpreter (BUILTIN_REF) on a seeded random int16 input."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_path=str(model_path), experimental_preserve_all_tensors=True,
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(seed)
    for detail in interpreter.get_input_details():
        info = np.iinfo(detail["dtype"]) if np.issubdtype(detail["dtype"], np.integer) else None
        data = rng.integers(info.min, info.max + 1, detail["shape"], dtype=detail["dtype"]) if info else \
            rng.standard_normal(detail["shape"]).astype(detail["dtype"])
        interpreter.set_tensor(detail["index"], data)
    interpreter.invoke()
    return {d["index"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_tensor_details()
            if d["index"] >= 0 and _has_data(interpreter, d["index"])}


def _has_data(interpreter, index: int) -> bool:
    try:
        interpreter.get_tensor(index)
    except ValueError:
        return False
    return True


def tflm_model(model_path: Path, tree: Path, work: Path, seed: int = 0) -> list:
    """One row per int16 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED layer: TFLite Micro's instructions and
    whether its output equals LiteRT's."""
    from edgesdk.board import load_board
    from edgesdk.emulator.machine import Machine
    from edgesdk.importer import import_tflite

    graph = import_tflite(model_path)
    tensors = reference_tensors(model_path, seed)
    layers = [(op, tensors[op.inputs[0].id]) for op in graph.ops
              if op.type in INT16_OPS and op.inputs[0].dtype == "int16" and op.inputs[1].dtype == "int8"]
    if not layers:
        return []
    board = load_board("riscv-npu")
    work.mkdir(parents=True, exist_ok=True)
    elf = build_harness(harness_source(layers), tree, work, board)
    from edgesdk.emulator.machine import elf_symbol

    machine = Machine(board, elf)
    try:
        machine.run(600.0, None)
        if machine.exit_code() != 0:
            raise RuntimeError(f"the TFLite Micro harness of {model_path.name} exited {machine.exit_code()}")
        marks = machine.mark_instructions()
        rows = []
        for k, (op, _) in enumerate(layers):
            y = op.outputs[0]
            got = np.frombuffer(machine.read(elf_symbol(elf, f"out{k}"), y.num_elements * 2), np.int16)
            rows.append({"model": model_path.name, "index": op.index, "op": op.type,
                         "shape": kernels.layer_summary(op), "macs": kernels.layer_macs(op),
                         "tflm_instructions": marks[2 * k + 1] - marks[2 * k],
                         "checked_against": _check(model_path, graph, op, tensors, got)})
        return rows
    finally:
        machine.close()


def _check(model_path: Path, graph, op, tensors: dict, got: np.ndarray) -> str:
    """What the harness's output equals: "LiteRT" (its reference kernels' tensor for the layer) or, for a
    one-layer model, "TFLite Micro" (its own interpreter on the host: LiteRT's reference FULLY_CONNECTED rounds
    the requantization once, TFLite Micro twice); "NO" when neither."""
    if np.array_equal(got, tensors[op.outputs[0].id].reshape(-1)):
        return "LiteRT"
    if len(graph.ops) == 1:
        from edgesdk.reference import run_reference

        (expected,) = run_reference(model_path, [tensors[op.inputs[0].id]], "tflm")
        if np.array_equal(got, np.asarray(expected).reshape(-1)):
            return "TFLite Micro"
    return "NO"


def compare(models=None, seed: int = 0, work_dir=None) -> dict | None:
    """TFLite Micro's int16 reference kernels and edgesdk's `--target c` kernels, layer by layer; None when
    TFLite Micro's sources are not on this machine."""
    models = [Path(m) for m in (models or default_models())]
    with tempfile.TemporaryDirectory(prefix="edgesdk-tflm16-") as tmp:
        work = Path(work_dir) if work_dir else Path(tmp)
        tree = source_tree(work)
        if tree is None:
            return None
        rows = []
        for model in models:
            tflm_rows = tflm_model(model, tree, work / f"tflm-{model.stem}", seed)
            if not tflm_rows:
                continue
            ours = kernels.profile_model(model, work, "ref", seed)
            by_index = {layer["index"]: layer for layer in ours["layers"]}
            for row in tflm_rows:
                layer = by_index[row["index"]]
                row.update(edgesdk_instructions=layer["instructions"], kernel=layer["kernel"] or "generic",
                           ratio=layer["instructions"] / row["tflm_instructions"])
                rows.append(row)
    return {"seed": seed, "goal_ratio": GOAL_RATIO, "layers": rows, "ops": by_op(rows), "models": by_model(rows)}


def _totals(key, rows: list) -> dict:
    tflm = sum(r["tflm_instructions"] for r in rows)
    ours = sum(r["edgesdk_instructions"] for r in rows)
    return {key[0]: key[1], "layers": len(rows), "macs": sum(r["macs"] for r in rows), "tflm_instructions": tflm,
            "edgesdk_instructions": ours, "ratio": ours / tflm, "worst_layer_ratio": max(r["ratio"] for r in rows),
            "met": ours <= GOAL_RATIO * tflm, "checked": all(r["checked_against"] != "NO" for r in rows)}


def by_op(rows: list) -> list:
    return [_totals(("op", op), [r for r in rows if r["op"] == op]) for op in INT16_OPS
            if any(r["op"] == op for r in rows)]


def by_model(rows: list) -> list:
    names = list(dict.fromkeys(r["model"] for r in rows))
    return [_totals(("model", name), [r for r in rows if r["model"] == name]) for name in names]


def print_tables(result: dict) -> None:
    print(f"int16 layers: TFLite Micro reference kernels vs edgesdk --target c (seed {result['seed']}, goal: "
          f"edgesdk <= 1/3 of TFLite Micro)")
    print(f"  {'model':<28} {'layer':>5} {'op':<18} {'shape':<32} {'MACs':>9} {'TFLM':>11} {'edgesdk':>10} "
          f"{'ratio':>6}  kernel / TFLM output equals")
    for r in result["layers"]:
        print(f"  {r['model']:<28} {r['index']:>5} {r['op']:<18} {r['shape']:<32} {r['macs']:>9,} "
              f"{r['tflm_instructions']:>11,} {r['edgesdk_instructions']:>10,} {r['ratio']:>6.3f}  {r['kernel']} / "
              f"{r['checked_against']}")
    for title, key, groups in (("per op", "op", result["ops"]), ("per model", "model", result["models"])):
        print(f"\n{title}")
        for g in groups:
            print(f"  {g[key]:<28} {g['layers']:>3} layers {g['tflm_instructions']:>12,} TFLM {g['edgesdk_instructions']:>11,}"
                  f" edgesdk = {g['ratio']:.3f} (worst layer {g['worst_layer_ratio']:.3f}): "
                  f"{'met' if g['met'] else 'NOT met'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="16x8 models (default: the int16 DS-CNN and op models)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--work-dir")
    args = parser.parse_args(argv)
    result = compare(args.models or None, args.seed, args.work_dir)
    if result is None:
        print("TFLite Micro's sources are not on this machine: set EDGESDK_TFLM_SRC and EDGESDK_GEMMLOWP_SRC")
        return 1
    print(json.dumps(result, indent=2) if args.json else "", end="")
    if not args.json:
        print_tables(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
