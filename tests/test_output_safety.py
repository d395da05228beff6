"""edgesdk never deletes or writes through files it did not create (issue 12, items 1-5).

Each test is a finding of the adversarial review, kept as a regression test: `-o` onto a user's directory,
the working directory or a symlink; the model inside the output; a planted link at a temporary file name;
leftovers and live compilers after SIGKILL; the umask; environment failures reported as such.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, model_path
from edgesdk import cli
from edgesdk.output_dir import MARKER, STAGE_OWNER, clean_stale_stages, write_file_atomically
from edgesdk.tune.log import write_tuning_log

needs_toolchain = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                     reason="RISC-V cross compiler not installed")


def edgesdk(*args, cwd=REPO, umask=None, **kwargs):
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600, preexec_fn=preexec, env={**os.environ, "PYTHONPATH": str(REPO)},
                          **kwargs)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def user_files(directory: Path) -> dict:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_o_onto_a_users_directory_holding_the_model_is_refused(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("x\n")
    shutil.copy(model_path("hello_world"), d / "m.tflite")
    before = user_files(d)
    proc = edgesdk("build", d / "m.tflite", "--no-firmware", "-o", d)
    assert proc.returncode == 7, proc.stderr
    assert "inside the output directory" in proc.stderr or "not written by edgesdk" in proc.stderr
    assert user_files(d) == before


def test_o_onto_a_users_directory_is_refused(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("x\n")
    proc = edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", d)
    assert proc.returncode == 7 and "not written by edgesdk" in proc.stderr and MARKER in proc.stderr
    assert user_files(d) == {"notes.txt": b"x\n"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no stage left beside it


def test_o_dot_never_touches_the_working_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("x\n")
    shutil.copy(model_path("hello_world"), tmp_path / "m.tflite")
    before = user_files(tmp_path)
    proc = edgesdk("build", "m.tflite", "--no-firmware", "-o", ".", cwd=tmp_path)
    assert proc.returncode == 7 and "working directory" in proc.stderr
    assert user_files(tmp_path) == before


def test_o_through_a_symlink_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep")
    (victim / MARKER).write_text("even an edgesdk output is not replaced through a link")
    link = tmp_path / "link"
    link.symlink_to(victim)
    proc = edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", link)
    assert proc.returncode == 7 and "symbolic link" in proc.stderr
    assert (victim / "precious.txt").read_text() == "keep" and link.is_symlink()


def test_an_earlier_output_and_an_empty_directory_are_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()  # empty: nothing of the user's can be lost
    assert edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", out).returncode == 0
    assert (out / MARKER).is_file() and (out / "report.json").is_file()
    (out / "stale.txt").write_text("from the previous build")
    assert edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", out).returncode == 0
    assert not (out / "stale.txt").exists() and (out / MARKER).is_file()


def test_the_model_inside_an_earlier_output_is_not_removed(tmp_path):
    out = tmp_path / "out"
    assert edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", out).returncode == 0
    model = out / "model.tflite"
    proc = edgesdk("build", model, "--no-firmware", "-o", out)
    assert proc.returncode == 7 and "inside the output directory" in proc.stderr
    assert model.read_bytes() == model_path("hello_world").read_bytes()


def test_a_marker_that_is_a_symlink_does_not_count(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "data.bin").write_bytes(b"\x01")
    real_marker = tmp_path / "elsewhere"
    real_marker.write_text("x")
    (d / MARKER).symlink_to(real_marker)
    assert edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", d).returncode == 7
    assert (d / "data.bin").read_bytes() == b"\x01"


# -- single files -----------------------------------------------------------------------------------------

def test_tuning_log_never_writes_through_a_planted_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "log.json.tmp").symlink_to(victim)  # the old fixed temporary name
    (tmp_path / ".log.json.tmp").symlink_to(victim)
    write_tuning_log(tmp_path / "log.json", {"format": "edgesdk-tuning-log"})
    assert victim.read_text() == "keep"
    assert json.loads((tmp_path / "log.json").read_text())["format"] == "edgesdk-tuning-log"


def test_atomic_write_replaces_a_link_instead_of_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    dest = tmp_path / "out.json"
    dest.symlink_to(victim)
    write_file_atomically(dest, "new")
    assert victim.read_text() == "keep" and not dest.is_symlink() and dest.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "victim.txt"]  # no temporary left


def test_atomic_write_respects_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        write_file_atomically(tmp_path / "f.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o640


# -- modes, stale stages, killed builds --------------------------------------------------------------------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o755), (0o077, 0o700)])
def test_output_directory_mode_follows_the_umask(tmp_path, umask, mode):
    out = tmp_path / "out"
    assert edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", out, umask=umask).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == mode


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_stale_stages_of_dead_builds_are_removed_live_and_unknown_ones_kept(tmp_path):
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    dead, live, unknown = (tmp_path / f".out.staging-{k}" for k in ("dead", "live", "unknown"))
    for stage in (dead, live, unknown):
        stage.mkdir()
        (stage / "model.c").write_text("")
    (dead / STAGE_OWNER).write_text(f"{_dead_pid()} 1 {boot}\n")
    own_start = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    (live / STAGE_OWNER).write_text(f"{os.getpid()} {own_start} {boot}\n")
    removed = clean_stale_stages(tmp_path, "out")
    assert removed == [dead] and live.is_dir() and unknown.is_dir()


def _processes_mentioning(text: str) -> list:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append((proc.name, cmdline))
    return found


@needs_toolchain
@pytest.mark.parametrize("kept_tree", [False, True], ids=["cmake-in-stage", "kept-cmake-tree"])
def test_sigkill_takes_the_tools_with_it_and_the_next_build_cleans_up(tmp_path, kept_tree):
    """A stand-in `cmake` first on PATH starts a long-running grandchild (as cmake starts make and gcc) with the
    build's CMake paths on its command line (the stage's, or the CMake tree kept between builds,
    firmware_build/build_tree.py); SIGKILL on edgesdk must end both, the next build removes the stage, and
    the kept tree is no longer trusted (the next firmware build wipes and configures it afresh)."""
    from edgesdk.firmware_build import build_tree

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "cmake"
    fake.write_text(f'#!/bin/sh\n"{sys.executable}" -c "import time; time.sleep(600)" "$@" &\nwait\n')
    fake.chmod(0o755)
    out, cache = tmp_path / "out", tmp_path / "cache"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO), "EDGESDK_CACHE": str(cache)}
    if not kept_tree:
        env["EDGESDK_NO_BUILD_CACHE"] = "1"
    build = subprocess.Popen([sys.executable, "-m", "edgesdk", "build", str(model_path("hello_world")), "-o",
                              str(out)], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def cmake_dirs() -> list:
        return [p for p in tmp_path.glob(".out.staging-*")] if not kept_tree else \
            [p for p in cache.glob("cmake/*") if p.is_dir()]

    watched = None
    for _ in range(6000):  # until the stand-in runs inside the stage (polls, not a timing assertion)
        found = [p for p in cmake_dirs() if len(_processes_mentioning(str(p))) >= 2]
        if found:
            watched = found[0]
            break
        assert build.poll() is None, "the build ended before the stand-in cmake started"
        time.sleep(0.05)
    assert watched is not None
    os.kill(build.pid, signal.SIGKILL)
    build.wait()
    for _ in range(600):
        if not _processes_mentioning(str(watched)):
            break
        time.sleep(0.05)
    assert _processes_mentioning(str(watched)) == []
    assert list(tmp_path.glob(".out.staging-*"))  # a SIGKILLed process cleans nothing itself ...
    assert edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", out).returncode == 0
    assert list(tmp_path.glob(".out.staging-*")) == []  # ... the next build does
    if kept_tree:
        assert build_tree.configured_files(watched) is None


# -- environment failures ------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_environment_failures_have_their_own_exit_code(tmp_path, monkeypatch, capsys, code):
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code), str(tmp_path / "out"))

    monkeypatch.setattr("edgesdk.output_dir.new_stage", refuse)
    assert cli.main(["build", str(model_path("hello_world")), "--no-firmware", "-o", str(tmp_path / "out")]) == 10
    err = capsys.readouterr().err
    assert os.strerror(code) in err and "internal error" not in err
    assert not (tmp_path / "out").exists()


def test_a_mount_point_as_output_is_an_environment_failure(tmp_path, monkeypatch, capsys):
    out = tmp_path / "mnt"
    out.mkdir()
    monkeypatch.setattr("edgesdk.output_dir.os.path.ismount", lambda p: Path(p) == out)
    assert cli.main(["build", str(model_path("hello_world")), "--no-firmware", "-o", str(out)]) == 10
    assert "mount point" in capsys.readouterr().err


def test_a_closed_stdout_is_reported_as_a_broken_pipe():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before edgesdk writes a byte
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "inspect", "--list-ops"], stdout=write_end,
                          stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=600)
    os.close(write_end)
    assert proc.returncode == 10, proc.stderr
    assert "broken pipe" in proc.stderr and "Traceback" not in proc.stderr and "internal error" not in proc.stderr
