"""The compiler driver: one readable sequence of passes from a model file to firmware.

    import -> fold constants -> partition -> plan memory -> generate executor -> render C -> cross-compile -> report

Everything is written into a staging directory next to the output and renamed into place at the end, so a
failed or interrupted build never leaves a half-written output directory behind; an existing output is
replaced only if edgesdk wrote it (edgesdk/output_dir.py).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from .aot.executor import build_executor, collect_scratch_sizes
from .aot.memory_plan import MemoryProblem
from .board import BUILD_BOARD_FILE, Board, load_board
from .dataclass_cache import dataclass, replace
from .errors import MemoryFitError, UsageError
from .importer.onnx_importer import import_model, model_file_name
from .ir.health import check_health
from .ops.folding import FoldReport, fold_constants
from .ops.stripes import absorb_input_conversions
from .partition.partitioner import partition, reason_of as reasons_of, target_of as targets_of
from .partition.target import remembered_answers
from .targets import default_target_list, parse_target_list
from .aot.cascade import (Striping, cascade_report, choose_cascades, fit_plan, plan_with_groups,
                          streamable_graph_inputs, streamed_plan)
from .targets.api import CodegenOptions, compile_scope

ROUNDING_MODES = ("ref", "tflm", "ort")  # ort: ONNX Runtime (edgesdk/importer/ort_plan.py)
# SRAM the firmware needs besides the arena and the stack (.data/.bss of harness, driver, libc).
SRAM_RESERVE_BYTES = 1024


@dataclass
class BuildOptions:
    """What `edgesdk build` was asked for (its command-line options)."""

    board: str = "riscv-npu"
    target: str | None = None  # priority list, last = fallback; None: the board's (targets.default_target_list)
    rounding: str = "ref"
    compile_firmware: bool = True
    werror: bool = False  # treat compiler warnings as errors (the tests build this way)
    cascade: bool = True  # run layer chains in row stripes where that shrinks the arena (aot/cascade.py)
    # The caller provides the image inputs in rows through edgesdk_default_read_input_rows() (docs/streaming-input.md):
    # a cascade group reads them into a stripe buffer, so they never exist whole in the arena.
    stream_input: bool = False
    # Per-layer choices to apply as given instead of the defaults (edgesdk/tune): an edgesdk.tune.Schedule, or
    # the path of an `edgesdk tune` log (checked against the model, board, targets and rounding). Either
    # replaces the cascade choice (`cascade` is then ignored); None: today's defaults.
    schedule: object = None
    tuning_log: str | None = None
    fold_constants: bool = True  # evaluate shape arithmetic on constants at build time (edgesdk/ops/folding.py)
    # Also write OUT/export/<model>/ and its .tar: the model as a static library for the user's own firmware
    # (edgesdk/export); report.json's `export` says where.
    export: bool = False
    dump_after: tuple = ()  # pass names (PASS_NAMES) after which compile_model calls its `dump` (--dump-after)
    # The prefix of the model's C symbols and files (edgesdk/model_name.py): "default" writes edgesdk_default_run()
    # and model.h; another name lets several models link into one firmware. Rendering only: same program.
    name: str = "default"


@dataclass
class Compiled:
    """Everything the passes produced, before anything is written."""

    board: Board
    targets: list
    graph: object
    regions: list
    plan: object
    executor: object
    schedule: object = None  # the edgesdk.tune.Schedule applied, None for a default build
    folding: object = None  # the edgesdk.ops.folding.FoldReport of the constant folding pass
    memory_problem: object = None  # the aot.memory_plan.MemoryProblem the plan solves (the tuner asks it again)
    codegen_options: object = None  # the targets.api.CodegenOptions every codegen context of the build saw
    # --stream-input: {"streamed", "arena_bytes_streamed", "arena_bytes_whole"} (compare_streaming); None without
    input_streaming: dict | None = None


@dataclass
class BuildState:
    """What the passes hand on: the settings, then each pass's result (None until the pass has run)."""

    model_path: object
    options: BuildOptions
    check_fit: bool
    board: Board
    targets: list
    schedule: object  # the edgesdk.tune.Schedule applied, or None
    codegen: CodegenOptions  # what every codegen context of the build sees
    graph: object = None
    folding: FoldReport | None = None
    regions: list | None = None
    scratch: dict | None = None
    memory_problem: MemoryProblem | None = None
    plan: object = None
    executor: object = None
    input_streaming: dict | None = None  # Compiled.input_streaming


