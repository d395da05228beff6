"""report.html's figures (edgesdk/report/plots.py): hand-written SVG, checked as XML against the report data
they draw: one mark per buffer / layer / pool part, sizes in proportion to the figures, every label present."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from edgesdk.report import plots

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed, standalone (memory_timeline.svg is this text)
    assert root.tag == SVG + "svg"
    return root


def marks(root: ET.Element) -> dict:
    """Tooltip text -> its <rect>: every data mark has a <title>."""
    return {rect.find(SVG + "title").text: rect for rect in root.iter(SVG + "rect")
            if rect.find(SVG + "title") is not None}


def texts(root: ET.Element) -> list:
    return [t.text for t in root.iter(SVG + "text")]


def size(rect: ET.Element, attribute: str) -> float:
    return float(rect.get(attribute))


def buffer(name, offset, size_, first, last, kind="tensor"):
    return {"name": name, "offset": offset, "size": size_, "first_step": first, "last_step": last, "kind": kind}


def test_timeline_draws_every_buffer_at_its_offset_and_lifetime():
    buffers = [buffer("input", 0, 400, -1, 0), buffer("conv out", 400, 200, 0, 1),
               buffer("scratch of op 1", 0, 100, 1, 1, "scratch")]
    root = parse(plots.memory_timeline_svg(buffers, 600, 500, "model.tflite: arena 600 B"))
    drawn = marks(root)
    assert len(drawn) == 3
    first, second, scratch = (drawn[next(t for t in drawn if t.startswith(f"#{k} "))] for k in range(3))
    assert "#1 conv out (tensor): 200 B at offset 400, steps 0..1" in drawn
    # Heights in proportion to the bytes, widths to the live steps; a higher offset is drawn higher up.
    assert size(first, "height") == pytest.approx(2 * size(second, "height"), rel=0.01)
    assert size(second, "width") == pytest.approx(2 * size(scratch, "width"), rel=0.01)
    assert size(second, "y") < size(first, "y")
    # The scratch buffer is hatched, and the legend says what the hatch means.
    assert any(r.get("fill") == "url(#edgesdk-hatch-diagonal)" for r in root.iter(SVG + "rect"))
    labels = texts(root)
    for label in ("model.tflite: arena 600 B", "arena (peak) 600 B", "lower bound 500 B", "scratch", "#0", "#1",
                  "#0 input (400 B)", "arena offset (bytes)"):
        assert label in labels, label
    # The peak and the lower bound as horizontal lines, the peak above.
    lines = {line.get("stroke"): float(line.get("y1")) for line in root.iter(SVG + "line")
             if line.get("y1") == line.get("y2") and float(line.get("stroke-width")) == 1.5}
    assert lines[plots.PEAK_COLOR] < lines[plots.LOWER_BOUND_COLOR]


def test_timeline_legend_names_the_largest_buffers():
    buffers = [buffer(f"t{k}", 0, 10 + k, k, k) for k in range(plots.LEGEND_BUFFERS + 6)]
    root = parse(plots.memory_timeline_svg(buffers, 100, 50, "many"))
    named = [t for t in texts(root) if t.startswith("#") and "(" in t]
    assert len(named) == plots.LEGEND_BUFFERS and "#0 t0 (10 B)" not in named and "#29 t29 (39 B)" in named
    assert f"(the {plots.LEGEND_BUFFERS} largest of {len(buffers)} buffers)" in texts(root)
    assert len(marks(root)) == len(buffers)


def layer(index, type_, target, kind, unit, count, lower_bound):
    return {"index": index, "type": type_, "target": target,
            "estimate": {"kind": kind, "unit": unit, "count": count, "lower_bound": lower_bound}}


LAYERS = [layer(0, "CONV_2D", "npu", "cycles", "npu", 8000, 7000), layer(1, "RESHAPE", "npu", "cycles", "npu", 2000, None),
          layer(2, "SOFTMAX", "c", "instructions", "cpu", 84, 2), layer(3, "QUANTIZE", "c", None, None, None, None)]


def test_layer_bars_one_panel_per_kind_bars_in_proportion():
    root = parse(plots.layer_bars_svg(LAYERS))
    labels = texts(root)
    assert "cycles per layer (npu)" in labels and "instructions per layer (cpu)" in labels
    assert {"0 CONV_2D (npu)", "1 RESHAPE (npu)", "2 SOFTMAX (c)"} <= set(labels)
    assert "3 QUANTIZE (c)" not in labels  # no estimate: no bar
    drawn = marks(root)
    assert set(drawn) == {"layer 0 CONV_2D (npu): estimated 8,000 cycles", "layer 1 RESHAPE (npu): estimated 2,000 cycles",
                          "layer 2 SOFTMAX (c): estimated 84 instructions"}
    conv, reshape = drawn["layer 0 CONV_2D (npu): estimated 8,000 cycles"], drawn["layer 1 RESHAPE (npu): estimated 2,000 cycles"]
    assert size(conv, "width") == pytest.approx(4 * size(reshape, "width"), rel=0.01)
    bounds = [line for line in root.iter(SVG + "line") if line.get("stroke") == plots.LOWER_BOUND_COLOR
              and line.get("x1") == line.get("x2")]
    assert len(bounds) == 2  # CONV_2D and SOFTMAX have one


def test_layer_bars_with_measured_counts():
    measured = {0: {"instructions": 10, "cycles": 8000}, 1: {"instructions": 5, "cycles": 1000},
                2: {"instructions": 90, "cycles": None}}
    root = parse(plots.layer_bars_svg(LAYERS, measured))
    drawn = marks(root)
    assert "layer 1 RESHAPE (npu): measured 1,000 cycles" in drawn
    assert "layer 2 SOFTMAX (c): measured 90 instructions" in drawn
    assert "measured cycles" in texts(root) and "measured instructions" in texts(root)
    assert size(drawn["layer 0 CONV_2D (npu): measured 8,000 cycles"], "width") == pytest.approx(
        size(drawn["layer 0 CONV_2D (npu): estimated 8,000 cycles"], "width"))


def test_stacked_bars_share_fills_each_pool():
    bars = [("sram (1,000 B)", [("arena", 250), ("stack", 250), ("free", 500)]),
            ("flash (4,000 B)", [("flash used", 1000), ("free", 3000)])]
    root = parse(plots.stacked_bars_svg(bars, "memory pools", share=True))
    drawn = marks(root)
    assert "sram (1,000 B): arena 250 B (25.0 %)" in drawn and "flash (4,000 B): free 3,000 B (75.0 %)" in drawn
    sram = [r for t, r in drawn.items() if t.startswith("sram")]
    flash = [r for t, r in drawn.items() if t.startswith("flash")]
    assert sum(size(r, "width") for r in sram) == pytest.approx(sum(size(r, "width") for r in flash), rel=0.01)
    free = [r for t, r in drawn.items() if ": free " in t]
    assert {r.get("fill") for r in free} == {plots.FREE_COLOR}  # one colour per part, in every bar
    labels = texts(root)
    assert {"memory pools", "percent of the pool", "arena", "stack", "free", "flash used", "25 %", "75 %"} <= set(labels)


def test_stacked_bars_in_bytes():
    root = parse(plots.stacked_bars_svg([("flash", [("code (.text)", 30000), ("blob npu", 10000)])], "flash contents"))
    drawn = marks(root)
    assert size(drawn["flash: code (.text) 30,000 B (75.0 %)"], "width") == pytest.approx(
        3 * size(drawn["flash: blob npu 10,000 B (25.0 %)"], "width"), rel=0.01)
    assert "bytes" in texts(root) and "30,000" in texts(root)


def test_names_are_escaped():
    svg = plots.memory_timeline_svg([buffer("<b>&\"x\"</b>", 0, 10, 0, 0)], 10, 10, "a < b")
    assert "<b>" not in svg
    assert "#0 <b>&\"x\"</b> (10 B)" in texts(parse(svg))
