"""One firmware image of several models: builds made with different `--name`s, linked together and run on the
built-in emulator (`edgesdk link` and `edgesdk run IMAGE`: edgesdk/image_cli.py; Python API: `link_builds`,
`run_image`; the tests use it to build fewer firmware images).

Each build brings its model's sources (every symbol prefixed with its name: edgesdk/model_name.py) and the
library sources its targets need (kernels, drivers: edgesdk_* files that are the same for every model). The
image's sources hold each model's files and the union of the library files, each once, so a kernel two models
call is compiled and linked once. Its test harness (harness_main.c.j2) runs the models one after the other;
the emulator writes every model's inputs into its arena before boot and reads every model's outputs after exit.

    IMAGE/src/             the models' sources, board.h, link.ld, targets/<name>/ (each library file once)
    IMAGE/firmware.elf     (+ .bin, .hex, .map)
    IMAGE/image.json       the models: name, build directory, and each build's report.json
    IMAGE/board.json       the board description the builds were made for
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from .board import BUILD_BOARD_FILE, build_board
from .dataclass_cache import dataclass
from .errors import UsageError
from .model_name import DEFAULT_NAME, HARNESS_FILE_PREFIX

IMAGE_FILE = "image.json"
STATUSES_SYMBOL = "edgesdk_harness_statuses"  # harness_main.c.j2: each model's status, read after exit
BOARD_FILES = ("board.h", "link.ld")  # the same for every build for one board


@dataclass
class ImageRun:
    """One boot of an image: each model ran once on its inputs."""

    outputs: dict  # model name -> its outputs (numpy arrays, model order)
    statuses: dict  # model name -> what its run returned (0: EDGESDK_OK; its outputs are valid only then)
    exit_code: int  # the harness's: 0, or -status of the first model that failed
    cpu_instructions: int
    uart: str
    peripheral_stats: dict  # the counters of the peripherals the models use (e.g. an accelerator's cycles), by name
    inference_instructions: dict  # model name -> instructions of its run (between its harness marks); None if unrun


def link_builds(build_dirs: list, out_dir, werror: bool = False) -> dict:
    """Build IMAGE (`out_dir`, replaced as a whole like a build's OUT) from the builds in `build_dirs`, each made
    with its own --name for the same board; return image.json's contents."""
    from .aot.render import HARNESS_MAIN, render_harness_main, render_harness_targets
    from .compiler import _build_firmware
    from .output_dir import staged_output
    from .run_io import load_report, used_targets

    build_dirs = [Path(d) for d in build_dirs]
    reports = [load_report(d) for d in build_dirs]
    names = _check_names(build_dirs, reports)
    board_json = _same_board(build_dirs)
    board = build_board(build_dirs[0], reports[0])
    with staged_output(out_dir, protect=tuple(build_dirs)) as stage:
        src = stage / "src"
        src.mkdir()
        for build_dir in build_dirs:
            _merge_sources(build_dir / "src", src)
        targets = sorted(set().union(*(used_targets(r) for r in reports)))
        (src / HARNESS_MAIN).write_text(render_harness_main(names, board.name))
        (src / f"{HARNESS_FILE_PREFIX}_targets.h").write_text(render_harness_targets(targets, ", ".join(names)))
        (stage / BUILD_BOARD_FILE).write_bytes(board_json)
        sections = _build_firmware(src, stage, board, werror)
        image = {"board": reports[0]["board"], "flash_bytes": sections.get("flash_bytes"),
                 "models": [{"name": n, "build": str(d.resolve()), "report": r}
                            for n, d, r in zip(names, build_dirs, reports)]}
        (stage / IMAGE_FILE).write_text(json.dumps(image, indent=2) + "\n")
    return image


def _check_names(build_dirs: list, reports: list) -> list:
    if not build_dirs:
        raise UsageError("An image needs at least one build.")
    names = []
    for build_dir, report in zip(build_dirs, reports):
        name = report.get("name", DEFAULT_NAME)
        if name == DEFAULT_NAME:
            raise UsageError(f"{build_dir} was built without --name: its symbols (edgesdk_default_run, edgesdk_arena) "
                             "would clash with another model's. Rebuild it with 'edgesdk build MODEL --name NAME'.")
        if name in names:
            raise UsageError(f"Two builds are named '{name}' ({build_dir} and another): give each model its own "
                             "--name.")
        names.append(name)
    return names


def _same_board(build_dirs: list) -> bytes:
    """The builds' board description (OUT/board.json), which must be the same file for all."""
    first = (build_dirs[0] / BUILD_BOARD_FILE).read_bytes()
    for build_dir in build_dirs[1:]:
        if (build_dir / BUILD_BOARD_FILE).read_bytes() != first:
            raise UsageError(f"{build_dir} was built for another board than {build_dirs[0]}: one image runs on "
                             "one board. Rebuild the models with the same --board.")
    return first


def _merge_sources(src: Path, image_src: Path) -> None:
    """Copy a build's sources into the image's: its model files (prefixed with its name, so new), and the board
    and library files, which must equal those already there (the same edgesdk and board made them)."""
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        relative = path.relative_to(src)
        if len(relative.parts) == 1 and relative.name.startswith(HARNESS_FILE_PREFIX):
            continue  # the build's own harness: the image writes one for all its models
        dest = image_src / relative
        if dest.exists():
            if dest.read_bytes() != path.read_bytes():
                shared = relative.name in BOARD_FILES or relative.parts[0] == "targets"
                why = "library file" if shared else "file"
                raise UsageError(f"{src.parent} and an earlier build both have {why} {relative}, with different "
                                 "contents: rebuild all the models with this edgesdk.")
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)


