"""What the package ships and which extra each command needs (issue 14). The wheel itself is built and
installed by tests/test_install.py (slow); these checks are fast.

* every non-Python file of edgesdk/ matches a package-data pattern of pyproject.toml, so a wheel install has
  the boards, the firmware's CMake project, the HIL suites, the C sources and templates a checkout has;
* the extras match their use: [reference] for `run --check`, [hil] (Robot Framework 6.1 to 7.x + the
  reference) for `edgesdk hil`, [farm] (Ray) for `regress`/`tune` with --workers/--cluster, [test] = reference +
  hil + farm + pytest + pytest-xdist;
* without an extra, the command that needs it says which one to install and exits with code 7.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata

import pytest

from conftest import REPO
from edgesdk.cli import main as cli_main

tomllib = pytest.importorskip("tomllib")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


def _names(requirements: list) -> set:
    import re

    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_package_data_lists_every_file_the_package_uses():
    package = REPO / "edgesdk"
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["edgesdk"]
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    files = {p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".py", ".pyc")}
    assert sorted(str(p.relative_to(package)) for p in files - shipped) == []
    assert not [p for p in shipped if p.suffix == ".py"]


def test_the_package_finds_its_files_without_the_checkout():
    from edgesdk.board import BOARDS_DIR, PACKAGE_DIR
    from edgesdk.firmware_build.build import CMAKE_PROJECT_DIR
    from edgesdk.hil import SUITES_DIR

    for folder in (BOARDS_DIR, CMAKE_PROJECT_DIR, SUITES_DIR):
        assert folder.is_dir() and PACKAGE_DIR in folder.parents
    assert (CMAKE_PROJECT_DIR / "CMakeLists.txt").is_file() and list(SUITES_DIR.glob("*.robot"))


def test_extras_match_their_use():
    reference = _names(EXTRAS["reference"])
    assert reference == {"ai-edge-litert", "tflite-micro"}
    assert _names(EXTRAS["hil"]) == reference | {"robotframework"}
    assert _names(EXTRAS["farm"]) == {"ray"}
    assert _names(EXTRAS["test"]) == reference | {"robotframework", "pytest", "pytest-xdist", "ray", "import-linter",
                                                  "matplotlib"}  # matplotlib: reads report.html's screenshots
    assert reference <= _names(EXTRAS["bench"])
    base = _names(PYPROJECT["project"]["dependencies"])
    assert not base & (reference | {"robotframework", "apache-tvm", "onnx", "onnxruntime", "pytest", "ray",
                                    "matplotlib"})  # the report's figures are hand-written SVG


def test_robot_framework_range_takes_renode_pin_and_7():
    specifiers = pytest.importorskip("packaging.specifiers")
    for extra in ("hil", "test"):
        spec = next(r for r in EXTRAS[extra] if r.startswith("robotframework"))
        allowed = specifiers.SpecifierSet(spec.removeprefix("robotframework"))
        assert all(v in allowed for v in ("6.1", "6.1.1", "7.0", "7.5")), spec
        assert "6.0.2" not in allowed and "8.0" not in allowed


def test_license_metadata_is_spdx():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert "Apache License" in (REPO / "LICENSE").read_text()[:200]
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"]) and project["authors"]


# ---- a missing extra is named, with exit code 7 ------------------------------------------------------------

@pytest.fixture
def fake_build(tmp_path):
    """Enough of a build for the commands to get as far as their optional imports."""
    out = tmp_path / "out"
    out.mkdir()
    slot = {"name": "x", "dtype": "int8", "shape": [1, 4], "bytes": 4, "arena_offset": 0}
    (out / "report.json").write_text(json.dumps({"board": "riscv-npu", "rounding": "ref", "memory": {"arena_bytes": 16},
                                                 "io": {"inputs": [slot], "outputs": [slot]}}))
    return out


def _hide(monkeypatch, *modules):
    """Make `import module` fail as if the package were not installed."""
    for name in modules:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("rounding, module", [("ref", "ai_edge_litert"), ("tflm", "tflite_micro")])
def test_run_check_without_reference_names_the_extra(fake_build, monkeypatch, capsys, rounding, module):
    report = json.loads((fake_build / "report.json").read_text())
    (fake_build / "report.json").write_text(json.dumps({**report, "rounding": rounding}))
    _hide(monkeypatch, module)
    assert cli_main(["run", str(fake_build), "--random-input", "0", "--check"]) == 7
    err = capsys.readouterr().err
    assert "edgesdk run --check" in err and "pip install 'edgesdk[reference]'" in err
    assert "internal error" not in err and "bug" not in err


def test_hil_without_robot_names_the_extra(fake_build, monkeypatch, capsys):
    _hide(monkeypatch, "robot")
    assert cli_main(["hil", str(fake_build)]) == 7
    err = capsys.readouterr().err
    assert "pip install 'edgesdk[hil]'" in err and "Robot exit code" not in err
    assert not (fake_build / "hil").exists()  # nothing prepared


def test_hil_with_too_old_robot_says_so(fake_build, monkeypatch, capsys):
    real_version = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "6.0.2" if name == "robotframework" else real_version(name))
    pytest.importorskip("robot")
    assert cli_main(["hil", str(fake_build)]) == 7
    assert "robotframework 6.0.2 is installed; the suites need 6.1 or newer" in capsys.readouterr().err


def test_hil_without_reference_names_the_hil_extra(fake_build, monkeypatch, capsys):
    pytest.importorskip("robot")
    _hide(monkeypatch, "ai_edge_litert")
    assert cli_main(["hil", str(fake_build)]) == 7
    assert "pip install 'edgesdk[hil]'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["regress", "{model}", "--workers", "2", "-o", "{out}"],
    ["regress", "{model}", "--cluster", "localhost:6379", "-o", "{out}"],
    ["tune", "{model}", "--workers", "2", "-o", "{out}/log.json"],
])
def test_parallel_runs_without_ray_name_the_farm_extra(tmp_path, monkeypatch, capsys, command):
    """Before any work: nothing built, nothing written."""
    from conftest import model_path

    _hide(monkeypatch, "ray")
    argv = [a.format(model=model_path("hello_world"), out=tmp_path / "out") for a in command]
    assert cli_main(argv) == 7
    err = capsys.readouterr().err
    assert "pip install 'edgesdk[farm]'" in err and "--workers/--cluster" in err and "internal error" not in err
    assert not (tmp_path / "out").exists()


def test_a_serial_regress_needs_no_ray(tmp_path, monkeypatch, capsys):
    """--workers 1 (the default) runs in this process: up to the first row, without Ray (a model the board
    cannot hold fails its row, quickly, without a firmware build)."""
    from conftest import model_path

    _hide(monkeypatch, "ray")
    assert cli_main(["regress", str(model_path("vww")), "--boards", "hifive1-revb", "--targets", "c",
                     "-o", str(tmp_path / "out")]) == 8
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (row,) = summary["rows"]
    assert row["status"] == "error" and row["exit_code"] == 4 and "does not fit" in row["message"]
    assert summary["workers"] == "serial, in this process"


def test_the_demo_model_ships_with_the_repository():
    """scripts/demo.sh runs from a clone alone: its model is in examples/models, identical to the shared one."""
    import hashlib

    from conftest import model_path

    shipped = REPO / "examples" / "models" / "kws_ref_model.tflite"
    digest = hashlib.sha256(shipped.read_bytes()).hexdigest()
    assert digest == "aeea436800704fce17b17292e4412630ad856e9d777c044c64ef748a880bd0ae"
    assert digest in (REPO / "examples" / "models" / "README.md").read_text()
    assert "Apache" in (REPO / "examples" / "models" / "NOTICE").read_text()
    if model_path("kws").is_file():
        assert shipped.read_bytes() == model_path("kws").read_bytes()
    assert "examples/models/kws_ref_model.tflite" in (REPO / "scripts" / "demo.sh").read_text()
