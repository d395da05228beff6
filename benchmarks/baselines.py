"""The other toolchains, run in the same process as the edgesdk measurements.

* TFLite Micro (PyPI `tflite-micro`): the arena its allocator plans for the model, total and head (the
  head is the activation arena; the tail holds the interpreter's persistent structures). Read from
  `print_allocations()`, which prints from C++ (to file descriptor 2 in this build; both are captured).
* Vela (PyPI `ethos-u-vela`, optional): compiles for Ethos-U55-128 (its defaults: 500 MHz, shared SRAM);
  figures from the summary CSV it writes (`sram_memory_used` in KiB, `cycles_total`), and the wall time
  of its compile (in-process, after a warm-up, like edgesdk's compile step).
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import io
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

VELA_ACCELERATOR = "ethos-u55-128"


def tflm_arena(model_path) -> dict:
    """{"total": bytes, "head": bytes, "tail": bytes} of TFLite Micro's arena for the model."""
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(str(model_path), arena_size=1 << 20)
    text = _capture_c_output(interpreter.print_allocations)
    figures = {}
    for part in ("total", "head", "tail"):
        match = re.search(rf"Arena allocation {part} (\d+) bytes", text)
        if match is None:
            raise RuntimeError(f"tflite-micro printed no arena {part}: {text[:300]!r}")
        figures[part] = int(match.group(1))
    return figures


def _capture_c_output(function) -> str:
    """Run `function` with the process's file descriptors 1 and 2 (where C++ prints) sent to a file."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with tempfile.TemporaryFile() as tmp:
        for fd in saved:
            os.dup2(tmp.fileno(), fd)
        try:
            function()
            libc.fflush(None)
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
        tmp.seek(0)
        return tmp.read().decode(errors="replace")


def vela_available() -> bool:
    try:
        import ethosu.vela.vela  # noqa: F401
    except ImportError:
        return False
    return True


def vela_version() -> str:
    from importlib.metadata import version

    return version("ethos-u-vela")


def run_vela(model_path, optimise: str, repeats: int = 1) -> dict:
    """Compile with Vela; {"sram_bytes", "sram_kib", "cycles", "compile_s" (median of `repeats`)}."""
    from ethosu.vela import vela

    model_path = Path(model_path)
    times, summary = [], None
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="edgesdk-bench-vela-") as out:
            argv = [str(model_path), "--accelerator-config", VELA_ACCELERATOR, "--optimise", optimise,
                    "--output-dir", out]
            result = {}

            def compile_once():
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    start = time.perf_counter()
                    result["status"] = vela.main(argv)
                    times.append(time.perf_counter() - start)

            log = _capture_c_output(compile_once)  # Vela's C++ core prints warnings to the file descriptors
            if result["status"] not in (0, None):
                raise RuntimeError(f"vela failed on {model_path.name} ({result['status']}): {log[-500:]}")
            (csv_path,) = Path(out).glob(f"{model_path.stem}_summary_*.csv")
            with open(csv_path, newline="") as f:
                summary = next(csv.DictReader(f))
    kib = float(summary["sram_memory_used"])
    return {"sram_kib": kib, "sram_bytes": round(kib * 1024), "cycles": round(float(summary["cycles_total"])),
            "compile_s": statistics.median(times), "optimise": optimise}


def vela_command() -> str | None:
    """The `vela` console script of this interpreter (the one edgesdk's fresh process runs on), else the one on
    PATH. Not a version manager's shim (pyenv's adds a shell and its own start-up to every run: ~25 ms of CPU
    here), so that both fresh processes start the same way."""
    import shutil

    beside = Path(sys.executable).with_name("vela")
    return str(beside) if beside.is_file() else shutil.which("vela")


def vela_cli_seconds(model_path, optimise: str = "Performance", repeats: int = 1) -> float:
    """Median wall time of the `vela` command (a fresh process, imports included, its outputs written)."""
    import subprocess

    exe = vela_command()
    if exe is None:
        raise RuntimeError("the vela command is not on PATH")
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="edgesdk-bench-vela-") as out:
            start = time.perf_counter()
            subprocess.run([exe, str(model_path), "--accelerator-config", VELA_ACCELERATOR, "--optimise", optimise,
                            "--output-dir", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
    return statistics.median(times)