def import_pass(s: BuildState) -> None:
    """Read the model file into the graph IR (.tflite natively, .onnx through TVM's frontend); for --rounding
    ort, ask ONNX Runtime how it runs each QDQ group (importer/ort_plan.py)."""
    if s.graph is None:  # else an already imported graph (build_from_relax)
        s.graph = import_model(s.model_path)
    if s.options.rounding == "ort":
        from .importer.ort_plan import prepare as prepare_ort

        prepare_ort(s.graph)


def fold_pass(s: BuildState) -> None:
    """Evaluate shape arithmetic on constants at build time (edgesdk/ops/folding.py)."""
    s.folding = fold_constants(s.graph) if s.options.fold_constants else FoldReport()


def partition_pass(s: BuildState) -> None:
    """Give each op the first target of the priority list whose constraints it meets (or the schedule's);
    consecutive ops of one target form a region. Refuse a model that cannot fit from the graph alone."""
    if s.schedule is not None:
        s.schedule.check_graph(s.graph)
    if s.options.stream_input:  # a streamed uint8 input is converted row by row as it is read
        absorb_input_conversions(s.graph)
    s.regions = partition(s.graph, s.targets, forced=s.schedule.op_targets() if s.schedule is not None else None,
                          modes=(s.options.rounding,))  # constraints whose rule depends on the reference
    if s.check_fit:  # from the graph alone, before any pass makes a weight layout (dry codegen, cascades)
        check_sram_fits(sram_lower_bound(s.graph, s.regions, s.options.stream_input), s.board, 0, at_least=True)
        check_flash_lower_bound(s.regions, s.board)


def scratch_pass(s: BuildState) -> None:
    """Ask each region's target how much scratch memory its ops need (a dry codegen run)."""
    s.scratch = collect_scratch_sizes(s.graph, s.regions, s.codegen)


def stream_inputs_of(s: BuildState) -> list:
    """The graph inputs the build streams (BuildOptions.stream_input); UsageError when it cannot stream any."""
    if not s.options.stream_input:
        return []
    if not s.options.cascade and s.schedule is None:
        raise UsageError("--stream-input reads the input in row stripes through a cascade group; it cannot be "
                         "combined with --no-cascade.")
    streams = streamable_graph_inputs(s.graph)
    if not streams:
        shapes = ", ".join(f"'{t.name}' {list(t.shape)}" for t in s.graph.inputs)
        raise UsageError(f"--stream-input streams image inputs (shape [1, rows, columns, channels]), and this model "
                         f"has none: {shapes}. Build without --stream-input.")
    return streams


