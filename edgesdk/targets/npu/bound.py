"""Where an NPU schedule's cycles go over the hardware lower bound, per command and per layer.

The timing model (hw/timing.py, docs/npu-datasheet.md section 6) charges a command
`32 + max(compute, memory)` and bounds it by `max(ceil(ops / 128), memory)`. The difference has two causes:

* "command overhead": the fixed 32 cycles of every command (END included);
* lane losses, when compute exceeds the bound: compute is ceil(ops / 128) times the granularity factors
  of the engine, so the excess is split between them in proportion to their logarithms:
  "input-channel lanes" (a conv's C_in against 16 input lanes, 8 for int16), "output-channel lanes"
  (C_out against 8), "vector channel lanes" (a depthwise, pooling or elementwise command's channels
  against 16, 8 for int16) and "vector pixel lanes" (its output width against 8 columns).

The bound itself depends on the schedule: bytes a schedule moves twice (weights re-read by several
commands, an input read through an overlapping view, a copy into scratch) raise the memory term. So each
layer also gets a schedule-independent bound ("ideal": its MACs at 128 a cycle, or its activations read
and written once and its constants fetched once, whichever is more); "bytes moved more than once" is the
part of the schedule's bound above it.
"""

from __future__ import annotations

import math

from .hw import cmdtable as C
from .hw import registers as R
from .hw import timing

OVERHEAD = "command overhead"
INPUT_LANES = "input-channel lanes"
OUTPUT_LANES = "output-channel lanes"
VECTOR_CHANNELS = "vector channel lanes"
VECTOR_PIXELS = "vector pixel lanes"
REREADS = "bytes moved more than once"
CAUSES = (OVERHEAD, INPUT_LANES, OUTPUT_LANES, VECTOR_CHANNELS, VECTOR_PIXELS)