def is_image(directory) -> bool:
    """Whether `directory` holds an image of several models (`edgesdk link`) rather than one build."""
    return (Path(directory) / IMAGE_FILE).is_file()


def load_image(image_dir) -> dict:
    path = Path(image_dir) / IMAGE_FILE
    if not path.is_file():
        raise UsageError(f"{image_dir} is not an image of several models (no {IMAGE_FILE}); make one with "
                         "'edgesdk link BUILD_DIR... -o IMAGE'.")
    return json.loads(path.read_text())


EMULATORS = ("builtin", "qemu")


def run_image(image_dir, inputs: dict, timeout_s: float = 120.0, max_instructions: int | None = None,
              emulator: str = "builtin") -> ImageRun:
    """Boot the image once: each model runs once on inputs[name] (one array per model input). `emulator`: the
    built-in one, or stock QEMU (edgesdk/qemu.py: the board's "qemu" machine, the host core only; the same
    outputs, statuses and instruction counts; no peripheral counters, no instruction limit)."""
    from .emulator.machine import elf_symbol
    from .model_name import stream_symbol
    from .run_io import NUMPY_DTYPES, check_report, coerce_input, input_address
    from .runner import check_firmware_arena

    if emulator not in EMULATORS:
        raise UsageError(f"Unknown emulator '{emulator}': use one of {', '.join(EMULATORS)}.")
    image_dir = Path(image_dir)
    image = load_image(image_dir)
    elf = image_dir / "firmware.elf"
    models = {m["name"]: m["report"] for m in image["models"]}
    if set(inputs) != set(models):
        raise UsageError(f"The image holds models {', '.join(models)}; inputs were given for {', '.join(inputs)}.")
    writes, reads = [], []
    for name, report in models.items():
        check_report(report, image_dir / IMAGE_FILE)
        arena = check_firmware_arena(report, elf)
        specs = report["io"]["inputs"]
        if len(inputs[name]) != len(specs):
            raise UsageError(f"Model '{name}' takes {len(specs)} input(s); {len(inputs[name])} given.")
        writes += [(input_address(s, arena, lambda n=name: elf_symbol(elf, stream_symbol(n))),
                    coerce_input(x, s, k).tobytes()) for k, (x, s) in enumerate(zip(inputs[name], specs))]
        reads += [(name, s, arena + s["arena_offset"]) for s in report["io"]["outputs"]]
    board = build_board(image_dir, next(iter(models.values())))
    statuses_read = (elf_symbol(elf, STATUSES_SYMBOL), 4 * len(models))
    raw_reads = [(address, s["bytes"]) for _, s, address in reads] + [statuses_read]
    if emulator == "qemu":
        run = _run_on_qemu(elf, board, models, writes, raw_reads, timeout_s)
    else:
        run = _run_builtin(elf, board, models, writes, raw_reads, timeout_s, max_instructions)
    exit_code, cpu_instructions, uart, marks, raw, stats = run
    outputs = {name: [] for name in models}
    for (name, spec, _), data in zip(reads, raw):
        outputs[name].append(np.frombuffer(data, NUMPY_DTYPES[spec["dtype"]]).reshape(spec["shape"]).copy())
    statuses = dict(zip(models, np.frombuffer(raw[-1], "<i4").tolist()))
    return ImageRun(outputs, statuses, exit_code, cpu_instructions, uart, stats, _model_instructions(models, marks))


def _run_builtin(elf, board, models: dict, writes: list, reads: list, timeout_s: float, max_instructions) -> tuple:
    from .emulator import run_elf
    from .runner import target_peripherals

    result = run_elf(elf, board, writes=writes, timeout_s=timeout_s, max_instructions=max_instructions, reads=reads,
                     observers=[_MarkCounts()])
    used = set().union(*(target_peripherals(r, board).values() for r in models.values()))
    stats = {name: dict(counters) for name, counters in result.peripheral_stats.items() if name in used}
    return result.exit_code, result.cpu_instructions, result.uart, result.observations[0], result.reads, stats


def _run_on_qemu(elf, board, models: dict, writes: list, reads: list, timeout_s: float) -> tuple:
    from .errors import EmulatorError
    from .qemu import check_runs_on_qemu, run_qemu_image

    for report in models.values():
        check_runs_on_qemu(report, board)
    run = run_qemu_image(elf, board, writes, reads, timeout_s)
    if len(run.marks) < 2 * len(models) or not run.reads:  # a trap or a stack overflow ended it inside a model
        unfinished = list(models)[min(len(run.marks) // 2, len(models) - 1)]
        raise EmulatorError(f"The firmware ended with exit code {run.exit_code} on QEMU inside model "
                            f"'{unfinished}'s run. UART output: {run.uart.strip()[-400:]!r}")
    return run.exit_code, run.cpu_instructions, run.uart, run.marks, run.reads, {}


class _MarkCounts:
    """A run_elf observer: the instructions before each entry to edgesdk_harness_mark."""

    def attach(self, machine) -> None:
        pass

    def collect(self, machine) -> list:
        return machine.mark_instructions()


def _model_instructions(models: dict, marks: list) -> dict:
    """Each model's run, between its two harness marks (the harness marks before and after each, in order)."""
    from .emulator import instructions_between_marks

    pairs = instructions_between_marks(marks)
    return {name: pairs[k] if k < len(pairs) else None for k, name in enumerate(models)}
