"""Command line: edgesdk build | export | run | inspect | tune | regress | hil | flash.

User errors (EdgesdkError) print one paragraph and exit with the error's code; anything else is an internal
error: one paragraph asking for a bug report (the traceback only with EDGESDK_DEBUG=1).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

import numpy as np

from . import __version__
from .errors import EdgesdkError, EnvironmentFailure, UsageError

INTERNAL_ERROR_EXIT = 70


# OSError numbers that mean the machine refused (not an edgesdk bug): reported with EnvironmentFailure's code.
ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EBUSY, errno.EXDEV,
                      errno.EMFILE, errno.ENFILE, errno.EIO, errno.ENOMEM, errno.ETXTBSY}


class Terminated(BaseException):
    """SIGTERM: unwind like Ctrl-C, so staging directories and child processes are cleaned up."""


def _on_sigterm(signum, frame):
    raise Terminated()


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error exits with edgesdk's usage code (7, edgesdk/errors.py), not argparse's 2
    (which edgesdk documents as a model error)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(UsageError.exit_code, f"edgesdk: error: {message} (see '{self.prog} --help').\n")


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return UsageError.exit_code
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    from .progress import reset_verbosity, set_verbosity

    verbosity = set_verbosity(getattr(args, "verbosity", NORMAL))  # this command's only: main() may be called again
    try:
        return args.func(args) or 0
    except EdgesdkError as err:
        print(f"edgesdk: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("edgesdk: interrupted; no output was written.", file=sys.stderr)
        return 130
    except Terminated:
        print("edgesdk: terminated (SIGTERM); no output was written.", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # The reader went away (`edgesdk run ... | head`); point stdout at /dev/null so the interpreter's
        # final flush does not fail again, and say so on stderr.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("edgesdk: error: standard output was closed before all output was written (broken pipe).",
              file=sys.stderr)
        return EnvironmentFailure.exit_code
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            return _internal_error(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"edgesdk: error: the system refused an operation: {exc.strerror}{where}. Free space or choose a "
              "writable location (-o, --output-dir, $TMPDIR), then run the command again; an existing output "
              "directory was left as it was.", file=sys.stderr)
        return EnvironmentFailure.exit_code
    except Exception as exc:  # an edgesdk bug, not a user error
        return _internal_error(exc)
    finally:
        reset_verbosity(verbosity)


def _internal_error(exc: BaseException) -> int:
    if os.environ.get("EDGESDK_DEBUG"):
        traceback.print_exception(exc)
    print(f"edgesdk: internal error ({type(exc).__name__}: {exc}). This is a bug in edgesdk; please report it "
          "with the command line and the model. Set EDGESDK_DEBUG=1 to see the traceback.", file=sys.stderr)
    return INTERNAL_ERROR_EXIT


QUIET, NORMAL, VERBOSE = 0, 1, 2  # = edgesdk.progress (not imported here: --help stays fast)
DEFAULT_OUTPUT_ROOT = "edgesdk-out"  # build without -o: edgesdk-out/<model file stem>


def _verbosity_options() -> argparse.ArgumentParser:
    """-v / -q, accepted by every command."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=VERBOSE, default=NORMAL,
                       help="say more: per-layer tables, every progress step")
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=QUIET,
                       help="print only errors, warnings and what was asked for (--json)")
    return common


TARGET_HELP = ("target priority list, last = fallback (default: the board's board.json default_targets; "
               "`edgesdk inspect --list-targets` lists the installed targets)")


