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

from ...ops.stripes import CascadeGroup, Fetch, Shift, nhwc, row_bytes
from .codegen import _weight_stream, board_memory, weight_bytes
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
    held = ctx.data("npu-stripe-floors", dict)  # (ctx.data builds its default on every call: made once here)
    state = held.get("state")
    if state is None:
        state = held["state"] = _State(board_memory(ctx.board))
    sram = state.sram
    buffered = set(group.buffered)
    total = 0
    for event in group.schedule().events:
        if isinstance(event, Fetch):
            total += state.end
        elif isinstance(event, Shift):
            moved = _fetch((event.stop - event.start) * row_bytes(event.tensor), sram)
            total += R.CMD_OVERHEAD_CYCLES + 2 * moved
        else:
            op = event.op
            terms = state.ops.get(op)
            if terms is None:
                terms = state.ops[op] = _OpTerms.of(op, ctx, state.flash)
            total += terms.floor(event, op.outputs[0] in buffered, sram)
    return total


class _State:
    """Per dry context: the memory classes and each op's terms."""

    def __init__(self, memory):
        self.sram, self.flash = memory.class_of(ARENA_REGION, 0), memory.class_of(WEIGHTS_REGION, 0)
        self.end = timing.command_cost(C.End(), memory).cycles
        self.ops = {}


class _OpTerms:
    """What one stripe command of an op costs per output row, and per command."""

    def __init__(self, compute_per_row: int, inputs: tuple, out_row_bytes: int, constants: int,
                 macs_per_row: int | None):
        self.compute_per_row = compute_per_row  # lane-granular compute cycles; 0: not modelled (32 only)
        self.inputs = inputs  # (input tensor, its row bytes): read in rows by the command
        self.out_row_bytes = out_row_bytes
        self.constants = constants  # cycles fetching weights and per-channel records (a convolution's)
        self.macs_per_row = macs_per_row  # a CONV_2D's: its stripes may run folded

    @classmethod
    def of(cls, op, ctx, flash) -> "_OpTerms":
        y = op.outputs[0]
        _, _, width, channels = nhwc(y.shape)
        out_row = row_bytes(y)
        if op.type in CONV_OPS:
            x, w = op.inputs[0], op.inputs[1]
            _, kh, kw, wc = w.shape
            constants = _constants_cycles(op, ctx, flash)
            if op.type == "CONV_2D":
                lanes = R.CONV_IC_LANES_16 if x.dtype == "int16" else R.CONV_IC_LANES
                per_row = width * kh * kw * -(-wc // lanes) * -(-channels // R.CONV_OC_LANES)
                return cls(per_row, ((x, row_bytes(x)),), out_row, constants, width * kh * kw * wc * channels)
            return cls(_vector_cycles(width, channels, y.dtype, kh * kw), ((x, row_bytes(x)),), out_row, constants,
                       None)
        if op.type in POOL_OPS:
            taps = op.attrs["filter_h"] * op.attrs["filter_w"]
            x = op.inputs[0]
            return cls(_vector_cycles(width, channels, y.dtype, taps), ((x, row_bytes(x)),), out_row, 0, None)
        if op.type in ELEMENTWISE:
            inputs = tuple((x, row_bytes(x)) for x in op.inputs[:2])
            return cls(_vector_cycles(width, channels, y.dtype, 1), inputs, out_row, 0, None)
        return cls(0, (), 0, 0, None)

    def floor(self, event, output_buffered: bool, sram) -> int:
        """At most what the event's command(s) cost (module docstring)."""
        if not self.compute_per_row:
            return R.CMD_OVERHEAD_CYCLES
        rows = event.stop - event.start
        write = _fetch(rows * self.out_row_bytes, sram)
        if self.macs_per_row is not None and output_buffered:  # may run folded: the same MACs, >= 1 command
            return R.CMD_OVERHEAD_CYCLES + max(-(-rows * self.macs_per_row // R.MACS_PER_CYCLE),
                                               self.constants + write)
        memory = self.constants + write
        for x, x_row_bytes in self.inputs:
            read = event.reads.get(x)
            if read is not None:  # (an input read whole, not in rows, is left out: a lower bound)
                memory += _fetch((read[1] - read[0]) * x_row_bytes, sram)
        return R.CMD_OVERHEAD_CYCLES + max(rows * self.compute_per_row, memory)


def _constants_cycles(op, ctx, flash) -> int:
    """Cycles a conv command of `op` spends fetching its weights (dense, or the compressed stream the lowering
    places: the fetch or the worst-case decode, the slower) and its per-channel records, as _conv_cost."""
    w, x = op.inputs[1], op.inputs[0]
    data = weight_bytes(w)
    stream = _weight_stream(data, ctx, op, owner=w)
    if stream is None:
        weights = _fetch(len(data), flash)
    else:
        weights = max(_fetch(len(stream), flash), timing.weight_decode_cycles(len(data)))
    record = R.CHANNEL_PARAM_BYTES_WIDE if x.dtype == "int16" else R.CHANNEL_PARAM_BYTES
    return weights + _fetch(nhwc(op.outputs[0].shape)[3] * record, flash)


def _vector_cycles(width: int, channels: int, dtype: str, taps: int) -> int:
    """A vector command's compute cycles per output row (timing._vector_cycles)."""
    lanes = R.VEC_CHANNEL_LANES_16 if dtype == "int16" else R.VEC_CHANNEL_LANES
    return -(-width // R.VEC_PIXEL_LANES) * -(-channels // lanes) * taps


def _fetch(nbytes: int, mclass) -> int:
    return -(-nbytes * R.BANDWIDTH_SCALE // mclass.bytes_per_cycle_x256)
