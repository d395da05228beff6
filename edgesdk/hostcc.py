"""Compile C sources for the host (x86) into a cached shared library, for ctypes.

The NPU model and the emulator's instruction-counting hook are C; they are built on first use into
~/.cache/edgesdk/hostlib (or $EDGESDK_CACHE), keyed by a hash of the sources and flags (not their paths:
every checkout of the same files shares them), so a fresh clone needs nothing but a host C compiler. Each
cached library is checked against the sha256 recorded beside it before it is handed out for loading; a damaged
one is rebuilt.

Many processes share the cache (pytest -n, `edgesdk regress --workers N`, tasks of a Ray cluster node): a
library missing from it is built under an exclusive lock on `<library>.lock` (fcntl.flock, released by the
kernel if its holder dies), so concurrent first uses compile it once and the others wait and take it; the
library and its sidecar are each renamed into place whole, so a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from .errors import ToolchainError
from .resources import cache_path


def cache_dir() -> Path:
    path = cache_path("hostlib")
    path.mkdir(parents=True, exist_ok=True)
    return path


def host_compiler() -> str:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    raise ToolchainError(
        "No host C compiler found (needed to build the emulator's native peripheral models). "
        "Install one, e.g. 'apt-get install gcc', or set CC."
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checksum_path(library: Path) -> Path:
    """The sidecar holding the sha256 of a cached library's bytes, written after the library."""
    return library.with_name(library.name + ".sha256")


def _intact(library: Path) -> bool:
    """The cached library is the one edgesdk wrote: its bytes hash to its sidecar's sha256 (a truncated,
    damaged or foreign file -- or one without a sidecar -- is not)."""
    try:
        recorded = checksum_path(library).read_text().strip()
        return len(recorded) == 64 and _sha256(library) == recorded
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def build_shared_library(name: str, sources: list, include_dirs: list = (), extra_flags: list = ()) -> Path:
    """Compile `sources` into lib<name>-<hash>.so unless an identical build is cached; return its path.

    The cache is keyed by a hash of the compiler, flags and every source and header (_library_key), and each
    library has a sidecar with the sha256 of its bytes, written (atomically) after the library: a cached
    library is returned only if its bytes match it, so the path returned is safe to load right away. A damaged
    one (a build interrupted by a full disk, an edited file) is rebuilt, not loaded."""
    cc = host_compiler()
    flags = ["-O2", "-fPIC", "-shared", "-std=c11", "-Wall", "-Wextra", *extra_flags]
    target = cache_dir() / f"lib{name}-{_library_key(cc, flags, sources, include_dirs)}.so"
    if target.exists() and _intact(target):
        return target
    with _exclusive(target.with_name(target.name + ".lock")):
        if not (target.exists() and _intact(target)):  # built by the process that held the lock before us
            _compile(name, cc, flags, include_dirs, sources, target)
    if not _intact(target):
        raise ToolchainError(f"The host library {target} changed while it was being built and does not match "
                             f"its checksum; remove {cache_dir()} and try again.")
    return target


def _library_key(cc: str, flags: list, sources: list, include_dirs) -> str:
    """The cache key: the compiler, the flags, and the name and bytes of every source and of every header
    where the sources can include it (the include directories, in their order, and the sources' own
    directories), never a directory's path: every checkout of the same files (a fresh clone, a worktree)
    shares one library."""
    digest = hashlib.sha256()
    for item in [cc, *flags]:
        digest.update(item.encode() + b"\0")
    header_dirs = list(dict.fromkeys([*map(Path, include_dirs), *(Path(s).parent for s in sources)]))
    for index, directory in enumerate(header_dirs):
        digest.update(f"dir {index}\0".encode())
        for header in _headers(directory):
            digest.update(header.name.encode() + b"\0" + header.read_bytes())
    for src in map(Path, sources):
        digest.update(b"source\0" + src.name.encode() + b"\0" + src.read_bytes())
    return digest.hexdigest()[:16]


_HEADER_LISTS: dict = {}  # directory -> (its mtime, its *.h files): the cache's generated/ holds thousands of files


def _headers(directory: Path) -> list:
    """The *.h files in `directory`, sorted; listed again only when the directory changed (a file added or
    removed changes its mtime; a header's bytes are read on every call)."""
    try:
        stamp = directory.stat().st_mtime_ns
    except OSError:
        return []
    known = _HEADER_LISTS.get(directory)
    if known is None or known[0] != stamp:
        known = _HEADER_LISTS[directory] = (stamp, sorted(directory.glob("*.h")))
    return known[1]


@contextlib.contextmanager
def _exclusive(lock_path: Path):
    """Hold an exclusive lock on `lock_path` (created if needed; never removed: removing it would let two
    processes lock two different files of the same name)."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _compile(name: str, cc: str, flags: list, include_dirs, sources, target: Path) -> None:
    import subprocess  # (here: a process that only loads cached libraries, e.g. a compile's, never imports it)

    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        tmp_target = Path(tmp) / target.name
        cmd = [cc, *flags, *[f"-I{d}" for d in include_dirs], *map(str, sources), "-o", str(tmp_target), "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError(f"Building host library {name} failed:\n{' '.join(cmd)}\n{proc.stderr.strip()}")
        checksum = _sha256(tmp_target)
        os.replace(tmp_target, target)  # atomic: readers never see a half-written library
        _write_atomically(checksum_path(target), checksum + "\n")  # after the library: it vouches for it


def load_shared_library(name: str, sources: list, include_dirs: list = (), extra_flags: list = ()) -> ctypes.CDLL:
    """Build (or find in the cache, verified) and load the library."""
    return ctypes.CDLL(str(build_shared_library(name, sources, include_dirs, extra_flags)))
