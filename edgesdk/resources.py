"""Files edgesdk ships inside its package and hands to other programs as paths.

CMake (edgesdk/firmware/CMakeLists.txt and the harness sources), Robot Framework (edgesdk/hil/suites/),
Renode (edgesdk/boards/<board>/*.resc, *.repl, edgesdk/renode/*.cs) and the host C compiler read these
files themselves, so they must exist on disk. pip installs edgesdk unpacked (a wheel is always extracted),
so `importlib.resources` gives real paths; a zip import (zipapp, zipped egg) is refused with a clear
message instead of failing inside CMake or Robot.

    package_path("boards")              edgesdk/boards/            boards shipped with edgesdk
    package_path("firmware")            edgesdk/firmware/          the CMake project + the test harness
    package_path("hil", "suites")       edgesdk/hil/suites/        the Robot Framework HIL suites
"""

from __future__ import annotations

import os
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import EnvironmentFailure


@lru_cache(maxsize=None)
def package_dir() -> Path:
    """The edgesdk package directory, a real folder on disk."""
    root = resources.files("edgesdk")
    if not isinstance(root, Path) or not root.is_dir():
        raise EnvironmentFailure(
            f"edgesdk is imported from {root}, which is not a folder on disk; its firmware sources, boards and "
            "HIL suites must be real files (CMake and Robot Framework read them). Install edgesdk with pip "
            "(which unpacks it), not as a zip file.")
    return root.resolve()


def package_path(*parts: str) -> Path:
    """A file or folder shipped in the edgesdk package, e.g. package_path("boards", "riscv-npu")."""
    return package_dir().joinpath(*parts)


def cache_path(*parts: str) -> Path:
    """edgesdk's cache folder ($EDGESDK_CACHE, default ~/.cache/edgesdk), or a path inside it."""
    return Path(os.environ.get("EDGESDK_CACHE") or Path.home() / ".cache" / "edgesdk").joinpath(*parts)


def template_bytecode_cache():
    """Jinja's compiled templates kept between runs in $EDGESDK_CACHE/jinja (default ~/.cache/edgesdk): a build
    renders a dozen templates and compiling them costs more than rendering. Jinja checks each entry against
    its template's source, so an edited template is compiled again; the rendered text is the same either way.
    None when the cache folder cannot be made; a failed write only loses the cache entry."""
    import jinja2

    directory = cache_path("jinja")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None

    class QuietCache(jinja2.FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except Exception:  # noqa: BLE001 - any unreadable or truncated entry: compile the template
                bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:  # a full or read-only disk: the build does not need the cache
                pass

    return QuietCache(str(directory))
