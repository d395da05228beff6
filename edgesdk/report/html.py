"""OUT/report.html: one self-contained page (inline CSS, figures as inline SVG, no script, nothing
fetched) with the partition and its reasons, the per-layer figures and bars, the memory timeline, the
memory pools and the flash contents. `edgesdk run --profile` writes the same page with the measured
figures beside the estimates (D/report.html)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from .. import __version__
from ..output_dir import write_file_atomically
from . import plots
from .layers import layer_totals

TIMELINE_SVG = "memory_timeline.svg"
NUMERIC, WRAP = ' class="n"', ' class="w"'
REPORT_HTML = "report.html"

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1180px;
       color: #1b1b1b; line-height: 1.4; padding: 0 16px; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #d8d8d8; padding: 3px 8px; text-align: left; vertical-align: top; }
td.w { overflow-wrap: anywhere; }
th { background: #f2f4f7; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: bold; background: #fafafa; }
figure { margin: 0.8em 0; } svg.chart { max-width: 100%; height: auto; border: 1px solid #e3e3e3; }
.facts { display: flex; flex-wrap: wrap; gap: 10px; margin: 1em 0; }
.fact { background: #f5f7fa; border: 1px solid #e0e4ea; border-radius: 6px; padding: 8px 12px; }
.fact b { display: block; font-size: 1.25em; } .note { color: #555; font-size: 0.9em; }
code { background: #f3f3f3; padding: 0 3px; } .name { word-break: break-all; max-width: 460px; }
"""


def write_build_report(out_dir: Path, report: dict) -> None:
    """report.json, report.html and memory_timeline.svg of a build, into `out_dir` (its staging directory)."""
    timeline = timeline_svg(report)
    (out_dir / TIMELINE_SVG).write_text(timeline)
    report["memory"]["timeline_svg"] = TIMELINE_SVG
    report["report_html"] = REPORT_HTML
    (out_dir / REPORT_HTML).write_text(render_html(report, timeline))
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")


def write_profile_report(path: Path, report: dict, profile: dict) -> None:
    """The build's page with a run's measured profile: written atomically (edgesdk run's output folder)."""
    write_file_atomically(path, render_html(report, timeline_svg(report), profile).encode())


def timeline_svg(report: dict) -> str:
    memory = report["memory"]
    in_place = len(memory.get("in_place", []))
    title = (f"{Path(report['model']).name}: arena {memory['arena_bytes']:,} B, lower bound "
             f"{memory.get('lower_bound_bytes', 0):,} B; {in_place} op(s) in place; placement "
             f"{memory.get('placement') or '-'}")
    return plots.memory_timeline_svg(memory["buffers"], memory["arena_bytes"], memory.get("lower_bound_bytes", 0),
                                     title)


def render_html(report: dict, timeline: str, profile: dict | None = None) -> str:
    model = Path(report["model"]).name
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>edgesdk report: "
             f"{escape(model)}</title><style>{STYLE}</style></head><body>",
             f"<h1>edgesdk report: {escape(model)}</h1>",
             f"<p class=\"note\">board <b>{escape(report['board'])}</b>, targets <b>"
             f"{escape(','.join(report['targets']))}</b>, rounding <b>{escape(report['rounding'])}</b>; "
             f"edgesdk {escape(__version__)}; model sha256 <code>{escape(report.get('model_sha256', '')[:16])}"
             "</code></p>",
             _facts(report, profile)]
    parts += _warnings(report)
    parts += _partition(report)
    parts += _layers(report, profile)
    parts += _memory(report, timeline)
    parts += _pools_and_flash(report)
    parts.append("</body></html>\n")
    return "\n".join(parts)


# -- pieces --------------------------------------------------------------------------------------------------

def _figure(svg: str) -> str:
    """An SVG figure of plots.py, inline (its text is escaped there)."""
    return f"<figure>{svg}</figure>"


