"""The text tables the CLI prints: per-layer estimates (`edgesdk build --verbose`) and a run's measured
profile (`edgesdk run --profile`)."""

from __future__ import annotations

from .layers import layer_totals

COUNT_ABBREVIATIONS = {"instructions": "instr", "cycles": "cyc"}


def _table(rows: list, align: str) -> list:
    """Rows of cells as aligned lines; `align` has one character per column: '<' or '>'."""
    widths = [max(len(row[k]) for row in rows) for k in range(len(align))]
    return ["  ".join(f"{cell:{a}{w}}" for cell, a, w in zip(row, align, widths)).rstrip() for row in rows]


def _count(value, kind: str | None) -> str:
    if value is None:
        return "-"
    return f"{value:,} {COUNT_ABBREVIATIONS.get(kind, kind)}"


def layer_table(layers: list) -> list:
    """`edgesdk build --verbose`: per layer its target, work, bytes moved, estimate, lower bound and share."""
    rows = [("layer", "type", "target", "MACs", "act read B", "act write B", "weights B", "estimate",
             "lower bound", "eff %", "share %")]
    for layer in layers:
        est, moved = layer["estimate"], layer["bytes"]
        efficiency = f"{100 * est['efficiency']:.0f}" if est["efficiency"] is not None else "-"
        share = f"{100 * layer['share']:.1f}" if layer["share"] is not None else "-"
        rows.append((str(layer["index"]), layer["type"], layer["target"], f"{layer['macs']:,}",
                     f"{moved['activations_read']:,}", f"{moved['activations_written']:,}",
                     f"{moved['weights_read']:,}", _count(est["count"], est["kind"]),
                     _count(est["lower_bound"], est["kind"]), efficiency, share))
    totals = layer_totals(layers)
    moved = totals["bytes"]
    rows.append(("total", "", "", f"{totals['macs']:,}", f"{moved['activations_read']:,}",
                 f"{moved['activations_written']:,}", f"{moved['weights_read']:,}", "", "", "", "100.0"))
    lines = _table(rows, "><<>>>>>>>>")
    for unit, figures in totals["units"].items():
        bound = figures["lower_bound"]
        ratio = f" ({figures['count'] / bound:.2f} x the lower bound)" if bound else ""
        lines.append(f"{unit}: {figures['count']:,} {figures['kind']} estimated in {figures['layers']} layer(s), "
                     f"lower bound {bound:,}{ratio}")
    if totals["microseconds"]:
        lines.append(f"estimated latency: {totals['microseconds']:,.1f} us at the board's clocks "
                     "(share: of this latency)")
    return lines


def _cycles(cycles: dict | None, peripheral: str, missing: str = "-") -> str:
    value = (cycles or {}).get(peripheral)
    return missing if value is None else f"{value:,}"


def profile_table(profile: dict) -> list:
    """`edgesdk run --profile`: per layer the measured instructions (of its block, when the block runs that
    layer alone) and each peripheral's cycles beside the estimate, then per block of the run function, adding up
    exactly. One cycles column per peripheral the build uses, headed by its board name."""
    peripherals = list(profile["peripheral_cycles"])
    rows = [("layer", "type", "target", "block", "instructions", *(f"{p} cycles" for p in peripherals), "estimate")]
    for layer in profile["layers"]:
        est = layer.get("estimate") or {}
        cycles = layer["peripheral_cycles"]
        rows.append((str(layer["index"]), layer["type"] or "-", layer["target"], str(layer["step"]),
                     f"{layer['instructions']:,}" if layer["instructions"] is not None else "(block)",
                     *(_cycles(cycles, p, "(block)" if p in cycles else "-") for p in peripherals),
                     _count(est.get("count"), est.get("kind"))))
    runs = profile["inferences"]
    note = f"sums over {runs} inferences; the estimates are per inference" if runs > 1 else "one inference"
    lines = ["", f"profile (measured on the built-in emulator; {note}):"]
    lines += _table(rows, "><<>>" + ">" * len(peripherals) + ">")
    none = ("-",) * len(peripherals)
    blocks = [("block", "target", "layers", "instructions", *(f"{p} cycles" for p in peripherals))]
    executor = profile["executor_instructions"]
    blocks.append(("-", "executor", "before the first block", f"{executor['before']:,}", *none))
    for row in profile["steps"]:
        layers = ", ".join(map(str, row["layers"]))
        blocks.append((str(row["step"]), row["target"], layers if len(layers) <= 40 else layers[:37] + "...",
                       f"{row['instructions']:,}", *(_cycles(row["peripheral_cycles"], p) for p in peripherals)))
    blocks.append(("-", "executor", "after the last block", f"{executor['after']:,}", *none))
    blocks.append(("total", "", "", f"{profile['inference_instructions']:,}",
                   *(_cycles(profile["peripheral_cycles"], p) for p in peripherals)))
    lines += [""] + _table(blocks, "><<>" + ">" * len(peripherals))
    if profile.get("files"):
        lines.append("profile written to " + " and ".join(profile["files"]))
    return lines
