"""`edgesdk run` trusts nothing it reads back (issue 12, item 13).

* report.json: an edited input offset wrote the input over the firmware's code; an empty input list ran
  with exit code 0; an unknown `rounding` silently picked a reference. Now every field the run uses is
  checked (schema, sizes, dtypes, shapes, rounding, slots inside the arena and inside the ELF's arena
  block) and a bad one is a UsageError (exit code 7) before the emulator starts.
* The host-library cache (edgesdk/hostcc.py): a truncated libedgesdk_emu-*.so made every run fail until
  removed, and any .so in the cache was loaded unchecked. Now each library has a sha256 sidecar written
  after it, checked before the library is handed out for loading; a mismatch is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, model_path

pytestmark = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V cross compiler not installed")


def edgesdk(*args, env=None):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "out"
    proc = edgesdk("build", model_path("hello_world"), "--target", "c", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def build_copy(built, tmp_path):
    """A copy of the build whose report.json a test may edit."""
    out = tmp_path / "out"
    shutil.copytree(built, out)
    return out


def _edit(out, change) -> None:
    path = out / "report.json"
    report = json.loads(path.read_text())
    change(report)
    path.write_text(json.dumps(report))


def _input(r):
    return r["io"]["inputs"][0]


def _set(path: str, value):
    def change(r):
        keys = path.split(".")
        node = r
        for key in keys[:-1]:
            node = node[int(key)] if key.isdigit() else node[key]
        node[keys[-1]] = value
    return change


FLASH_CODE_FROM_ARENA = (0x20000000 - 0x80000030) % (1 << 32)  # where edgesdk_arena + offset lands in flash

TAMPERED = [
    ("input offset past the arena", lambda r: _input(r).update(arena_offset=r["memory"]["arena_bytes"]), "io.inputs[0].arena_offset"),
    ("input offset into the code", lambda r: _input(r).update(arena_offset=FLASH_CODE_FROM_ARENA), "io.inputs[0].arena_offset"),
    ("negative input offset", lambda r: _input(r).update(arena_offset=-16), "io.inputs[0].arena_offset"),
    ("output offset past the arena", lambda r: r["io"]["outputs"][0].update(arena_offset=10 ** 6), "io.outputs[0].arena_offset"),
    ("no inputs", _set("io.inputs", []), "'io.inputs' is empty"),
    ("no outputs", _set("io.outputs", []), "'io.outputs' is empty"),
    ("unknown rounding", _set("rounding", "exact"), "'rounding' is 'exact'"),
    ("no rounding", lambda r: r.pop("rounding"), "'rounding' is None"),
    ("bytes disagree with the shape", lambda r: _input(r).update(bytes=_input(r)["bytes"] * 2), "io.inputs[0].bytes"),
    ("empty shape dimension", lambda r: _input(r).update(shape=[1, 0], bytes=0), "io.inputs[0].shape"),
    ("unknown dtype", lambda r: _input(r).update(dtype="int4"), "io.inputs[0].dtype is 'int4'"),
    ("offset that is not an integer", lambda r: _input(r).update(arena_offset="0"), "io.inputs[0].arena_offset"),
    ("offset that is a boolean", lambda r: _input(r).update(arena_offset=True), "io.inputs[0].arena_offset"),
    ("arena size that is not a size", _set("memory.arena_bytes", -1), "'memory.arena_bytes' is -1"),
    ("no board", lambda r: r.pop("board"), "'board' is not a board name"),
    ("not an object", lambda r: r.clear(), "'board' is not a board name"),
]


@pytest.mark.parametrize("name, change, fragment", TAMPERED, ids=[t[0] for t in TAMPERED])
def test_a_tampered_report_is_refused_before_the_run(build_copy, name, change, fragment):
    _edit(build_copy, change)
    proc = edgesdk("run", build_copy, "--random-input", "1")
    assert proc.returncode == 7, (proc.returncode, proc.stdout, proc.stderr)
    assert fragment in proc.stderr and "Rebuild with 'edgesdk build'" in proc.stderr, proc.stderr
    assert not (build_copy / "run").exists()  # nothing ran, nothing was written


def test_a_report_that_is_not_json_or_not_an_object(build_copy):
    (build_copy / "report.json").write_text("[1, 2, 3]")
    proc = edgesdk("run", build_copy, "--random-input", "1")
    assert proc.returncode == 7 and "it is not a JSON object" in proc.stderr, proc.stderr
    (build_copy / "report.json").write_bytes(b"\xff\xfe{")
    proc = edgesdk("run", build_copy, "--random-input", "1")
    assert proc.returncode == 7 and "is corrupt" in proc.stderr, proc.stderr


def test_a_report_from_another_build_is_refused(build_copy):
    """A consistent report whose arena is larger than the firmware's: every slot passes the report's own
    bounds, but the ELF's arena block (guards, arena, guards) says the arena is smaller."""
    def grow(r):
        r["memory"]["arena_bytes"] *= 64
        _input(r)["arena_offset"] = r["memory"]["arena_bytes"] - _input(r)["bytes"]
    _edit(build_copy, grow)
    proc = edgesdk("run", build_copy, "--random-input", "1")
    assert proc.returncode == 7 and "not from the same build" in proc.stderr, proc.stderr