def _table(header: list, rows: list, numeric: set = frozenset(), css: list | None = None,
           wrap: set = frozenset()) -> str:
    """An HTML table; cells are escaped; columns whose index is in `numeric` are right-aligned, those in `wrap`
    (long tensor names) may break anywhere."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = []
    for k, row in enumerate(rows):
        cells = "".join(f"<td{NUMERIC if i in numeric else WRAP if i in wrap else ''}>{escape(_text(c))}</td>"
                        for i, c in enumerate(row))
        cls = f" class=\"{css[k]}\"" if css and css[k] else ""
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def _fact(label: str, value: str) -> str:
    return f"<div class=\"fact\">{escape(label)}<b>{escape(value)}</b></div>"


def _facts(report: dict, profile: dict | None) -> str:
    memory = report["memory"]
    totals = layer_totals(report.get("layers", []))
    facts = [_fact("SRAM arena (peak)", f"{memory['arena_bytes']:,} B"),
             _fact("arena lower bound", f"{memory.get('lower_bound_bytes', 0):,} B"),
             _fact("flash used", f"{memory['flash_bytes']:,} B" if memory.get("flash_bytes") else "not linked"),
             _fact("MACs", f"{totals['macs']:,}")]
    for unit, figures in totals["units"].items():
        facts.append(_fact(f"estimated {unit} {figures['kind']}", f"{figures['count']:,}"))
    if totals["microseconds"]:
        facts.append(_fact("estimated latency", f"{totals['microseconds']:,.1f} us"))
    if profile is not None:
        facts.append(_fact("measured instructions", f"{profile['inference_instructions']:,}"))
        for peripheral, cycles in profile["peripheral_cycles"].items():
            facts.append(_fact(f"measured {peripheral} cycles", f"{cycles:,}"))
    return f"<div class=\"facts\">{''.join(facts)}</div>"


def _warnings(report: dict) -> list:
    if not report.get("warnings"):
        return []
    return ["<h2>Warnings</h2><ul>" + "".join(f"<li>{escape(w)}</li>" for w in report["warnings"]) + "</ul>"]


def _partition(report: dict) -> list:
    rows = [(op["index"], op["type"], op["target"] or "-", op.get("region"), op["reason"], op.get("output"))
            for op in report["ops"]]
    rows += [(op["index"], op["type"], "folded", None, "evaluated at build time: its outputs are constants",
              ", ".join(op.get("outputs", []))) for op in report.get("folding", {}).get("folded_ops", [])]
    rows.sort(key=lambda r: r[0])
    regions = ", ".join(f"{k}: {r['target']} ({len(r['ops'])} op(s))" for k, r in enumerate(report.get("regions", [])))
    return ["<h2 id=\"partition\">Partition</h2>",
            f"<p class=\"note\">Where each op runs and why (the first target in the priority list whose "
            f"constraints it meets). Regions: {escape(regions)}.</p>",
            _table(["op", "type", "target", "region", "reason", "output tensor"], rows, {0, 3}, wrap={4, 5})]


def _measured_layers(profile: dict | None) -> dict | None:
    """{layer index: {"instructions", "cycles"}}: the cycles of the peripherals that ran the layer (one, as a
    rule), None when only its block's are known."""
    def cycles(row):
        known = [c for c in row["peripheral_cycles"].values() if c is not None]
        return sum(known) if known else None

    return {row["index"]: {"instructions": row["instructions"], "cycles": cycles(row)}
            for row in profile["layers"]} if profile else None


def _layer_bars(report: dict, profile: dict | None) -> str | None:
    layers = report.get("layers", [])
    return plots.layer_bars_svg(layers, _measured_layers(profile)) if layers else None


