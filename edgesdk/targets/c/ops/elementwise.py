"""Footprints shared by kernels that walk `size` elements of one input and one output."""

from __future__ import annotations

from ..calls import Const
from ..proof import positive, shift_checks


def sized(in_bytes: int, out_bytes: int):
    """A rule for kernels that read p->size input elements and write p->size outputs (and a 256-entry table)."""
    def rule(call, op) -> list:
        p, x, y = call.args[:3]
        checks = positive(p, "size") + shift_checks(p)
        table = [(p["table"], 256, "table[256]")] if isinstance(p.get("table"), Const) else []
        return checks or table + [(x, in_bytes * p["size"], "input"), (y, out_bytes * p["size"], "output")]
    return rule
