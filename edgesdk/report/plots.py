"""The report's figures as hand-written SVG (no plotting library: a build draws them in milliseconds): the
memory timeline, the per-layer bars and the memory pools. Each function returns one `<svg>` element as text;
OUT/report.html inlines them and the build also writes the timeline beside report.json
(memory_timeline.svg). Every mark carries a <title> with its exact figures (a tooltip in a browser)."""

from __future__ import annotations

import math
from html import escape

KIND_HATCH = {"scratch": "diagonal", "stripe": "dots", "state": "cross"}
LOWER_BOUND_COLOR, PEAK_COLOR = "#2ca02c", "#d62728"
ESTIMATE_COLOR, MEASURED_COLOR = "#1f77b4", "#ff7f0e"
LEGEND_BUFFERS = 24  # buffers named in the timeline's legend (the largest); report.html's table lists all
NAME_CHARS = 48
FREE_COLOR = "#e8e8e8"
GRID_COLOR = "#e5e5e5"
MIN_BAR_ROWS = 6  # a panel of fewer layers keeps the bars as thick as with this many
# matplotlib's tab20, dark shades first, then the light ones (the colours the figures always had).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
           "#dbdb8d", "#9edae5")
FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\""
CHAR_WIDTH = 0.58  # average glyph width over font size, to lay out labels without measuring text
WIDTH = 1100  # of every figure, in SVG units (the page scales it to its column)


def short_name(name: str, chars: int = NAME_CHARS) -> str:
    """A tensor name cut to `chars` characters (TFLite names join several layer names with ';')."""
    return name if len(name) <= chars else name[:chars - 3] + "..."


# -- SVG pieces ----------------------------------------------------------------------------------------------

def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _svg(width: int, height: int, label: str, body: list) -> str:
    return (f"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{width}\" height=\"{height}\" "
            f"viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{escape(label)}\" {FONT}>"
            f"<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>" + "".join(body) + "</svg>\n")


def _text(x: float, y: float, text: str, size: int = 10, anchor: str = "start", extra: str = "") -> str:
    return (f"<text x=\"{_num(x)}\" y=\"{_num(y)}\" font-size=\"{size}\" text-anchor=\"{anchor}\"{extra}>"
            f"{escape(text)}</text>")


def _rect(x: float, y: float, width: float, height: float, fill: str, tooltip: str = "", extra: str = "") -> str:
    title = f"<title>{escape(tooltip)}</title>" if tooltip else ""
    return (f"<rect x=\"{_num(x)}\" y=\"{_num(y)}\" width=\"{_num(max(width, 0))}\" height=\"{_num(max(height, 0))}\" "
            f"fill=\"{fill}\"{extra}>{title}</rect>")


def _line(x1: float, y1: float, x2: float, y2: float, color: str, width: float = 1.0, extra: str = "") -> str:
    return (f"<line x1=\"{_num(x1)}\" y1=\"{_num(y1)}\" x2=\"{_num(x2)}\" y2=\"{_num(y2)}\" stroke=\"{color}\" "
            f"stroke-width=\"{width}\"{extra}/>")


def _text_width(text: str, size: int) -> float:
    return len(text) * size * CHAR_WIDTH


