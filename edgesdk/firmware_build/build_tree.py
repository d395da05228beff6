"""A configured CMake build tree kept between builds, so that `edgesdk build` configures CMake once per board
and flags instead of once per build (the configure step, compiler detection included, costs more than a
warm compile).

Each tree lives in $EDGESDK_CACHE/cmake/<key>-<slot>/ (key: the CMake project's and board.json's content,
-Werror, the generator, the cross compiler; no path, so every checkout of the same edgesdk shares the trees):
`src/`, a copy of the generated sources, `project/` and `board.json`, copies of the CMake project and the
board description that CMake reads there, and `.cmake-build/`, CMake's directory (the same relative layout as
a build's stage, so ccache entries are shared with uncached builds).
A build copies its sources in, rewriting only the files whose content changed (Ninja then recompiles only
those), runs CMake's configure step only when the set of files changed (CMakeLists globs them), and builds.
The firmware is byte for byte what a fresh build directory gives: no path of the tree reaches it.

Safety: a tree is used by one build at a time (an exclusive lock; a build that finds every slot busy uses a
fresh directory in its stage, as before), and it is trusted only while its stamp exists: the stamp is removed
before any change and written back after a successful build, so a build killed half-way leaves a tree that
the next build wipes and configures afresh. EDGESDK_NO_BUILD_CACHE=1 turns the reuse off.

Trees per key: 4 (builds at once, and models alternating between a few kernel sets, reuse one), or
EDGESDK_BUILD_TREES. A re-configure of an existing tree is cheap (about 0.02 CPU-s: compiler detection stays
in CMakeCache.txt, a new tree's first configure costs about 0.15), but the build after it compiles the
kernels the tree did not hold; builds that cycle through more kernel sets than trees (the op corpus: 68)
re-configure every time, session after session, as least-recently-used eviction drops the tree the cycle
needs next. tests/conftest.py raises the count for the test session (docs/performance.md).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path

from ..errors import UsageError
from ..resources import cache_path

DEFAULT_SLOTS = 4  # trees per key: builds at once (pytest -n 2, two terminals) and models alternating reuse one
SLOTS_VARIABLE = "EDGESDK_BUILD_TREES"
STAMP = "edgesdk-configured.json"
SOURCES, CMAKE_DIR = "src", ".cmake-build"
PROJECT, BOARD_JSON = "project", "board.json"  # the tree's copies of the CMake project and board.json


def slots() -> int:
    """How many trees a key keeps: $EDGESDK_BUILD_TREES, else DEFAULT_SLOTS (each tree takes about 1 MB)."""
    text = os.environ.get(SLOTS_VARIABLE, "").strip()
    if not text:
        return DEFAULT_SLOTS
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"{SLOTS_VARIABLE}={text!r} is not a whole number of at least 1 (the configured CMake "
                         f"trees kept per board and flags; unset it for the default, {DEFAULT_SLOTS}).")
    return int(text)


def cache_root() -> Path:
    return cache_path("cmake")


def tree_key(configure_args: list, compiler: str | None, board_json: Path) -> str:
    """What a configured tree depends on beyond the generated sources: the configure arguments except the
    sources' path, board.json's content, and the cross compiler binary (an upgrade reconfigures)."""
    digest = hashlib.sha256()
    for arg in configure_args:
        digest.update(str(arg).encode() + b"\0")
    digest.update(board_json.read_bytes())
    if compiler:
        stat = Path(compiler).resolve().stat()
        digest.update(f"{compiler}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


@contextmanager
def reusable_tree(key: str, files: list | None = None):
    """Yield a locked tree directory for `key` (SOURCES and CMAKE_DIR inside), or None when every slot is
    busy or the cache cannot be written. A free tree already configured for `files` (the same kernels and
    drivers) comes first: it needs no configure step; then an unused one, then the least recently used."""
    root = cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        yield None
        return
    trees = sorted((root / f"{key}-{slot}" for slot in range(slots())), key=lambda tree: _preference(tree, files))
    for tree in trees:
        try:
            lock = open(tree.with_name(tree.name + ".lock"), "a")
        except OSError:
            yield None
            return
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # another build holds this slot
            yield tree
            return
        finally:
            lock.close()  # releases the lock
    yield None


def _preference(tree: Path, files: list | None) -> tuple:
    """Sort key of a tree for a build of `files` (read unlocked: a hint only, the build reads it again)."""
    configured = configured_files(tree)
    try:
        used = (tree / STAMP).stat().st_mtime_ns
    except OSError:
        configured = None  # in use by another build right now, or never configured
    if configured is None:
        return (1, 0)
    return (0 if configured == files else 2, used)


def file_list(directory: Path) -> list:
    """Relative paths of every file under `directory`, sorted."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def sync_sources(gen_dir: Path, copy: Path) -> list:
    """Make `copy` hold exactly `gen_dir`'s files; files whose content is unchanged keep their time stamp (the
    build tool skips them). Returns the file list."""
    files = file_list(gen_dir)
    wanted = set(files)
    if copy.is_dir():
        for old in file_list(copy):
            if old not in wanted:
                (copy / old).unlink()
        for directory in sorted((p for p in copy.rglob("*") if p.is_dir()), reverse=True):
            if not any(directory.iterdir()):
                directory.rmdir()
    for name in files:
        source, target = gen_dir / name, copy / name
        data = source.read_bytes()
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return files


def sync_file(source: Path, copy: Path) -> None:
    """Make `copy` hold `source`'s bytes, keeping its time stamp when they are the same already."""
    data = source.read_bytes()
    if not (copy.is_file() and copy.read_bytes() == data):
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)


def content_digest(directory: Path) -> str:
    """A hash of the names and bytes of every file under `directory` (the CMake project), not of its path."""
    digest = hashlib.sha256()
    for name in file_list(directory):
        digest.update(name.encode() + b"\0" + (directory / name).read_bytes() + b"\0")
    return digest.hexdigest()


def configured_files(tree: Path) -> list | None:
    """The source file list the tree was configured for, or None when it has no valid stamp."""
    try:
        return json.loads((tree / STAMP).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def invalidate(tree: Path) -> None:
    (tree / STAMP).unlink(missing_ok=True)


def mark_configured(tree: Path, files: list) -> None:
    (tree / STAMP).write_text(json.dumps({"files": files}))