def make_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="edgesdk", description="Compile quantized TFLite models into bare-metal RISC-V + accelerator firmware.",
                       epilog="Exit codes: 0 ok, 2 model, 3 unsupported op, 4 does not fit, 5 toolchain, 6 emulator or "
                              "firmware failure, 7 usage, 8 --check mismatch, 9 no debug probe, 10 the machine refused.")
    p.add_argument("--version", action="version", version=f"edgesdk {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=ArgumentParser)
    common = [_verbosity_options()]

    b = sub.add_parser("build", parents=common,
                       help="compile a model into firmware (OUT/firmware.elf, sources, report.json, report.html)")
    b.add_argument("model", help="the .tflite model")
    b.add_argument("--board", default="riscv-npu", help="board name or path to a board.json (default riscv-npu)")
    b.add_argument("--target", default=None, help=TARGET_HELP)
    b.add_argument("--rounding", default="ref", choices=["ref", "tflm", "ort"],
                   help="match LiteRT's reference kernels (ref, default), TFLite Micro (tflm) or, for QDQ ONNX "
                        "models, ONNX Runtime's CPU execution (ort); docs/rounding.md")
    b.add_argument("-o", "--output",
                   help=f"output directory, replaced atomically (default {DEFAULT_OUTPUT_ROOT}/<model file name without "
                        "extension> in the working directory)")
    b.add_argument("--no-firmware", action="store_true", help="generate sources and report only, skip the cross-compile")
    b.add_argument("--werror", action="store_true", help="fail the firmware build on any compiler warning")
    b.add_argument("--no-cascade", action="store_true",
                   help="never run layer chains in row stripes (cascading), even where it shrinks the arena or makes "
                        "the model fit")
    b.add_argument("--stream-input", action="store_true",
                   help="the caller gives the image input in rows (camera lines) through "
                        "edgesdk_default_read_input_rows(), so it is never whole in the arena (docs/streaming-input.md)")
    b.add_argument("--name", default="default",
                   help="prefix of the model's C symbols and files: edgesdk_NAME_run(), NAME_model.h (default "
                        "'default': edgesdk_default_run(), model.h); models of different names link into one "
                        "firmware (docs/several-models.md). Lower-case letters, digits and '_'")
    b.add_argument("--tuning-log", metavar="LOG.json",
                   help="apply the schedule 'edgesdk tune' wrote (same model, board, targets and rounding)")
    b.add_argument("--export", action="store_true",
                   help="also write OUT/export/<model>/ and <model>.tar: the model as a static library for your own "
                        "firmware (sources, Makefile, CMakeLists.txt, metadata.json)")
    b.add_argument("--dump-after", metavar="PASS", action="append", default=[],
                   help="print the compiler's state (ops, tensors, targets, memory plan, executor steps) to stderr "
                        "after pass PASS: import, fold, partition, scratch, plan or codegen (repeatable, or "
                        "comma-separated; 'all' for every pass)")
    b.add_argument("--json", action="store_true", help="print the report as JSON instead of the summary")
    b.set_defaults(func=cmd_build)

    e = sub.add_parser("export", parents=common,
                       help="write OUT/export/: an existing build's model as a static library for your own firmware")
    e.add_argument("build_dir", help="output directory of 'edgesdk build'")
    e.add_argument("--no-measure", action="store_true",
                   help="do not compile the library to measure its code size and stack (faster; needs no toolchain)")
    e.add_argument("--json", action="store_true", help="print metadata.json instead of the summary")
    e.set_defaults(func=cmd_export)

    k = sub.add_parser("link", parents=common,
                       help="link builds made with different --name into one firmware image (run it with 'edgesdk run')")
    k.add_argument("build_dirs", nargs="+", metavar="BUILD_DIR",
                   help="output directories of 'edgesdk build --name NAME', one per model, all for one board")
    k.add_argument("-o", "--output", required=True, metavar="IMAGE",
                   help="the image's directory (replaced as a whole, under the same rules as a build's -o)")
    k.add_argument("--werror", action="store_true", help="fail the firmware build on any compiler warning")
    k.add_argument("--json", action="store_true", help="print image.json instead of the summary")
    k.set_defaults(func=cmd_link)

    t = sub.add_parser("tune", parents=common,
                       help="search per-layer schedules (cost models + emulator), write a tuning log")
    t.add_argument("model", help="the .tflite model")
    t.add_argument("--board", default="riscv-npu", help="board name or path to a board.json (default riscv-npu)")
    t.add_argument("--target", default=None, help=TARGET_HELP)
    t.add_argument("--rounding", default="ref", choices=["ref", "tflm", "ort"], help="as for build (default ref)")
    t.add_argument("--objective", default="latency", choices=["latency", "sram"],
                   help="least estimated latency that fits the board (default), or least arena, ties by latency")
    t.add_argument("--verify", type=int, default=2, metavar="K",
                   help="build and run the best K candidates on the emulator and choose by measurement (default 2)")
    t.add_argument("--seconds", type=float, default=60.0, metavar="N", help="time budget of the search (default 60)")
    t.add_argument("--seed", type=int, default=0, help="seed of the search order and of the measured input (default 0)")
    t.add_argument("-o", "--output", required=True, metavar="LOG.json", help="the tuning log to write")
    t.add_argument("--json", action="store_true", help="print the log instead of the summary")
    add_pool_arguments(t, "measure the --verify candidates in parallel")
    t.set_defaults(func=cmd_tune)

    g = sub.add_parser("regress", parents=common, help="build, run and check every model x board x target list; one summary table")
    g.add_argument("models", nargs="+", metavar="MODEL", help=".tflite models")
    g.add_argument("--boards", default="riscv-npu", help="comma-separated boards (default riscv-npu)")
    g.add_argument("--targets", default=None,
                   help="semicolon-separated target priority lists (default: each board's board.json default_targets)")
    g.add_argument("--rounding", default="ref", choices=["ref", "tflm"], help="as for build (default ref)")
    g.add_argument("--seeds", default="0", help="comma-separated seeds of the random inputs, one run each (default 0)")
    g.add_argument("--run-on", default="builtin", choices=["builtin", "qemu", "board"],
                   help="the built-in emulator (default), the board's QEMU machine (CPU-only builds), or the board "
                        "itself through its probe's GDB server, on the node offering the Ray resource board:<name>")
    g.add_argument("--timeout", type=float, default=120.0, help="wall-clock limit of each run in seconds (default 120)")
    g.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="where to write summary.json, summary.txt and each row's build (replaced atomically)")
    g.add_argument("--json", action="store_true", help="print summary.json instead of the table")
    add_pool_arguments(g, "run the rows in parallel")
    g.set_defaults(func=cmd_regress)

    r = sub.add_parser("run", parents=common, help="run a build on the built-in emulator (or on QEMU)")
    r.add_argument("build_dir", help="output directory of 'edgesdk build', or an image of 'edgesdk link'")
    r.add_argument("--emulator", default="builtin", choices=["builtin", "qemu"],
                   help="the built-in emulator (default), or stock QEMU with the board's machine (board.json "
                        "\"qemu\"; CPU-only builds)")
    r.add_argument("--input", action="append", default=[],
                   help=".npy input (repeat per model input, in order), or one .npz holding every input (by the model's "
                        "input names, or arr_0, arr_1, ... in order); for an image, NAME=FILE per model")
    r.add_argument("--random-input", type=int, metavar="SEED", help="use seeded random inputs instead of --input")
    r.add_argument("--output-dir", help="where to write output_0.npy, ... (default BUILD_DIR/run)")
    r.add_argument("--check", action="store_true", help="also run the reference interpreter and compare byte for byte")
    r.add_argument("--steps", type=int, default=1, metavar="N",
                   help="run N inferences in one boot (a stateful model carries its state); --input files then hold "
                        "N inputs stacked along a new first axis, --random-input uses seeds SEED..SEED+N-1")
    r.add_argument("--timeout", type=float, default=120.0, help="wall-clock limit in seconds (default 120)")
    r.add_argument("--print-top", type=int, metavar="K",
                   help="print each output's K largest values with their indices (and real values, if quantized)")
    r.add_argument("--profile", action="store_true",
                   help="measure instructions and accelerator cycles per layer (built-in emulator); writes profile.json and "
                        "report.html into the output folder")
    r.add_argument("--max-instructions", type=int, metavar="N",
                   help="stop with an error after N CPU instructions (built-in emulator; a deterministic limit, e.g. "
                        "for a model whose WHILE loop may not end)")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.set_defaults(func=cmd_run)

    i = sub.add_parser("inspect", parents=common, help="show where each op of a model would run, and why")
    i.add_argument("model", nargs="?", help="the .tflite model")
    i.add_argument("--board", default="riscv-npu")
    i.add_argument("--target", default=None,
                   help="priority list (default: the board's board.json default_targets; with --list-ops: every "
                        "installed target)")
    i.add_argument("--list-ops", action="store_true", help="list every target's supported ops and constraints")
    i.add_argument("--list-targets", action="store_true",
                   help="list the installed targets (built-in and plugins) and whether the board has their hardware")
    i.add_argument("--markdown", action="store_true", help="with --list-ops: print docs/supported-ops.md")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_inspect)

    h = sub.add_parser("hil", parents=common,
                       help="run the hardware-in-the-loop Robot suites (edgesdk/hil/suites) against a build")
    h.add_argument("build_dir", help="output directory of 'edgesdk build'")
    h.add_argument("--emulator", default="builtin", choices=["builtin", "renode"],
                   help="built-in emulator with plain robot (default), or Renode with renode-test")
    h.add_argument("--suite", action="append", default=[], help="run only this suite (repeatable; default: all)")
    h.add_argument("--input", action="append", default=[],
                   help=".npy input embedded in the firmware (per model input), or one .npz holding all of them")
    h.add_argument("--random-input", type=int, default=0, metavar="SEED", help="seed of the random inputs (default 0)")
    h.set_defaults(func=cmd_hil)

    f = sub.add_parser("flash", parents=common, help="program a build's firmware into the board's flash")
    f.add_argument("build_dir", help="output directory of 'edgesdk build'")
    f.add_argument("--probe", required=True, choices=["openocd", "gdb", "emulator"],
                   help="OpenOCD with the board's config, a GDB server, or the built-in emulator's flash")
    f.add_argument("--gdb-server", help="HOST:PORT of the GDB server (--probe gdb; default from board.json)")
    f.add_argument("--no-reset", action="store_true",
                   help="--probe gdb: send none of board.json's reset commands (for a GDB server without them, such "
                        "as QEMU's -gdb); GDB detaches after loading and the core runs the firmware from its entry")
    f.set_defaults(func=cmd_flash)
    return p


