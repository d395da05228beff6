"""Hardware-in-the-loop suites: edgesdk/hil/suites/*.robot against a build, on the built-in emulator or Renode.

    edgesdk hil OUT [--emulator builtin|renode] [--suite NAME ...]

1. `prepare_hil()` (firmware.py) builds OUT/hil/: the firmware with embedded inputs that prints its
   outputs over the UART, the reference outputs, the suites' Robot variable file, and the build's Renode
   platform (only the peripherals the build uses) with the native models of its C# peripherals.
2. builtin: plain `robot` runs the suites with edgesdk's implementation of Renode's keywords
   (keywords.py); renode: `renode-test` runs the very same files in Renode, with OUT/hil/renode/lib (those
   native models) on LD_LIBRARY_PATH. Both load the build's platform, OUT/hil/renode/<board>.resc.
3. The Robot summary is printed; Robot's output, log and report go to OUT/hil/robot/ (builtin) or
   OUT/hil/renode/results/ (renode).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..dataclass_cache import dataclass
from ..errors import MissingDependency, ToolchainError, UsageError
from ..progress import say
from ..resources import package_path
from .firmware import BUILTIN_RESULTS, RENODE_RESULTS, HilBuild, prepare_hil

SUITES_DIR = package_path("hil", "suites")  # shipped in the package: edgesdk/hil/suites/*.robot
EMULATORS = ("builtin", "renode")
EXTRA = "hil"  # pyproject.toml: robotframework (6.1, Renode 1.15.3's pin, to 7.x) + the reference interpreters
MIN_ROBOT = (6, 1)


@dataclass
class HilResult:
    hil: HilBuild
    emulator: str
    returncode: int  # Robot's: the number of failed tests (capped at 250), 0 when all passed
    output: str  # Robot's console output, ending with its summary
    results_dir: Path

    @property
    def passed(self) -> bool:
        return self.returncode == 0


def available_suites() -> list:
    return sorted(p.stem for p in SUITES_DIR.glob("*.robot"))


def suite_files(names=None) -> list:
    names = list(names) if names else available_suites()
    unknown = [n for n in names if not (SUITES_DIR / f"{n}.robot").is_file()]
    if unknown:
        raise UsageError(f"Unknown HIL suite(s) {', '.join(unknown)}; available: {', '.join(available_suites())} "
                         f"(the .robot files in {SUITES_DIR}).")
    return [SUITES_DIR / f"{n}.robot" for n in names]


def run_hil(build_dir, emulator: str = "builtin", suites=None, inputs=None, seed: int = 0,
            hil: HilBuild | None = None) -> HilResult:
    """Prepare OUT/hil/ (unless `hil` is given) and run the suites; never raises for failed tests."""
    if emulator not in EMULATORS:
        raise UsageError(f"--emulator must be one of {', '.join(EMULATORS)}, not '{emulator}'.")
    files = suite_files(suites)
    renode_test = _renode_test() if emulator == "renode" else None  # before the build: fail fast
    if emulator == "builtin":  # renode-test brings its own Robot Framework
        require_robot()
    if hil is None:
        from ..reference import require_reference
        from ..runner import load_report

        require_reference(load_report(Path(build_dir))["rounding"], "edgesdk hil (the expected outputs)", EXTRA)
    if hil is None:
        say(f"preparing {Path(build_dir) / 'hil'}: the reference outputs and a firmware with the inputs embedded")
        hil = prepare_hil(build_dir, inputs, seed)
    names = ", ".join(Path(f).stem for f in files)
    say(f"running {len(files)} suite(s) ({names}) on the {emulator} emulator"
        + (" with plain robot" if emulator == "builtin" else " with renode-test"))
    if emulator == "builtin":
        return _run_builtin(hil, files)
    return _run_renode(hil, files, renode_test)


def require_robot() -> None:
    """MissingDependency unless Robot Framework (MIN_ROBOT or newer) is importable by this interpreter."""
    from importlib import metadata, util

    if util.find_spec("robot") is None:
        raise MissingDependency("edgesdk hil (the Robot Framework suites)", EXTRA, "robot",
                                f"Robot Framework is not importable by {sys.executable}")
    try:
        version = metadata.version("robotframework")
    except metadata.PackageNotFoundError:
        return  # importable without metadata (a source checkout on PYTHONPATH): let it run
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if numbers < MIN_ROBOT:
        raise MissingDependency("edgesdk hil (the Robot Framework suites)", EXTRA, "robot",
                                f"robotframework {version} is installed; the suites need "
                                f"{'.'.join(map(str, MIN_ROBOT))} or newer")


def _run_builtin(hil: HilBuild, files: list) -> HilResult:
    results = hil.hil_dir / BUILTIN_RESULTS
    cmd = [sys.executable, "-m", "robot", "--name", f"edgesdk HIL {hil.model_name}", "--variable",
           f"BUILD:{hil.build_dir}", "--outputdir", str(results), "--consolecolors", "off",
           "--consolemarkers", "off", "--consolewidth", "110", *map(str, files)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=hil.hil_dir)
    if proc.returncode == 251 or proc.returncode == 252 or proc.returncode == 255:
        raise UsageError(f"Robot Framework could not run the HIL suites ({' '.join(cmd)}):\n"
                         f"{(proc.stdout + proc.stderr).strip()[-3000:]}")
    return HilResult(hil, "builtin", proc.returncode, proc.stdout, results)


def _renode_test() -> str:
    renode_test = shutil.which("renode-test")
    if renode_test is None:
        raise ToolchainError("renode-test is not on PATH, so the suites cannot run under Renode. Install Renode "
                             "(its Linux portable package ships renode and renode-test; docs/renode.md) and add "
                             "its folder to PATH, or run the suites on the built-in emulator: edgesdk hil OUT.")
    return renode_test


def _run_renode(hil: HilBuild, files: list, renode_test: str) -> HilResult:
    """renode-test with the native models of the platform's C# peripherals on LD_LIBRARY_PATH (their P/Invokes
    load them); prepare_hil built them into the platform's lib/."""
    if hil.platform is None:
        raise UsageError(f"{hil.hil_dir} has no Renode platform; run edgesdk hil {hil.build_dir} to prepare it.")
    library_dir = hil.platform.library_dir
    results = hil.hil_dir / RENODE_RESULTS
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(library_dir), env.get("LD_LIBRARY_PATH")]))
    cmd = [renode_test, "--variable", f"BUILD:{hil.build_dir}", "--results-dir", str(results), *map(str, files)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=hil.hil_dir, env=env)
    return HilResult(hil, "renode", proc.returncode, proc.stdout + proc.stderr, results)