def plan_pass(s: BuildState) -> None:
    """Place every buffer in the arena (in-place overlaps as each op's target allows); then, unless a schedule
    says which, add the cascade groups (row stripes) that shrink the arena within the cycle budget."""
    s.memory_problem = MemoryProblem(s.graph, s.scratch, in_place=targets_in_place_rules(s.regions))
    # Where the build must shrink to fit the board or streams its input, a layer in stripes also gives up the
    # scratch its whole form asked for when its target's stripes take none (Target.stripes_use_scratch). The
    # default search keeps it: it prices such a layer as its stripes run (a folded convolution unfolded), and
    # the freed scratch would buy KWS 144 bytes for +83 % NPU cycles.
    tight = replace(s.memory_problem, striped_scratch=targets_striped_scratch(s.regions))
    streams = stream_inputs_of(s)
    striping = Striping(s.regions, s.codegen, streams)
    if s.schedule is not None:  # the schedule's cascade groups, as given: no search
        s.plan = plan_with_groups(s.memory_problem, s.regions, s.schedule.cascade_specs(), striping)
        s.plan, s.memory_problem = without_unused_scratch(s.plan, s.memory_problem, tight)
    else:
        # proven below only if the build keeps it (the cascade searches prove the plans they return)
        op_by_op = s.plan = s.memory_problem.plan(prove=False)
        if s.options.cascade:
            # the default groups stream nothing: a group over the first layers would otherwise stream the input
            # within the default budget and leave streamed_plan (the fit budget) nothing to search
            default = Striping(s.regions, s.codegen) if streams else striping
            s.plan = choose_cascades(s.memory_problem, s.regions, s.plan, default)
            s.plan, s.memory_problem = without_unused_scratch(s.plan, s.memory_problem, tight)
            # A model that does not fit op by op may spend up to the fit budget on every group, even when the
            # default groups alone squeeze it in: the fit search finds far smaller arenas (MobileNetV2-224 on
            # the host: 514,304 B by the default groups, 218,624 B by the fit search, +0.23 % instructions).
            # (The default groups only ever shrink the arena, so a model that fits op by op fits with them.)
            if not sram_fits(op_by_op.arena_bytes, s.board):
                s.memory_problem = tight
                s.plan = fit_plan(tight, s.regions, s.plan, striping)
    if streams:
        s.memory_problem = tight
        s.plan = streamed_plan(tight, s.regions, s.plan, striping)
    if s.schedule is None and s.plan is op_by_op:
        s.memory_problem.prove(s.plan)
    if s.check_fit:  # a firmware build's linker gives the exact verdict; refuse here only what surely cannot fit
        check_sram_fits(s.plan.arena_bytes, s.board, 0 if s.options.compile_firmware else SRAM_RESERVE_BYTES)


def without_unused_scratch(plan, problem: MemoryProblem, tight: MemoryProblem) -> tuple:
    """(plan, the problem it solves): `plan`'s cascade groups placed by `tight`, which leaves out the scratch
    their layers' stripes do not use, when that gives a smaller arena; else `plan` as it is. The default
    search prices groups with the scratch kept (plan_pass), and a tuning schedule names only groups: neither
    should pay for scratch no code reads (MobileNetV2-224's fit groups replayed from a schedule: 261,632 B
    with it, 258,048 B without, the fit search's own arena)."""
    unused = [op for g in plan.cascades for op in g.ops
              if (problem.scratch_sizes or {}).get(op) and not tight.striped_scratch(op)]
    freed = tight.plan_below(plan.cascades, plan.arena_bytes) if unused else None
    return (plan, problem) if freed is None else (freed, tight)


def codegen_pass(s: BuildState) -> None:
    """The one real codegen run: each region's target generates its code into the executor model."""
    s.executor = build_executor(s.graph, s.regions, s.plan, s.codegen)
    if s.check_fit:
        check_flash_fits(s.executor, s.board)


# The compiler's passes, in order (`edgesdk build --dump-after NAME` prints the state after one).
PASSES = (("import", import_pass), ("fold", fold_pass), ("partition", partition_pass), ("scratch", scratch_pass),
          ("plan", plan_pass), ("codegen", codegen_pass))
PASS_NAMES = tuple(name for name, _ in PASSES)


