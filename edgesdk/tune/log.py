"""The tuning log: what `edgesdk tune` writes and `edgesdk build --tuning-log` applies (JSON).

    format, format_version      "edgesdk-tuning-log", LOG_VERSION
    model, model_sha256         the model file tuned (the build refuses another file)
    board, targets, rounding    the build options tuned for (the build must use the same ones)
    objective                   "latency" or "sram"
    schedule                    Schedule.to_json(): per-layer target and switches, cascade groups
    chosen, runner_up           candidates: their schedule changes from the default, predicted figures
                                (compiler: arena, flash data, latency at the board's clocks) and measured
                                ones (firmware on the emulator; null when not run)
    baseline                    the default build's predicted figures
    search                      seed, time budget, evaluations, whether the search finished

docs/performance.md ("Tuning") describes every field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import UsageError
from ..output_dir import write_file_atomically
from .schedule import Schedule

LOG_FORMAT = "edgesdk-tuning-log"
LOG_VERSION = 2
# Versions this edgesdk reads: 1 stored a layer's switches as keys of the layer entry (Schedule.from_json reads both).
READABLE_VERSIONS = (1, 2)


def file_sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_tuning_log(path, log: dict) -> None:
    write_file_atomically(path, json.dumps(log, indent=2) + "\n")  # never half-written, never through a link


def read_tuning_log(path) -> dict:
    """The log's JSON, checked for format and version."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"Tuning log {path} does not exist. Write one with 'edgesdk tune MODEL -o {path}'.")
    try:
        log = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"Tuning log {path} is not valid JSON ({exc}). Re-run 'edgesdk tune' to write it again.") from None
    if not isinstance(log, dict) or log.get("format") != LOG_FORMAT:
        raise UsageError(f"{path} is not an edgesdk tuning log (no \"format\": \"{LOG_FORMAT}\"). Give the file "
                         "written by 'edgesdk tune -o LOG.json'.")
    if log.get("format_version") not in READABLE_VERSIONS:
        raise UsageError(f"Tuning log {path} has format version {log.get('format_version')}; this edgesdk reads "
                         f"versions {', '.join(map(str, READABLE_VERSIONS))}. Re-run 'edgesdk tune' with this edgesdk.")
    return log


def schedule_from_log(path, model_path, board_name: str, targets: list, rounding: str) -> Schedule:
    """The log's schedule, after checking that it was tuned for this model file, board, target list and
    rounding (UsageError naming what differs, else); its origin records the log's path and hash."""
    log = read_tuning_log(path)
    expected = {"model_sha256": file_sha256(model_path), "board": board_name, "targets": list(targets),
                "rounding": rounding}
    for name, value in expected.items():
        if log.get(name) != value:
            raise UsageError(
                f"Tuning log {path} was written for {name} {log.get(name)!r}, but this build has {value!r}. A "
                f"schedule only applies to the model, board, target list and rounding it was tuned for: re-run "
                f"'edgesdk tune {Path(model_path).name} --board {board_name} --target \"{','.join(targets)}\" "
                f"--rounding {rounding} -o {path}' (or build with the log's options).")
    schedule = Schedule.from_json(log.get("schedule"), where=f"tuning log {path}")
    origin = {"log": str(path), "log_sha256": file_sha256(path)}
    return Schedule(schedule.layers, schedule.cascades, origin)
