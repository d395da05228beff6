"""The NPU target's per-build data: one command table per NPU region, and how model_npu.c shows them."""

from __future__ import annotations

import re
from functools import cached_property

import numpy as np

from ...dataclass_cache import dataclass
from .hw import registers as R

WEIGHTS_BLOB = "npu_weights"  # ctx.blob: region 0 of every command table (C symbol edgesdk_npu_weights)


@dataclass
class NpuTable:
    symbol: str
    data: bytes
    commands: list
    ops: list
    cycles: int

    @cached_property
    def listing(self) -> list:
        """One human-readable line per command, made when first read: only the rendering of model_npu.c reads
        it, and a compile (the tuner's, the compile step's) renders nothing (~70 lines a VWW build)."""
        from ...importer.names import sanitize_name
        from .hw import cmdtable

        return [sanitize_name(line, max_chars=400) for line in cmdtable.describe(self.commands)]


def tables_of(model) -> list:
    """The NPU command tables of an ExecutorModel (empty for a build without NPU regions)."""
    return model.target_data.get("npu", [])


def weights_of(model) -> bytes:
    blob = model.blobs.get(WEIGHTS_BLOB)
    return bytes(blob.data) if blob is not None else b""


def table_chunks(table: NpuTable, value_lines) -> list:
    """The table's bytes split into the header and one chunk per command, each with a comment."""
    data = table.data
    chunks = [{"comment": f"table header: magic, version, {len(table.listing)} commands, {len(data)} bytes",
               "lines": value_lines(np.frombuffer(data[:R.TABLE_HEADER_BYTES], np.uint8), "uint8_t")}]
    pos = R.TABLE_HEADER_BYTES
    for index, text in enumerate(table.listing):
        size = int.from_bytes(data[pos + 2:pos + 4], "little")
        chunks.append({"comment": f"command {index}: {text}",
                       "lines": value_lines(np.frombuffer(data[pos:pos + size], np.uint8), "uint8_t")})
        pos += size
    return chunks


def command_layers(table: NpuTable) -> list:
    """The layer (op index) each command of the table works for, from its note: a command no op made (a
    cascade's row shift) counts for the layer of the next command that names one, END (and anything after
    the last named command) for the layer before it."""
    named = [note_layer(getattr(c, "note", "")) for c in table.commands]
    fallback = table.ops[-1].index if table.ops else -1
    result, following = [None] * len(named), None
    for k in range(len(named) - 1, -1, -1):
        following = named[k] if named[k] is not None else following
        result[k] = following
    last = fallback
    for k, layer in enumerate(result):
        result[k] = last = layer if layer is not None else last
    return result


_NOTE_LAYER = re.compile(r"op #(-?\d+) ")  # how codegen._note starts a command's note


def note_layer(note: str) -> int | None:
    """The op index a command's note (codegen._note) names, None for a command no op made (END, a cascade's
    row shift)."""
    found = _NOTE_LAYER.match(note or "")
    return int(found.group(1)) if found else None
