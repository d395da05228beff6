"""report.json `layers`: one entry per op of the graph, in execution order, like `vela --verbose-performance`.

Each target's cost model answers per layer (Target.estimate_layers) in its unit's count: cycles of an
accelerator, instructions of the host core. The share of a layer is its part of the estimated latency: each
count at its unit's clock (board.json clock_hz); when a unit has no clock, of the counts themselves.
"""

from __future__ import annotations

from ..ir.cost import op_bytes_moved, op_macs
from ..targets.api import CPU_UNIT


def layer_figures(graph, regions: list, executor, board) -> list:
    """The `layers` entries of a compiled model (regions in execution order, executor generated)."""
    from ..targets import get_target

    entries = []
    for region_index, (region, region_estimate) in enumerate(zip(regions, executor.region_estimates)):
        target = get_target(region.target)
        estimates = {}  # the edge conversions share index -1: in op order
        for e in target.estimate_layers(region, board, executor):
            estimates.setdefault(e.op_index, []).append(e)
        for op in region.ops:
            same = estimates.get(op.index)
            estimate = (same.pop(0) if len(same) > 1 else same[0]) if same else None
            entries.append(_layer_entry(op, region_index, region.target, estimate, region_estimate))
    _add_shares(entries)
    return entries


def _layer_entry(op, region_index: int, target: str, estimate, region_estimate) -> dict:
    read, written, weights = op_bytes_moved(op)
    if estimate is not None:  # what the unit moves, where its target knows better than the graph
        read = estimate.activation_read_bytes if estimate.activation_read_bytes is not None else read
        written = estimate.activation_write_bytes if estimate.activation_write_bytes is not None else written
        weights = estimate.weight_read_bytes if estimate.weight_read_bytes is not None else weights
    unit = region_estimate.unit if region_estimate is not None else None
    count = estimate.count if estimate is not None else None
    clock = region_estimate.clock_hz if region_estimate is not None else 0
    entry = {
        "index": op.index, "type": op.type, "target": target, "region": region_index,
        "output": op.outputs[0].name if op.outputs else None,
        "macs": op_macs(op),
        "bytes": {"activations_read": read, "activations_written": written, "weights_read": weights},
        "estimate": {
            "unit": unit,
            "kind": "instructions" if unit == CPU_UNIT else "cycles",
            "count": count,
            "lower_bound": estimate.lower_bound if estimate is not None else None,
            "clock_hz": clock,
            "microseconds": round(count * 1e6 / clock, 3) if count is not None and clock else None,
        },
    }
    lower = entry["estimate"]["lower_bound"]
    entry["estimate"]["efficiency"] = round(lower / count, 4) if count and lower is not None else None
    losses = estimate.losses if estimate is not None else None
    if losses:  # why the count exceeds the bound, by cause, and the largest cause
        entry["estimate"]["losses"] = dict(losses)
        entry["estimate"]["loss"] = max(losses, key=losses.get)
    return entry


def _add_shares(entries: list) -> None:
    """`share`: each layer's fraction of the estimated latency (of the counts when a unit has no clock);
    None for a layer without an estimate. The shares of the others sum to 1."""
    known = [e for e in entries if e["estimate"]["count"] is not None]
    timed = all(e["estimate"]["clock_hz"] for e in known)
    weight = {id(e): (e["estimate"]["count"] / e["estimate"]["clock_hz"] if timed else e["estimate"]["count"])
              for e in known}
    total = sum(weight.values())
    for e in entries:
        e["share"] = (weight[id(e)] / total if total else 0.0) if id(e) in weight else None


def layer_totals(layers: list) -> dict:
    """Sums over the layers: MACs, bytes, and per unit the estimated count and lower bound."""
    units: dict = {}
    for layer in layers:
        est = layer["estimate"]
        if est["unit"] is None:
            continue
        unit = units.setdefault(est["unit"], {"kind": est["kind"], "count": 0, "lower_bound": 0, "layers": 0})
        unit["layers"] += 1
        unit["count"] += est["count"] or 0
        unit["lower_bound"] += est["lower_bound"] or 0
    return {
        "macs": sum(layer["macs"] for layer in layers),
        "bytes": {key: sum(layer["bytes"][key] for layer in layers)
                  for key in ("activations_read", "activations_written", "weights_read")},
        "units": units,
        "microseconds": round(sum(layer["estimate"]["microseconds"] or 0 for layer in layers), 3),
    }