# -- build ------------------------------------------------------------------------------------------
def cmd_build(args) -> int:
    from .compiler import BuildOptions, build

    if args.tuning_log and args.no_cascade:
        raise UsageError("--no-cascade and --tuning-log conflict: the tuning log's schedule says which layers run "
                         "in stripes. Drop one of them.")
    options = BuildOptions(board=args.board, target=args.target, rounding=args.rounding,
                           compile_firmware=not args.no_firmware, werror=args.werror,
                           cascade=not args.no_cascade, tuning_log=args.tuning_log, export=args.export,
                           dump_after=_dump_after(args.dump_after), stream_input=args.stream_input,
                           name=args.name)
    output = args.output or default_output_dir(args.model)
    if args.output is None and args.verbosity >= NORMAL:
        print(f"edgesdk: no -o given: writing {output}", file=sys.stderr)
    report = build(args.model, output, options)
    for warning in report.get("warnings", []):
        print(f"edgesdk: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.verbosity >= NORMAL:
        print(build_summary(report, output, verbose=args.verbosity >= VERBOSE))
        if report.get("export"):
            print(export_summary(Path(output) / report["export"]["dir"], Path(output) / report["export"]["tar"],
                                 json.loads((Path(output) / report["export"]["dir"] / "metadata.json").read_text())))
    return 0


def default_output_dir(model: str) -> str:
    """Where a build without -o goes: edgesdk-out/<model file name without its extension>, under the working
    directory (replaced by the next such build, under the same rules as -o: edgesdk/output_dir.py)."""
    stem = Path(model).stem or "model"
    return str(Path(DEFAULT_OUTPUT_ROOT) / stem)


def _dump_after(values: list) -> tuple:
    from .compiler import PASS_NAMES

    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    return PASS_NAMES if "all" in names else tuple(names)  # unknown names: compile_model says which exist


def cmd_link(args) -> int:
    from .image import link_builds

    image = link_builds(args.build_dirs, args.output, werror=args.werror)
    if args.json:
        print(json.dumps(image, indent=2))
    elif args.verbosity >= NORMAL:
        models = ", ".join(f"{m['name']} ({Path(m['build']).name})" for m in image["models"])
        print(f"image: {args.output}/firmware.elf, {len(image['models'])} models for {image['board']}: {models}")
        if image.get("flash_bytes") is not None:
            print(f"flash: {image['flash_bytes']} B")
        print(f"run it: edgesdk run {args.output} --random-input 0 --check")
    return 0


def cmd_export(args) -> int:
    from .export import export_build

    result = export_build(args.build_dir, measure=not args.no_measure)
    print(json.dumps(result.metadata, indent=2) if args.json else export_summary(result.dir, result.tar, result.metadata))
    return 0


def export_summary(folder: Path, tar: Path, metadata: dict) -> str:
    memory = metadata["memory"]
    lines = [f"export: {folder}/ and {tar} (lib{metadata['library']['name']}.a: make -C {folder}, or its CMakeLists.txt)",
             f"  arena {memory['arena']['bytes']} B (+ {memory['arena']['guard_bytes']} B guards, .noinit), "
             f"constants {memory['constants']['bytes']} B"]
    sizes, stack = memory["library"], memory["stack"]
    if "flash_bytes" in sizes:
        lines.append(f"  linked: {sizes['flash_bytes']} B flash (text {sizes['text']}, rodata {sizes['rodata']}, data "
                     f"{sizes['data']}), {sizes['ram_bytes']} B RAM (bss {sizes['bss']}, noinit {sizes['noinit']}); "
                     + (f"stack {stack['bytes']} B" if stack.get("bytes") is not None
                        else f"stack unknown ({stack.get('reason')})"))
    else:
        lines.append(f"  code size and stack not measured: {sizes.get('reason')}")
    return "\n".join(lines)


def add_pool_arguments(parser, purpose: str) -> None:
    """--workers N | --cluster ADDRESS (edgesdk/farm/pool.py)."""
    group = parser.add_argument_group("parallel runs (edgesdk/farm, docs/farm.md)")
    group.add_argument("--workers", type=int, default=1, metavar="N",
                       help=f"{purpose} on N local worker processes (Ray, the [farm] extra); 1 (default): serially "
                            "in this process")
    group.add_argument("--cluster", metavar="ADDRESS",
                       help=f"{purpose} on an existing Ray cluster: HOST:PORT of its head, 'auto', or ray://HOST:PORT "
                            "(docs/farm.md)")


def cmd_regress(args) -> int:
    from .farm.regress import RegressOptions, exit_code, parse_list, parse_seeds, regress, summary_table

    options = RegressOptions(boards=parse_list(args.boards, ",", "--boards", "riscv-npu,hifive1-revb"),
                             target_lists=parse_list(args.targets, ";", "--targets", '"a,b;b"') if args.targets else (),
                             rounding=args.rounding, seeds=parse_seeds(args.seeds), run_on=args.run_on,
                             timeout_s=args.timeout)
    from .progress import say

    summary = regress(args.models, args.output, options, args.workers, args.cluster, say)
    if args.json:
        print(json.dumps(summary, indent=2))
    elif args.verbosity >= NORMAL:
        print(summary_table(summary) + f"\nsummary: {Path(args.output) / 'summary.json'}")
    return exit_code(summary)


def cmd_tune(args) -> int:
    from .tune.log import write_tuning_log
    from .tune.tuner import TuneOptions, summary, tune

    options = TuneOptions(board=args.board, target=args.target, rounding=args.rounding, objective=args.objective,
                          verify=args.verify, seconds=args.seconds, seed=args.seed, workers=args.workers,
                          cluster=args.cluster)
    from .progress import say

    say(f"tuning {Path(args.model).name}: search budget {args.seconds:g} s, then {args.verify} candidate(s) built and "
        "run on the emulator")
    log = tune(args.model, options, lambda text: say(f"tune: {text}"))
    write_tuning_log(args.output, log)
    if args.json:
        print(json.dumps(log, indent=2))
    elif args.verbosity >= NORMAL:
        print(summary(log) + f"\nlog: {args.output}")
    return 0


def build_summary(report: dict, out_dir, verbose: bool = False) -> str:
    lines = [f"edgesdk build: {Path(report['model']).name} -> {out_dir} (board {report['board']}, targets "
             f"{','.join(report['targets'])}, rounding {report['rounding']})", ""]
    lines += partition_table(report["ops"])
    if verbose and report.get("layers"):
        from .report.tables import layer_table

        lines += ["", "per layer (estimates; -v):"] + layer_table(report["layers"])
    mem = report["memory"]
    lines += ["", f"memory: SRAM arena {mem['sram_peak_bytes']} B (+ stack {mem['stack_bytes']} B), "
                  f"flash {mem['flash_bytes']} B (constants {mem['weights_bytes']} B)"]
    from .targets import get_target

    for name, section in report.get("target_reports", {}).items():
        lines += get_target(name).summary(section)
    if report.get("tuning"):
        lines.append(f"schedule: from tuning log {report['tuning']['log'] or '(given directly)'}")
    t = report["timing"]
    lines.append(f"time: compile {t['compile_s']:.2f} s, firmware build {t['firmware_build_s']:.2f} s")
    if report.get("report_html"):
        lines.append(f"report: {Path(out_dir) / report['report_html']}" + ("" if verbose else
                     " (per-layer figures: edgesdk build -v, or report.json 'layers')"))
    return "\n".join(lines)


def _op_entry(op, target, reason) -> dict:
    entry = {"index": op.index, "type": op.type, "target": target, "reason": reason,
             "output": op.outputs[0].name if op.outputs else None}
    if op.subgraph:  # inlined from a WHILE / IF subgraph (edgesdk/importer/control_flow.py)
        entry["subgraph"] = op.subgraph
    if "part" in op.attrs:
        entry["part"] = op.attrs["part"]
    return entry


def _ops_in_order(ops: list, folded: list, choices: dict) -> list:
    """The ops in execution order, with the partitioner's `choices`; each folded op where it was (before the
    next op of its subgraph)."""
    rows = [(op, _op_entry(op, choices[op].target, choices[op].reason)) for op in ops]
    for f in folded:
        entry = _op_entry(f, "folded", "evaluated at build time: its outputs are constants")
        later = [k for k, (op, _) in enumerate(rows) if op.subgraph == f.subgraph and op.index > f.index]
        same = [k + 1 for k, (op, _) in enumerate(rows) if op.subgraph == f.subgraph]
        rows.insert(later[0] if later else (same[-1] if same else len(rows)), (f, entry))
    return [entry for _, entry in rows]


def partition_table(ops: list) -> list:
    """`op` is the operator index, `s:i` for operator i of subgraph s (a WHILE / IF body, inlined)."""
    rows = [("op", "type", "target", "reason")]
    rows += [((f"{o['subgraph']}:" if o.get("subgraph") else "") + (str(o["index"]) if o["index"] >= 0 else "-"),
              o["type"] + (f" ({o['part']})" if o.get("part") else ""), o["target"] or "-", o["reason"]) for o in ops]
    widths = [max(len(r[k]) for r in rows) for k in range(3)]
    return [f"{r[0]:>{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}" for r in rows]


# -- run --------------------------------------------------------------------------------------------
def cmd_run(args) -> int:
    from .image import is_image
    from .runner import failure_message, load_report, random_inputs, run_sequence

    if is_image(args.build_dir):
        return run_image_command(args)
    report = load_report(Path(args.build_dir))
    if args.check:  # before the emulator runs: without the reference interpreter, say which extra to install
        from .reference import require_reference

        require_reference(report["rounding"], "edgesdk run --check")
    if args.random_input is not None and args.input:
        raise UsageError("Give either --input files or --random-input, not both.")
    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, not {args.steps}.")
    if args.print_top is not None and args.print_top < 1:
        raise UsageError(f"--print-top must be at least 1, not {args.print_top}.")
    if args.profile and args.emulator != "builtin":
        raise UsageError("--profile measures on the built-in emulator; drop --emulator qemu (or --profile).")
    if args.max_instructions is not None and args.max_instructions < 1:
        raise UsageError(f"--max-instructions must be at least 1, not {args.max_instructions}.")
    if args.random_input is not None:
        steps = [random_inputs(report, args.random_input + k) for k in range(args.steps)]
    elif not args.input:
        specs = report["io"]["inputs"]
        names = ", ".join(f"'{s['name']}' {s['dtype']}{s['shape']}" for s in specs)
        raise UsageError(f"The model takes {len(specs)} input(s) ({names}): give them with --input FILE.npy (one "
                         "per input, in order) or --input FILE.npz, or use --random-input SEED.")
    else:
        steps = split_steps(load_inputs(args.input, report["io"]["inputs"]), args.steps)
    observers = []
    if args.profile:
        from .report.profile import StepProfiler

        observers.append(StepProfiler())
    from .progress import say

    say(f"running {Path(args.build_dir).name} on the {args.emulator} emulator"
        + (f" ({args.steps} inferences)" if args.steps > 1 else "") + (", profiling" if args.profile else ""))
    result = run_sequence(args.build_dir, steps, timeout_s=args.timeout, emulator=args.emulator, observers=observers,
                          max_instructions=args.max_instructions)
    out_dir = Path(args.output_dir) if args.output_dir else Path(args.build_dir) / "run"
    out_dir.mkdir(parents=True, exist_ok=True)
    step_outputs = result.step_outputs or [result.outputs]
    paths = []
    for k in range(len(report["io"]["outputs"])):
        path = out_dir / f"output_{k}.npy"  # with --steps N: all steps, stacked along a new first axis
        save_npy(path, step_outputs[-1][k] if args.steps == 1 else np.stack([o[k] for o in step_outputs]))
        paths.append(str(path))
    if args.random_input is not None:
        for k in range(len(report["io"]["inputs"])):
            save_npy(out_dir / f"input_{k}.npy", steps[0][k] if args.steps == 1 else np.stack([s[k] for s in steps]))
    check = None
    if args.check and result.exit_code == 0:
        check = compare_with_reference(Path(args.build_dir), report, steps, step_outputs)
    summary = {
        "outputs": [{"path": p, "name": s["name"], "dtype": s["dtype"], "shape": s["shape"], "values": y.reshape(-1).tolist()}
                    for p, s, y in zip(paths, report["io"]["outputs"], result.outputs)],
        "steps": args.steps,
        "cpu_instructions": result.cpu_instructions,
        "inference_instructions": result.inference_instructions,
        "step_instructions": result.step_instructions,
        "peripheral_cycles": result.peripheral_cycles,  # the peripherals the build uses: name -> cycles
        "peripherals": result.peripheral_stats,  # the peripherals the build uses: name -> counters
        "exit_code": result.exit_code,
        "emulator": args.emulator,
    }
    if check is not None:
        summary["reference"] = check
    if args.print_top is not None:
        summary["top"] = [top_values(y, spec, args.print_top) for y, spec in zip(result.outputs, report["io"]["outputs"])]
    if args.profile and result.exit_code == 0:
        summary["profile"] = write_profile(Path(args.build_dir), report, result.observations[0], out_dir,
                                           set(result.target_peripherals.values()))
    if args.json:
        print(json.dumps(summary))
    elif args.verbosity >= NORMAL:
        print(run_summary(summary, result, all_values=args.verbosity >= VERBOSE))
    if result.exit_code != 0:
        print(f"edgesdk: error: {failure_message(result)}", file=sys.stderr)
        return 6
    if check is not None and not check["bit_exact"]:
        print("edgesdk: error: the firmware's output differs from the reference (see above).", file=sys.stderr)
        return 8
    return 0


# -- run an image of several models (edgesdk link) -------------------------------------------------------
IMAGE_RUN_REFUSES = (("steps", 1, "--steps"), ("profile", False, "--profile"))


def run_image_command(args) -> int:
    """`edgesdk run IMAGE`: one boot runs every model once; each model's outputs in IMAGE/run/NAME/, each checked
    against its own reference with --check."""
    from .image import load_image, run_image
    from .runner import random_inputs

    for field, default, flag in IMAGE_RUN_REFUSES:
        if getattr(args, field) != default:
            raise UsageError(f"{flag} is for one model's build; an image runs each of its models once. Run a model's "
                             "own build for it.")
    if args.print_top is not None and args.print_top < 1:
        raise UsageError(f"--print-top must be at least 1, not {args.print_top}.")
    if args.max_instructions is not None and args.max_instructions < 1:
        raise UsageError(f"--max-instructions must be at least 1, not {args.max_instructions}.")
    if args.max_instructions is not None and args.emulator == "qemu":
        raise UsageError("--max-instructions is for the built-in emulator; on QEMU, --timeout stops a run.")
    image_dir = Path(args.build_dir)
    models = {m["name"]: m for m in load_image(image_dir)["models"]}
    if args.check:
        from .reference import require_reference

        for m in models.values():
            require_reference(m["report"]["rounding"], "edgesdk run --check")
    if args.random_input is not None and args.input:
        raise UsageError("Give either --input NAME=FILE or --random-input, not both.")
    if args.random_input is not None:
        inputs = {name: random_inputs(m["report"], args.random_input) for name, m in models.items()}
    else:
        inputs = image_inputs(args.input, models)
    from .progress import say

    where = "QEMU" if args.emulator == "qemu" else "the built-in emulator"
    say(f"running the image {image_dir.name} ({', '.join(models)}) on {where}")
    run = run_image(image_dir, inputs, timeout_s=args.timeout, max_instructions=args.max_instructions,
                    emulator=args.emulator)
    out_root = Path(args.output_dir) if args.output_dir else image_dir / "run"
    summary = {"emulator": args.emulator, "models": {}, "cpu_instructions": run.cpu_instructions,
               "peripherals": run.peripheral_stats, "exit_code": run.exit_code}
    for name, m in models.items():
        summary["models"][name] = _image_model_summary(args, m, inputs[name], run, out_root / name)
    if args.json:
        print(json.dumps(summary))
    elif args.verbosity >= NORMAL:
        print(image_run_summary(summary, all_values=args.verbosity >= VERBOSE))
    failed = [name for name, status in run.statuses.items() if status != 0]
    if run.exit_code != 0 or failed:
        print(f"edgesdk: error: model(s) {', '.join(failed) or '?'} failed in the image "
              f"(statuses {run.statuses}, exit code {run.exit_code}). UART output: {run.uart.strip()!r}.",
              file=sys.stderr)
        return 6
    if any(not m.get("reference", {"bit_exact": True})["bit_exact"] for m in summary["models"].values()):
        print("edgesdk: error: a model's output differs from its reference (see above).", file=sys.stderr)
        return 8
    return 0


def image_inputs(values: list, models: dict) -> dict:
    """--input NAME=FILE for an image: per model, one .npz of all its inputs or .npy files in input order."""
    if not values:
        raise UsageError("An image runs every model: give each its inputs with --input NAME=FILE (repeat .npy files "
                         f"in input order, or one .npz), models {', '.join(models)}; or use --random-input SEED.")
    files = {name: [] for name in models}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or name not in models:
            raise UsageError(f"--input {value!r}: for an image, write NAME=FILE with NAME one of {', '.join(models)}.")
        files[name].append(path)
    missing = [name for name, paths in files.items() if not paths]
    if missing:
        raise UsageError(f"No --input given for model(s) {', '.join(missing)} of the image.")
    return {name: load_inputs(paths, models[name]["report"]["io"]["inputs"]) for name, paths in files.items()}


def _image_model_summary(args, model: dict, inputs: list, run, out_dir: Path) -> dict:
    """One model's part of an image run: its status, outputs (saved as .npy), and its reference check."""
    name, report = model["name"], model["report"]
    outputs = run.outputs[name]
    out_dir.mkdir(parents=True, exist_ok=True)
    entry = {"status": run.statuses[name], "inference_instructions": run.inference_instructions[name], "outputs": []}
    for k, (spec, y) in enumerate(zip(report["io"]["outputs"], outputs)):
        path = out_dir / f"output_{k}.npy"
        save_npy(path, y)
        entry["outputs"].append({"path": str(path), "name": spec["name"], "dtype": spec["dtype"],
                                 "shape": spec["shape"], "values": y.reshape(-1).tolist()})
    if args.random_input is not None:
        for k, x in enumerate(inputs):
            save_npy(out_dir / f"input_{k}.npy", x)
    if args.print_top is not None:
        entry["top"] = [top_values(y, spec, args.print_top) for y, spec in zip(outputs, report["io"]["outputs"])]
    if args.check and run.statuses[name] == 0:
        entry["reference"] = compare_with_reference(Path(model["build"]), report, [inputs], [outputs])
    return entry


def image_run_summary(summary: dict, all_values: bool = False) -> str:
    lines = []
    for name, m in summary["models"].items():
        counted = m["inference_instructions"] is not None
        lines.append(f"model {name}: status {m['status']}" + (" (ok)" if m["status"] == 0 else " (failed)")
                     + (f", {m['inference_instructions']} cpu instructions" if counted else ""))
        lines += output_lines(m, all_values, indent="  ")
        if "reference" in m:
            ref = m["reference"]
            lines.append(f"  reference ({ref['oracle']}): " + ("bit-exact" if ref["bit_exact"] else
                                                               f"MISMATCH, differing bytes per output {ref['mismatched_bytes']}"))
    lines.append(f"cpu instructions: {summary['cpu_instructions']} total (all models)")
    for name, counters in sorted(summary["peripherals"].items()):
        lines.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in counters.items()))
    lines.append(f"exit code: {summary['exit_code']}")
    return "\n".join(lines)


