"""`edgesdk regress`: build and run every model x board x target list, check each against the reference, and
write one summary table.

    edgesdk regress MODEL... --boards riscv-npu,hifive1-revb --targets "npu,c;c" --seeds 0,1 [--workers N |
                    --cluster ADDRESS] -o DIR

A row is one (model, board, target list). Its task (run_row) builds the firmware in a temporary directory of
whichever worker runs it, runs it on every seed's random input (built-in emulator, QEMU, or the board itself,
`--run-on`), compares each run's outputs byte for byte with the reference interpreter, and returns the row's
figures with its build directory packed as a tar. The command collects the rows in their fixed order (models,
then boards, then target lists; not the order they finish in) and writes, atomically, like `edgesdk build -o`:

    DIR/summary.json     format "edgesdk-regress": the options and one entry per row (see row_json)
    DIR/summary.txt      the table the command prints
    DIR/<row>/           the row's build directory (firmware.elf, report.json, src/, ...)

Everything in a row except `timing` and `node` is deterministic: a run with N workers or on a cluster gives the
rows a serial run gives. A row's status is "pass" (built, ran, bit-exact on every seed), "mismatch" (ran, some
output differs from the reference), "error" (did not build or run: the message and the exit code `edgesdk
build` / `run` would have given) or "skipped" (the board lacks the hardware a target of the list drives, e.g. an
accelerator: nothing to test, not a failure). The command exits 0 when no row failed, else 8.
"""

from __future__ import annotations

import io
import json
import platform
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from .. import __version__
from ..dataclass_cache import dataclass
from ..errors import EdgesdkError, UsageError
from .runners import RUNNERS

SUMMARY_FORMAT = "edgesdk-regress"
SUMMARY_VERSION = 2  # 2: rows carry peripheral_cycles {peripheral: cycles} instead of npu_cycles
FAILED_ROWS_EXIT = 8  # as `edgesdk run --check` on a mismatch
INTERNAL_ERROR_EXIT = 70  # = edgesdk.cli.INTERNAL_ERROR_EXIT
TABLE_MESSAGE_CHARS = 140


@dataclass(frozen=True)
class RegressOptions:
    boards: tuple = ("riscv-npu",)
    target_lists: tuple = ()  # empty: each board's own default_targets
    rounding: str = "ref"
    seeds: tuple = (0,)
    run_on: str = "builtin"  # builtin | qemu | board (runners.py)
    timeout_s: float = 120.0  # per emulator or board run


@dataclass(frozen=True)
class RowSpec:
    """Everything a worker needs for one row; the model travels as bytes, so a node need not share files."""

    index: int
    name: str  # the row's directory in DIR
    model: str  # as given on the command line
    model_file: str  # its file name
    model_data: bytes
    board: str
    targets: str
    rounding: str
    seeds: tuple
    run_on: str
    timeout_s: float


# -- arguments ----------------------------------------------------------------------------------------------

def parse_list(text: str, separator: str, what: str, example: str) -> tuple:
    items = tuple(item.strip() for item in text.split(separator))
    if not text.strip() or any(not item for item in items):
        raise UsageError(f"{what} {text!r} has an empty entry; give a {separator!r}-separated list, e.g. {example}.")
    if len(set(items)) != len(items):
        raise UsageError(f"{what} {text!r} names an entry twice.")
    return items


def parse_seeds(text: str) -> tuple:
    items = parse_list(text, ",", "--seeds", "0,1,2")
    try:
        seeds = tuple(int(item) for item in items)
    except ValueError:
        raise UsageError(f"--seeds {text!r}: each seed is an integer, e.g. --seeds 0,1,2.") from None
    if any(s < 0 for s in seeds):
        raise UsageError(f"--seeds {text!r}: seeds are 0 or more.")
    return seeds