def nice_ticks(top: float, count: int = 6, integer: bool = False) -> list:
    """Round tick values from 0 to at most `top`: steps of 1, 2 or 5 times a power of ten, about `count` of them."""
    if top <= 0:
        return [0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1, round(step))
    return [round(k * step, 9) for k in range(int(top // step) + 1)]


def _tick_label(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


class _Axes:
    """A plot area (pixels left, top, width, height) over data ranges x0..x1, y0..y1; y grows downwards unless
    `y_up` (the timeline's offsets grow upwards)."""

    def __init__(self, left, top, width, height, x_range, y_range, y_up=False):
        self.left, self.top, self.width, self.height = left, top, width, height
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        self.y_up = y_up

    def x(self, value: float) -> float:
        return self.left + (value - self.x0) / ((self.x1 - self.x0) or 1) * self.width

    def y(self, value: float) -> float:
        share = (value - self.y0) / ((self.y1 - self.y0) or 1)
        return self.top + (1 - share if self.y_up else share) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def frame(self) -> str:
        return _rect(self.left, self.top, self.width, self.height, "none", extra=" stroke=\"#333333\" stroke-width=\"0.8\"")

    def x_grid(self, ticks: list, label: str) -> list:
        """Vertical grid lines with their values under the plot, and the axis label."""
        out = []
        for tick in ticks:
            x = self.x(tick)
            out.append(_line(x, self.top, x, self.bottom, GRID_COLOR, 0.6))
            out.append(_text(x, self.bottom + 13, _tick_label(tick), 9, "middle"))
        out.append(_text(self.left + self.width / 2, self.bottom + 30, label, 10, "middle"))
        return out

    def y_grid(self, ticks: list, label: str) -> list:
        out = []
        for tick in ticks:
            y = self.y(tick)
            out.append(_line(self.left, y, self.left + self.width, y, GRID_COLOR, 0.6))
            out.append(_text(self.left - 4, y + 3, _tick_label(tick), 9, "end"))
        x, y = self.left - 62, self.top + self.height / 2
        out.append(_text(x, y, label, 10, "middle", f" transform=\"rotate(-90 {_num(x)} {_num(y)})\""))
        return out


def _legend(x: float, y: float, entries: list, size: int = 9) -> list:
    """Entries (label, fill, hatch kind or None, line colour or None) one per row from (x, y)."""
    out = []
    for k, (label, fill, hatch, line) in enumerate(entries):
        row = y + k * (size + 5)
        if line:
            out.append(_line(x, row - 3, x + 14, row - 3, line, 2))
        else:
            out.append(_rect(x, row - size + 1, 14, size, fill, extra=" stroke=\"#333333\" stroke-width=\"0.5\""))
            if hatch:
                out.append(_rect(x, row - size + 1, 14, size, f"url(#edgesdk-hatch-{hatch})"))
        out.append(_text(x + 19, row, label, size))
    return out


HATCH_DEFS = ("<defs>"
              "<pattern id=\"edgesdk-hatch-diagonal\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
              "<path d=\"M0,6 L6,0\" stroke=\"#333333\" stroke-width=\"0.7\"/></pattern>"
              "<pattern id=\"edgesdk-hatch-dots\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\">"
              "<circle cx=\"2.5\" cy=\"2.5\" r=\"0.8\" fill=\"#333333\"/></pattern>"
              "<pattern id=\"edgesdk-hatch-cross\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
              "<path d=\"M0,6 L6,0 M0,0 L6,6\" stroke=\"#333333\" stroke-width=\"0.6\"/></pattern>"
              "</defs>")


# -- the figures ---------------------------------------------------------------------------------------------

def memory_timeline_svg(buffers: list, arena_bytes: int, lower_bound: int, title: str) -> str:
    """Each buffer (report.json memory.buffers) as a rectangle: its live steps (x) by its arena bytes (y),
    numbered as in report.html's buffer table; the arena (the peak) and the planner's lower bound as lines.
    The legend names the largest buffers."""
    width, height = WIDTH, 650
    first = min([b["first_step"] for b in buffers] or [0])
    last = max([b["last_step"] for b in buffers] or [0])
    top_bytes = max(arena_bytes, lower_bound, 1) * 1.05
    axes = _Axes(90, 34, 590, height - 34 - 50, (first, last + 1), (0, top_bytes), y_up=True)
    body = [HATCH_DEFS, _text(width / 2, 20, title, 12, "middle")]
    body += axes.y_grid(nice_ticks(top_bytes), "arena offset (bytes)")
    step = max(nice_ticks(last + 1 - first, 10, integer=True)[1:2] or [1])
    body += axes.x_grid(list(range(-(-first // step) * step, last + 2, step)),
                        "step (op position; -1: inputs written by the caller)")
    for k, b in enumerate(buffers):
        color = PALETTE[k % len(PALETTE)]
        x, right = axes.x(b["first_step"]), axes.x(b["last_step"] + 1)
        y, low = axes.y(b["offset"] + max(b["size"], 1)), axes.y(b["offset"])
        kind = b.get("kind", "tensor")
        tooltip = (f"#{k} {b['name']} ({kind}): {b['size']:,} B at offset {b['offset']:,}, steps "
                   f"{b['first_step']}..{b['last_step']}")
        body.append(_rect(x, y, right - x, low - y, color, tooltip,
                          " fill-opacity=\"0.85\" stroke=\"#333333\" stroke-width=\"0.6\""))
        if kind in KIND_HATCH:
            body.append(_rect(x, y, right - x, low - y, f"url(#edgesdk-hatch-{KIND_HATCH[kind]})"))
        if b["size"] >= 0.04 * max(arena_bytes, 1) and right - x >= 8 * len(str(k)) + 6:
            body.append(_text((x + right) / 2, (y + low) / 2 + 3, f"#{k}", 9, "middle"))
    body.append(_line(axes.left, axes.y(arena_bytes), axes.left + axes.width, axes.y(arena_bytes), PEAK_COLOR, 1.5))
    body.append(_line(axes.left, axes.y(lower_bound), axes.left + axes.width, axes.y(lower_bound), LOWER_BOUND_COLOR,
                      1.5, " stroke-dasharray=\"6 4\""))
    body.append(axes.frame())
    entries = [(f"arena (peak) {arena_bytes:,} B", None, None, PEAK_COLOR),
               (f"lower bound {lower_bound:,} B", None, None, LOWER_BOUND_COLOR)]
    entries += [(kind, "white", hatch, None) for kind, hatch in KIND_HATCH.items()
                if any(b.get("kind") == kind for b in buffers)]
    if len(buffers) > LEGEND_BUFFERS:
        entries.append((f"(the {LEGEND_BUFFERS} largest of {len(buffers)} buffers)", "white", None, None))
    largest = sorted(sorted(range(len(buffers)), key=lambda k: -buffers[k]["size"])[:LEGEND_BUFFERS])
    entries += [(f"#{k} {short_name(buffers[k]['name'], 40)} ({buffers[k]['size']:,} B)", PALETTE[k % len(PALETTE)],
                 KIND_HATCH.get(buffers[k].get("kind", "tensor")), None) for k in largest]
    body += _legend(axes.left + axes.width + 14, axes.top + 8, entries)
    return _svg(width, height, title, body)


def layer_bars_svg(layers: list, measured: dict | None = None) -> str:
    """Per layer, the estimated count (cycles of an accelerator, instructions of the host core) with its
    lower bound, and beside it the measured count when `measured` ({layer index: {"instructions", "cycles"}})
    is given. One panel per kind of count."""
    kinds = [kind for kind in ("cycles", "instructions")
             if any(layer["estimate"]["kind"] == kind and layer["estimate"]["unit"] for layer in layers)]
    rows = {kind: [layer for layer in layers if layer["estimate"]["kind"] == kind and layer["estimate"]["unit"]]
            for kind in kinds}
    row_height = 28
    count = max([len(r) for r in rows.values()] + [MIN_BAR_ROWS])
    height = 110 + row_height * count
    panel_width = WIDTH / max(len(kinds), 1)
    body = []
    for p, kind in enumerate(kinds):
        body += _layer_panel(p * panel_width, panel_width, height, rows[kind], kind, measured, row_height)
    return _svg(WIDTH, height, "per-layer " + " and ".join(kinds), body)


def _layer_panel(left: float, width: float, height: int, chosen: list, kind: str, measured: dict | None,
                 row_height: int) -> list:
    labels = [f"{layer['index']} {layer['type']} ({layer['target']})" for layer in chosen]
    label_width = min(max(_text_width(label, 9) for label in labels) + 8, 0.45 * width)
    estimate = [layer["estimate"]["count"] or 0 for layer in chosen]
    key = "instructions" if kind == "instructions" else "cycles"
    values = [(measured.get(layer["index"]) or {}).get(key) or 0 for layer in chosen] if measured is not None else []
    bounds = [layer["estimate"]["lower_bound"] for layer in chosen]
    top_value = max(estimate + values + [b for b in bounds if b is not None] + [1]) * 1.05
    axes = _Axes(left + label_width + 6, 58, width - label_width - 24, height - 58 - 44, (0, top_value),
                 (0, max(len(chosen), MIN_BAR_ROWS)))
    units = sorted({layer["estimate"]["unit"] for layer in chosen})
    body = [_text(left + width / 2, 18, f"{kind} per layer ({', '.join(units)})", 11, "middle")]
    legend = [(f"estimated {kind}", ESTIMATE_COLOR, None, None)]
    if measured is not None:
        legend.append((f"measured {kind}", MEASURED_COLOR, None, None))
    if any(b is not None for b in bounds):
        legend.append(("lower bound", None, None, LOWER_BOUND_COLOR))
    for k, entry in enumerate(legend):  # one row under the title
        body += _legend(axes.left + k * 170, 40, [entry])
    body += axes.x_grid(nice_ticks(top_value), kind)
    bar = 0.4 if measured is not None else 0.7
    for row, (layer, label) in enumerate(zip(chosen, labels)):
        center = axes.y(row + 0.5)
        body.append(_text(axes.left - 6, center + 3, label, 9, "end"))
        top = center - bar * row_height / (2 if measured is None else 1)
        name = f"layer {label}"
        body.append(_rect(axes.x(0), top, axes.x(estimate[row]) - axes.x(0), bar * row_height, ESTIMATE_COLOR,
                          f"{name}: estimated {estimate[row]:,} {kind}"))
        if measured is not None:
            body.append(_rect(axes.x(0), center, axes.x(values[row]) - axes.x(0), bar * row_height, MEASURED_COLOR,
                              f"{name}: measured {values[row]:,} {kind}"))
        if bounds[row] is not None:
            x = axes.x(bounds[row])
            body.append(_line(x, center - 0.45 * row_height, x, center + 0.45 * row_height, LOWER_BOUND_COLOR, 2.5))
    body.append(axes.frame())
    return body


def stacked_bars_svg(bars: list, title: str, share: bool = False) -> str:
    """Horizontal stacked bars: [(bar label, [(part label, bytes), ...]), ...], each part labelled. `share`:
    each bar as percent of its own total (pools of very different sizes: the small one stays readable)."""
    label_width = max([_text_width(label, 10) for label, _ in bars] + [40]) + 10
    color_of: dict = {}
    for _, parts in bars:
        for part, _ in parts:
            color_of.setdefault(part, FREE_COLOR if part == "free" else PALETTE[len(color_of) % len(PALETTE)])
    height = max(96 + 60 * len(bars), 50 + 14 * len(color_of))
    legend_width = max([_text_width(part, 9) for part in color_of] + [60]) + 40
    top_value = 100 if share else max([sum(v for _, v in parts) for _, parts in bars] + [1]) * 1.02
    axes = _Axes(label_width + 12, 34, WIDTH - label_width - 12 - legend_width, 60 * len(bars), (0, top_value),
                 (0, max(len(bars), 1)))
    body = [_text(WIDTH / 2, 20, title, 11, "middle")]
    body += axes.x_grid(nice_ticks(top_value), "percent of the pool" if share else "bytes")
    for row, (label, parts) in enumerate(bars):
        center = axes.y(row + 0.5)
        body.append(_text(axes.left - 6, center + 4, label, 10, "end"))
        left, total = 0.0, sum(value for _, value in parts) or 1
        for part, value in parts:
            shown = 100 * value / total if share else value
            x, right = axes.x(left), axes.x(left + shown)
            body.append(_rect(x, center - 18, right - x, 36, color_of[part],
                              f"{label}: {part} {value:,} B ({100 * value / total:.1f} %)",
                              " stroke=\"white\" stroke-width=\"1\""))
            text = f"{100 * value / total:.0f} %" if share else f"{value:,}"
            if right - x >= _text_width(text, 9) + 6:
                body.append(_text((x + right) / 2, center + 3, text, 9, "middle"))
            left += shown
    body.append(axes.frame())
    body += _legend(axes.left + axes.width + 14, axes.top + 10, [(part, color, None, None)
                                                                  for part, color in color_of.items()])
    return _svg(WIDTH, height, title, body)