def test_empty_and_missing_inputs_are_refused(build_copy, tmp_path):
    empty = tmp_path / "empty.npy"
    np.save(empty, np.zeros((0,), np.int8))
    proc = edgesdk("run", build_copy, "--input", empty)
    assert proc.returncode == 7 and "must have shape" in proc.stderr, proc.stderr
    proc = edgesdk("run", build_copy)
    assert proc.returncode == 7 and "1 input(s)" in proc.stderr, proc.stderr


def test_an_untouched_build_still_runs_and_checks(built, tmp_path):
    proc = edgesdk("run", built, "--random-input", "3", "--check", "--output-dir", tmp_path / "run")
    assert proc.returncode == 0 and "bit-exact" in proc.stdout, proc.stdout + proc.stderr


def test_an_unknown_rounding_has_no_reference():
    from edgesdk.errors import UsageError
    from edgesdk.reference import run_reference

    with pytest.raises(UsageError, match="Unknown rounding mode 'exact'"):
        run_reference(model_path("hello_world"), [np.zeros((1, 1), np.int8)], "exact")


# -- the host-library cache ----------------------------------------------------------------------------------
def _private_cache(tmp_path) -> dict:
    env = dict(os.environ, EDGESDK_CACHE=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return env


def _emulator_libraries(env) -> list:
    return sorted((os.path.join(env["EDGESDK_CACHE"], "hostlib", name))
                  for name in os.listdir(os.path.join(env["EDGESDK_CACHE"], "hostlib"))
                  if name.startswith("libedgesdk_emu-") and name.endswith(".so"))


def test_a_damaged_cached_emulator_library_is_rebuilt_not_loaded(built, tmp_path):
    """Truncated (a full disk), then replaced by a foreign library whose constructor would leave a mark if
    it were ever loaded: each time the run rebuilds the library and succeeds."""
    from edgesdk.hostcc import checksum_path, host_compiler

    env = _private_cache(tmp_path)
    assert edgesdk("run", built, "--random-input", "1", "--output-dir", tmp_path / "r1", env=env).returncode == 0
    (library,) = _emulator_libraries(env)
    good = open(library, "rb").read()
    with open(library, "r+b") as f:
        f.truncate(len(good) // 3)
    proc = edgesdk("run", built, "--random-input", "1", "--output-dir", tmp_path / "r2", env=env)
    assert proc.returncode == 0, proc.stderr
    assert os.path.getsize(library) == len(good)

    mark = tmp_path / "foreign-code-ran"
    source = tmp_path / "foreign.c"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                      f'{{ FILE *f = fopen("{mark}", "w"); if (f) fclose(f); }}\n')
    subprocess.run([host_compiler(), "-shared", "-fPIC", "-o", library, str(source)], check=True)
    proc = edgesdk("run", built, "--random-input", "1", "--output-dir", tmp_path / "r3", env=env)
    assert proc.returncode == 0, proc.stderr
    assert not mark.exists(), "a library that does not match its checksum was loaded"
    import hashlib

    assert hashlib.sha256(open(library, "rb").read()).hexdigest() == checksum_path(Path(library)).read_text().strip()


def test_a_cached_library_without_its_checksum_is_rebuilt(tmp_path, monkeypatch):
    from edgesdk import hostcc

    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "answer.c"
    source.write_text("int answer(void) { return 42; }\n")
    first = hostcc.build_shared_library("answer", [source])
    assert hostcc.checksum_path(first).is_file()
    stamp = first.stat().st_mtime_ns
    assert hostcc.build_shared_library("answer", [source]) == first and first.stat().st_mtime_ns == stamp  # cached
    hostcc.checksum_path(first).unlink()  # e.g. a library an older edgesdk cached
    again = hostcc.build_shared_library("answer", [source])
    assert again == first and hostcc.checksum_path(first).is_file()
    assert hostcc.load_shared_library("answer", [source]).answer() == 42


def test_a_library_is_cached_by_its_files_not_their_paths(tmp_path, monkeypatch):
    """Two checkouts of the same sources share one cached library (a fresh clone compiles nothing its
    machine compiled before); a different header beside the source or in an include directory is another."""
    from edgesdk import hostcc

    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path / "cache"))

    def checkout(name: str, answer: int, scale: int) -> tuple:
        (tmp_path / name / "inc").mkdir(parents=True)
        (tmp_path / name / "inc" / "scale.h").write_text(f"#define SCALE {scale}\n")
        (tmp_path / name / "answer.h").write_text(f"#define ANSWER {answer}\n")
        source = tmp_path / name / "answer.c"
        source.write_text('#include "answer.h"\n#include "scale.h"\nint answer(void) { return ANSWER * SCALE; }\n')
        return [source], [tmp_path / name / "inc"]

    first = hostcc.build_shared_library("answer", *checkout("a", 21, 2))
    stamp = first.stat().st_mtime_ns
    assert hostcc.build_shared_library("answer", *checkout("b", 21, 2)) == first  # another path, same files
    assert first.stat().st_mtime_ns == stamp  # not compiled again
    beside = hostcc.build_shared_library("answer", *checkout("c", 7, 2))  # answer.h beside the source differs
    included = hostcc.build_shared_library("answer", *checkout("d", 21, 3))  # inc/scale.h differs
    assert len({first, beside, included}) == 3
    assert [hostcc.load_shared_library("answer", *checkout(name, a, s)).answer()
            for name, a, s in (("e", 21, 2), ("f", 7, 2), ("g", 21, 3))] == [42, 14, 63]
