"""Virtual environments and wheel builds for the tests that install things (test_install.py, the plugin
example in test_target_plugins.py), the same whether the test suite itself runs in a virtualenv or not.

* make_venv(): a fresh virtualenv that also sees the packages of the interpreter running the tests. With
  --system-site-packages alone it would see the *base* interpreter's site-packages only, not those of the
  virtualenv the suite may run in (scripts/test.sh runs it in .venv), so a .pth file adds the running
  environment's site-packages too: the heavy reference packages are reused, nothing is downloaded twice.
* pip_build_isolation(): pip builds a package with the setuptools the running interpreter has (no
  network) when that setuptools is new enough and can make wheels (setuptools >= 70.1, or older with the
  `wheel` package); otherwise with pip's default build isolation, which installs the build requirements
  from the package index into a temporary environment.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path


def running_in_venv() -> bool:
    return sys.prefix != sys.base_prefix


def _version(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def pip_build_isolation(min_setuptools: tuple = (77,)) -> list:
    """pip arguments to build a setuptools project: ["--no-build-isolation"] when the running interpreter's
    setuptools is at least `min_setuptools` and can build wheels, else [] (isolated build)."""
    spec = importlib.util.find_spec("setuptools")
    if spec is None:
        return []
    from importlib import metadata

    try:
        version = _version(metadata.version("setuptools"))
    except metadata.PackageNotFoundError:
        return []
    if version < tuple(min_setuptools):
        return []
    if version < (70, 1) and importlib.util.find_spec("wheel") is None:
        return []  # setuptools before 70.1 needs the `wheel` package for bdist_wheel
    return ["--no-build-isolation"]


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def make_venv(path: Path, extra_paths=(), with_pip: bool = True) -> Path:
    """Create a virtualenv at `path` that sees the running interpreter's packages (and `extra_paths`, put
    ahead of them); return its python. with_pip=False leaves out the venv's own pip (ensurepip costs about
    4 CPU-s): `python -m pip` in the venv then runs the pip it sees from the running environment, which
    installs into the venv all the same (pip installs for the interpreter that runs it); only a bare `pip`
    command on PATH would be another environment's."""
    flags = [] if with_pip else ["--without-pip"]
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", *flags, str(path)], check=True)
    python = path / "bin" / "python"
    lines = [str(Path(p)) for p in extra_paths]
    if running_in_venv():  # --system-site-packages gives the base interpreter's packages, not ours
        ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
        lines += sorted(p for p in ours if Path(p).is_dir())
    if lines:
        (site_packages(python) / "_edgesdk_tests_outer_env.pth").write_text("\n".join(lines) + "\n")
    return python


def clean_env(venv: Path) -> dict:
    """os.environ for running `venv`'s programs: its bin/ first on PATH, no PYTHONPATH/PYTHONHOME (the
    tests may run with PYTHONPATH pointing at the checkout), VIRTUAL_ENV set to it."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(name, None)
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env
