"""The compiler driver (edgesdk/compiler.py): a list of named passes, a health check of the graph after each,
and `edgesdk build --dump-after PASS`."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import model_path
from edgesdk import compiler
from edgesdk.cli import main as cli_main
from edgesdk.compiler import PASS_NAMES, BuildOptions, compile_model
from edgesdk.errors import UsageError
from edgesdk.ir.graph import Graph, Op, Tensor
from edgesdk.ir.health import HealthError, graph_problems


def _t(i, name, const=False):
    data = np.zeros(4, np.int8) if const else None
    return Tensor(i, name, (1, 4), "int8", None, data)


def _chain():
    x, y, z = _t(0, "x"), _t(1, "y"), _t(2, "z")
    ops = [Op(0, "RELU", [x], [y]), Op(1, "RELU", [y], [z])]
    return Graph("g", [x, y, z], ops, [x], [z])


def test_a_sound_graph_has_no_problems():
    assert graph_problems(_chain()) == []


def test_health_check_names_what_is_wrong():
    g = _chain()
    g.ops.reverse()  # out of order: op 1 reads y before op 0 writes it
    assert any("reads 'y' before any op produces it" in p for p in graph_problems(g))
    g = _chain()
    g.ops[1].outputs = [g.ops[0].outputs[0]]  # y written twice, z by nobody
    problems = graph_problems(g)
    assert any("already produced" in p for p in problems) and any("'z' is produced by no op" in p for p in problems)


def test_the_pass_list_is_the_documented_order():
    assert PASS_NAMES == ("import", "fold", "partition", "scratch", "plan", "codegen")


def test_a_pass_that_breaks_the_graph_is_caught_by_name(monkeypatch):
    def shuffle(state):
        state.graph.ops.reverse()

    monkeypatch.setattr(compiler, "PASSES", compiler.PASSES[:2] + (("shuffle", shuffle),) + compiler.PASSES[2:])
    with pytest.raises(HealthError, match="after pass 'shuffle'"):
        compile_model(model_path("kws"), BuildOptions(compile_firmware=False))


def test_dump_is_called_after_the_named_passes_only():
    seen = []
    compiled = compile_model(model_path("kws"), BuildOptions(dump_after=("partition", "codegen")),
                             dump=lambda name, state: seen.append((name, state.plan is not None)))
    assert seen == [("partition", False), ("codegen", True)]
    assert compiled.plan.arena_bytes == 11840  # the passes as a list change nothing (docs/performance.md)


def test_unknown_pass_is_a_usage_error():
    with pytest.raises(UsageError, match="the passes are import, fold, partition"):
        compile_model(model_path("kws"), BuildOptions(dump_after=("partitioning",)))


def test_cli_dump_after_prints_state_to_stderr(tmp_path, capsys):
    code = cli_main(["build", str(model_path("kws")), "-o", str(tmp_path / "out"), "--no-firmware",
                     "--dump-after", "partition", "--dump-after", "plan"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "== edgesdk: after pass 'partition'" in err and "== edgesdk: after pass 'plan'" in err
    assert "[region 1: c]" in err and "memory plan: arena 11840 B" in err  # the SOFTMAX on the host, the arena
    assert "after pass" not in out  # the summary stays clean on stdout
    assert cli_main(["build", str(model_path("kws")), "-o", str(tmp_path / "out2"), "--no-firmware",
                     "--dump-after", "nope"]) == UsageError.exit_code
    assert not (tmp_path / "out2").exists()


def test_run_summary_lists_only_the_peripherals_the_build_used():
    """The runner keeps the counters of the peripherals the build's targets drive (an NPU build on a board with
    a DSP says nothing of the DSP); the summary prints them per peripheral, with no NPU-specific line."""
    from edgesdk.board import load_board
    from edgesdk.cli import run_summary
    from edgesdk.runner import target_peripherals

    board = load_board("riscv-npu")
    assert "dsp0" in board.peripherals
    assert target_peripherals({"regions": [{"target": "npu"}, {"target": "c"}]}, board) == {"npu": "npu0"}
    assert target_peripherals({"regions": [{"target": "c"}]}, board) == {}
    summary = {"outputs": [], "inference_instructions": 10, "cpu_instructions": 20, "peripheral_cycles": {"npu0": 451},
               "exit_code": 0, "peripherals": {"npu0": {"cycles": 451, "starts": 4}}}
    text = run_summary(summary, None)
    assert "npu0: cycles 451, starts 4" in text and "npu cycles" not in text and "dsp0" not in text
