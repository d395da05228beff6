"""Where the interesting fields of a .tflite flatbuffer are, byte by byte.

`model_sites(data)` walks a valid model with the `tflite` package's readers and returns a `Site` for every
field a structure-aware mutation may change in place: tensor shapes and their lengths, types, buffer
indices, quantization scales / zero points / axes, operator tensor indices, opcode indices, builtin codes,
builtin-option fields, vector lengths, names and buffer contents. Writing a new value at a site keeps the
flatbuffer well formed (the importer can still decode it) while making its *meaning* hostile, which is what
reaches the compiler's checks; byte-level mutations (edgesdk/tests/fuzz/mutate.py) cover the decoder.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import tflite
from flatbuffers.table import Table

FMT_WIDTH = {"<b": 1, "<B": 1, "<h": 2, "<H": 2, "<i": 4, "<I": 4, "<f": 4, "<q": 8, "<Q": 8}


@dataclass(frozen=True)
class Site:
    pos: int  # byte offset in the file
    fmt: str  # struct format of the value there; "raw" for byte ranges (names, buffer data)
    kind: str  # what the field means, e.g. "tensor.shape"
    length: int = 0  # for "raw" sites: number of bytes
    context: int = 0  # a related count (e.g. number of tensors, for index sites)

    def read(self, data: bytes):
        return struct.unpack_from(self.fmt, data, self.pos)[0]


def _field(tab, slot: int):
    """Absolute position of scalar field `slot` (0-based) of a table, or None when absent (default)."""
    o = tab.Offset(4 + 2 * slot)
    return tab.Pos + o if o else None


def _vector(tab, slot: int):
    """(position of the vector's length word, element count) of vector field `slot`, or None."""
    o = tab.Offset(4 + 2 * slot)
    if not o:
        return None
    start = tab.Vector(o)
    return start - 4, tab.VectorLen(o)


def _scalar(sites, tab, slot, fmt, kind, context=0):
    pos = _field(tab, slot)
    if pos is not None:
        sites.append(Site(pos, fmt, kind, context=context))


def _vector_sites(sites, tab, slot, fmt, kind, context=0):
    vec = _vector(tab, slot)
    if vec is None:
        return
    length_pos, count = vec
    sites.append(Site(length_pos, "<I", f"{kind}.length", context=count))
    width = FMT_WIDTH.get(fmt, 1)
    count = max(0, min(count, (len(tab.Bytes) - length_pos - 4) // width))  # a corrupt length: what fits
    if fmt == "raw":
        if count:
            sites.append(Site(length_pos + 4, "raw", kind, length=count))
        return
    for j in range(count):
        sites.append(Site(length_pos + 4 + j * width, fmt, kind, context=context))


def _length_site(sites, tab, slot, kind):
    """Only the length word of a vector of tables (its elements are offsets, not values)."""
    vec = _vector(tab, slot)
    if vec is not None:
        sites.append(Site(vec[0], "<I", f"{kind}.length", context=vec[1]))


def _string_site(sites, tab, slot, kind):
    o = tab.Offset(4 + 2 * slot)
    if not o:
        return
    pos = tab.Pos + o
    start = pos + struct.unpack_from("<I", tab.Bytes, pos)[0]
    length = struct.unpack_from("<I", tab.Bytes, start)[0]
    if length:
        sites.append(Site(start + 4, "raw", kind, length=length))


def _option_sites(sites, op_tab, data_len: int):
    """Every field present in an operator's builtin options table, with its width guessed from the layout
    (the distance to the next field, at most 4 bytes: option fields are int8/bool/int32/float)."""
    o = op_tab.Offset(4 + 2 * 4)  # Operator.builtin_options
    if not o:
        return
    table = Table(op_tab.Bytes, 0)
    op_tab.Union(table, o)
    vtable = table.Pos - struct.unpack_from("<i", table.Bytes, table.Pos)[0]
    vt_len, obj_len = struct.unpack_from("<HH", table.Bytes, vtable)
    offsets = sorted({struct.unpack_from("<H", table.Bytes, vtable + 4 + 2 * k)[0]
                      for k in range((vt_len - 4) // 2)} - {0})
    for k, off in enumerate(offsets):
        end = offsets[k + 1] if k + 1 < len(offsets) else obj_len
        width = min(4, max(1, end - off))
        width = 4 if width >= 4 else (2 if width >= 2 else 1)
        if table.Pos + off + width <= data_len:
            sites.append(Site(table.Pos + off, {1: "<b", 2: "<h", 4: "<i"}[width], "options.field"))


def model_sites(data: bytes) -> list:
    """All mutation sites of a valid model (raises on a model the readers cannot walk)."""
    model = tflite.Model.GetRootAsModel(data, 0)
    sites: list = []
    mt = model._tab
    fit = len(data) // 4  # a vector of tables holds 4-byte offsets: a corrupt length is cut to what fits
    n_codes, n_buffers = min(model.OperatorCodesLength(), fit), min(model.BuffersLength(), fit)
    _length_site(sites, mt, 1, "model.operator_codes")
    _length_site(sites, mt, 2, "model.subgraphs")
    _length_site(sites, mt, 4, "model.buffers")
    _string_site(sites, mt, 3, "model.description")
    for i in range(n_codes):
        ct = model.OperatorCodes(i)._tab
        _scalar(sites, ct, 0, "<b", "opcode.deprecated_builtin_code")
        _scalar(sites, ct, 3, "<i", "opcode.builtin_code")
        _string_site(sites, ct, 1, "opcode.custom_code")
    for s in range(min(model.SubgraphsLength(), fit)):
        sg = model.Subgraphs(s)
        st = sg._tab
        n_tensors = min(sg.TensorsLength(), fit)
        _length_site(sites, st, 0, "subgraph.tensors")
        _length_site(sites, st, 3, "subgraph.operators")
        _vector_sites(sites, st, 1, "<i", "subgraph.inputs", context=n_tensors)
        _vector_sites(sites, st, 2, "<i", "subgraph.outputs", context=n_tensors)
        for t in range(n_tensors):
            tensor = sg.Tensors(t)
            tt = tensor._tab
            _vector_sites(sites, tt, 0, "<i", "tensor.shape")
            _scalar(sites, tt, 1, "<b", "tensor.type")
            _scalar(sites, tt, 2, "<I", "tensor.buffer", context=n_buffers)
            _string_site(sites, tt, 3, "tensor.name")
            q = tensor.Quantization()
            if q is not None:
                qt = q._tab
                _vector_sites(sites, qt, 2, "<f", "quant.scale")
                _vector_sites(sites, qt, 3, "<q", "quant.zero_point")
                _scalar(sites, qt, 6, "<i", "quant.quantized_dimension")
        for k in range(min(sg.OperatorsLength(), fit)):
            op = sg.Operators(k)
            ot = op._tab
            _scalar(sites, ot, 0, "<I", "operator.opcode_index", context=n_codes)
            _vector_sites(sites, ot, 1, "<i", "operator.inputs", context=n_tensors)
            _vector_sites(sites, ot, 2, "<i", "operator.outputs", context=n_tensors)
            _scalar(sites, ot, 3, "<B", "operator.builtin_options_type")
            _option_sites(sites, ot, len(data))
    for b in range(n_buffers):
        bt = model.Buffers(b)._tab
        _vector_sites(sites, bt, 0, "raw", "buffer.data")
        _scalar(sites, bt, 1, "<Q", "buffer.offset")
        _scalar(sites, bt, 2, "<Q", "buffer.size")
    return [s for s in sites if 0 <= s.pos and s.pos + (s.length if s.fmt == "raw" else FMT_WIDTH[s.fmt]) <= len(data)]
