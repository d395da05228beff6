"""The report's figures, drawn with matplotlib (Agg, no display, no pyplot state): the memory timeline, the
per-layer bars and the memory pools. Each function returns PNG bytes; OUT/report.html inlines them and the
build also writes the timeline beside report.json (memory_timeline.png)."""

from __future__ import annotations

from io import BytesIO

DPI = 100
KIND_HATCH = {"scratch": "//", "stripe": "..", "state": "xx"}
LOWER_BOUND_STYLE = dict(color="#2ca02c", linestyle="--", linewidth=1.5)
PEAK_STYLE = dict(color="#d62728", linestyle="-", linewidth=1.5)
LEGEND_BUFFERS = 24  # buffers named in the timeline's legend (the largest); report.html's table lists all
NAME_CHARS = 48
FREE_COLOR = "#e8e8e8"
MIN_BAR_ROWS = 6  # a panel of fewer layers keeps the bars as thick as with this many


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png(figure) -> bytes:
    buffer = BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})  # no version stamp: reproducible
    return buffer.getvalue()


def short_name(name: str, chars: int = NAME_CHARS) -> str:
    """A tensor name cut to `chars` characters (TFLite names join several layer names with ';')."""
    return name if len(name) <= chars else name[:chars - 3] + "..."


def memory_timeline_png(buffers: list, arena_bytes: int, lower_bound: int, title: str) -> bytes:
    """Each buffer (report.json memory.buffers) as a rectangle: its live steps (x) by its arena bytes (y),
    numbered as in report.html's buffer table; the arena (the peak) and the planner's lower bound as lines.
    The legend names the largest buffers."""
    from matplotlib.patches import Patch, Rectangle

    figure = _figure(11, 6.5)
    axes = figure.add_subplot()
    colors = _palette()
    first = min([b["first_step"] for b in buffers] or [0])
    last = max([b["last_step"] for b in buffers] or [0])
    handles = []
    largest = set(sorted(range(len(buffers)), key=lambda k: -buffers[k]["size"])[:LEGEND_BUFFERS])
    for k, b in enumerate(buffers):
        color = colors[k % len(colors)]
        width, height = b["last_step"] + 1 - b["first_step"], max(b["size"], 1)
        axes.add_patch(Rectangle((b["first_step"], b["offset"]), width, height, facecolor=color, edgecolor="#333333",
                                 linewidth=0.6, hatch=KIND_HATCH.get(b.get("kind", "tensor")), alpha=0.85))
        if height >= 0.04 * max(arena_bytes, 1):
            axes.text(b["first_step"] + width / 2, b["offset"] + height / 2, f"#{k}", ha="center", va="center",
                      fontsize=8, clip_on=True)
        if k in largest:
            handles.append(Patch(facecolor=color, edgecolor="#333333",
                                 label=f"#{k} {short_name(b['name'], 40)} ({b['size']:,} B)"))
    axes.axhline(arena_bytes, **PEAK_STYLE)
    axes.axhline(lower_bound, **LOWER_BOUND_STYLE)
    lines = [Patch(color=PEAK_STYLE["color"], label=f"arena (peak) {arena_bytes:,} B"),
             Patch(color=LOWER_BOUND_STYLE["color"], label=f"lower bound {lower_bound:,} B")]
    lines += [Patch(facecolor="white", edgecolor="#333333", hatch=h, label=kind) for kind, h in KIND_HATCH.items()
              if any(b.get("kind") == kind for b in buffers)]
    if len(buffers) > LEGEND_BUFFERS:
        lines.append(Patch(color="white", label=f"(the {LEGEND_BUFFERS} largest of {len(buffers)} buffers)"))
    axes.legend(handles=lines + handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    axes.set_xlim(first, last + 1)
    axes.set_ylim(0, max(arena_bytes, lower_bound, 1) * 1.05)
    axes.set_xlabel("step (op position; -1: inputs written by the caller)")
    axes.set_ylabel("arena offset (bytes)")
    axes.set_title(title, fontsize=11)
    axes.grid(True, color="#e5e5e5", linewidth=0.6)
    axes.set_axisbelow(True)
    return _png(figure)


def _palette() -> list:
    from matplotlib import colormaps

    tab20 = colormaps["tab20"]
    return [tab20(k) for k in range(0, 20, 2)] + [tab20(k) for k in range(1, 20, 2)]


def layer_bars_png(layers: list, measured: dict | None = None) -> bytes:
    """Per layer, the estimated count (cycles of an accelerator, instructions of the host core) with its
    lower bound, and beside it the measured count when `measured` ({layer index: {"instructions", "cycles"}})
    is given. One panel per kind of count."""
    kinds = [kind for kind in ("cycles", "instructions")
             if any(layer["estimate"]["kind"] == kind and layer["estimate"]["unit"] for layer in layers)]
    rows = {kind: [layer for layer in layers if layer["estimate"]["kind"] == kind and layer["estimate"]["unit"]]
            for kind in kinds}
    height = 1.2 + 0.28 * max([len(r) for r in rows.values()] or [1])
    figure = _figure(11, height)
    panels = figure.subplots(1, max(len(kinds), 1), squeeze=False)[0]
    for axes, kind in zip(panels, kinds):
        chosen = rows[kind]
        labels = [f"{layer['index']} {layer['type']} ({layer['target']})" for layer in chosen]
        y = list(range(len(chosen)))
        estimate = [layer["estimate"]["count"] or 0 for layer in chosen]
        has_measured = measured is not None
        bar = 0.4 if has_measured else 0.7
        axes.barh([v - bar / 2 if has_measured else v for v in y], estimate, height=bar, color="#1f77b4",
                  label=f"estimated {kind}")
        if has_measured:
            key = "instructions" if kind == "instructions" else "cycles"
            values = [(measured.get(layer["index"]) or {}).get(key) or 0 for layer in chosen]
            axes.barh([v + bar / 2 for v in y], values, height=bar, color="#ff7f0e", label=f"measured {kind}")
        bounds = [(layer["estimate"]["lower_bound"], v) for layer, v in zip(chosen, y)
                  if layer["estimate"]["lower_bound"] is not None]
        if bounds:
            axes.scatter([b for b, _ in bounds], [v for _, v in bounds], marker="|", s=120, color="#2ca02c",
                         zorder=3, label="lower bound")
        axes.set_yticks(y, labels, fontsize=7)
        axes.set_ylim(max(len(chosen), MIN_BAR_ROWS) - 0.5, -0.5)  # first layer on top
        axes.set_xlabel(kind)
        units = sorted({layer["estimate"]["unit"] for layer in chosen})
        axes.set_title(f"{kind} per layer ({', '.join(units)})", fontsize=10)
        axes.legend(fontsize=7, loc="lower right")
        axes.grid(True, axis="x", color="#e5e5e5", linewidth=0.6)
        axes.set_axisbelow(True)
    return _png(figure)


def stacked_bars_png(bars: list, title: str, share: bool = False) -> bytes:
    """Horizontal stacked bars: [(bar label, [(part label, bytes), ...]), ...], each part labelled. `share`:
    each bar as percent of its own total (pools of very different sizes: the small one stays readable)."""
    figure = _figure(11, 0.9 + 0.75 * len(bars))
    axes = figure.add_subplot()
    colors = _palette()
    color_of, labelled = {}, set()
    for y, (label, parts) in enumerate(bars):
        left, total = 0, sum(value for _, value in parts) or 1
        for part, value in parts:
            value = 100 * value / total if share else value
            color = color_of.setdefault(part, FREE_COLOR if part == "free" else colors[len(color_of) % len(colors)])
            axes.barh(y, value, left=left, color=color, edgecolor="white", height=0.6,
                      label=None if part in labelled else part)
            labelled.add(part)
            left += value
    axes.set_yticks(range(len(bars)), [label for label, _ in bars])
    axes.invert_yaxis()
    axes.set_xlabel("percent of the pool" if share else "bytes")
    if share:
        axes.set_xlim(0, 100)
    axes.set_title(title, fontsize=10)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    axes.grid(True, axis="x", color="#e5e5e5", linewidth=0.6)
    axes.set_axisbelow(True)
    return _png(figure)
