"""A target's lower bound on a cascade group's cost in stripes (Target.stripe_cost_floor; the NPU's:
edgesdk/targets/npu/stripe_floor.py) and the cascade search's use of it (Striping.floor_costs): the search skips
pricing a group whose bound is already over the cycle budget, which is safe only if the bound never exceeds the
price. Checked here for every candidate group of real models at every stripe height, first-stripe height and
streamed input the searches try; and the searches must choose the same plans with fewer prices."""

from __future__ import annotations

import pytest

from conftest import model_path
from edgesdk.aot import cascade
from edgesdk.compiler import BuildOptions, compile_model


def _candidate_groups(c, striping):
    """Every group the default, fit and streamed searches may ask about: each candidate chain at every stripe
    height (the fit search's finer ones too) and first-stripe height."""
    for first, chain in cascade.candidate_chains(c.graph, c.regions, striping):
        for height in cascade.stripe_heights(chain, finer=True):
            for lead in cascade._lead_rows(height):
                yield striping.group(chain, height, first, c.graph, lead)


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "har", "ds_cnn_int16", "ds_cnn_float_io", "mobilenet_uint8",
                                  "mobilenet_160_uint8"])
@pytest.mark.parametrize("stream", [False, True])
def test_floor_is_at_most_the_price_of_every_candidate_group(name, stream):
    """floor <= stripe_cost's cycles for every part of every candidate group (npu,c: NPU groups, host groups,
    groups across both), and a floor promises a price (not None); the whole costs are the priced ones."""
    c = compile_model(model_path(name), BuildOptions(target="npu,c", compile_firmware=False, cascade=False))
    streams = cascade.streamable_graph_inputs(c.graph) if stream else ()
    if stream and not streams:
        pytest.skip(f"{name} has no image input to stream")
    striping = cascade.Striping(c.regions, c.codegen_options, streams)
    bounded = 0
    for group in _candidate_groups(c, striping):
        floors = striping.floor_costs(group)
        costs = striping.costs(group)
        if floors is None:
            continue
        assert costs is not None, group
        assert floors.keys() == costs.keys()
        for target, (floor, whole) in floors.items():
            striped, priced_whole = costs[target]
            assert floor <= striped, (name, [op.index for op in group.ops], group.stripe_height, group.lead_rows)
            assert whole == priced_whole
        bounded += 1
    assert bounded > 0  # every one of these models has NPU groups


def _plans_and_prices(name, monkeypatch, floors: bool, **options) -> tuple:
    """(arena, each group's ops, stripe height and first stripe, the groups priced) of a default compile."""
    priced = []
    price = cascade.Striping._price

    def counted(self, group):
        priced.append(group)
        return price(self, group)

    monkeypatch.setattr(cascade.Striping, "_price", counted)
    if not floors:
        monkeypatch.setattr(cascade.Striping, "floor_costs", lambda self, group: None)
    c = compile_model(model_path(name), BuildOptions(compile_firmware=False, **options))
    monkeypatch.undo()
    groups = [(tuple(op.index for op in g.ops), g.stripe_height, g.lead_rows) for g in c.plan.cascades]
    return c.plan.arena_bytes, groups, [b.offset for b in c.plan.buffers], len(priced)


@pytest.mark.parametrize("name,options", [
    ("kws", {}), ("vww", {}), ("ic", {}), ("ad", {}),
    ("vww", {"stream_input": True}),  # the streamed search and the fit budget's greedy search after it
])
def test_search_chooses_the_same_plan_with_fewer_prices(name, options, monkeypatch):
    """The default build's plan (arena, groups, offsets) with the floors as without them; never more groups
    priced. On KWS every candidate the default search tries is over the budget at its first stripe height:
    none priced with the floors; without them, measured 21 (the heights of the 30 chains whose bound is below
    the arena at a lower height: their price says the chain stops there, choose_cascades(prune=True))."""
    *plan, priced = _plans_and_prices(name, monkeypatch, True, **options)
    *reference, reference_priced = _plans_and_prices(name, monkeypatch, False, **options)
    assert plan == reference
    assert priced <= reference_priced
    if name == "kws" and not options:
        assert (priced, reference_priced) == (0, 21)


@pytest.mark.parametrize("name", ["vww", "ic", "kws"])
def test_fit_search_chooses_the_same_groups_with_fewer_prices(name, monkeypatch):
    """fit_cascades (a model that does not fit: every candidate, the finer heights and shorter first stripes,
    within the fit budget of the model's cycles) picks the same groups with the floors as without."""
    c = compile_model(model_path(name), BuildOptions(target="npu,c", compile_firmware=False, cascade=False))
    runs = []
    for floors in (True, False):
        priced = []
        price = cascade.Striping._price
        monkeypatch.setattr(cascade.Striping, "_price", lambda self, group: priced.append(1) or price(self, group))
        if not floors:
            monkeypatch.setattr(cascade.Striping, "floor_costs", lambda self, group: None)
        striping = cascade.Striping(c.regions, c.codegen_options)
        groups = cascade.fit_cascades(c.memory_problem, c.regions, striping) or []
        monkeypatch.undo()
        runs.append(([(tuple(op.index for op in g.ops), g.stripe_height, g.lead_rows) for g in groups], len(priced)))
    (groups, priced), (reference, reference_priced) = runs
    assert groups == reference
    assert priced <= reference_priced