def _layers(report: dict, profile: dict | None) -> list:
    layers = report.get("layers", [])
    if not layers:
        return []
    measured = _measured_layers(profile)
    by_layer = {row["index"]: row["peripheral_cycles"] for row in profile["layers"]} if profile else {}
    header = ["layer", "type", "target", "MACs", "act. read B", "act. written B", "weights B", "unit", "estimate",
              "lower bound", "efficiency %", "share %"]
    peripherals = list(profile["peripheral_cycles"]) if profile else []
    if measured is not None:
        header += ["measured instr."] + [f"measured {p} cycles" for p in peripherals]
    rows = []
    for layer in layers:
        est, moved = layer["estimate"], layer["bytes"]
        row = [layer["index"], layer["type"], layer["target"], layer["macs"], moved["activations_read"],
               moved["activations_written"], moved["weights_read"],
               f"{est['unit']} {est['kind']}" if est["unit"] else None, est["count"], est["lower_bound"],
               round(100 * est["efficiency"], 1) if est["efficiency"] is not None else None,
               round(100 * layer["share"], 2) if layer["share"] is not None else None]
        if measured is not None:
            got = measured.get(layer["index"], {})
            cycles = by_layer.get(layer["index"], {})
            row += [got.get("instructions")] + [cycles.get(p) for p in peripherals]
        rows.append(row)
    totals = layer_totals(layers)
    total = ["total", "", "", totals["macs"], totals["bytes"]["activations_read"],
             totals["bytes"]["activations_written"], totals["bytes"]["weights_read"], "", None, None, None, 100.0]
    if measured is not None:
        total += [sum(row["instructions"] for row in profile["steps"]) + sum(profile["executor_instructions"].values())]
        total += [profile["peripheral_cycles"][p] for p in peripherals]
    rows.append(total)
    numeric = {0, 3, 4, 5, 6, 8, 9, 10, 11, 12} | set(range(12, len(header)))
    parts = ["<h2 id=\"layers\">Per layer</h2>",
             "<p class=\"note\">Estimates from each target's cost model: cycles of an accelerator, instructions of "
             "the host core; the lower bound is what no implementation on that unit can go below (efficiency = "
             "lower bound / estimate); share = part of the estimated latency at the board's clocks. Bytes: "
             "activations read and written, weights (constants) read.</p>",
             _table(header, rows, numeric, css=[""] * (len(rows) - 1) + ["total"]),
             _figure(_layer_bars(report, profile))]
    if profile is not None:
        parts += _profile_blocks(profile)
    return parts


def _profile_blocks(profile: dict) -> list:
    peripherals = list(profile["peripheral_cycles"])
    none = [None] * len(peripherals)
    rows = [("executor", "", "before the first block", profile["executor_instructions"]["before"], *none)]
    rows += [(f"block {row['step']}", row["target"], ", ".join(map(str, row["layers"])), row["instructions"],
              *(row["peripheral_cycles"].get(p) for p in peripherals)) for row in profile["steps"]]
    rows.append(("executor", "", "after the last block", profile["executor_instructions"]["after"], *none))
    rows.append(("total", "", f"{profile['inferences']} inference(s)", profile["inference_instructions"],
                 *(profile["peripheral_cycles"][p] for p in peripherals)))
    return ["<h3>Measured on the built-in emulator, per block of the run function</h3>",
            "<p class=\"note\">Exact instruction counts between the block marks of the generated run function; "
            "each peripheral's cycles from its model (per command where the model reports its commands). The "
            "rows add up to the inference's count.</p>",
            _table(["block", "target", "layers", "instructions", *(f"{p} cycles" for p in peripherals)], rows,
                   set(range(3, 4 + len(peripherals))), css=[""] * (len(rows) - 1) + ["total"])]