def compile_model(model_path, options: BuildOptions, graph=None, check_fit: bool = True, dump=None) -> Compiled:
    """Run the compiler passes in order, with a health check of the graph after each; pure (writes nothing).
    `check_fit=False` skips the board's SRAM and flash checks (the tuner compares candidates that may not fit).
    `dump(pass_name, state)` is called after each pass named in options.dump_after."""
    if options.rounding not in ROUNDING_MODES:
        raise UsageError(f"--rounding must be one of {', '.join(ROUNDING_MODES)}, not '{options.rounding}'.")
    unknown = sorted(set(options.dump_after) - set(PASS_NAMES))
    if unknown:
        raise UsageError(f"--dump-after: no pass named {', '.join(unknown)}; the passes are {', '.join(PASS_NAMES)}.")
    board = load_board(options.board)
    targets = parse_target_list(options.target or default_target_list(board), board)
    schedule = _requested_schedule(model_path, options, board, targets)
    codegen = CodegenOptions(options.rounding, board, schedule, board.image_flash_bytes if check_fit else None)
    # --stream-input without a schedule also plans the input whole, from a graph of its own (the streamed one
    # loses the input's edge conversion), and keeps the smaller arena (compare_streaming).
    whole = None
    if options.stream_input and schedule is None:
        import copy

        whole = BuildState(model_path, replace(options, stream_input=False), False, board, targets, schedule, codegen,
                           copy.deepcopy(graph) if graph is not None else None)
    state = BuildState(model_path, options, check_fit, board, targets, schedule, codegen, graph)
    # the partitioner's answers, again for the codegen (partition/target.py); the targets' per-compile memos
    with remembered_answers(), compile_scope():
        _run_passes(state, PASSES[:-1], dump)
        if whole is not None:
            state = compare_streaming(state, whole)
        _run_passes(state, PASSES[-1:], dump)
    return Compiled(board, targets, state.graph, state.regions, state.plan, state.executor, schedule, state.folding,
                    state.memory_problem, codegen, state.input_streaming)


def _run_passes(state: BuildState, passes, dump) -> None:
    for name, run in passes:
        run(state)
        check_health(name, state.graph, state.regions)
        if name in state.options.dump_after and dump is not None:
            dump(name, state)


def compare_streaming(streamed: BuildState, whole: BuildState) -> BuildState:
    """Of a --stream-input build (planned), the state to generate: the streamed one unless the same build with the
    input whole (`whole`, not yet run) gives a strictly smaller arena (a small input can cost less whole than the
    stripe group that streams it); its `input_streaming` says which and both arenas. The whole plan is not
    made when the inputs alone, which it holds whole in the arena, take at least the streamed arena (a large
    image: arena_bytes_whole null). A whole plan smaller than the streamed arena, which passed the board's
    checks, fits too; the flash check runs at codegen."""
    inputs = sum(t.nbytes for t in streamable_graph_inputs(streamed.graph))
    if inputs >= streamed.plan.arena_bytes:
        streamed.input_streaming = {"streamed": True, "arena_bytes_streamed": streamed.plan.arena_bytes,
                                    "arena_bytes_whole": None}
        return streamed
    _run_passes(whole, PASSES[:-1], None)
    chosen = streamed if streamed.plan.arena_bytes <= whole.plan.arena_bytes else whole
    chosen.check_fit = streamed.check_fit
    chosen.input_streaming = {"streamed": chosen is streamed, "arena_bytes_streamed": streamed.plan.arena_bytes,
                              "arena_bytes_whole": whole.plan.arena_bytes}
    return chosen


def _requested_schedule(model_path, options: BuildOptions, board: Board, targets: list):
    """The schedule to apply: options.schedule, or the one in options.tuning_log (checked), or None."""
    if options.tuning_log is None:
        return options.schedule
    if options.schedule is not None:
        raise UsageError("Give either a schedule or a tuning log, not both.")
    from .tune.log import schedule_from_log

    return schedule_from_log(options.tuning_log, model_path, board.name, targets, options.rounding)


def _target_of_ops(regions) -> dict:
    """{op: the Target object of the region it runs in}."""
    from .targets import get_target

    return {op: get_target(region.target) for region in regions for op in region.ops}


