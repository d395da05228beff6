"""Writing outputs without ever harming a user's files.

An `edgesdk build -o OUT` replaces OUT as a whole, atomically (a failed build leaves the previous OUT as it
was). That is only safe for a directory edgesdk made itself, so every output directory carries a marker
file, `MARKER`, and an existing OUT is replaced only when

* it is a real directory, not a symbolic link (edgesdk never follows a link out of the path it was given),
* it is empty or holds the marker (a regular file, not a link),
* it is not the working directory or one of its parents, and holds no file the build reads (the model),
* it is not a mount point (a rename cannot replace one).

Everything else is refused with a message saying why and what to do; nothing is deleted.

A build writes into a staging directory beside OUT (`.OUT.staging-*`) that records its owner process. A
build killed with SIGKILL cannot remove its stage; the next build in the same parent directory removes
every stage whose owner it can prove dead (that process no longer exists on this boot).

Single files (tuning logs, run outputs) are written through `write_file_atomically`: a temporary file
created exclusively (O_EXCL: a planted symlink makes it fail, never redirects it) in the destination's
directory, then renamed over the destination.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path

from .errors import EnvironmentFailure, UsageError

MARKER = ".edgesdk-output"
MARKER_TEXT = ("This directory was written by edgesdk. The next 'edgesdk build -o' to this path replaces it as a "
               "whole; do not keep your own files here.\n")
STAGE_OWNER = ".edgesdk-stage-owner"
STAGE_INFIX = ".staging-"


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: Path, directory: bool) -> None:
    """mkdtemp/mkstemp create 0700/0600; give the path the mode a plain mkdir/open would have."""
    os.chmod(path, (0o777 if directory else 0o666) & ~current_umask())


# -- what may be replaced ----------------------------------------------------------------------------------

def _is_within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def check_replaceable(out_dir: Path, protect: tuple = ()) -> Path:
    """The absolute OUT path, after checking that a build may replace whatever is there (see module doc).
    `protect`: files the build reads, which must not be inside OUT."""
    out_dir = Path(os.path.abspath(out_dir))
    if os.path.islink(out_dir):
        raise UsageError(f"Output path {out_dir} is a symbolic link (to {os.readlink(out_dir)}). edgesdk does not "
                         "write through links: give the real directory path with -o.")
    if not out_dir.exists():
        return out_dir
    if not out_dir.is_dir():
        raise UsageError(f"Output path {out_dir} exists and is not a directory. Choose another path with -o.")
    real = Path(os.path.realpath(out_dir))
    if _is_within(Path(os.path.realpath(os.getcwd())), real):
        raise UsageError(f"Output path {out_dir} is the working directory or one of its parents; a build replaces "
                         "its output directory as a whole. Give a new subdirectory with -o, e.g. -o out.")
    for path in protect:
        if _is_within(Path(os.path.realpath(path)), real):
            raise UsageError(f"{path} is inside the output directory {out_dir}, which the build replaces as a "
                             "whole. Move the file out of it or choose another path with -o.")
    if os.path.ismount(out_dir):
        raise EnvironmentFailure(f"Output path {out_dir} is a mount point, which a build cannot replace (it swaps "
                                 "directories by renaming). Give a subdirectory of it with -o.")
    marker = out_dir / MARKER
    if any(out_dir.iterdir()) and not (marker.is_file() and not marker.is_symlink()):
        raise UsageError(f"Output directory {out_dir} already exists and was not written by edgesdk (it has no "
                         f"{MARKER} file). A build replaces its output directory as a whole, so edgesdk only replaces "
                         "its own. Choose a new path with -o, or empty or remove that directory yourself.")
    return out_dir


# -- staging ---------------------------------------------------------------------------------------------

def _process_start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in clock ticks since boot), None if no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _owner_record() -> str:
    return f"{os.getpid()} {_process_start_time(os.getpid())} {_boot_id()}\n"


def _owner_is_dead(stage: Path) -> bool:
    """True only when the stage's owner record proves its process is gone."""
    owner = stage / STAGE_OWNER
    try:
        if owner.is_symlink():
            return False
        pid, start, boot = owner.read_text().split()
    except (OSError, ValueError):
        return False
    if boot == "unknown" or _boot_id() == "unknown":
        return False
    if boot != _boot_id():
        return True  # the machine rebooted since: its owner cannot be running
    return _process_start_time(int(pid)) != start


