"""Cascade groups that cross targets (edgesdk/ops/stripes.py group_runs / group_parts, the search in
edgesdk/aot/cascade.py, the executor's runs in edgesdk/aot/executor.py): an NPU convolution feeding a host
HARD_SWISH that feeds NPU layers again, in one group. Each target prices and lowers its own events; the NPU's
runs are command tables of their own, the host's runs kernel calls between them."""

from __future__ import annotations

import math

import pytest

from edgesdk.aot.cascade import Striping, candidate_chains, choose_cascades
from edgesdk.aot.executor import collect_scratch_sizes, crossing_groups, region_units
from edgesdk.aot.memory_plan import MemoryProblem, verify_plan
from edgesdk.board import load_board
from edgesdk.compiler import BuildOptions, compile_model, targets_in_place_rules
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.ops.stripes import CascadeGroup, Compute, Shift, group_parts, group_runs
from edgesdk.partition.partitioner import partition
from edgesdk.targets import get_target, parse_target_list
from edgesdk.targets.api import CodegenOptions
from edgesdk.tune.schedule import CascadeChoice, schedule_of
from modelgen import ModelBuilder
from test_cascade import _conv, _model_bytes_file

BOARD = load_board("riscv-npu")
HARD_SWISH = 1  # the stem's op that runs on the host