def targets_in_place_rules(regions):
    """The memory planner's in-place permissions: each op's own target answers (Target.in_place)."""
    target_of = _target_of_ops(regions)

    def rule(op, x):
        target = target_of.get(op)
        return target.in_place(op, x) if target is not None else None

    return rule


def targets_striped_scratch(regions):
    """Whether an op's code in a cascade group still uses its scratch: its target answers
    (Target.stripes_use_scratch)."""
    target_of = _target_of_ops(regions)
    return lambda op: op not in target_of or target_of[op].stripes_use_scratch(op)


def sram_lower_bound(graph, regions=(), stream_input: bool = False) -> int:
    """Arena bytes any plan needs, from the graph alone: every model input is in the arena before the first op
    (all of them at once; `stream_input`: but the images the caller streams), every model output after the
    last one, and every tensor of a layer its target cannot run in stripes is whole while it runs (only
    cascade groups keep tensors as stripes)."""
    from .targets import get_target

    streamed = set(streamable_graph_inputs(graph)) if stream_input else set()
    inputs = sum(t.nbytes for t in dict.fromkeys(graph.inputs) if not t.is_const and t not in streamed)
    tensors = [t for t in graph.outputs if not t.is_const]
    tensors += [t for region in regions for op in region.ops if not get_target(region.target).can_stripe(op)
                for t in op.inputs + op.outputs if t is not None and not t.is_const]
    return max([inputs] + [t.nbytes for t in tensors])


def flash_lower_bound(regions) -> int:
    """Flash the regions' code takes at least, from the graph alone (each target's Target.flash_lower_bound)."""
    from .targets import get_target

    return sum(get_target(region.target).flash_lower_bound(region) for region in regions)


def check_flash_lower_bound(regions, board: Board) -> None:
    data = flash_lower_bound(regions)
    if data > board.image_flash_bytes:
        raise MemoryFitError(
            f"The model does not fit board '{board.name}': its weights take at least {data} bytes of flash but the "
            f"board has {board.image_flash_bytes} for the firmware: over by {data - board.image_flash_bytes} bytes (before "
            "code). Use a smaller "
            "model or a board with more flash.")


def sram_fits(arena_bytes: int, board: Board) -> bool:
    """Would an arena of this size fit with the stack and SRAM_RESERVE_BYTES (check_sram_fits' estimate)?"""
    return arena_bytes + board.stack_bytes + SRAM_RESERVE_BYTES <= board.sram.size


def check_sram_fits(arena_bytes: int, board: Board, reserve: int = SRAM_RESERVE_BYTES, at_least: bool = False) -> None:
    """MemoryFitError unless arena + stack + `reserve` (an estimate of the firmware's own .data/.bss) fit the
    board's SRAM (`at_least`: `arena_bytes` is only a lower bound). With reserve 0 (a firmware build, whose
    linker then gives the exact verdict, see firmware_build.build.memory_fit_message), only what surely cannot
    fit is refused, with its lower bound."""
    need = arena_bytes + board.stack_bytes + reserve
    if need > board.sram.size:
        parts = f"activation arena {'at least ' if at_least else ''}{arena_bytes} + stack {board.stack_bytes}"
        if reserve:
            parts += f" + {reserve} reserved for the firmware's .data/.bss, an estimate"
        else:
            parts += ", before the firmware's own .data and .bss"
        at_least = " at least" if at_least or not reserve else ""
        raise MemoryFitError(
            f"The model does not fit board '{board.name}': it needs{at_least} {need} bytes of SRAM ({parts}) "
            f"but the board has {board.sram.size}: "
            f"over by{at_least} {need - board.sram.size} bytes. Use a smaller input resolution or model, or a board "
            "with more SRAM."
        )


def generated_flash_bytes(executor) -> int:
    """Constant data of the build: const arrays, blobs, and each target's own rendered data (tables, graphs)."""
    from .targets import get_target

    targets = dict.fromkeys(step.target for step in executor.steps)
    return (constant_bytes(executor) + sum(get_target(name).flash_bytes(executor) for name in targets))


