"""Hardware-in-the-loop suites (edgesdk/hil/suites/*.robot) on the built-in emulator, as CI runs them: pytest invokes
plain `robot` through `edgesdk hil`, with edgesdk's implementation of Renode's keywords.

Each model is compiled once (sources only) and its HIL firmware built once. The suites must also fail when
the firmware misbehaves (wrong output, no NPU error, no hang), and the keyword library must keep Renode's
semantics the suites rely on (virtual-time timeouts, consumed UART lines, `include` of the C# types)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from conftest import SHARED_MODELS, model_path
from edgesdk.board import PACKAGE_DIR
from edgesdk.cli import main as cli_main
from edgesdk.errors import ToolchainError, UsageError
from edgesdk.hil import SUITES_DIR, available_suites, run_hil
from edgesdk.hil.emulation import RenodeError
from edgesdk.hil.firmware import BUILTIN_RESULTS, JUMP_TO_SELF, RENODE_RESULTS, check_hil_dir, prepare_hil
from edgesdk.hil.keywords import RenodeKeywords
from edgesdk.output_dir import MARKER, write_manifest


@pytest.fixture(scope="module")
def hil_build(tmp_path_factory):
    """model name -> HilBuild: `edgesdk build --no-firmware` (sources only), then the HIL firmware, once."""
    cache = {}

    def get(name: str):
        if name not in cache:
            out = tmp_path_factory.mktemp(f"hil-{name}") / "build"
            assert cli_main(["build", str(model_path(name)), "-o", str(out), "--no-firmware"]) == 0
            cache[name] = prepare_hil(out)
        return cache[name]

    return get


def test_suites_are_the_four_of_the_issue():
    assert available_suites() == ["boot", "hang", "inference", "npu_error"]


def test_edgesdk_hil_runs_every_suite_and_prints_the_summary(hil_build, capsys):
    hil = hil_build("kws")
    assert cli_main(["hil", str(hil.build_dir)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "4 tests, 4 passed, 0 failed" in out
    progress = [line for line in captured.err.splitlines() if line.startswith("edgesdk: ")]  # long steps say so (the last two: hil's)
    assert progress[-2].startswith(f"edgesdk: preparing {hil.build_dir / 'hil'}"), captured.err
    assert progress[-1] == ("edgesdk: running 4 suite(s) (boot, hang, inference, npu_error) on the builtin emulator "
                           "with plain robot"), captured.err
    from edgesdk.progress import QUIET, verbosity

    assert verbosity() == QUIET  # the command's verbosity ends with it: edgesdk as a library stays quiet
    for test in ("Firmware Boots And Prints Its Banner", "Model Outputs On The UART Equal The Reference",
                 "Corrupted Command Table Gives The Documented Error And A Non-Zero Exit",
                 "Hung Firmware Is Detected By The Time Limit"):
        assert test in out
    assert (hil.hil_dir / "robot" / "output.xml").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(SHARED_MODELS) - {"kws"}))
def test_inference_suite_on_each_shared_model(hil_build, name):
    hil = hil_build(name)
    result = run_hil(hil.build_dir, suites=["inference", "npu_error"], hil=hil)
    assert result.passed, result.output
    assert "2 tests, 2 passed, 0 failed" in result.output or "skipped" in result.output


def mutated_build(hil, tmp_path, **changes):
    """A copy of the HIL build whose Robot variables are changed (BUILD/hil/variables.py)."""
    (tmp_path / "hil").mkdir(parents=True)
    text = hil.variables_file.read_text()
    for name, value in changes.items():
        text += f"{name} = {value!r}\n"  # later assignments win
    (tmp_path / "hil" / "variables.py").write_text(text)
    return dataclasses.replace(hil, build_dir=tmp_path, hil_dir=tmp_path / "hil")


def test_suites_fail_when_the_firmware_misbehaves(hil_build, tmp_path):
    hil = hil_build("kws")
    original = hil.expected_lines[0]
    wrong = original[:-1] + ("0" if original[-1] != "0" else "1")
    # A wrong expected byte; a table "corruption" that hits unused flash (so no NPU error); a hang patch that
    # rewrites the entry point's own first word (so nothing hangs).
    unused_flash = "0x203ffff0"  # the last bytes of flash, far behind the firmware image
    first_word = _read_word(hil.firmware, hil.hang_address)
    bad = mutated_build(hil, tmp_path, EXPECTED_OUTPUT_LINES=[wrong], NPU_TABLE_ADDRESS=unused_flash,
                        JUMP_TO_SELF=f"{first_word:#010x}")
    result = run_hil(bad.build_dir, suites=["inference", "npu_error", "hang"], hil=bad)
    assert not result.passed
    assert "3 tests, 0 passed, 3 failed" in result.output
    assert f"Line containing regex >>^{wrong}$<< not found before the firmware had exited (code 0)" in result.output
    assert "Line containing >>edgesdk: run failed status=-1 npu_error=1 npu_command=-1<< not found" in result.output
    assert "Expected error '*Terminal tester failed*' did not occur." in result.output


def _read_word(elf, address: int) -> int:
    from edgesdk.flash import elf_load_segments

    for base, data in elf_load_segments(elf):
        if base <= address < base + len(data):
            return int.from_bytes(data[address - base:address - base + 4], "little")
    raise AssertionError(f"{address:#x} not in {elf}")


# ---- the keyword library itself ---------------------------------------------------------------------

@pytest.fixture
def renode(hil_build):
    keywords = RenodeKeywords()
    keywords.setup()
    yield keywords
    keywords.teardown()


def load(renode, hil):
    renode.execute_command(f"$elf=@{hil.firmware}")
    renode.execute_command(f"include @{_variables(hil)['RESC']}")
    renode.create_terminal_tester("sysbus.uart0", timeout=1)


def _variables(hil) -> dict:
    values = {}
    exec(hil.variables_file.read_text(), values)  # noqa: S102 - our own generated variable file
    return values


def test_uart_lines_are_consumed_in_order_like_renodes_tester(renode, hil_build):
    hil = hil_build("kws")
    load(renode, hil)
    banner = _variables(hil)["BANNER"]
    renode.start_emulation()
    result = renode.wait_for_line_on_uart(banner)
    assert result.line == banner and result.timestamp > 0
    assert renode.wait_for_line_on_uart("run ok").line == "edgesdk: run ok"
    # The banner was consumed by the first wait, as Renode's TerminalTester removes matched lines.
    with pytest.raises(AssertionError, match="Terminal tester failed!"):
        renode.wait_for_line_on_uart(banner, timeout=0.1)
    assert renode.execute_command("exit ExitCode") == "0\n"


def test_regex_groups_log_and_virtual_time_timeouts(renode, hil_build):
    hil = hil_build("kws")
    load(renode, hil)
    renode.create_log_tester(1)
    renode.execute_command(f"sysbus WriteDoubleWord {hil.hang_address:#x} {JUMP_TO_SELF:#x}")
    assert renode.execute_command(f"sysbus ReadDoubleWord {hil.hang_address:#x}") == f"0x{JUMP_TO_SELF:08X}\n"
    result = renode.wait_for_line_on_uart(r"model (\w+) on ([\w-]+)", treatAsRegex=True)
    assert result.groups == [hil.model_name, "riscv-npu"]
    machine = renode.emulation.current
    before = machine.virtual_ms
    with pytest.raises(AssertionError, match="not found before the timeout expired"):
        renode.wait_for_line_on_uart("edgesdk: run", timeout=0.05)
    # 0.05 virtual seconds at PerformanceInMips 200 = 10 M instructions, overrun by less than 4096.
    assert 50.0 <= machine.virtual_ms - before < 50.0 + 4096 * 1000 / 200e6
    renode.should_not_be_in_log("firmware exited", timeout=0)
    with pytest.raises(AssertionError, match='Expected pattern "firmware exited with code 0." did not appear'):
        renode.wait_for_log_entry("firmware exited with code 0.", timeout=0.01)


def test_monitor_refuses_what_it_does_not_model(renode, hil_build):
    hil = hil_build("kws")
    with pytest.raises(RenodeError, match="does not support 'emulation'"):
        renode.execute_command("emulation CreateServerSocketTerminal 3456 \"term\"")
    renode.execute_command("mach create")
    repl = _variables(hil)["RESC"].replace(".resc", ".repl")
    with pytest.raises(RenodeError, match="type Edgesdk.SiFiveTestFinisher of 'exit' is not known: include its C# file"):
        renode.execute_command(f"machine LoadPlatformDescription @{repl}")
    with pytest.raises(RenodeError, match="no firmware loaded"):
        renode.execute_command("sysbus WriteDoubleWord 0x20000000 0")
    renode.execute_command('$x="first"')
    renode.execute_command('$x?="second"')
    assert renode.emulation.variables["x"] == "first"


def test_emulation_fault_is_reported_in_the_log_and_stops_waits(renode, hil_build):
    hil = hil_build("kws")
    load(renode, hil)
    renode.create_log_tester(1)
    # An illegal instruction (all zeros) at the model's entry: the built-in CPU stops with a fault.
    renode.execute_command(f"sysbus WriteDoubleWord {hil.hang_address:#x} 0")
    with pytest.raises(AssertionError, match="CPU had stopped on a fault"):
        renode.wait_for_line_on_uart("edgesdk: run ok")
    assert "illegal instruction" in renode.wait_for_log_entry("cpu: The firmware crashed")


# ---- Renode path ------------------------------------------------------------------------------------

def test_renode_emulator_runs_the_same_suites_with_renode_test(hil_build, tmp_path, monkeypatch):
    """A stand-in renode-test on PATH records how edgesdk calls it (Renode itself cannot be installed here)."""
    hil = hil_build("kws")
    fake = tmp_path / "bin" / "renode-test"
    fake.parent.mkdir()
    record = tmp_path / "call.txt"
    fake.write_text(f"#!{sys.executable}\nimport os, sys\n"
                    f"open({str(record)!r}, 'w').write(repr((sys.argv[1:], os.environ.get('LD_LIBRARY_PATH'))))\n"
                    "print('Tests finished successfully :)')\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    result = run_hil(hil.build_dir, emulator="renode", hil=hil)
    args, library_path = eval(record.read_text())  # noqa: S307 - written just above
    assert result.passed and "Tests finished successfully" in result.output
    assert args[:2] == ["--variable", f"BUILD:{hil.build_dir}"]
    assert args[2:4] == ["--results-dir", str(hil.hil_dir / "renode" / "results")]
    assert args[4:] == [str(SUITES_DIR / f"{name}.robot") for name in available_suites()]
    library_dir = library_path.split(os.pathsep)[0]
    # kws runs on the NPU only: its platform has the NPU (and its model), not the DSP.
    assert sorted(os.listdir(library_dir)) == ["libedgesdk_npu.so"]


def test_renode_emulator_without_renode_says_what_is_missing(hil_build, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match="renode-test is not on PATH"):
        run_hil(tmp_path / "no-build-needed", emulator="renode")


# ---- the harness option leaves normal firmware alone ---------------------------------------------------

def test_normal_harness_has_no_hil_code(hil_build, tmp_path):
    """main.c compiled against the normal sources (no edgesdk_harness_config.h) references none of the HIL
    tables; against the HIL sources it does."""
    hil = hil_build("kws")
    gcc = "riscv64-unknown-elf-gcc"
    flags = ["-march=rv32imac_zicsr", "-mabi=ilp32", "--specs=picolibc.specs", "-O2", "-Wall", "-Wextra", "-Werror",
             f"-I{PACKAGE_DIR / 'firmware'}", f"-I{PACKAGE_DIR / 'targets' / 'npu' / 'hal'}"]
    symbols = {}
    for label, src in (("normal", hil.build_dir / "src"), ("hil", hil.hil_dir / "src")):
        obj = tmp_path / f"{label}.o"
        subprocess.run([gcc, *flags, f"-I{src}", "-c", str(PACKAGE_DIR / "firmware" / "main.c"), "-o", str(obj)],
                       check=True)
        symbols[label] = subprocess.run(["riscv64-unknown-elf-nm", str(obj)], capture_output=True, text=True,
                                        check=True).stdout
    assert "edgesdk_harness_inputs" not in symbols["normal"] and "edgesdk_harness_outputs" not in symbols["normal"]
    assert "edgesdk_harness_inputs" in symbols["hil"] and "edgesdk_harness_outputs" in symbols["hil"]


# ---- OUT/hil is edgesdk's, and only what edgesdk wrote is replaced (issue 12 item 15) --------------------

def test_hil_keeps_a_library_placed_in_its_directory(hil_build):
    """A library a user put into OUT/hil (say a model of their own on LD_LIBRARY_PATH) is never deleted: edgesdk hil
    stops with an actionable message (exit code 7) and leaves OUT/hil as it was."""
    hil = hil_build("kws")
    placed = hil.hil_dir / "renode" / "lib" / "libmine.so"
    placed.write_bytes(b"not edgesdk's")
    before = sorted(str(p.relative_to(hil.hil_dir)) for p in hil.hil_dir.rglob("*"))
    try:
        assert cli_main(["hil", str(hil.build_dir)]) == 7
        assert placed.read_bytes() == b"not edgesdk's"
        assert sorted(str(p.relative_to(hil.hil_dir)) for p in hil.hil_dir.rglob("*")) == before
        with pytest.raises(UsageError, match=r"holds 1 file\(s\) edgesdk did not write: renode/lib/libmine.so"):
            prepare_hil(hil.build_dir)
    finally:
        placed.unlink()


def test_hil_directory_ownership(tmp_path):
    """check_hil_dir: absent or empty -> fine; edgesdk's (marker + manifest) with results of its runs -> fine;
    no marker, a file outside the manifest, a symbolic link -> refused, nothing deleted."""
    hil_dir = tmp_path / "hil"
    check_hil_dir(hil_dir)
    hil_dir.mkdir()
    check_hil_dir(hil_dir)
    (hil_dir / "renode" / "lib").mkdir(parents=True)
    (hil_dir / "renode" / "lib" / "libedgesdk_npu.so").write_bytes(b"")
    (hil_dir / "firmware.elf").write_bytes(b"")
    with pytest.raises(UsageError, match="has no .edgesdk-output file"):
        check_hil_dir(hil_dir)
    (hil_dir / MARKER).write_text("")
    with pytest.raises(UsageError, match="holds 2 file"):  # no manifest: nothing is known to be edgesdk's
        check_hil_dir(hil_dir)
    (hil_dir / "renode" / "empty").mkdir()  # an empty directory edgesdk made (a board without native models: lib/)
    write_manifest(hil_dir, trees=(BUILTIN_RESULTS, RENODE_RESULTS))
    check_hil_dir(hil_dir)
    for results in (BUILTIN_RESULTS, RENODE_RESULTS):  # what robot and renode-test write later
        (hil_dir / results).mkdir(parents=True, exist_ok=True)
        (hil_dir / results / "log.html").write_text("")
    (hil_dir / RENODE_RESULTS / "snapshots").mkdir()
    check_hil_dir(hil_dir)
    for foreign in (hil_dir / "renode" / "lib" / "libmine.so", hil_dir / "notes.txt", hil_dir / "renode" / "mine"):
        foreign.write_text("")
        with pytest.raises(UsageError, match=str(foreign.relative_to(hil_dir))):
            check_hil_dir(hil_dir)
        foreign.unlink()
    (hil_dir / "firmware.elf").unlink()
    (hil_dir / "firmware.elf").symlink_to(tmp_path / "elsewhere")  # a listed name, but a link edgesdk did not make
    with pytest.raises(UsageError, match="firmware.elf"):
        check_hil_dir(hil_dir)
    link = tmp_path / "link"
    link.symlink_to(hil_dir)
    with pytest.raises(UsageError, match="symbolic link"):
        check_hil_dir(link)


# ---- Robot Framework 6.1, the version Renode 1.15.3's renode-test pins (issue 12 item 17) ---------------

RENODE_ROBOT_PIN = "6.1"  # renode/renode v1.15.3 tests/requirements.txt: robotframework==6.1


def test_robot_framework_of_renode_is_allowed_by_the_extras_and_the_check(monkeypatch):
    """pyproject's [hil] and [test] extras admit robotframework 6.1, and require_robot accepts it (and refuses
    older versions with the extra to install); tests/test_install.py runs the suites on 6.1 itself."""
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement

    from edgesdk.errors import MissingDependency
    from edgesdk.hil import require_robot

    project = tomllib.loads((PACKAGE_DIR.parent / "pyproject.toml").read_text())["project"]
    for extra in ("hil", "test"):
        robot = [Requirement(r) for r in project["optional-dependencies"][extra] if r.startswith("robotframework")]
        assert len(robot) == 1 and robot[0].specifier.contains(RENODE_ROBOT_PIN), (extra, robot)
        assert robot[0].specifier.contains("7.5")
    for version, accepted in ((RENODE_ROBOT_PIN, True), ("7.0.1", True), ("6.0.2", False), ("5.0", False)):
        monkeypatch.setattr(metadata, "version", lambda name, v=version: v)
        if accepted:
            require_robot()
        else:
            with pytest.raises(MissingDependency, match=f"robotframework {version} is installed"):
                require_robot()
