"""A PNG picture of the memory plan: each buffer is a rectangle spanning its live steps (x) and its bytes in
the arena (y). Written next to report.json on every build (`memory.timeline_png`).

Rendered with numpy and zlib only (a build must not need a plotting library, and must stay fast): filled
rectangles, axes, and labels in a small built-in 5x7 pixel font.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

# 5x7 glyphs, one string of 7 rows per character; '#' is ink. Upper case only (text is upper-cased).
_GLYPHS = {
    "0": ".###.#...##..###.#.###..##...#.###.", "1": "..#...##....#....#....#....#...###.",
    "2": ".###.#...#....#...#...#...#...#####", "3": "#####...#...#.....#.....##...#.###.",
    "4": "...#...##..#.#.#..#.#####...#....#.", "5": "######....####.....#....##...#.###.",
    "6": "..##..#...#....####.#...##...#.###.", "7": "#####....#...#...#...#....#....#...",
    "8": ".###.#...##...#.###.#...##...#.###.", "9": ".###.#...##...#.####....#...#..##..",
    "A": ".###.#...##...#######...##...##...#", "B": "####.#...##...#####.#...##...#####.",
    "C": ".###.#...##....#....#....#...#.###.", "D": "###..#..#.#...##...##...##..#.###..",
    "E": "######....#....####.#....#....#####", "F": "######....#....####.#....#....#....",
    "G": ".###.#...##....#.####...##...#.####", "H": "#...##...##...#######...##...##...#",
    "I": ".###...#....#....#....#....#...###.", "J": "..###...#....#....#....##..#..##...",
    "K": "#...##..#.#.#..##...#.#..#..#.#...#", "L": "#....#....#....#....#....#....#####",
    "M": "#...###.###.#.##.#.##...##...##...#", "N": "#...##...###..##.#.##..###...##...#",
    "O": ".###.#...##...##...##...##...#.###.", "P": "####.#...##...#####.#....#....#....",
    "Q": ".###.#...##...##...##.#.##..#..##.#", "R": "####.#...##...#####.#.#..#..#.#...#",
    "S": ".####.....#.....###.....#....#####.", "T": "#####..#....#....#....#....#....#..",
    "U": "#...##...##...##...##...##...#.###.", "V": "#...##...##...##...##...#.#.#...#..",
    "W": "#...##...##...##.#.##.#.##.#.#.#.#.", "X": "#...##...#.#.#...#...#.#.#...##...#",
    "Y": "#...##...#.#.#...#....#....#....#..", "Z": "#####....#...#...#...#...#....#####",
    " ": "." * 35, "-": "...............#####...............", ".": "..............................##...",
    ":": "......##...##........##...##.......", ",": ".....................##....#...#...",
    "(": "...#...#...#....#....#.....#.....#.", ")": ".#.....#.....#....#....#...#...#...",
    "/": "....#....#...#...#...#...#....#....", "+": ".......#....#..#####..#....#.......",
    "_": "..............................#####", "=": "..........#####.....#####..........",
    "<": "...#...#...#...#.....#.....#.....#.", ">": ".#.....#.....#.....#...#...#...#...",
    ";": "......##...##........##....#...#...", "'": "..#....#...#.......................",
    "%": "##...##..#...#...#...#...#..##...##", "#": ".#.#.#####.#.#..#.#.#####.#.#......",
}
_CHAR_W, _CHAR_H, _SCALE = 5, 7, 2
WIDTH, HEIGHT = 1100, 640
LEFT, RIGHT, TOP, BOTTOM = 110, 20, 84, 60
BACKGROUND, INK, GRID = (255, 255, 255), (30, 30, 30), (225, 225, 225)
SCRATCH, LIMIT = (160, 160, 160), (200, 40, 40)
PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
           (227, 119, 194), (23, 190, 207), (188, 189, 34), (127, 127, 127)]


def _text(canvas: np.ndarray, x: int, y: int, text: str, color=INK, align: str = "left") -> None:
    width = len(text) * (_CHAR_W + 1) * _SCALE
    if align == "right":
        x -= width
    elif align == "center":
        x -= width // 2
    for k, ch in enumerate(text.upper()):
        glyph = _GLYPHS.get(ch, _GLYPHS["#"])
        for r in range(_CHAR_H):
            for c in range(_CHAR_W):
                if glyph[r * _CHAR_W + c] == "#":
                    px, py = x + (k * (_CHAR_W + 1) + c) * _SCALE, y + r * _SCALE
                    if 0 <= px < canvas.shape[1] - _SCALE and 0 <= py < canvas.shape[0] - _SCALE:
                        canvas[py:py + _SCALE, px:px + _SCALE] = color


def _rect(canvas: np.ndarray, x0: int, y0: int, x1: int, y1: int, color, outline=None) -> None:
    x0, x1 = sorted((max(0, x0), min(canvas.shape[1], x1)))
    y0, y1 = sorted((max(0, y0), min(canvas.shape[0], y1)))
    canvas[y0:max(y1, y0 + 1), x0:max(x1, x0 + 1)] = color
    if outline is not None and x1 - x0 > 2 and y1 - y0 > 2:
        canvas[y0, x0:x1] = canvas[y1 - 1, x0:x1] = outline
        canvas[y0:y1, x0] = canvas[y0:y1, x1 - 1] = outline


def _nice_step(span: float, ticks: int) -> int:
    raw = max(span / ticks, 1)
    magnitude = 10 ** int(np.floor(np.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * magnitude >= raw:
            return int(m * magnitude)
    return int(10 * magnitude)


def render_timeline(buffers: list, arena_bytes: int, title: str, subtitle: str = "") -> np.ndarray:
    """RGB image (H, W, 3) of `buffers`: dicts with name, offset, size, first_step, last_step (and optional
    kind "scratch"), as in report.json memory.buffers."""
    canvas = np.full((HEIGHT, WIDTH, 3), BACKGROUND, dtype=np.uint8)
    first = min([b["first_step"] for b in buffers] or [0])
    last = max([b["last_step"] for b in buffers] or [0])
    steps = last - first + 1
    top_bytes = max(arena_bytes, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(step: float) -> int:
        return LEFT + int(round((step - first) * plot_w / steps))

    def y_of(offset: float) -> int:
        return TOP + plot_h - int(round(offset * plot_h / top_bytes))

    tick = _nice_step(top_bytes, 8)
    for value in range(0, top_bytes + 1, tick):
        _rect(canvas, LEFT, y_of(value), LEFT + plot_w, y_of(value) + 1, GRID)
        _text(canvas, LEFT - 8, y_of(value) - _CHAR_H, f"{value:,}", align="right")
    step_tick = _nice_step(steps, 20)
    for s in range(first, last + 1):
        if (s - first) % step_tick == 0:
            _rect(canvas, x_of(s), TOP, x_of(s) + 1, TOP + plot_h, GRID)
            _text(canvas, (x_of(s) + x_of(s + 1)) // 2, TOP + plot_h + 8, str(s), align="center")
    for k, b in enumerate(sorted(buffers, key=lambda b: (b["first_step"], b["offset"]))):
        color = SCRATCH if b.get("kind") == "scratch" or b["name"].startswith("scratch of op") else PALETTE[k % len(PALETTE)]
        _rect(canvas, x_of(b["first_step"]) + 1, y_of(b["offset"] + b["size"]), x_of(b["last_step"] + 1) - 1,
              y_of(b["offset"]), color, outline=INK)
    _rect(canvas, LEFT, y_of(arena_bytes) - 1, LEFT + plot_w, y_of(arena_bytes) + 1, LIMIT)
    _rect(canvas, LEFT, TOP, LEFT + 1, TOP + plot_h, INK)
    _rect(canvas, LEFT, TOP + plot_h, LEFT + plot_w, TOP + plot_h + 1, INK)
    _text(canvas, 8, 8, title)
    if subtitle:
        _text(canvas, 8, 8 + (_CHAR_H + 4) * _SCALE, subtitle)
    _text(canvas, LEFT + plot_w // 2, HEIGHT - 22, "STEP (OP POSITION; -1 = INPUTS WRITTEN BY THE CALLER)", align="center")
    _text(canvas, 8, TOP - 18, "ARENA OFFSET (BYTES)")
    return canvas


def encode_png(image: np.ndarray) -> bytes:
    """An RGB uint8 image as PNG bytes (8-bit truecolor, no filtering)."""
    height, width, _ = image.shape
    raw = b"".join(b"\0" + image[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def write_timeline_png(path, buffers: list, arena_bytes: int, title: str, subtitle: str = "") -> Path:
    path = Path(path)
    path.write_bytes(encode_png(render_timeline(buffers, arena_bytes, title, subtitle)))
    return path