def _waste(count: int, lanes: int) -> float:
    """How many lanes are paid for per useful one: ceil(count / lanes) * lanes / count."""
    return -(-count // lanes) * lanes / count if count else 1.0


def _lane_factors(cmd) -> dict:
    """{cause: granularity factor} of a compute command (empty for pure data movement)."""
    if isinstance(cmd, C.Conv2D) and not isinstance(cmd, C.DepthwiseConv2D):
        lanes = R.CONV_IC_LANES_16 if cmd.input.dtype == R.DTYPE_INT16 else R.CONV_IC_LANES
        return {INPUT_LANES: _waste(cmd.weights.shape[3], lanes), OUTPUT_LANES: _waste(cmd.output.shape[3],
                                                                                      R.CONV_OC_LANES)}
    if isinstance(cmd, (C.DepthwiseConv2D, C.MaxPool2D, C.AvgPool2D, C._Elementwise, C.Table)):
        _, _, w, c = cmd.output.shape
        lanes = R.VEC_CHANNEL_LANES_16 if cmd.output.dtype == R.DTYPE_INT16 else R.VEC_CHANNEL_LANES
        return {VECTOR_CHANNELS: _waste(c, lanes), VECTOR_PIXELS: _waste(w, R.VEC_PIXEL_LANES)}
    return {}


def command_losses(cmd, cost: timing.CommandCost) -> dict:
    """{cause: cycles} of one command over its lower bound; the values sum to cycles - lower bound."""
    losses = {OVERHEAD: R.CMD_OVERHEAD_CYCLES}
    excess = max(cost.compute_cycles, cost.memory_cycles) - cost.lower_bound_cycles
    if excess <= 0:
        return losses
    factors = {cause: math.log(f) for cause, f in _lane_factors(cmd).items() if f > 1.0}
    total = sum(factors.values())
    if not total:  # ceil(ops / 128) rounding alone
        losses[INPUT_LANES if isinstance(cmd, C.Conv2D) else VECTOR_PIXELS] = excess
        return losses
    shares = sorted(factors.items(), key=lambda kv: -kv[1])
    given = 0
    for cause, weight in shares[1:]:
        part = int(excess * weight / total)
        losses[cause] = part
        given += part
    losses[shares[0][0]] = excess - given  # the largest factor takes the rounding remainder
    return losses


def _add(into: dict, losses: dict) -> None:
    for cause, cycles in losses.items():
        into[cause] = into.get(cause, 0) + cycles


def layer_ideal(op, commands: list, costs: list, memory: timing.MemoryMap) -> int:
    """A schedule-independent bound of one layer: its ops at 128 a cycle, or its activation inputs read and
    its outputs written once at the arena's bandwidth plus every constant stream its commands fetch counted
    once, whichever is more."""
    ops = sum(c.ops for c in costs)
    sram = memory.class_of(1, 0)
    moved = sum(t.nbytes for t in op.inputs if t is not None and not t.is_const)
    moved += sum(t.nbytes for t in op.outputs)
    memory_cycles = -(-moved * R.BANDWIDTH_SCALE // sram.bytes_per_cycle_x256)
    constants = {}
    for cmd in commands:
        for region, offset, nbytes, decoded in _constant_streams(cmd):
            if region == 0:
                constants[(offset, nbytes)] = (memory.class_of(region, offset), nbytes, decoded)
    for mclass, nbytes, decoded in constants.values():
        fetch = -(-nbytes * R.BANDWIDTH_SCALE // mclass.bytes_per_cycle_x256)
        memory_cycles += max(fetch, timing.weight_decode_cycles(decoded)) if decoded else fetch
    return max(-(-ops // R.MACS_PER_CYCLE), memory_cycles)


def _constant_streams(cmd) -> list:
    """(region, offset, bytes, decoded weights or 0) of the weights and channel records a command fetches."""
    if not isinstance(cmd, C.Conv2D):
        return []
    streams = []
    w = cmd.weights
    if cmd.weight_stream_bytes:
        streams.append((w.region, w.offset, cmd.weight_stream_bytes, w.num_elements))
    else:
        streams.append((w.region, w.offset, w.compact_bytes, 0))
    records = 1 if cmd.per_tensor_params else cmd.output.shape[3]
    size = R.CHANNEL_PARAM_BYTES_WIDE if cmd.input.dtype == R.DTYPE_INT16 else R.CHANNEL_PARAM_BYTES
    streams.append((cmd.params.region, cmd.params.offset, records * size, 0))
    return streams


def table_layers(table, memory: timing.MemoryMap) -> list:
    """Per layer of one command table (tables.NpuTable), in op order: cycles, lower bound, ideal, the loss
    by cause and the dominant one."""
    from .tables import command_layers

    costs = timing.table_cost(table.commands, memory).commands
    per_layer = {op.index: ([], []) for op in table.ops}
    for layer, cmd, cost in zip(command_layers(table), table.commands, costs):
        cmds, cs = per_layer.setdefault(layer, ([], []))
        cmds.append(cmd)
        cs.append(cost)
    ops = {op.index: op for op in table.ops}
    result = []
    for index, (cmds, cs) in per_layer.items():
        losses = {}
        for cmd, cost in zip(cmds, cs):
            _add(losses, command_losses(cmd, cost))
        cycles, lower = sum(c.cycles for c in cs), sum(c.lower_bound_cycles for c in cs)
        ideal = layer_ideal(ops[index], cmds, cs, memory) if index in ops else lower
        entry = {"index": index, "type": ops[index].type if index in ops else "", "commands": len(cmds),
                 "cycles": cycles, "lower_bound": lower, "ideal": min(ideal, lower),
                 "losses": {cause: v for cause, v in losses.items() if v}}
        if lower > entry["ideal"]:
            entry["losses"][REREADS] = lower - entry["ideal"]
        entry["dominant"] = max(entry["losses"], key=entry["losses"].get) if entry["losses"] else None
        result.append(entry)
    return result


def schedule_bound(executor, board) -> dict:
    """The NPU schedule of a compiled model against the hardware lower bound: totals (cycles, the bound
    summed over commands as benchmarks/run.py reports it, the schedule-independent ideal), their ratios
    and the per-layer entries of table_layers."""
    from .tables import tables_of

    memory = timing.MemoryMap.for_board(board)
    layers = [entry for table in tables_of(executor) for entry in table_layers(table, memory)]
    cycles = sum(e["cycles"] for e in layers)
    lower = sum(e["lower_bound"] for e in layers)
    ideal = sum(e["ideal"] for e in layers)
    return {"cycles": cycles, "lower_bound": lower, "ideal": ideal,
            "ratio": cycles / lower if lower else None, "ratio_to_ideal": cycles / ideal if ideal else None,
            "layers": layers}