def _memory(report: dict, timeline: str) -> list:
    memory = report["memory"]
    peak, bound = memory["arena_bytes"], memory.get("lower_bound_bytes", 0)
    ratio = f" ({peak / bound:.3f} x)" if bound else ""
    buffers = [(k, b["name"], b.get("kind", "tensor"), b["offset"], b["size"], b["first_step"], b["last_step"])
               for k, b in enumerate(memory["buffers"])]
    parts = ["<h2 id=\"memory\">Memory plan</h2>",
             f"<p>Arena peak <b>{peak:,} B</b> against the lower bound <b>{bound:,} B</b>{escape(ratio)} (no plan of "
             f"these buffers can use less); placement <code>{escape(str(memory.get('placement')))}</code>, "
             f"{len(memory.get('in_place', []))} op(s) in place, {len(memory.get('cascades', []))} cascade group(s)."
             "</p>",
             _figure(timeline),
             "<h3>Buffers</h3><p class=\"note\">The numbers in the timeline; steps are op positions.</p>",
             _table(["#", "tensor", "kind", "offset", "bytes", "first step", "last step"], buffers, {0, 3, 4, 5, 6},
                    wrap={1})]
    if memory.get("in_place"):
        rows = [(o["op"], o["type"], o["rule"], o["distance"], o["input"], o["output"]) for o in memory["in_place"]]
        parts += ["<h3>In place</h3>",
                  _table(["op", "type", "rule", "distance", "input", "output"], rows, {0, 3}, wrap={4, 5})]
    if memory.get("cascades"):
        rows = [(", ".join(map(str, g.get("ops", []))), ", ".join(dict.fromkeys(g.get("targets") or [])),
                 _stripe_height_text(g), json.dumps(g.get("buffers", []))) for g in memory["cascades"]]
        parts += ["<h3>Cascades</h3>", _table(["ops", "targets", "stripe height", "stripe buffers"], rows, {2},
                                             wrap={3})]
    return parts


def _stripe_height_text(group: dict):
    """A cascade group's stripe height, and its first stripe's when that one is shorter."""
    first = group.get("first_stripe_rows")
    return f"{group.get('stripe_height')} (first {first})" if first else group.get("stripe_height")


def _pools_and_flash(report: dict) -> list:
    memory = report["memory"]
    sections = memory.get("sections") or {}
    bars, pool_rows = [], []
    for name, pool in memory.get("pools", {}).items():
        if pool.get("kind") == "rom":
            used = pool.get("used_bytes") or 0
            parts = [("flash used", used), ("free", max(pool["size"] - used, 0))]
        else:
            firmware = sections["data"] + sections["bss"] if "bss" in sections else pool.get("reserved_bytes", 0)
            label = ".data + .bss" if "bss" in sections else "reserved (.data/.bss estimate)"
            parts = [("arena", pool.get("arena_bytes", 0)), ("stack", pool.get("stack_bytes", 0)), (label, firmware)]
            parts.append(("free", max(pool["size"] - sum(v for _, v in parts), 0)))
        bars.append((f"{name} ({pool['size']:,} B)", parts))
        pool_rows += [(name, f"{pool['base']:#010x}", pool["size"], part, value) for part, value in parts]
    flash = _flash_contents(report)
    out = ["<h2 id=\"pools\">Memory pools</h2>",
           _table(["pool", "base", "size", "part", "bytes"], pool_rows, {2, 4}),
           _figure(plots.stacked_bars_svg(bars, "memory pools (share of each pool)", share=True))]
    out += ["<h2 id=\"flash\">Flash contents</h2>",
            "<p class=\"note\">" + ("From the linked firmware's sections." if sections else
                                    "No firmware was linked (--no-firmware): the constants only.") + "</p>",
            _table(["part", "bytes"], flash, {1})]
    if flash:
        out.append(_figure(plots.stacked_bars_svg([("flash", flash)], "flash contents (bytes)")))
    return out


def _flash_contents(report: dict) -> list:
    """(part, bytes): code, each constant blob, the const arrays, the targets' own data, other read-only data."""
    memory = report["memory"]
    sections = memory.get("sections") or {}
    blobs = memory.get("blobs", {})
    weights, constants = memory.get("weights_bytes", 0), memory.get("constants_bytes", 0)
    parts = []
    if "text" in sections:
        parts.append(("code (.text)", sections["text"]))
    parts += [(f"blob {name}", size) for name, size in blobs.items()]
    parts.append(("constant arrays (weights, parameters)", max(weights - sum(blobs.values()), 0)))
    parts.append(("targets' own data (tables, graphs)", max(constants - weights, 0)))
    if "rodata" in sections:
        other = sections["rodata"] + sections.get("data", 0) - constants
        parts.append((".rodata/.data besides the model (strings, libc)", max(other, 0)))
    return [(name, size) for name, size in parts if size]
