"""The Renode platform of one build (edgesdk/renode/build_platform.py, issue 12 item 15): only the peripherals of
the targets the build uses, every C# file that defines them included before the platform is loaded, and the
native library of every C# peripheral that P/Invokes one built beside it. Checked on the generated files; Renode
itself fails with System.DllNotFoundException when a library is missing, which these checks would catch first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from edgesdk.board import load_board
from edgesdk.errors import ToolchainError, UsageError
from edgesdk.renode import CORE_PERIPHERAL_SOURCES, csharp_types, dllimport_libraries, library_file, peripheral_sources
from edgesdk.renode.build_platform import build_repl, check_libraries, used_targets, write_build_platform
from edgesdk.renode.platform import repl_path
from edgesdk.renode.repl import read_repl

from edgesdk.targets.dsp.renode import RENODE_SOURCE as DSP_CS  # noqa: E402
from edgesdk.targets.npu.renode import RENODE_SOURCE as NPU_CS  # noqa: E402

(EXIT_CS,) = CORE_PERIPHERAL_SOURCES


def report(*targets) -> dict:
    return {"regions": [{"target": t} for t in targets]}


@pytest.fixture(scope="module")
def board():
    return load_board("riscv-npu")


@pytest.fixture(scope="module")
def platforms(board, tmp_path_factory):
    """targets the build runs code on -> its BuildPlatform."""
    cases = {("npu",): ("c", "npu"), ("dsp",): ("c", "dsp"), ("npu", "dsp"): ("c", "npu", "dsp"), (): ("c",)}
    return {key: write_build_platform(board, report(*targets), tmp_path_factory.mktemp("platform"))
            for key, targets in cases.items()}


def included_sources(resc: Path) -> list:
    return [Path(m.replace("\\ ", " ")) for m in re.findall(r"^include @(.+\.cs)$", resc.read_text(), re.MULTILINE)]


@pytest.mark.parametrize("key, peripherals, libraries", [
    (("npu",), {"npu0": "Edgesdk.Npu1"}, ["libedgesdk_npu.so"]),
    (("dsp",), {"dsp0": "Edgesdk.Dsp1"}, ["libedgesdk_dsp.so"]),
    (("npu", "dsp"), {"npu0": "Edgesdk.Npu1", "dsp0": "Edgesdk.Dsp1"}, ["libedgesdk_dsp.so", "libedgesdk_npu.so"]),
    ((), {}, []),
])
def test_platform_has_only_the_peripherals_the_build_uses_and_their_libraries(platforms, key, peripherals, libraries):
    platform = platforms[key]
    assert platform.peripherals == peripherals
    entries = read_repl(platform.repl).entries
    types = {e.type for e in entries.values() if e.type}
    # The board's other hardware stays: memories, UART, exit device, CPU and interrupt controllers.
    assert {"flash", "sram", "uart0", "exit", "cpu", "plic", "clint"} <= set(entries)
    assert {"npu0", "dsp0"} & set(entries) == set(peripherals)
    assert sorted(os.listdir(platform.library_dir)) == libraries
    assert sorted(p.name for p in platform.libraries) == libraries
    # Every Edgesdk type the .repl creates is defined by a file the .resc includes, and nothing more is included.
    sources = included_sources(platform.resc)
    defined = set().union(*(csharp_types(s) for s in sources))
    assert {t for t in types if t.startswith("Edgesdk.")} == defined
    # Every library those files P/Invoke is in lib/ (Renode: DllNotFoundException otherwise).
    imported = set().union(set(), *(dllimport_libraries(s) for s in sources))
    assert sorted(library_file(name) for name in imported) == libraries
    assert json_peripherals(platform) == set(peripherals)


def json_peripherals(platform) -> set:
    import json

    return set(json.loads(platform.board_file.read_text()).get("peripherals", {})) & {"npu0", "dsp0"}


def test_resc_includes_the_peripherals_before_loading_the_repl_beside_it(platforms):
    platform = platforms[("npu",)]
    lines = platform.resc.read_text().splitlines()
    assert lines[0] == ":name: riscv-npu" and lines[1].startswith(":description:")  # Renode's header first
    includes = [k for k, line in enumerate(lines) if line.startswith("include @")]
    load = lines.index(f"machine LoadPlatformDescription $ORIGIN/{platform.repl.name}")
    assert includes and max(includes) < load
    assert [p.name for p in included_sources(platform.resc)] == ["EdgesdkNpu1.cs", "EdgesdkSiFiveTestFinisher.cs"]
    assert all(p.is_file() for p in included_sources(platform.resc))
    assert "# Left out (their target runs none of this build's code): dsp0 (target dsp)." in lines
    assert "sysbus LoadELF $elf" in platform.resc.read_text()
    assert "dsp0" not in platform.repl.read_text().split("// Left out")[1].split("\n", 1)[1]


def test_built_in_emulator_loads_the_build_platform(platforms):
    """The built-in emulator's machine from the generated pair: the .repl and board.json agree."""
    from edgesdk.renode.platform import check_against_board

    for platform in platforms.values():
        board = load_board(str(platform.board_file))
        assert check_against_board(read_repl(platform.repl), board) == []


def test_a_peripheral_that_refers_to_a_left_out_one_is_refused(board, tmp_path):
    text = repl_path(board).read_text().replace("    PerformanceInMips: 200", "    PerformanceInMips: 200\n    timeProvider: dsp0")
    path = tmp_path / "riscv-npu.repl"
    path.write_text(text.replace("    timeProvider: clint\n", ""))
    with pytest.raises(UsageError, match="'cpu' refers to 'dsp0', a peripheral of target dsp"):
        build_repl(read_repl(path), {"c", "npu"})


def test_used_targets_come_from_the_regions():
    assert used_targets(report("c", "npu", "npu")) == {"c", "npu"}
    assert used_targets({"targets": ["c", "dsp"]}) == {"c", "dsp"}


def test_dllimports_are_read_from_the_csharp_files():
    assert dllimport_libraries(NPU_CS) == {"edgesdk_npu"}
    assert dllimport_libraries(DSP_CS) == {"edgesdk_dsp"}
    assert dllimport_libraries(EXIT_CS) == set()


def test_a_missing_native_library_is_reported(tmp_path):
    (tmp_path / "libedgesdk_npu.so").write_bytes(b"")  # the NPU's is there, the DSP's is not
    with pytest.raises(ToolchainError, match="EdgesdkDsp1.cs P/Invokes libedgesdk_dsp.so"):
        check_libraries([NPU_CS, DSP_CS], tmp_path)


def test_library_command_builds_every_native_model_of_the_board(tmp_path):
    """`python3 -m edgesdk.renode library DIR` (docs/renode.md): the NPU's and the DSP's, as the board's whole
    platform creates both."""
    proc = subprocess.run([sys.executable, "-m", "edgesdk.renode", "library", str(tmp_path)], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    assert proc.returncode == 0, proc.stderr
    assert sorted(Path(line).name for line in proc.stdout.split()) == ["libedgesdk_dsp.so", "libedgesdk_npu.so"]
    assert sorted(os.listdir(tmp_path)) == ["libedgesdk_dsp.so", "libedgesdk_npu.so"]


def test_docs_list_the_native_libraries():
    from edgesdk.renode import peripheral_models

    text = (Path(__file__).resolve().parents[1] / "docs" / "renode.md").read_text()
    for source in peripheral_sources():
        for name in dllimport_libraries(source):
            assert library_file(name) in text
    assert all(model.renode_library is not None for model in peripheral_models().values()
               if any(dllimport_libraries(s) for s in model.renode_sources))
