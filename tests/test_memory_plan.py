"""The static memory planner: no two live tensors overlap, aliases share bytes, arena is tight."""

import numpy as np
import pytest

from conftest import SHARED_MODELS, model_path
from edgesdk.aot.memory_plan import Buffer, MemoryPlan, place_greedy_by_size, plan_memory, verify_plan
from edgesdk.importer import import_tflite
from edgesdk.ir.graph import Graph, Op, Tensor


def _chain_graph(sizes):
    """x0 -> op0 -> x1 -> op1 -> ... (elementwise ops with given byte sizes)."""
    tensors = [Tensor(i, f"t{i}", (s,), "int8") for i, s in enumerate(sizes)]
    ops = [Op(i, "RELU", [tensors[i]], [tensors[i + 1]]) for i in range(len(sizes) - 1)]
    return Graph("chain", tensors, ops, [tensors[0]], [tensors[-1]])


def _assert_no_live_overlap(graph, plan):
    steps = {t: [] for t in plan.offsets}
    for s, op in enumerate(graph.ops):
        for t in op.inputs + op.outputs:
            if t is not None and not t.is_const:
                steps[t].append(s)
    for t in graph.inputs:
        steps[t].append(-1)
    for t in graph.outputs:
        steps[t].append(len(graph.ops))
    live = {t: (min(v), max(v)) for t, v in steps.items() if v}
    items = list(live.items())
    for i, (a, (a0, a1)) in enumerate(items):
        for b, (b0, b1) in items[i + 1:]:
            if plan.offsets[a] == plan.offsets[b] and a.nbytes and b.nbytes and _same_alias(graph, a, b):
                continue
            if a0 <= b1 and b0 <= a1:
                oa, ob = plan.offsets[a], plan.offsets[b]
                assert oa + a.nbytes <= ob or ob + b.nbytes <= oa, f"{a} and {b} overlap while both live"


def _same_alias(graph, a, b):
    for op in graph.ops:
        if op.type == "RESHAPE" and {op.inputs[0], op.outputs[0]} == {a, b}:
            return True
    return False


def test_chain_reuses_memory_ping_pong():
    graph = _chain_graph([100, 100, 100, 100, 100])
    plan = plan_memory(graph, alignment=4)
    # Only two neighbours are ever live at once.
    assert plan.arena_bytes == 200
    _assert_no_live_overlap(graph, plan)


def test_graph_input_kept_alive_until_last_use():
    t = [Tensor(i, f"t{i}", (64,), "int8") for i in range(4)]
    ops = [Op(0, "RELU", [t[0]], [t[1]]), Op(1, "RELU", [t[1]], [t[2]]), Op(2, "ADD", [t[2], t[0]], [t[3]])]
    graph = Graph("skip", t, ops, [t[0]], [t[3]])
    plan = plan_memory(graph, alignment=4)
    _assert_no_live_overlap(graph, plan)
    assert plan.arena_bytes == 192  # t0 lives throughout, plus two more


def test_reshape_aliases_its_input():
    t = [Tensor(0, "x", (1, 8, 8), "int8"), Tensor(1, "y", (1, 64), "int8"), Tensor(2, "z", (1, 64), "int8")]
    ops = [Op(0, "RESHAPE", [t[0]], [t[1]]), Op(1, "RELU", [t[1]], [t[2]])]
    graph = Graph("r", t, ops, [t[0]], [t[2]])
    plan = plan_memory(graph, alignment=4)
    assert plan.offset(t[0]) == plan.offset(t[1])
    assert plan.offset(t[2]) != plan.offset(t[1])


def test_verify_plan_rejects_overlap():
    a = Buffer("a", 64, 0, 2, offset=0)
    b = Buffer("b", 64, 1, 3, offset=32)
    with pytest.raises(AssertionError, match="overlap"):
        verify_plan(MemoryPlan([a, b], 128, 16, {}, {}))


def test_scratch_is_live_only_during_its_op():
    graph = _chain_graph([64, 64, 64])
    plan = plan_memory(graph, scratch_sizes={graph.ops[0]: 32}, alignment=4)
    off, size = plan.scratch[graph.ops[0]]
    assert size == 32
    for t in graph.ops[0].inputs + graph.ops[0].outputs:
        o = plan.offset(t)
        assert off + size <= o or o + t.nbytes <= off


def test_greedy_places_largest_first():
    bufs = [Buffer("small", 10, 0, 0), Buffer("big", 100, 0, 1), Buffer("mid", 50, 1, 1)]
    arena = place_greedy_by_size(bufs, 1)
    assert bufs[1].offset == 0
    # small (step 0) and mid (step 1) never live together: they share the bytes after big.
    assert bufs[0].offset == bufs[2].offset == 100
    assert arena == 150


@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_shared_models_plan_has_no_live_overlap(name):
    graph = import_tflite(model_path(name))
    plan = plan_memory(graph)
    _assert_no_live_overlap(graph, plan)
    peak_live = max(
        sum(t.nbytes for t in {t for t in op.inputs + op.outputs if t is not None and not t.is_const})
        for op in graph.ops if op.type != "RESHAPE")
    assert plan.arena_bytes >= peak_live  # can't beat what one op touches
    assert plan.arena_bytes <= sum(t.nbytes for t in graph.activation_tensors()) + 16 * len(graph.activation_tensors())