def check_options(models: list, options: RegressOptions) -> None:
    """Everything that can be checked before any work starts: models readable, boards known, targets installed,
    the reference installed. Whether a board has each target's hardware is per row ("skipped")."""
    from ..board import load_board
    from ..reference import require_reference
    from ..targets import available_targets

    if not models:
        raise UsageError("regress needs at least one MODEL (.tflite).")
    for model in models:
        path = Path(model)
        if not path.is_file():
            raise UsageError(f"Model {model} does not exist (or is not a file).")
        if path.suffix.lower() != ".tflite":
            raise UsageError(f"Model {model}: regress compares with the TFLite reference interpreter, so it takes "
                             ".tflite models (build ONNX models with 'edgesdk build').")
    for board in options.boards:
        load_board(board)  # UsageError naming the available boards
    known = set(available_targets())
    for target_list in options.target_lists:
        unknown = [t.strip() for t in target_list.split(",") if t.strip() not in known]
        if unknown or not target_list.strip():
            raise UsageError(f"--targets: {target_list!r} names unknown target(s) {', '.join(unknown) or '(none)'}; "
                             f"installed: {', '.join(sorted(known))}. Separate target lists with ';', targets within "
                             "a list with ',', e.g. --targets \"a,b;b\" (edgesdk inspect --list-targets lists them).")
    if options.run_on not in RUNNERS:
        raise UsageError(f"--run-on must be one of {', '.join(RUNNERS)}, not {options.run_on!r}.")
    require_reference(options.rounding, "edgesdk regress (it checks every row against the reference)")


def skip_reason(spec: RowSpec) -> str | None:
    """Why the row cannot run at all (its board lacks a target's hardware), or None."""
    from ..board import load_board
    from ..targets import parse_target_list

    try:
        parse_target_list(spec.targets, load_board(spec.board))
    except UsageError as exc:
        return str(exc)
    return None


def skipped_row(spec: RowSpec, reason: str) -> dict:
    row = _empty_row(spec)
    row.update(status="skipped", message=reason, stage=None)
    return {"row": row, "files": None}


def _empty_row(spec: RowSpec) -> dict:
    return {"model": spec.model, "board": spec.board, "targets": spec.targets, "status": "error",
            "sram_bytes": None, "flash_bytes": None, "instructions": None, "peripheral_cycles": {}, "runs": [],
            "message": None, "exit_code": None, "stage": "build", "name": spec.name, "dir": None}


def row_specs(models: list, options: RegressOptions) -> list:
    """One RowSpec per model x board x target list, in that order; each named <model>--<board>--<targets> (its
    directory in DIR), with its position appended where two rows would share a name (same-named models or
    boards from different folders)."""
    board_names = [_board_name(board) for board in options.boards]
    rows = [(model, board, board_name, targets) for model in models
            for board, board_name in zip(options.boards, board_names)
            for targets in options.target_lists or (_board_default(board),)]
    names = [f"{Path(model).stem}--{board_name}--{targets.replace(',', '+').replace(' ', '')}"
             for model, _, board_name, targets in rows]
    data = {model: Path(model).read_bytes() for model in models}
    return [RowSpec(k, name if names.count(name) == 1 else f"{name}-{k + 1}", str(model), Path(model).name,
                    data[model], board, targets, options.rounding, tuple(options.seeds), options.run_on,
                    options.timeout_s)
            for k, (name, (model, board, _, targets)) in enumerate(zip(names, rows))]


# -- one row (runs on a worker) -----------------------------------------------------------------------------

def run_row(spec: RowSpec) -> dict:
    """Build, run and check one row; never raises (a failure is the row's status). Returns the row (row_json's
    fields) and, under "files", the build directory as a tar (None if nothing was built)."""
    started = time.monotonic()
    row = _empty_row(spec)
    timing = {}
    files = None
    with tempfile.TemporaryDirectory(prefix="edgesdk-regress-") as tmp:
        model = Path(tmp) / spec.model_file
        model.write_bytes(spec.model_data)
        out = Path(tmp) / "build"
        try:
            report = _build(model, out, spec)
            timing["build_s"] = round(time.monotonic() - started, 3)
            row.update(sram_bytes=report["memory"]["sram_peak_bytes"], flash_bytes=report["memory"]["flash_bytes"],
                       stage="run")
            t1 = time.monotonic()
            for seed in spec.seeds:
                row["runs"].append(_run_seed(model, out, report, seed, spec))
            timing["run_s"] = round(time.monotonic() - t1, 3)
            first = row["runs"][0]
            row.update(instructions=first["instructions"], peripheral_cycles=first["peripheral_cycles"], stage=None)
            bad = [r["seed"] for r in row["runs"] if not r["bit_exact"]]
            row["status"] = "mismatch" if bad else "pass"
            if bad:
                row["message"] = (f"outputs differ from the reference ({_oracle(spec.rounding)}) on seed(s) "
                                  f"{', '.join(map(str, bad))}; differing bytes per output: "
                                  + "; ".join(f"seed {r['seed']}: {r['mismatched_bytes']}" for r in row["runs"]
                                              if not r["bit_exact"]))
                row["exit_code"] = FAILED_ROWS_EXIT
        except EdgesdkError as err:
            row.update(message=str(err), exit_code=err.exit_code)
        except Exception as exc:  # an edgesdk bug: the row says so, the other rows go on
            row.update(message=f"internal error ({type(exc).__name__}: {exc}). This is a bug in edgesdk; please "
                               f"report it with the model. {traceback.format_exc(limit=-3).strip()}",
                       exit_code=INTERNAL_ERROR_EXIT)
        if out.is_dir():
            files, row["dir"] = _tar_directory(out), spec.name
    timing["total_s"] = round(time.monotonic() - started, 3)
    row["timing"] = timing
    row["node"] = platform.node()
    return {"row": row, "files": files}