def top_values(output: np.ndarray, spec: dict, k: int) -> list:
    """The k largest values of an output (flattened), largest first, ties by index, with their real values
    when the output is quantized per tensor."""
    flat = output.reshape(-1)
    order = sorted(range(flat.size), key=lambda i: (-float(flat[i]), i))[:k]
    quant = spec.get("quant") or {}
    scale, zero = quant.get("scale") or [], quant.get("zero_point") or []
    result = []
    for i in order:
        entry = {"index": int(i), "value": flat[i].item()}
        if len(scale) == 1 and output.dtype.kind in "iu":
            entry["real"] = round(scale[0] * (int(flat[i]) - zero[0]), 6)
        result.append(entry)
    return result


def write_profile(build_dir: Path, report: dict, observed: dict, out_dir: Path, peripherals: set) -> dict:
    """The measured profile: profile.json and report.html (the build's page with the measurements) in out_dir;
    cycles of `peripherals` (those the build uses)."""
    from .output_dir import write_file_atomically
    from .report.html import write_profile_report
    from .report.profile import build_profile

    profile = build_profile(report, observed, peripherals)
    write_file_atomically(out_dir / "profile.json", (json.dumps(profile, indent=2) + "\n").encode())
    if report.get("layers") is not None:
        write_profile_report(out_dir / "report.html", report, profile)
    profile["files"] = [str(out_dir / "profile.json")] + ([str(out_dir / "report.html")] if report.get("layers") else [])
    return profile