def constant_bytes(executor) -> int:
    """Const arrays and blobs: what the targets placed in flash through the context."""
    return sum(c.values.nbytes for c in executor.consts) + sum(len(b.data) for b in executor.blobs.values())


def check_flash_fits(executor, board: Board) -> None:
    data = generated_flash_bytes(executor)
    room = board.image_flash_bytes  # from the reset address on (a bootloader may own the flash below it)
    if data > room:
        raise MemoryFitError(
            f"The model does not fit board '{board.name}': its weights and command tables take {data} bytes of "
            f"flash but the board has {room} for the firmware: over by {data - room} bytes (before code). "
            "Use a smaller model or a board with more flash."
        )


def build(model_path, out_dir, options: BuildOptions, graph=None) -> dict:
    """Compile, render, cross-compile and write OUT atomically; return the report."""
    # Imported here, not at the top: compile_model (the tuner, the benchmark's compile step) needs none of them.
    from .aot.render import ARENA_GUARD_BYTES_PER_SIDE, render_sources
    from .model_name import DEFAULT_NAME, check_model_name
    from .output_dir import check_replaceable, staged_output
    from .passdump import print_dump
    from .progress import VERBOSE, say
    from .report.html import write_build_report
    from .verify import verify_build

    check_model_name(options.name)
    model_path = Path(model_path)
    out_dir = check_replaceable(Path(out_dir), protect=(model_path,))  # refuse before the work, and again at the end
    t0 = time.perf_counter()
    say(f"compiling {model_path.name} for board {options.board} (targets {options.target or 'the board default'})")
    compiled = compile_model(model_path, options, graph, dump=print_dump)  # --dump-after: to stderr
    say("checking the generated code and tables (safety proof)", VERBOSE)
    safety = verify_build(compiled)  # the build-time safety proof (edgesdk/verify.py): nothing written if it fails
    compile_s = time.perf_counter() - t0
    with staged_output(out_dir, protect=(model_path, compiled.board.path)) as stage:
        say("writing the C sources")
        src = stage / "src"
        render_sources(compiled.executor, src, source=model_path.name, board=compiled.board.name,
                       rounding=options.rounding, name=options.name)
        from .firmware_build.board_files import render_board_files
        from .firmware_build.target_sources import copy_target_sources

        render_board_files(compiled.board, src)
        copy_target_sources(compiled.targets, compiled.board, src, compiled.executor)
        shutil.copyfile(model_path, stage / model_file_name(model_path))
        # The board description the firmware is built from: run, hil and flash use it (board.build_board).
        shutil.copyfile(compiled.board.path, stage / BUILD_BOARD_FILE)
        firmware_s, sections = 0.0, {}
        report = make_report(model_path, compiled, options, sections, {})
        if options.name != DEFAULT_NAME:  # a default build's report.json stays as it was
            report["name"] = options.name
        if options.compile_firmware:
            t1 = time.perf_counter()
            say("cross-compiling the firmware (CMake)")
            sections = _build_firmware(src, stage, compiled.board, options.werror)
            firmware_s = time.perf_counter() - t1
        report["memory"].update(firmware_memory_fields(compiled, sections))
        report["timing"] = {"compile_s": round(compile_s, 3), "firmware_build_s": round(firmware_s, 3)}
        report["verified"] = safety
        report["memory"]["arena_guard_bytes"] = 2 * ARENA_GUARD_BYTES_PER_SIDE  # around the arena, not in arena_bytes
        if options.export:
            say("writing the export (OUT/export)")
            from .export import write_export

            result = write_export(stage, report, stage / "export", board=compiled.board)
            report["export"] = result.summary(stage)
        say("writing report.json and report.html")
        write_build_report(stage, report)  # report.json, report.html, memory_timeline.svg (edgesdk/report)
    return report