def _build(model: Path, out: Path, spec: RowSpec) -> dict:
    from ..compiler import BuildOptions, build

    return build(model, out, BuildOptions(board=spec.board, target=spec.targets, rounding=spec.rounding))


def _run_seed(model: Path, out: Path, report: dict, seed: int, spec: RowSpec) -> dict:
    from ..reference import run_reference
    from ..runner import check_succeeded, random_inputs
    from .runners import run_firmware

    inputs = random_inputs(report, seed)
    result = run_firmware(out, inputs, spec.run_on, spec.timeout_s)
    check_succeeded(result)
    expected = run_reference(model, inputs, spec.rounding, "edgesdk regress")
    mismatched = [int(np.count_nonzero(np.asarray(e).reshape(-1).view(np.uint8) != y.reshape(-1).view(np.uint8)))
                  for e, y in zip(expected, result.outputs)]
    return {"seed": seed, "bit_exact": not any(mismatched), "mismatched_bytes": mismatched,
            "instructions": result.inference_instructions, "peripheral_cycles": result.peripheral_cycles}


def _oracle(rounding: str) -> str:
    return "TFLite Micro" if rounding == "tflm" else "LiteRT BUILTIN_REF"


def _tar_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buffer.getvalue()


def _untar(data: bytes, directory: Path) -> None:
    directory.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):  # refuses links out of the folder, absolute paths, devices
            tar.extractall(directory, filter="data")
        else:
            tar.extractall(directory)


# -- the whole run ------------------------------------------------------------------------------------------