def load_inputs(paths: list, specs: list) -> list:
    """--input files: one .npy per model input, in order, or a single .npz holding all of them."""
    npz = [p for p in paths if str(p).endswith(".npz")]
    if not npz:
        return [load_npy(p) for p in paths]
    if len(paths) != 1:
        raise UsageError("Give either one --input .npz holding every input, or one .npy per input; not both, and "
                         "not several .npz files.")
    return load_npz(paths[0], specs)


def load_npz(path: str, specs: list) -> list:
    """The model's inputs from a .npz: by input name, or in order as arr_0, arr_1, ... (numpy.savez(file, *xs))."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as exc:
        raise UsageError(f"Cannot read input {path}: {exc}. Give a .npz written by numpy.savez.") from None
    names = [spec["name"] for spec in specs]
    positional = [f"arr_{k}" for k in range(len(specs))]
    for keys in (names, positional):
        if set(keys) == set(arrays):
            return [arrays[key] for key in keys]
    raise UsageError(f"{path} holds {', '.join(sorted(arrays)) or 'nothing'}; the model's inputs are "
                     f"{', '.join(names)}. Save them by name (numpy.savez(file, **{{name: array}})) or in order "
                     "(numpy.savez(file, *arrays)).")


def split_steps(inputs: list, steps: int) -> list:
    """--input files for --steps N hold N inputs each, stacked along a new first axis."""
    if steps == 1:
        return [inputs]
    for k, x in enumerate(inputs):
        if x.ndim == 0 or x.shape[0] != steps:
            raise UsageError(f"With --steps {steps}, each --input file holds {steps} inputs stacked along a new first "
                             f"axis; input {k} has shape {list(x.shape)}.")
    return [[x[s] for x in inputs] for s in range(steps)]


def save_npy(path: Path, array: np.ndarray) -> None:
    """np.save, written atomically and never through a planted link (edgesdk/output_dir.py)."""
    from io import BytesIO

    from .output_dir import write_file_atomically

    buffer = BytesIO()
    np.save(buffer, array, allow_pickle=False)
    write_file_atomically(path, buffer.getvalue())


def load_npy(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UsageError(f"Cannot read input {path}: {exc}. Inputs must be .npy files (numpy.save).") from None


def compare_with_reference(build_dir: Path, report: dict, steps: list, step_outputs: list) -> dict:
    """Byte comparison of every step's outputs with the reference interpreter run on the same sequence."""
    from .importer.onnx_importer import model_file_name
    from .reference import ORACLES, run_reference_sequence

    mode = report["rounding"]  # checked by load_report: 'ref', 'tflm' or 'ort'
    model = build_dir / model_file_name(report["model"])  # model.tflite, or model.onnx
    if not model.is_file():
        raise UsageError(f"{model} is missing, so --check has no model to run the reference on; rebuild with "
                         "'edgesdk build'.")
    expected = run_reference_sequence(model, steps, mode, "edgesdk run --check")
    mismatches = [0] * len(report["io"]["outputs"])
    first_bad_step = None
    for step, (want_all, got_all) in enumerate(zip(expected, step_outputs)):
        for k, (e, y) in enumerate(zip(want_all, got_all)):
            bad = int(np.count_nonzero(np.asarray(e).reshape(-1).view(np.uint8) != y.reshape(-1).view(np.uint8)))
            mismatches[k] += bad
            if bad and first_bad_step is None:
                first_bad_step = step
    result = {"oracle": ORACLES[mode], "bit_exact": not any(mismatches), "mismatched_bytes": mismatches, "steps": len(steps)}
    if first_bad_step is not None:
        result["first_mismatch_step"] = first_bad_step
    return result


