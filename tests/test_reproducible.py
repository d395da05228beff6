"""Builds are reproducible and atomic (docs/reliability.md).

* The same model and options give byte-identical sources, command tables and firmware, whatever the output
  directory, and the ELF carries no path of the build (output, staging or CMake directories).
* A build that fails, is interrupted (SIGINT) or killed (SIGKILL) leaves the previous output directory
  exactly as it was; two builds into different directories at the same time do not interfere.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, model_path
from edgesdk.board import PACKAGE_DIR
from edgesdk.compiler import BuildOptions, build
from edgesdk.errors import ModelError

pytestmark = [pytest.mark.slow,  # five firmware builds, two of them concurrent
              pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                 reason="RISC-V cross compiler not installed")]
REPRODUCIBLE = ("firmware.elf", "firmware.bin", "firmware.hex")


def tree_digest(directory: Path, skip=("report.json", "firmware.map", "memory_timeline.svg")) -> dict:
    """path -> sha256 of every file under `directory` (build-specific files skipped)."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name not in skip}


def cli_build(out: Path, model=None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgesdk", "build", str(model or model_path("kws")), "-o", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


@pytest.fixture(scope="module")
def first_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro_a") / "outdir_q7z"  # a name that can only come from the path
    build(model_path("kws"), out, BuildOptions(target="npu,c"))
    return out


def test_same_inputs_give_identical_sources_tables_and_firmware(first_build, tmp_path):
    other = tmp_path / "somewhere" / "else" / "different_name"
    build(model_path("kws"), other, BuildOptions(target="npu,c"))
    a, b = tree_digest(first_build), tree_digest(other)
    assert a == b
    assert {"src/model.c", "src/model_npu.c", "src/model_data.c", "firmware.elf"} <= set(a)


def test_firmware_carries_no_build_paths(first_build):
    elf = (first_build / "firmware.elf").read_bytes()
    for fragment in (str(first_build), first_build.name, str(first_build.parent), ".staging-", "edgesdk-cmake-",
                     str(PACKAGE_DIR), str(PACKAGE_DIR.parent), "/tmp/", os.path.expanduser("~")):
        assert fragment.encode() not in elf, fragment


def test_concurrent_builds_into_different_directories(first_build, tmp_path):
    outs = [tmp_path / "one" / "kws", tmp_path / "two" / "kws"]
    procs = [cli_build(out) for out in outs]
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    expected = tree_digest(first_build)
    assert all(tree_digest(out) == expected for out in outs)


def test_failed_build_leaves_previous_output_intact(first_build, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(first_build, out)
    before = tree_digest(out, skip=())
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\0\0\0\0TFL3" + b"\xff" * 64)
    with pytest.raises(ModelError):
        build(bad, out, BuildOptions())
    assert tree_digest(out, skip=()) == before
    assert not list(tmp_path.glob(".out.staging-*"))


def wait_for_firmware_build(out: Path, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    """Until the child is cross-compiling into its staging directory (the longest step)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stages = list(out.parent.glob(f".{out.name}.staging-*/src/model.c"))
        if stages and any(p.info().get("name") == "cmake" for p in _children(proc.pid)):
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the child build never reached the firmware build")


class _Child:
    def __init__(self, pid):
        self.pid = pid

    def info(self) -> dict:
        try:
            return {"name": Path(f"/proc/{self.pid}/comm").read_text().strip()}
        except OSError:
            return {}


def _children(pid: int) -> list:
    """Descendants of `pid` (from /proc), to see when the build has started CMake."""
    result, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            kids = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for kid in map(int, kids):
            result.append(_Child(kid))
            frontier.append(kid)
    return result


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_interrupted_build_leaves_previous_output_intact(first_build, tmp_path, sig):
    out = tmp_path / "out"
    shutil.copytree(first_build, out)
    before = tree_digest(out, skip=())
    # A different model, so a completed build would change OUT.
    # An empty cache, and every compile held 5 s by a `ccache` launcher that then runs the compiler: the signal
    # lands while CMake works, not after a warm build that ends within the 50 ms the test needs to send it.
    slow = tmp_path / "slow-launcher"
    slow.mkdir()
    (slow / "ccache").write_text('#!/bin/sh\nsleep 5\nexec "$@"\n')
    (slow / "ccache").chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key != "EDGESDK_NO_CCACHE"}
    # SIGINT at its default in the child, as a terminal's Ctrl-C finds it: a process that starts with SIGINT
    # ignored (inherited from a test runner that ignores it) keeps it ignored and would build on to the end.
    proc = cli_build(out, model=model_path("hello_world"), start_new_session=True,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                     env={**env, "EDGESDK_CACHE": str(tmp_path / "empty-cache"),
                          "PATH": f"{slow}{os.pathsep}{env.get('PATH', '')}"})
    wait_for_firmware_build(out, proc)
    os.kill(proc.pid, sig)  # the build process only (its own CMake children see the pipe close / get killed)
    _stdout, stderr = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "interrupted; no output was written" in stderr, stderr
        assert not list(tmp_path.glob(".out.staging-*")), "the staging directory was not removed"
    else:
        assert proc.returncode == -signal.SIGKILL
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # orphaned CMake/compiler processes of the child's own session
    except ProcessLookupError:
        pass
    assert tree_digest(out, skip=()) == before
    # The next build into the same directory works and replaces it.
    report = build(model_path("hello_world"), out, BuildOptions(target="npu,c", compile_firmware=False))
    assert report["model"].endswith("hello_world_int8.tflite") and not (out / "firmware.elf").exists()