def regress(models: list, out_dir, options: RegressOptions, workers: int = 1, cluster: str | None = None,
            progress=None) -> dict:
    """Run every row (see the module docstring) and write DIR; return the summary (summary.json's contents)."""
    from ..output_dir import check_replaceable, staged_output
    from .pool import board_resource, check_pool_options, worker_pool

    say = progress or (lambda text: None)
    check_options(models, options)
    check_pool_options(workers, cluster, "edgesdk regress --workers/--cluster")
    protect = tuple(Path(m) for m in models)
    out_dir = check_replaceable(Path(out_dir), protect)
    specs = row_specs(models, options)
    skipped = {spec.index: skipped_row(spec, reason) for spec in specs for reason in [skip_reason(spec)] if reason}
    to_run = [spec for spec in specs if spec.index not in skipped]
    needs = (lambda spec: {board_resource(_board_name(spec.board)): 1}) if options.run_on == "board" else None
    local_boards = {board_resource(_board_name(b)): 1 for b in options.boards} if options.run_on == "board" else None
    started = time.monotonic()
    with worker_pool(workers, cluster, "edgesdk regress --workers/--cluster", local_boards) as pool:
        if needs:
            _check_boards_offered(pool, to_run, needs, cluster)
        say(f"regress: {len(specs)} rows ({len(models)} model(s) x {len(options.boards)} board(s) x "
            f"{len(options.target_lists) or 1} target list(s)"
            + (f", {len(skipped)} skipped: their board lacks a target's hardware" if skipped else "")
            + f"), seeds {', '.join(map(str, options.seeds))}, on {pool.description}")
        done = []

        def report_row(index, result):
            done.append(index)
            r = result["row"]
            say(f"[{len(done)}/{len(to_run)}] {to_run[index].name}: {r['status']}"
                + (f" ({_first_line(r['message'])})" if r["status"] != "pass" else ""))

        ran = dict(zip((spec.index for spec in to_run), pool.map(run_row, to_run, needs, report_row)))
        workers_text = pool.description
    results = [ran.get(spec.index) or skipped[spec.index] for spec in specs]
    rows = [result["row"] for result in results]
    summary = {"format": SUMMARY_FORMAT, "format_version": SUMMARY_VERSION, "edgesdk_version": __version__,
               "models": [str(m) for m in models], "boards": list(options.boards),
               "target_lists": list(options.target_lists), "rounding": options.rounding, "seeds": list(options.seeds),
               "run_on": options.run_on, "workers": workers_text,
               "totals": _totals(rows), "wall_s": round(time.monotonic() - started, 2), "rows": rows}
    with staged_output(out_dir, protect) as stage:
        for result in results:
            if result["files"] is not None:
                _untar(result["files"], stage / result["row"]["dir"])
        (stage / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (stage / "summary.txt").write_text(summary_table(summary) + "\n")
    return summary


def _board_name(board: str) -> str:
    """The board's name as board.json says (a path or a name on the command line)."""
    from ..board import load_board

    return load_board(board).name


def _board_default(board: str) -> str:
    """The board's own target list (board.json default_targets), for a run without --targets."""
    from ..board import load_board
    from ..targets import default_target_list

    return default_target_list(load_board(board))


def _check_boards_offered(pool, specs: list, needs, cluster) -> None:
    wanted = sorted({name for spec in specs for name in needs(spec)})
    missing = pool.missing_resources(wanted)
    if missing:
        raise UsageError(
            f"No node of the Ray cluster {cluster} offers {', '.join(missing)}, so the rows that run on "
            f"{'that board' if len(missing) == 1 else 'those boards'} could never start. On the host each board is "
            f"attached to, join the cluster with: ray start --address=<head address> --resources "
            f"'{json.dumps({missing[0]: 1})}' (docs/farm.md); or run these rows with --run-on builtin.")


def _totals(rows: list) -> dict:
    totals = {"rows": len(rows)}
    for status in ("pass", "mismatch", "error", "skipped"):
        totals[status] = sum(1 for r in rows if r["status"] == status)
    return totals


def exit_code(summary: dict) -> int:
    t = summary["totals"]
    return FAILED_ROWS_EXIT if t["mismatch"] or t["error"] else 0


def deterministic_rows(summary: dict) -> list:
    """The rows without what depends on the machine and the schedule (timing, node): equal for every run of the
    same models and options, whatever the workers."""
    return [{k: v for k, v in row.items() if k not in ("timing", "node")} for row in summary["rows"]]


# -- the table -----------------------------------------------------------------------------------------------

def _first_line(message) -> str:
    text = (message or "").strip().splitlines()[0] if message else ""
    return text if len(text) <= TABLE_MESSAGE_CHARS else text[:TABLE_MESSAGE_CHARS - 3] + "..."


def _number(value) -> str:
    return "-" if value is None else f"{value:,}"


def summary_table(summary: dict) -> str:
    """One line per row; a cycles column per peripheral any row's build uses, headed by its board name."""
    peripherals = sorted({name for r in summary["rows"] for name in r["peripheral_cycles"]})
    header = ("model", "board", "targets", "status", "SRAM B", "flash B", "instructions",
              *(f"{name} cycles" for name in peripherals))
    body = [(Path(r["model"]).stem, r["board"], r["targets"], r["status"], _number(r["sram_bytes"]),
             _number(r["flash_bytes"]), _number(r["instructions"]),
             *(_number(r["peripheral_cycles"].get(name)) for name in peripherals)) for r in summary["rows"]]
    widths = [max(len(row[k]) for row in [header, *body]) for k in range(len(header))]
    numeric = set(range(4, len(header)))

    def line(cells):
        return "  ".join(c.rjust(w) if k in numeric else c.ljust(w) for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [line(header), line(["-" * w for w in widths])] + [line(row) for row in body]
    failures = [r for r in summary["rows"] if r["status"] in ("mismatch", "error")]
    if failures:
        lines += ["", "failed rows:"]
        lines += [f"  {r['name']} ({r['status']}, exit code {r['exit_code']}): {_first_line(r['message'])}"
                  for r in failures]
    t = summary["totals"]
    lines += ["", f"{t['pass']} of {t['rows']} rows passed" + (f", {t['mismatch']} not bit-exact" if t["mismatch"] else "")
              + (f", {t['error']} did not build or run" if t["error"] else "")
              + (f", {t['skipped']} skipped (the board lacks a target's hardware)" if t["skipped"] else "")
              + f"; seeds {', '.join(map(str, summary['seeds']))}, rounding {summary['rounding']}, run on "
              f"{summary['run_on']}, {summary['workers']}"]
    return "\n".join(lines)