def build_from_relax(mod, out_dir, options: BuildOptions, name: str = "model") -> dict:
    """Build firmware from a Relax IRModule (Python API), imported like an ONNX model's Relax
    (docs/tvm-interop.md). OUT/model.relax.py records the module's TVMScript (constants omitted)."""
    from .tvm.relax_import import relax_to_graph

    graph = relax_to_graph(mod, name)
    with tempfile.TemporaryDirectory(prefix="edgesdk-relax-") as tmp:
        path = Path(tmp) / f"{name}.relax.py"
        path.write_text(mod.script(show_meta=False))
        return build(path, out_dir, options, graph)


def _build_firmware(src: Path, stage: Path, board: Board, werror: bool) -> dict:
    from .firmware_build.build import build_firmware_reusing, section_sizes

    # CMake works in a tree kept for the next build (firmware_build/build_tree.py), else inside the stage.
    build_dir = stage / ".cmake-build"
    elf = build_firmware_reusing(src, stage, board, werror=werror, fallback_dir=build_dir)
    shutil.rmtree(build_dir, ignore_errors=True)
    sizes = section_sizes(elf)
    flash_used = sizes.get("flash_bytes", 0)
    if flash_used > board.image_flash_bytes:
        raise MemoryFitError(f"The firmware needs {flash_used} bytes of flash, the board has {board.image_flash_bytes} "
                             f"for it: over by {flash_used - board.image_flash_bytes} bytes.")
    return sizes


def _sha256(path) -> str:
    import hashlib  # here: the compile step (compile_model) hashes nothing

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def make_report(model_path: Path, c: Compiled, options: BuildOptions, sections: dict, timing: dict) -> dict:
    from .report.layers import layer_figures
    from .targets import get_target

    ex, plan = c.executor, c.plan
    region_of = {op: i for i, r in enumerate(c.regions) for op in r.ops}
    target_of, reason_of = targets_of(c.regions), reasons_of(c.regions)
    used = list(dict.fromkeys(r.target for r in c.regions))
    return {
        "model": str(model_path),
        "model_sha256": _sha256(model_path),
        "board": c.board.name,
        "board_file": str(c.board.path.resolve()),  # copied to OUT/board.json
        "targets": c.targets,
        "rounding": options.rounding,
        "ops": [{"index": op.index, "type": op.type, "target": target_of[op], "reason": reason_of[op],
                 "output": op.outputs[0].name if op.outputs else None, "region": region_of[op],
                 **_control_flow_json(op)} for op in c.graph.ops],
        "regions": [{"target": r.target, "ops": [op.index for op in r.ops]} for r in c.regions],
        "memory": {
            "sram_peak_bytes": plan.arena_bytes,
            "arena_bytes": plan.arena_bytes,
            "stack_bytes": c.board.stack_bytes,
            **firmware_memory_fields(c, sections),
            "weights_bytes": constant_bytes(ex),
            "constants_bytes": generated_flash_bytes(ex),  # weights + the targets' own data (tables, graphs)
            "blobs": {b.name: len(b.data) for b in ex.blobs.values()},
            "state_bytes": sum(t.nbytes for t in ex.state),
            "buffers": [{"name": b.name, "offset": b.offset, "size": b.size, "first_step": b.first,
                         "last_step": b.last, "kind": b.kind} for b in sorted(plan.buffers, key=lambda b: (b.offset, b.first))],
            "lower_bound_bytes": plan.lower_bound,
            "placement": plan.strategy,
            "cascades": cascade_report(plan, c.regions),
            "in_place": [{"op": o.op.index, "type": o.op.type, "rule": o.rule, "distance": o.distance,
                          "output": o.output.name, "input": o.input.name} for o in plan.in_place()],
        },
        "estimate": {
            "regions": [_region_estimate_json(r, e) for r, e in zip(c.regions, ex.region_estimates)],
        },
        "layers": layer_figures(c.graph, c.regions, ex, c.board),  # per op: work, bytes, estimate, share
        # The blocks of the run function in order (EDGESDK_STEP_MARK k): what `edgesdk run --profile` measures.
        "steps": [{"target": s.target, "layers": s.layers, "commands": s.commands} for s in ex.steps],
        "target_reports": {name: get_target(name).report(ex) for name in used},
        "folding": (c.folding or FoldReport()).to_json(),
        "io": {
            "inputs": [_io_json(t) for t in ex.inputs],
            "outputs": [_io_json(t) for t in ex.outputs],
        },
        "timing": timing,
        "warnings": list(getattr(c.graph, "warnings", [])) + _streaming_warnings(c, options.name),
        **({"stream_input": c.input_streaming} if c.input_streaming is not None else {}),
        **({"tuning": _tuning_json(c)} if c.schedule is not None else {}),
    }