def _stem(height=64, width=32):
    """SSD MobileNetV3's stem: 3x3 stride-2 conv -> HARD_SWISH -> 3x3 stride-2 depthwise -> 1x1; the conv's
    16-channel output is the largest tensor, as in the real model."""
    m = ModelBuilder()
    x = m.tensor((1, height, width, 3), "int8", scale=0.02, zero_point=1)
    a = _conv(m, x, (1, height // 2, width // 2, 16), 3, stride=2, seed=11)  # op 0
    b = m.tensor((1, height // 2, width // 2, 16), "int8", scale=0.03, zero_point=-100)
    m.op("HARD_SWISH", [a], [b])  # op 1
    c = _conv(m, b, (1, height // 4, width // 4, 16), 3, stride=2, depthwise=True, activation="RELU", seed=12)
    d = _conv(m, c, (1, height // 4, width // 4, 8), 1, seed=13)  # op 3
    return m.build([x], [d])


def _setup(model=None):
    """The stem partitioned for npu,c with its HARD_SWISH on the host (the NPU would take it): regions npu [0],
    c [1], npu [2, 3]."""
    graph = import_tflite(_model_bytes_file(model or _stem()))
    regions = partition(graph, parse_target_list("npu,c", BOARD), forced={HARD_SWISH: "c"})
    options = CodegenOptions("ref", BOARD)
    problem = MemoryProblem(graph, collect_scratch_sizes(graph, regions, options),
                            in_place=targets_in_place_rules(regions))
    return graph, regions, options, problem


def _target_name(regions):
    names = {op: region.target for region in regions for op in region.ops}
    return names.get


def test_the_stem_crosses_targets():
    _, regions, _, _ = _setup()
    assert [(r.target, [op.index for op in r.ops]) for r in regions] == [("npu", [0]), ("c", [1]), ("npu", [2, 3])]


@pytest.mark.parametrize("height", [1, 2, 3, 5])
def test_runs_cut_the_schedule_by_target_in_order(height):
    """The runs are the group's events in order, each run of one target; a shift goes with the compute after
    it (its producer's); every stripe alternates NPU, host, NPU."""
    graph, regions, _, _ = _setup()
    group = CascadeGroup(tuple(graph.ops), height, 0)
    key = _target_name(regions)
    runs = group_runs(group, key)
    assert [e for run in runs for e in run.events] == list(group.schedule().events)
    assert all(a.key != b.key for a, b in zip(runs, runs[1:]))
    for run in runs:
        assert {key(e.op) for e in run.events if isinstance(e, Compute)} == {run.key}
        assert set(run.part.ops) == {e.op for e in run.events if isinstance(e, Compute)}
        for k, event in enumerate(run.events):  # a shift or fetch is followed, in its run, by the compute it serves
            following = next(e for e in run.events[k:] if isinstance(e, Compute))
            if isinstance(event, Shift):
                assert following.op.outputs[0] is event.tensor
    host_runs = [r for r in runs if r.key == "c"]
    assert len(host_runs) == group.schedule().stripes  # the HARD_SWISH computes in every stripe
    parts = group_parts(group, key)
    assert set(parts) == {"npu", "c"} and parts["c"].runs == len(host_runs)
    assert [op.index for op in parts["npu"].ops] == [0, 2, 3] and parts["npu"].buffered == group.buffered


def test_each_target_prices_its_own_part():
    """The costs are per target, each against its own ops run whole; the NPU's part pays an END per run."""
    graph, regions, options, _ = _setup()
    striping = Striping(regions, options)
    group = striping.group(graph.ops, 2, 0, graph)
    costs = striping.costs(group)
    assert set(costs) == {"npu", "c"}
    whole_npu = get_target("npu").stripe_cost(CascadeGroup(tuple(graph.ops[2:]), 2, 2), striping._ctx)[1]
    assert costs["npu"][1] > whole_npu  # ops 0, 2 and 3
    assert costs["c"][0] > costs["c"][1] > 0
    assert striping.within(costs, math.inf) and not striping.within(costs, 0.0)


def test_candidates_cross_targets_only_where_both_allow(monkeypatch):
    graph, regions, options, _ = _setup()
    chains = [tuple(op.index for op in c) for _, c in candidate_chains(graph, regions, Striping(regions, options))]
    assert (0, 1, 2, 3) in chains and (0, 1) in chains and (1, 2) in chains
    monkeypatch.setattr(type(get_target("c")), "stripes_with_other_targets", False)
    chains = [tuple(op.index for op in c) for _, c in candidate_chains(graph, regions, Striping(regions, options))]
    assert chains == [(2, 3)]


def test_search_takes_a_group_across_targets_and_the_plan_proves_it():
    graph, regions, options, problem = _setup()
    baseline = problem.plan()
    plan = choose_cascades(problem, regions, baseline, Striping(regions, options), max_cycle_increase=math.inf)
    assert plan.arena_bytes < baseline.arena_bytes
    assert any(len({r for r in (_target_name(regions)(op) for op in g.ops)}) == 2 for g in plan.cascades)
    verify_plan(plan)


def test_executor_cuts_regions_around_the_group():
    """Regions npu [0], c [1], npu [2, 3] with group (1, 2): the first region whole, the group at its first op,
    then what is left of the last region."""
    graph, regions, _, _ = _setup()
    group = CascadeGroup(tuple(graph.ops[1:3]), 2, 1)
    crossing = crossing_groups([group], {op: r.target for r in regions for op in r.ops})
    units = [u for r in regions for u in region_units(r, crossing)]
    assert units[0] is regions[0] and units[1] is group
    assert [op.index for op in units[2].ops] == [3] and units[2].target == "npu" and len(units) == 3


def _compiled(groups, model=None):
    path = _model_bytes_file(model or _stem())
    base = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False, cascade=False))
    schedule = schedule_of(base).with_layer(HARD_SWISH, target="c").with_cascades(
        [CascadeChoice(ops, h) for ops, h in groups])
    return path, compile_model(path, BuildOptions(target="npu,c", compile_firmware=False, schedule=schedule))


def test_the_build_runs_each_target_in_turn_and_the_proof_covers_it():
    from edgesdk.verify import verify_build

    _, compiled = _compiled([((0, 1, 2, 3), 2)])
    steps = [(s.target, s.layers) for s in compiled.executor.steps]
    assert steps[0] == ("npu", [0]) and steps[1] == ("c", [1]) and steps[2][0] == "npu"
    assert sum(t == "c" for t, _ in steps) == compiled.plan.cascades[0].schedule().stripes
    counts = verify_build(compiled)
    assert counts["npu_tables"] == sum(t == "npu" for t, _ in steps) and counts["stripe_calls"] >= 8
    # each layer's weights are placed once, whatever the number of runs
    plain = _compiled([])[1]
    assert len(compiled.executor.blobs["npu_weights"].data) == len(plain.executor.blobs["npu_weights"].data)


def test_proof_refuses_a_host_run_that_leaves_its_rows():
    from dataclasses import replace

    from edgesdk.ops.stripes import row_bytes
    from edgesdk.targets.c.calls import Arena, render_layer
    from edgesdk.verify import VerificationError, verify_build

    _, compiled = _compiled([((0, 1, 2, 3), 2)])
    layer = compiled.executor.target_data["c"][1]
    call = layer.calls[-1]
    out = call.args[-1]
    # one row on: its last row lands past its stripe buffer, which here ends below the arena's end
    shifted = Arena(out.tensor, out.offset + row_bytes(out.tensor), out.ctype)
    layer.calls[-1] = replace(call, args=call.args[:-1] + (shifted,))
    step = [s for s in compiled.executor.steps if s.target == "c"][1]
    step.code = render_layer(layer)
    with pytest.raises(VerificationError, match="outside the buffer of"):
        verify_build(compiled)


def test_proof_refuses_an_npu_run_that_writes_past_its_stripe_buffer():
    """An NPU run's stripe command whose output rows straddle two stripe buffers (the last rows of one, the
    first of the next): no one buffer live over its layers holds them."""
    from dataclasses import replace

    from edgesdk.targets.npu.hw import cmdtable
    from edgesdk.verify import VerificationError, verify_build

    _, compiled = _compiled([((0, 1, 2, 3), 2)])
    table = compiled.executor.target_data["npu"][1]  # ops 0, 2, 3 between two host runs
    commands = cmdtable.decode(table.data)
    out = commands[0].output
    first, second = sorted((b for b in compiled.plan.buffers if b.kind == "stripe"), key=lambda b: b.offset)[:2]
    assert first.offset + first.size == second.offset
    moved = replace(out, offset=second.offset - out.strides[1])
    table.data = cmdtable.encode([replace(commands[0], output=moved)] + commands[1:])
    with pytest.raises(VerificationError, match="not inside one buffer live during the table"):
        verify_build(compiled)


@pytest.mark.slow
@pytest.mark.parametrize("groups", [[((0, 1, 2, 3), 1)], [((0, 1, 2, 3), 3)], [((0, 1), 2)], [((1, 2, 3), 2)]],
                         ids=["npu-host-npu-1", "npu-host-npu-3", "npu-to-host-ends", "host-to-npu"])
def test_groups_across_targets_are_bit_exact_on_the_emulator(tmp_path, groups):
    """Firmware (--werror) on the emulator, the NPU's C model running its tables between the host's calls,
    compared byte for byte with LiteRT's reference kernels."""
    from edgesdk.compiler import build
    from firmware_checks import assert_runs_bit_exact

    path = _model_bytes_file(_stem(24, 12))
    base = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False, cascade=False))
    sched = schedule_of(base).with_layer(HARD_SWISH, target="c").with_cascades(
        [CascadeChoice(ops, h) for ops, h in groups])
    report = build(path, tmp_path / "m", BuildOptions(target="npu,c", werror=True, schedule=sched))
    assert [g["ops"] for g in report["memory"]["cascades"]] == [list(ops) for ops, _ in groups]
    assert {"npu", "c"} <= set(report["memory"]["cascades"][0]["targets"])
    assert_runs_bit_exact(tmp_path / "m", report, path)


@pytest.mark.slow
def test_ssd_mobilenet_v3_with_its_first_hard_swish_on_the_host(tmp_path):
    """The real model: SSD MobileNetV3 320 on npu,c with op 1 (HARD_SWISH) on the host. Ops 0-2 across targets
    (NPU conv, host HARD_SWISH, NPU depthwise) in 8-row stripes lower the arena below the default build's
    (415,360 B). The search refused them while the first convolution ran folded op by op but unfolded in
    stripes (+141 % NPU cycles of those layers); its stripes fold too now (npu/stripes.py, _folded_stripe):
    +4.7 %, and the search takes the group (with ops 10-12: 396,800 B). The firmware runs bit-exact on
    riscv-npu, its NPU cycles what the search priced (docs/performance.md)."""
    from conftest import model_path
    from edgesdk.compiler import build
    from firmware_checks import assert_runs_bit_exact

    path = model_path("ssd_mobilenet_v3")
    default = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False))
    moved = schedule_of(default).with_layer(HARD_SWISH, target="c")
    c = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False, schedule=moved.with_cascades([])),
                      check_fit=False)  # op by op it needs 144 bytes more than riscv-npu has
    striping = Striping(c.regions, c.codegen_options)
    plan = choose_cascades(c.memory_problem, c.regions, c.plan, striping)
    assert [([op.index for op in g.ops], g.stripe_height) for g in plan.cascades] == [([0, 1, 2], 8),
                                                                                        ([10, 11, 12], 16)]
    crossing = striping.group(tuple(c.graph.ops[0:3]), 8, 0, c.graph)
    npu_striped, npu_whole = striping.costs(crossing)["npu"]
    assert npu_whole < npu_striped < 1.1 * npu_whole
    groups = [CascadeChoice((0, 1, 2), 8), CascadeChoice((10, 11, 12), 16)]
    alone = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False,
                                             schedule=moved.with_cascades(groups[1:])))
    schedule = moved.with_cascades(groups)
    plan = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False, schedule=schedule)).plan
    assert plan.arena_bytes < default.plan.arena_bytes
    report = build(path, tmp_path / "m", BuildOptions(target="npu,c", werror=True, schedule=schedule))
    assert report["memory"]["sram_peak_bytes"] == plan.arena_bytes
    result = assert_runs_bit_exact(tmp_path / "m", report, path, seeds=(0,), timeout_s=600)
    # the NPU's timing model is its PERF_CYCLES: the group adds what the search priced over the folded layers
    # (measured 2026-11-25: 311,376 cycles for 311,408 priced, the tables' ENDs differing by one; the stripes
    # unfolded then)
    npu_cycles = sum(t.cycles for t in alone.executor.target_data["npu"])
    assert result.cycles_of("npu") - npu_cycles == pytest.approx(npu_striped - npu_whole, abs=64)
