"""A wheel install builds, runs, tests and flashes firmware (issue 14).

The wheel is built from a copy of the sources (pyproject.toml, README.md, LICENSE, edgesdk/), installed
into a fresh virtualenv with the [reference] and [hil] extras, and every command then runs from an
unrelated directory with the venv's `edgesdk` console script, so nothing of the checkout can be found:
the boards, the firmware's CMake project and the HIL suites must all come from the installed package.

The venv sees the packages of the interpreter running the tests (tests/venvtools.py), so the heavy
reference packages are reused; edgesdk itself is force-installed from the wheel, and the test asserts that
the edgesdk the venv imports is the one inside the venv. This works whether the suite runs in a
virtualenv (scripts/test.sh) or not. A second venv runs the HIL suites with Robot Framework 6.1, the version
Renode 1.15.3's renode-test pins.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, model_path
from venvtools import clean_env, make_venv, pip_build_isolation

pytestmark = [pytest.mark.slow,  # builds a wheel, a venv and a KWS firmware (about a minute)
              pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                 reason="RISC-V cross compiler not installed")]
WHEEL_SOURCES = ("pyproject.toml", "README.md", "LICENSE", "edgesdk")


def build_wheel(dest: Path, scratch: Path) -> Path:
    """pip wheel of a copy of the sources (pip builds in the source tree: not in the checkout)."""
    source = scratch / "edgesdk-src"
    source.mkdir()
    for name in WHEEL_SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, source / name)
    import sys

    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", *pip_build_isolation(),
                           "-w", str(dest), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(dest.glob("edgesdk-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, env, elsewhere): the wheel installed in a fresh venv; `elsewhere` an unrelated directory."""
    root = tmp_path_factory.mktemp("install")
    started = time.monotonic()
    wheel = build_wheel(root / "dist", root)
    venv = root / "venv"
    python = make_venv(venv, with_pip=False)  # `python -m pip` only: the running environment's pip
    env = clean_env(venv)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    # edgesdk from the wheel even though the venv also sees the edgesdk under test (editable or on the base
    # interpreter), then the extras' requirements (already satisfied by the packages the venv sees).
    for args in (["--no-deps", "--force-reinstall", str(wheel)], [f"{wheel}[reference,hil]"]):
        proc = subprocess.run(pip + args, capture_output=True, text=True, env=env, cwd=root)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size} B; built and installed in {time.monotonic() - started:.1f} s")
    return venv, env, elsewhere


def run(installed, *args) -> subprocess.CompletedProcess:
    venv, env, elsewhere = installed
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env, cwd=elsewhere, timeout=900)


def test_the_venv_runs_the_wheel_not_the_checkout(installed):
    venv = installed[0]
    proc = run(installed, venv / "bin" / "python", "-c",
               "import edgesdk, edgesdk.board as b, edgesdk.firmware_build.build as f, edgesdk.hil as h; "
               "print(edgesdk.__file__); print(b.BOARDS_DIR); print(f.CMAKE_PROJECT_DIR); print(h.SUITES_DIR)")
    assert proc.returncode == 0, proc.stderr
    paths = [Path(line) for line in proc.stdout.split()]
    for path in paths:
        assert venv.resolve() in path.resolve().parents, (path, venv)
        assert REPO.resolve() not in path.resolve().parents
    assert (paths[2] / "CMakeLists.txt").is_file() and list(paths[3].glob("*.robot"))
    assert shutil.which("edgesdk", path=str(venv / "bin")) is not None


def test_build_run_inspect_hil_and_flash_from_the_wheel(installed, tmp_path):
    edgesdk = installed[0] / "bin" / "edgesdk"
    model = REPO.parent / "shared" / "models" / "mlcommons_tiny" / "kws_ref_model.tflite"
    assert model == model_path("kws") and model.is_file()
    out = tmp_path / "kws"
    steps = [
        ("build", [edgesdk, "build", model, "--board", "riscv-npu", "--target", "npu,c", "-o", out]),
        ("run", [edgesdk, "run", out, "--random-input", "0", "--check"]),
        ("inspect", [edgesdk, "inspect", model, "--board", "riscv-npu"]),
        ("hil", [edgesdk, "hil", out]),
        ("flash", [edgesdk, "flash", out, "--probe", "emulator"]),
    ]
    outputs = {}
    for name, argv in steps:
        started = time.monotonic()
        proc = run(installed, *argv)
        assert proc.returncode == 0, f"edgesdk {name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        outputs[name] = proc.stdout
        print(f"edgesdk {name}: {time.monotonic() - started:.1f} s")
    assert (out / "firmware.elf").is_file() and (out / "board.json").is_file()
    assert "reference (LiteRT BUILTIN_REF): bit-exact" in outputs["run"]
    assert "npu" in outputs["inspect"]
    assert "4 tests, 4 passed, 0 failed" in outputs["hil"] or "4 passed, 0 failed" in outputs["hil"], outputs["hil"]
    assert "exit code: 0" in outputs["flash"]


def test_hil_suites_run_on_robot_framework_6_1(installed, tmp_path):
    """Renode 1.15.3's renode-test pins robotframework==6.1: the suites and keywords must run on it too (the
    [hil] extra allows 6.1 to 7.x). A venv of its own with the same wheel and Robot Framework 6.1."""
    wheel = next((installed[0].parent / "dist").glob("edgesdk-*.whl"))
    venv = tmp_path / "venv-rf61"
    python = make_venv(venv, with_pip=False)  # `python -m pip` only: the running environment's pip
    env = clean_env(venv)
    for args in (["--no-deps", "--force-reinstall", str(wheel)], ["robotframework==6.1"]):
        proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True,
                              env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    version = subprocess.run([str(python), "-c", "import robot; print(robot.version.VERSION)"], capture_output=True,
                             text=True, env=env, cwd=tmp_path).stdout.strip()
    assert version == "6.1"
    out = tmp_path / "hello"
    for argv in ([venv / "bin" / "edgesdk", "build", model_path("hello_world"), "-o", out],
                 [venv / "bin" / "edgesdk", "hil", out]):
        proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 tests, 4 passed, 0 failed" in proc.stdout, proc.stdout