def _streaming_warnings(c: Compiled, name: str) -> list:
    """`name`: the build's --name, whose header and row reader the message names."""
    from .model_name import api_prefix, public_header

    s = c.input_streaming
    if s is None or s["streamed"]:
        return []
    return [f"--stream-input: the input stays whole, in its arena slot: streaming it would take a "
            f"{s['arena_bytes_streamed']:,} B arena, whole it takes {s['arena_bytes_whole']:,} B. The model reads "
            f"the input from its slot ({public_header(name)} defines no {api_prefix(name).upper()}INPUT_<k>_STREAMED "
            f"and declares no {api_prefix(name)}read_input_rows)."]


def firmware_memory_fields(c: Compiled, sections: dict) -> dict:
    """report.json `memory` fields that come from the linked firmware's sections (empty: none linked)."""
    return {"flash_bytes": sections.get("flash_bytes", 0), "sections": sections,
            "pools": _memory_pools(c.board, c.plan, sections)}


def _control_flow_json(op) -> dict:
    """An op inlined from a WHILE / IF subgraph says which (edgesdk/importer/control_flow.py)."""
    return {**({"subgraph": op.subgraph} if op.subgraph else {}),
            **({"part": op.attrs["part"]} if "part" in op.attrs else {})}


def _tuning_json(c: Compiled) -> dict:
    """report.json `tuning`: the log applied (path and sha256, when from a log) and the schedule as applied."""
    from .tune.schedule import schedule_of

    origin = c.schedule.origin or {}
    return {"log": origin.get("log"), "log_sha256": origin.get("log_sha256"), "schedule": schedule_of(c).to_json()}


def _region_estimate_json(region, estimate) -> dict:
    """One region's cost-model figure (each target's Target.estimate)."""
    entry = {"target": region.target, "layers": [op.index for op in region.ops]}
    if estimate is not None:
        entry.update(unit=estimate.unit, cycles=estimate.cycles, microseconds=round(estimate.microseconds, 3))
    return entry


def _memory_pools(board: Board, plan, sections: dict) -> dict:
    """Each memory region of the board and what the plan puts there."""
    sram, flash = board.sram, board.flash
    sram_used = plan.arena_bytes + board.stack_bytes + SRAM_RESERVE_BYTES
    return {
        sram.name: {"base": sram.base, "size": sram.size, "kind": sram.kind, "arena_bytes": plan.arena_bytes,
                    "stack_bytes": board.stack_bytes, "reserved_bytes": SRAM_RESERVE_BYTES,
                    "free_bytes": sram.size - sram_used},
        flash.name: {"base": flash.base, "size": flash.size, "kind": flash.kind,
                     "used_bytes": sections.get("flash_bytes", 0)},
    }


def _io_json(t) -> dict:
    streamed = {"streamed": True, "stream_offset": t.stream_offset, "row_bytes": t.row_bytes} if t.streamed else {}
    return {"name": t.model_name, "c_name": t.name, "dtype": t.dtype, "shape": list(t.shape), "bytes": t.nbytes,
            "arena_offset": t.arena_offset, "quant": t.quant, **streamed}
