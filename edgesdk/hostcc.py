"""Compile C sources for the host (x86) into a cached shared library, for ctypes.

The NPU model and the emulator's instruction-counting hook are C; they are built on first use into
~/.cache/edgesdk/hostlib (or $EDGESDK_CACHE), keyed by a hash of the sources and flags, so a fresh
clone needs nothing but a host C compiler.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .errors import ToolchainError


def cache_dir() -> Path:
    root = os.environ.get("EDGESDK_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "edgesdk")
    path = Path(root) / "hostlib"
    path.mkdir(parents=True, exist_ok=True)
    return path


def host_compiler() -> str:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    raise ToolchainError(
        "No host C compiler found (needed to build the NPU model used by the emulator). "
        "Install one, e.g. 'apt-get install gcc', or set CC."
    )


def build_shared_library(name: str, sources: list, include_dirs: list = (), extra_flags: list = ()) -> Path:
    """Compile `sources` into lib<name>-<hash>.so unless an identical build is cached; return its path."""
    cc = host_compiler()
    flags = ["-O2", "-fPIC", "-shared", "-std=c11", "-Wall", "-Wextra", *extra_flags]
    digest = hashlib.sha256()
    for item in [cc, *flags, *map(str, include_dirs)]:
        digest.update(item.encode())
    headers = [h for d in include_dirs for h in sorted(Path(d).glob("*.h"))]
    for src in [*map(Path, sources), *headers]:
        digest.update(src.name.encode())
        digest.update(src.read_bytes())
    target = cache_dir() / f"lib{name}-{digest.hexdigest()[:16]}.so"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        tmp_target = Path(tmp) / target.name
        cmd = [cc, *flags, *[f"-I{d}" for d in include_dirs], *map(str, sources), "-o", str(tmp_target), "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError(f"Building host library {name} failed:\n{' '.join(cmd)}\n{proc.stderr.strip()}")
        os.replace(tmp_target, target)  # atomic: concurrent builders never see a half-written library
    return target


def load_shared_library(name: str, sources: list, include_dirs: list = (), extra_flags: list = ()) -> ctypes.CDLL:
    return ctypes.CDLL(str(build_shared_library(name, sources, include_dirs, extra_flags)))