def output_lines(summary: dict, all_values: bool, indent: str = "") -> list:
    """A run's outputs (the first 16 values of each, or all) and their --print-top values, a line each."""
    lines = []
    for k, o in enumerate(summary["outputs"]):
        values = o["values"] if all_values else o["values"][:16]
        shown = ", ".join(str(v) for v in values) + (", ..." if len(values) < len(o["values"]) else "")
        lines.append(f"{indent}output {k} '{o['name']}' {o['dtype']}{o['shape']}: [{shown}] -> {o['path']}")
        for rank, entry in enumerate(summary.get("top", [[]] * (k + 1))[k], 1):
            real = f" (real {entry['real']:g})" if "real" in entry else ""
            lines.append(f"{indent}  top {rank}: index {entry['index']}: {entry['value']}{real}")
    return lines


def run_summary(summary: dict, result, all_values: bool = False) -> str:
    lines = output_lines(summary, all_values)
    inf = summary["inference_instructions"]
    lines.append(f"cpu instructions: {summary['cpu_instructions']} total" + (f", {inf} in the inference" if inf is not None else ""))
    if summary.get("emulator", "builtin") != "builtin":
        lines.append(f"emulator: {summary['emulator']}")
    for name, counters in sorted(summary.get("peripherals", {}).items()):  # those the build uses (the runner)
        lines.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in counters.items()))
    if summary.get("steps", 1) > 1:
        lines.append(f"steps: {summary['steps']} inferences in one boot (outputs above: the last step's)")
    lines.append(f"exit code: {summary['exit_code']}")
    if "profile" in summary:
        from .report.tables import profile_table

        lines += profile_table(summary["profile"])
    if "reference" in summary:
        ref = summary["reference"]
        where = f" (first at step {ref['first_mismatch_step']})" if "first_mismatch_step" in ref else ""
        steps = f" over {ref['steps']} steps" if ref.get("steps", 1) > 1 else ""
        lines.append(f"reference ({ref['oracle']}): " + ("bit-exact" + steps if ref["bit_exact"] else
                                                         f"MISMATCH, differing bytes per output {ref['mismatched_bytes']}{steps}{where}"))
    return "\n".join(lines)


