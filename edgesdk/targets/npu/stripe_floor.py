"""A lower bound on a cascade group's NPU cycles in stripes (NpuTarget.stripe_cost_floor), for the cascade search.

stripes.stripe_cost prices a group by lowering each stripe event to its command(s) and asking the timing model
(hw/timing.py: `32 + max(compute, memory)` a command). Most candidates the default search prices end over the
cycle budget at their first stripe height; this bound says so from the group's schedule and its ops' shapes,
with no stripe command built. Per event:

* Fetch (a table ends): the END command, exactly; Shift: its DMA_COPY, exactly (rows read and written in SRAM);
* Compute of a convolution, depthwise convolution, pooling or elementwise op whose stripe runs as one command:
  that command's cost, term by term as timing.command_cost works it out from the stripe's rows (compute lanes,
  input rows read, the weights and per-channel records fetched again by every stripe, output rows written);
* Compute of a convolution that may run folded (stripes._folded_stripe: its output a stripe buffer): at least
  one command, and the folded commands do the stripe's MACs at most 128 a cycle and write its output rows,
  the folded command fetching the weights and records: 32 + max(ceil(MACs / 128), those bytes' cycles);
* any other op: one command's 32 cycles.

Each term is at most the priced one, so the sum is at most stripe_cost's (tests/test_stripe_floor.py checks
every candidate group of real models). The weights' stream is the one the lowering places (codegen's memoized
_weight_stream: the same bytes, the same answer, computed once per tensor in a build).
"""

from __future__ import annotations

import numpy as np

from ...ops.stripes import CascadeGroup, Fetch, Shift, nhwc, row_bytes
from .hw import cmdtable as C
from .hw import registers as R
from .hw import timing

WEIGHTS_REGION, ARENA_REGION = 0, 1  # codegen's regions: constants in flash, activations in the SRAM arena
CONV_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D")
POOL_OPS = ("AVERAGE_POOL_2D", "MAX_POOL_2D")
ELEMENTWISE = ("ADD", "MUL")


def stripe_cost_floor(group, ctx) -> int | None:
    """A lower bound on stripes.stripe_cost(group, ctx)[0]; None for a part of a group crossing targets (its
    runs' tables are priced only)."""
    if not isinstance(group, CascadeGroup):
        return None
    state = ctx.data("npu-stripe-floors", lambda: {"memory": timing.MemoryMap.for_board(ctx.board), "consts": {}})
    memory = state["memory"]
    sram, flash = memory.class_of(ARENA_REGION, 0), memory.class_of(WEIGHTS_REGION, 0)
    buffered = set(group.buffered)
    end = timing.command_cost(C.End(), memory).cycles
    total = 0
    for event in group.schedule().events:
        if isinstance(event, Fetch):
            total += end
        elif isinstance(event, Shift):
            moved = _fetch((event.stop - event.start) * row_bytes(event.tensor), sram)
            total += R.CMD_OVERHEAD_CYCLES + 2 * moved
        else:
            total += _compute_floor(event, buffered, state["consts"], sram, flash, ctx)
    return total


def _compute_floor(event, buffered, consts: dict, sram, flash, ctx) -> int:
    op = event.op
    y = op.outputs[0]
    rows = event.stop - event.start
    _, _, width, channels = nhwc(y.shape)
    write = _fetch(rows * row_bytes(y), sram)
    if op.type in CONV_OPS:
        w = op.inputs[1]
        _, kh, kw, wc = w.shape
        if op not in consts:
            consts[op] = _constants_cycles(op, ctx, flash)
        fetched = consts[op]
        if op.type == "CONV_2D":
            if y in buffered:  # may run folded: the same MACs in one or more commands
                macs = rows * width * kh * kw * wc * channels
                return R.CMD_OVERHEAD_CYCLES + max(-(-macs // R.MACS_PER_CYCLE), fetched + write)
            lanes = R.CONV_IC_LANES_16 if op.inputs[0].dtype == "int16" else R.CONV_IC_LANES
            compute = rows * width * kh * kw * -(-wc // lanes) * -(-channels // R.CONV_OC_LANES)
        else:
            compute = _vector_cycles(rows, width, channels, y.dtype, kh * kw)
        return R.CMD_OVERHEAD_CYCLES + max(compute, _reads(event, (op.inputs[0],), sram) + fetched + write)
    if op.type in POOL_OPS:
        compute = _vector_cycles(rows, width, channels, y.dtype, op.attrs["filter_h"] * op.attrs["filter_w"])
        return R.CMD_OVERHEAD_CYCLES + max(compute, _reads(event, (op.inputs[0],), sram) + write)
    if op.type in ELEMENTWISE:
        compute = _vector_cycles(rows, width, channels, y.dtype, 1)
        return R.CMD_OVERHEAD_CYCLES + max(compute, _reads(event, op.inputs[:2], sram) + write)
    return R.CMD_OVERHEAD_CYCLES


def _reads(event, inputs, sram) -> int:
    """Cycles of the stripe's input rows as its command reads them (one stream each)."""
    total = 0
    for x in inputs:
        if x not in event.reads:
            continue  # read whole, not in rows: left out (a lower bound)
        start, stop = event.reads[x][:2]
        total += _fetch((stop - start) * row_bytes(x), sram)
    return total


def _constants_cycles(op, ctx, flash) -> int:
    """Cycles a conv command of `op` spends fetching its weights (dense, or the compressed stream the lowering
    places: the fetch or the worst-case decode, the slower) and its per-channel records, as _conv_cost."""
    from .codegen import _weight_stream

    w, x = op.inputs[1], op.inputs[0]
    data = np.ascontiguousarray(w.data, dtype=np.int8).tobytes()
    stream = _weight_stream(data, ctx, op, owner=w)
    if stream is None:
        weights = _fetch(len(data), flash)
    else:
        weights = max(_fetch(len(stream), flash), timing.weight_decode_cycles(len(data)))
    record = R.CHANNEL_PARAM_BYTES_WIDE if x.dtype == "int16" else R.CHANNEL_PARAM_BYTES
    return weights + _fetch(nhwc(op.outputs[0].shape)[3] * record, flash)


def _vector_cycles(rows: int, width: int, channels: int, dtype: str, taps: int) -> int:
    lanes = R.VEC_CHANNEL_LANES_16 if dtype == "int16" else R.VEC_CHANNEL_LANES
    return rows * -(-width // R.VEC_PIXEL_LANES) * -(-channels // lanes) * taps


def _fetch(nbytes: int, mclass) -> int:
    return -(-nbytes * R.BANDWIDTH_SCALE // mclass.bytes_per_cycle_x256)
