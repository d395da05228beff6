"""Where NPU cycles go over the lower bound (edgesdk/targets/npu/bound.py) and the per-model figure
benchmarks/npu_bound.py prints."""

from __future__ import annotations

import sys

from conftest import REPO, model_path

from edgesdk.targets.npu import bound
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import timing

MEMORY = timing.MemoryMap()  # every operand at the default (SRAM) bandwidth


def _desc(shape, offset=0, region=1):
    return C.TensorDesc.dense(region, offset, shape)


def _conv(c_in, c_out, pixels=(8, 8), kernel=(3, 3)):
    return C.Conv2D(input=_desc((1, *pixels, c_in)), output=_desc((1, *pixels, c_out)),
                    weights=_desc((c_out, *kernel, c_in), region=0), params=C.ParamRef(0, 0),
                    pad_top=kernel[0] // 2, pad_left=kernel[1] // 2)


def _losses(cmd):
    cost = timing.command_cost(cmd, MEMORY)
    losses = bound.command_losses(cmd, cost)
    assert sum(losses.values()) == cost.cycles - cost.lower_bound_cycles
    return losses


def test_one_input_channel_loses_the_input_lanes():
    losses = _losses(_conv(1, 16))
    assert max(losses, key=losses.get) == bound.INPUT_LANES
    assert losses[bound.INPUT_LANES] > 10 * losses[bound.OVERHEAD]


def test_the_loss_is_split_between_input_and_output_lanes():
    losses = _losses(_conv(24, 4))  # 24 of 32 input lanes, 4 of 8 output lanes: the output loses more
    assert 0 < losses[bound.INPUT_LANES] < losses[bound.OUTPUT_LANES]


def test_full_lanes_and_data_movement_lose_only_the_overhead():
    assert _losses(_conv(16, 8)) == {bound.OVERHEAD: 32}
    copy = C.DmaCopy(_desc((1, 4, 4, 16)), _desc((1, 4, 4, 16), offset=256))
    assert _losses(copy) == {bound.OVERHEAD: 32}


def test_a_narrow_depthwise_loses_pixel_lanes():
    dw = C.DepthwiseConv2D(input=_desc((1, 16, 3, 64)), output=_desc((1, 16, 3, 64)),
                           weights=_desc((1, 5, 5, 64), region=0), params=C.ParamRef(0, 0), pad_top=2, pad_left=2)
    losses = _losses(dw)
    assert max(losses, key=losses.get) == bound.VECTOR_PIXELS and bound.VECTOR_CHANNELS not in losses


def test_model_bound_adds_up_to_the_npu_tables():
    """benchmarks/npu_bound.py's per-model figure: its cycles are the NPU tables' (what PERF_CYCLES counts),
    its bound the commands' bounds summed, the ideal never above it."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import npu_bound

    from edgesdk.compiler import BuildOptions, compile_model

    figures = npu_bound.model_bound(model_path("kws"))
    compiled = compile_model(model_path("kws"), BuildOptions())
    memory = timing.MemoryMap.for_board(compiled.board)
    tables = compiled.executor.target_data["npu"]
    assert figures["cycles"] == sum(t.cycles for t in tables)
    assert figures["lower_bound"] == sum(timing.table_cost(t.commands, memory).lower_bound_cycles for t in tables)
    assert figures["ratio"] <= npu_bound.GOAL  # issue 13's goal, with the kernel rows folded (fold.py)
    assert all(e["ideal"] <= e["lower_bound"] <= e["cycles"] for e in figures["layers"])
    first = figures["layers"][0]
    assert first["type"] == "CONV_2D" and first["commands"] == 4  # two fills, the copy, the folded conv