def supported_ops_markdown(rules: dict) -> str:
    """docs/supported-ops.md, generated from the constraint functions' docstrings."""
    lines = ["# Supported operators", "",
             "Generated by `edgesdk inspect --list-ops --markdown` from the targets' constraint functions; "
             "tests/test_docs.py keeps it in sync.", ""]
    for target, ops in rules.items():
        lines += [f"## Target `{target}`", ""]
        for op_type, constraints in sorted(ops.items()):
            lines.append(f"### {op_type}")
            lines += [f"- `{name}`: {rule}" for name, rule in constraints] or ["- no constraints"]
            lines.append("")
    return "\n".join(lines)


# -- inspect ----------------------------------------------------------------------------------------
def cmd_inspect(args) -> int:
    from .board import load_board
    from .targets import available_targets, default_target_list, parse_target_list, target_support

    board = load_board(args.board)
    if args.list_targets:
        return _list_targets(board, args.json)
    if args.list_ops and not args.target:
        targets = sorted(available_targets())  # by name, whatever order the plugins were found in
    else:
        targets = parse_target_list(args.target or default_target_list(board), board)
    if args.list_ops:
        rules = {t: target_support(t).rules() for t in targets}
        if args.markdown:
            print(supported_ops_markdown(rules), end="")
        elif args.json:
            print(json.dumps(rules, indent=2))
        else:
            for t, ops in rules.items():
                print(f"target {t}:")
                for op_type, constraints in sorted(ops.items()):
                    print(f"  {op_type}")
                    for name, rule in constraints:
                        print(f"    - {name}: {rule}")
        return 0
    if not args.model:
        raise UsageError("inspect needs a MODEL (or --list-ops).")
    from .importer.onnx_importer import import_model
    from .ops.folding import fold_constants
    from .partition.partitioner import annotate, rejected_ops

    graph = import_model(args.model)
    folded = fold_constants(graph).folded  # as a build does: shape arithmetic on constants is evaluated here
    choices = annotate(graph, targets)
    rejected = rejected_ops(choices)
    ops = _ops_in_order(graph.ops, folded, choices)
    if args.json:
        print(json.dumps({"ops": ops}, indent=2))
    else:
        print("\n".join(partition_table(ops)))
    if rejected:
        print(f"edgesdk: error: {len(rejected)} op(s) cannot run on any target (see reasons above).", file=sys.stderr)
        return 3
    return 0


