"""Run tools (cmake, the compilers, robot) so that they never outlive the edgesdk process that started them.

A tool runs under a small reaper process that leads a process group of its own: the tool and everything it
starts (make, gcc, ld) belong to that group. The reaper asks the kernel for a signal when edgesdk dies
(PR_SET_PDEATHSIG), so even a SIGKILLed build takes its compilers with it; an exception or Ctrl-C in edgesdk
kills the group directly. Without this, `kill -9` on a build left cmake and gcc writing into a staging
directory that no longer had an owner.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from .dataclass_cache import dataclass

# The reaper: runs in its own process group, dies with its parent, and takes the group with it.
_REAPER = r"""
import ctypes, os, signal, sys
parent = int(sys.argv[1])
def kill_group(*_):
    os.killpg(0, signal.SIGKILL)
for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(sig, kill_group)
ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: SIGTERM when edgesdk exits
if os.getppid() != parent:  # edgesdk died before the line above
    kill_group()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        print(f"cannot run {sys.argv[2]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class Completed:
    args: list
    returncode: int
    stdout: str
    stderr: str


def run(cmd: list, cwd=None, env=None, timeout: float | None = None) -> Completed:
    """Run `cmd` (captured text output) in a process group that dies with edgesdk; like subprocess.run."""
    args = [str(c) for c in cmd]
    reaper = [sys.executable, "-S", "-c", _REAPER, str(os.getpid()), *args]
    proc = subprocess.Popen(reaper, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                            start_new_session=True, errors="replace")
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException:  # timeout, Ctrl-C, SIGTERM unwinding: nothing of the tool may survive
        kill_group(proc)
        raise
    return Completed(args, proc.returncode, stdout, stderr)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
