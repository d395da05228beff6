"""Progress lines on standard error for the long steps (build stages, the firmware build, hil, tune).

The CLI sets the verbosity: 1 by default, 0 with -q (nothing but errors and warnings), 2 with -v (more
detail). Library callers (tests, benchmarks) get 0 unless they set it, so edgesdk as a library stays quiet.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from contextvars import ContextVar

QUIET, NORMAL, VERBOSE = 0, 1, 2
_VERBOSITY: ContextVar = ContextVar("edgesdk_verbosity", default=QUIET)


def set_verbosity(level: int):
    """Set the verbosity; returns the token that reset_verbosity takes to restore the previous one."""
    return _VERBOSITY.set(level)


def reset_verbosity(token) -> None:
    _VERBOSITY.reset(token)


def verbosity() -> int:
    return _VERBOSITY.get()


def say(text: str, level: int = NORMAL) -> None:
    """Print `edgesdk: <text>` on stderr when the verbosity is at least `level`."""
    if _VERBOSITY.get() >= level:
        print(f"edgesdk: {text}", file=sys.stderr, flush=True)


@contextmanager
def quiet():
    """No progress lines inside: a task of a pool (regress rows, tune measurements) says nothing of its own
    steps, here as on a Ray worker; the command reports per task."""
    token = _VERBOSITY.set(QUIET)
    try:
        yield
    finally:
        _VERBOSITY.reset(token)