def _list_targets(board, as_json: bool) -> int:
    from .targets import available_targets, get_target, target_origin

    rows = []
    for name in available_targets():
        row = {"name": name, "origin": target_origin(name)}
        try:
            target = get_target(name)
            target.check_board(board)
            row.update(description=target.description, peripheral_types=list(target.peripheral_types),
                       ops=sorted(target.support.ops), usable_on_board=True)
        except UsageError as exc:
            row.update(usable_on_board=False, problem=str(exc))
        rows.append(row)
    if as_json:
        print(json.dumps({"board": board.name, "targets": rows}, indent=2))
        return 0
    for row in rows:
        print(f"{row['name']}: {row.get('description', '')} [{row['origin']}]")
        if row["usable_on_board"]:
            hardware = ", ".join(row["peripheral_types"]) or "host core"
            print(f"    runs on: {hardware}; ops: {', '.join(row['ops'])}")
        else:
            print(f"    not usable on board {board.name}: {row['problem']}")
    return 0


# -- hil / flash ------------------------------------------------------------------------------------
def cmd_hil(args) -> int:
    from .hil import run_hil

    inputs = None
    if args.input:
        from .runner import load_report

        inputs = load_inputs(args.input, load_report(Path(args.build_dir))["io"]["inputs"])
    result = run_hil(args.build_dir, args.emulator, args.suite or None, inputs, args.random_input)
    if args.verbosity >= NORMAL or not result.passed:
        print(result.output.rstrip())
    if not result.passed:
        where = (f"details in {result.results_dir}" if result.results_dir.is_dir()
                 else "Robot Framework wrote no results; its output is above")
        print(f"edgesdk: error: HIL suites failed on the {result.emulator} emulator (Robot exit code "
              f"{result.returncode}); {where}.", file=sys.stderr)
        return 6
    return 0


def cmd_flash(args) -> int:
    from .flash import flash

    result = flash(args.build_dir, args.probe, args.gdb_server, reset=not args.no_reset)
    if result.command:
        print("$ " + " ".join(result.command))
    print(f"flashed {result.bytes_written} bytes with {result.probe}" + (", verified" if result.verified else ""))
    if result.probe == "emulator":
        print(result.output.rstrip())
        print(f"exit code: {result.exit_code}")
        return 0 if result.exit_code == 0 else 6
    return 0


if __name__ == "__main__":
    sys.exit(main())
