"""The HIL suites and snapshots in a real Renode (issue 12 items 15 and 16). Renode has no package for our
machines (docs/renode.md); these tests run when `renode-test` is on PATH and skip otherwise. What they
check without Renode is covered by tests/test_renode_platform.py (the generated platform and its libraries)
and tests/test_renode.py (the peripherals' snapshots under Mono).

Per build (a KWS build on the NPU, one on the DSP): `edgesdk hil OUT --emulator renode` passes (before the fix,
every test failed with DllNotFoundException: edgesdk_dsp), and tests/renode/snapshot.robot saves and loads the
emulation and keeps the peripheral's counter; its failing test leaves renode-test's failure snapshot (before:
"Pointer or ThreadLocal or SpinLock encountered during serialization")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import model_path
from edgesdk.cli import main as cli_main
from edgesdk.hil import SUITES_DIR
from edgesdk.targets.npu.hw import registers as R
from edgesdk.output_dir import foreign_files
from edgesdk.targets.dsp import registers as D

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("renode-test") is None, reason="Renode's renode-test is not on PATH")]

SNAPSHOT_SUITE = Path(__file__).resolve().parent / "renode" / "snapshot.robot"
# target list -> (the peripheral whose counter the snapshot keeps, its register, suites skipped on that build)
BUILDS = {"npu,c": ("sysbus.npu0", R.REG_PERF_COMMANDS, 0), "dsp,c": ("sysbus.dsp0", D.REG_KERNELS, 1)}


def totals(results: Path) -> tuple:
    """(passed, failed, skipped) of all tests in renode-test's robot_output.xml."""
    stat = re.search(r'<stat pass="(\d+)" fail="(\d+)" skip="(\d+)"[^>]*>All Tests<',
                     (results / "robot_output.xml").read_text())
    return tuple(map(int, stat.groups()))


@pytest.mark.parametrize("targets", sorted(BUILDS))
def test_suites_and_snapshots_in_renode(targets, tmp_path, capsys):
    peripheral, register, skipped = BUILDS[targets]
    out = tmp_path / "kws"
    assert cli_main(["build", str(model_path("kws")), "-o", str(out), "--target", targets, "--no-firmware"]) == 0
    assert cli_main(["hil", str(out), "--emulator", "renode"]) == 0
    text = capsys.readouterr().out
    assert "DllNotFoundException" not in text and "Tests finished successfully" in text, text
    assert totals(out / "hil" / "renode" / "results") == (4 - skipped, 0, skipped)  # npu_error skips without NPU
    assert foreign_files(out / "hil") == []  # renode-test wrote only into results/: the next edgesdk hil may replace
    library_dir = out / "hil" / "renode" / "lib"
    assert sorted(os.listdir(library_dir)) == [f"libedgesdk_{peripheral.split('.')[1][:3]}.so"]

    results = tmp_path / "snapshot-results"
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(library_dir),
                                                                         os.environ.get("LD_LIBRARY_PATH")])))
    proc = subprocess.run(["renode-test", "--variable", f"BUILD:{out}", "--variable", f"SUITES:{SUITES_DIR}",
                           "--variable", f"PERIPHERAL:{peripheral}", "--variable", f"REGISTER:{register:#x}",
                           "--variable", f"SNAPSHOT:{tmp_path / 'saved.save'}", "--results-dir", str(results),
                           str(SNAPSHOT_SUITE)], capture_output=True, text=True, env=env, timeout=900)
    log = proc.stdout + proc.stderr
    assert totals(results) == (1, 1, 0), log  # save + load kept the counter; the other test fails on purpose
    assert "On purpose: renode-test saves the emulation" in log
    assert "Error encountered during saving" not in log and "encountered during serialization" not in log, log
    assert "Emulation's state saved to" in log, log  # the failing test's snapshot
    assert (tmp_path / "saved.save").stat().st_size > 0
    assert list((results / "snapshots").glob("snapshot.Failing_Test_Saves_The_Emulation.fail*.save"))