def clean_stale_stages(parent: Path, name: str) -> list:
    """Remove `.NAME.staging-*` directories in `parent` whose build process is dead; return what was removed."""
    removed = []
    prefix = f".{name}{STAGE_INFIX}"
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if entry.name.startswith(prefix) and entry.is_dir() and not entry.is_symlink() and _owner_is_dead(entry):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def new_stage(out_dir: Path) -> Path:
    """A fresh staging directory beside `out_dir`, owned by this process, with the umask's mode."""
    stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{STAGE_INFIX}", dir=out_dir.parent))
    apply_umask(stage, directory=True)
    (stage / STAGE_OWNER).write_text(_owner_record())
    return stage


@contextmanager
def staged_output(out_dir, protect: tuple = ()):
    """Yield a staging directory; on success it replaces `out_dir` (checked by check_replaceable), on failure
    `out_dir` is left untouched and the stage removed."""
    out_dir = check_replaceable(Path(out_dir), protect)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_stages(out_dir.parent, out_dir.name)
    stage = new_stage(out_dir)
    try:
        yield stage
        (stage / STAGE_OWNER).unlink()
        (stage / MARKER).write_text(MARKER_TEXT)
        _put_in_place(stage, out_dir, protect)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _put_in_place(stage: Path, out_dir: Path, protect: tuple) -> None:
    """Move the finished stage to `out_dir`, replacing an earlier output (checked again: the build took time)."""
    if os.path.lexists(out_dir):
        check_replaceable(out_dir, protect)
        if _exchange_directories(stage, out_dir):
            shutil.rmtree(stage, ignore_errors=True)  # the stage now holds the previous output
            return
        old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, old)
        os.replace(stage, out_dir)
        shutil.rmtree(old, ignore_errors=True)
        return
    os.replace(stage, out_dir)


def _exchange_directories(a: Path, b: Path) -> bool:
    """Swap two directories in one atomic step (Linux renameat2 RENAME_EXCHANGE), so `b` is never missing,
    not even for an instant; False where the system cannot (then two renames do it)."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


# -- single files ----------------------------------------------------------------------------------------

def write_file_atomically(path, data) -> Path:
    """Write `data` (str or bytes) to `path` via an exclusively created temporary file in the same directory,
    then rename it over `path`: never half-written, never written through a planted link."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise UsageError(f"{path} is a directory; give a file name.")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        apply_umask(Path(tmp), directory=False)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return path



# -- directories edgesdk fills in more than one step -------------------------------------------------------

MANIFEST = ".edgesdk-manifest"


def write_manifest(directory, trees: tuple = ()) -> Path:
    """Record in `directory` every file and directory edgesdk wrote there (its whole content now, empty
    directories included), plus `trees`: subdirectories that tools edgesdk runs fill later (test results), owned
    as a whole. `foreign_files` checks against it."""
    directory = Path(directory)
    files = sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if not p.name.startswith(".edgesdk-"))
    lines = [f"{tree.rstrip('/')}/" for tree in trees] + files
    return write_file_atomically(directory / MANIFEST, "".join(line + "\n" for line in lines))


def foreign_files(directory) -> list:
    """What in `directory` (an edgesdk output with a manifest) edgesdk did not write: files and directories
    neither listed nor under a listed tree, and symbolic links that are not its own files. Everything, when
    the manifest is missing. A foreign directory is listed once, not with its content."""
    directory = Path(directory)
    manifest = directory / MANIFEST
    try:
        lines = [] if manifest.is_symlink() else manifest.read_text().splitlines()
    except OSError:
        lines = []
    trees = {line.rstrip("/") for line in lines if line.endswith("/")}
    files = {line for line in lines if line and not line.endswith("/")}
    parents = {str(parent) for name in files | trees for parent in Path(name).parents if str(parent) != "."}
    foreign = []
    for path in sorted(directory.rglob("*")):
        name = str(path.relative_to(directory))
        if path.parent == directory and path.name in (MARKER, MANIFEST) and not path.is_symlink():
            continue
        if name in trees or any(parent in trees for parent in map(str, path.relative_to(directory).parents)):
            continue
        if name in files and not path.is_symlink() or (name in parents and path.is_dir() and not path.is_symlink()):
            continue
        if any(parent in foreign for parent in path.parents):
            continue
        foreign.append(path)
    return foreign
