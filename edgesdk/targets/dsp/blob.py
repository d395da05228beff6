"""The DSP subgraph blob: one DSP region serialized for the host runtime (docs/dsp-datasheet.md, "Blob").

Little-endian, every table and record 4-byte aligned:

    header   32 B   magic "EDSP", version, sizes, table offsets, total bytes
    tensors  36 B each: location (arena / blob), offset, bytes, rank, dims[4], scale, zero point
    nodes    20 B each: opcode, input count, input/output tensor indices, parameter record offset/bytes
    data     constants the records reference (LUT tables, filters, per-channel multipliers, constant
             operands), then the parameter records (int32 words, registers.RECORD_FIELDS)

`BlobBuilder` assembles one; `encode` gives the bytes; `decode` parses bytes back, checking only what it
needs to parse (`check_blob` is the full structural proof, the same rules the runtime enforces on the
device plus the record-level ones).
"""

from __future__ import annotations

import struct

import numpy as np

from ...dataclass_cache import dataclass, field
from . import registers as R

MAGIC = 0x50534445  # bytes "EDSP"
VERSION = 1
HEADER = struct.Struct("<IHHHHHHIIII")  # magic, version, header_bytes, tensor_count, node_count,
#                                          tensor_entry_bytes, node_entry_bytes, tensors_offset, nodes_offset,
#                                          data_offset, blob_bytes
TENSOR = struct.Struct("<BBBBII4ifi")  # location, dtype, rank, reserved, offset, bytes, dims[4], scale, zero point
NODE = struct.Struct("<HHHHHHII")  # opcode, input_count, input0, input1, output, reserved, param_offset, param_bytes
LOCATION_ARENA, LOCATION_BLOB = 0, 1
DTYPE_INT8 = 1
NO_TENSOR = 0xFFFF
MAX_RANK = 4
MAX_TENSORS = 0xFFFF - 1


class BlobError(ValueError):
    """The bytes are not a well-formed DSP blob (names the first violation)."""


@dataclass(frozen=True)
class Ref:
    """A record word that holds the blob offset of constant `index` (resolved by encode)."""

    index: int


@dataclass
class BlobTensor:
    location: int
    offset: int  # arena offset, or blob offset (location blob)
    nbytes: int
    dims: tuple
    scale: float = 0.0
    zero_point: int = 0
    name: str = ""


@dataclass
class BlobNode:
    opcode: int
    inputs: tuple  # tensor indices
    output: int
    words: list  # int or Ref, registers.RECORD_FIELDS[opcode] order
    label: str = ""
    op_index: int | None = None  # the layer it runs (reports)

    def fields(self) -> dict:
        return dict(zip(R.RECORD_FIELDS[self.opcode], self.words))


@dataclass
class BlobBuilder:
    tensors: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    consts: list = field(default_factory=list)  # bytes objects; Ref(i) points at consts[i]
    _tensor_index: dict = field(default_factory=dict)

    def tensor(self, key, make) -> int:
        """Index of the tensor `key` (an IR tensor), adding `make()` the first time."""
        if key not in self._tensor_index:
            if len(self.tensors) >= MAX_TENSORS:
                raise BlobError(f"more than {MAX_TENSORS} tensors in one DSP region")
            self._tensor_index[key] = len(self.tensors)
            self.tensors.append(make())
        return self._tensor_index[key]

    def const(self, data: bytes) -> Ref:
        self.consts.append(bytes(data))
        return Ref(len(self.consts) - 1)

    def add(self, node: BlobNode) -> None:
        self.nodes.append(node)


def _align4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass
class Layout:
    """Where everything of an encoded blob lies (byte offsets)."""

    tensors_offset: int
    nodes_offset: int
    data_offset: int
    const_offsets: list
    record_offsets: list
    blob_bytes: int


def layout(builder: BlobBuilder) -> Layout:
    tensors_offset = HEADER.size
    nodes_offset = tensors_offset + TENSOR.size * len(builder.tensors)
    data_offset = _align4(nodes_offset + NODE.size * len(builder.nodes))
    position, const_offsets = data_offset, []
    for data in builder.consts:
        const_offsets.append(position)
        position = _align4(position + len(data))
    record_offsets = []
    for node in builder.nodes:
        record_offsets.append(position)
        position += 4 * len(node.words)
    return Layout(tensors_offset, nodes_offset, data_offset, const_offsets, record_offsets, position)


def encode(builder: BlobBuilder) -> bytes:
    """The blob's bytes. Blob-located tensors must already hold their const's blob offset (see resolve)."""
    lay = layout(builder)
    out = bytearray(lay.blob_bytes)
    HEADER.pack_into(out, 0, MAGIC, VERSION, HEADER.size, len(builder.tensors), len(builder.nodes), TENSOR.size,
                     NODE.size, lay.tensors_offset, lay.nodes_offset, lay.data_offset, lay.blob_bytes)
    for i, t in enumerate(builder.tensors):
        offset = lay.const_offsets[t.offset.index] if isinstance(t.offset, Ref) else t.offset
        dims = tuple(t.dims) + (1,) * (MAX_RANK - len(t.dims))
        TENSOR.pack_into(out, lay.tensors_offset + i * TENSOR.size, t.location, DTYPE_INT8, len(t.dims), 0, offset,
                         t.nbytes, *dims, float(np.float32(t.scale)), int(t.zero_point))
    for i, node in enumerate(builder.nodes):
        inputs = tuple(node.inputs) + (NO_TENSOR,) * (2 - len(node.inputs))
        NODE.pack_into(out, lay.nodes_offset + i * NODE.size, node.opcode, len(node.inputs), *inputs, node.output, 0,
                       lay.record_offsets[i], 4 * len(node.words))
        words = [lay.const_offsets[w.index] if isinstance(w, Ref) else int(w) for w in node.words]
        struct.pack_into(f"<{len(words)}i", out, lay.record_offsets[i], *words)
    for data, offset in zip(builder.consts, lay.const_offsets):
        out[offset:offset + len(data)] = data
    return bytes(out)


@dataclass
class Decoded:
    """A parsed blob: header values, tensors and nodes (records as plain ints)."""

    header: dict
    tensors: list
    nodes: list


def decode(blob: bytes) -> Decoded:
    """Parse a blob (raises BlobError where the bytes cannot be parsed at all)."""
    if len(blob) < HEADER.size:
        raise BlobError(f"{len(blob)} bytes is shorter than the {HEADER.size}-byte header")
    names = ("magic", "version", "header_bytes", "tensor_count", "node_count", "tensor_entry_bytes",
             "node_entry_bytes", "tensors_offset", "nodes_offset", "data_offset", "blob_bytes")
    header = dict(zip(names, HEADER.unpack_from(blob, 0)))
    if header["magic"] != MAGIC or header["version"] != VERSION:
        raise BlobError(f"magic {header['magic']:#x} version {header['version']} (expected {MAGIC:#x} version {VERSION})")
    if (header["header_bytes"], header["tensor_entry_bytes"], header["node_entry_bytes"]) != (HEADER.size, TENSOR.size, NODE.size):
        raise BlobError("header/table entry sizes differ from this format version")
    tensors, nodes = [], []
    for i in range(header["tensor_count"]):
        start = header["tensors_offset"] + i * TENSOR.size
        if start + TENSOR.size > len(blob):
            raise BlobError(f"tensor {i} lies outside the blob")
        location, _dtype, rank, _r, offset, nbytes, *rest = TENSOR.unpack_from(blob, start)
        dims, scale, zero_point = rest[:4], rest[4], rest[5]
        tensors.append(BlobTensor(location, offset, nbytes, tuple(dims[:rank]), scale, zero_point))
    for i in range(header["node_count"]):
        start = header["nodes_offset"] + i * NODE.size
        if start + NODE.size > len(blob):
            raise BlobError(f"node {i} lies outside the blob")
        opcode, count, in0, in1, output, _r, param_offset, param_bytes = NODE.unpack_from(blob, start)
        if param_offset + param_bytes > len(blob) or param_bytes % 4:
            raise BlobError(f"node {i}: parameter record {param_offset}+{param_bytes} lies outside the blob")
        words = list(struct.unpack_from(f"<{param_bytes // 4}i", blob, param_offset))
        node = BlobNode(opcode, (in0, in1)[:count], output, words)
        node.param_offset, node.param_bytes = param_offset, param_bytes
        nodes.append(node)
    return Decoded(header, tensors, nodes)


def layout_of(d: Decoded) -> dict:
    """The section offsets a decoded header gives."""
    return {k: d.header[k] for k in ("tensors_offset", "nodes_offset", "data_offset", "blob_bytes")}


def check_blob(blob: bytes, arena_bytes: int) -> list:
    """Every structural violation of `blob` for an arena of `arena_bytes` (empty: sound). The runtime checks
    the container rules on the device before the first START; the record rules (sizes, constant references
    inside the data area) are what the DSP would otherwise only find out while running."""
    try:
        d = decode(blob)
    except BlobError as exc:
        return [str(exc)]
    h, problems = d.header, []
    if h["blob_bytes"] != len(blob):
        problems.append(f"header says {h['blob_bytes']} bytes, the blob has {len(blob)}")
    for i, t in enumerate(d.tensors):
        limit, where = (arena_bytes, "arena") if t.location == LOCATION_ARENA else (len(blob), "blob")
        if t.location not in (LOCATION_ARENA, LOCATION_BLOB):
            problems.append(f"tensor {i}: unknown location {t.location}")
        elif not 0 < t.nbytes <= limit or t.offset > limit - t.nbytes:
            problems.append(f"tensor {i}: {t.nbytes} bytes at {where} offset {t.offset} outside the {where} of {limit} bytes")
        elif t.location == LOCATION_BLOB and t.offset < h["data_offset"]:
            problems.append(f"tensor {i}: constant data at blob offset {t.offset} lies before the data area")
    for i, node in enumerate(d.nodes):
        problems += [f"node {i}: {p}" for p in _check_node(node, d, len(blob))]
    return problems


def _check_node(node: BlobNode, d: Decoded, blob_bytes: int) -> list:
    problems = []
    if node.opcode not in R.RECORD_FIELDS:
        return [f"unknown opcode {node.opcode}"]
    expected_inputs = 2 if node.opcode in (R.OP_ADD, R.OP_MUL) else 1
    indices = list(node.inputs) + [node.output]
    if len(node.inputs) != expected_inputs or any(k >= len(d.tensors) for k in indices):
        problems.append(f"tensor indices {indices} (of {len(d.tensors)}) for {R.OPCODE_NAMES[node.opcode]}")
    elif d.tensors[node.output].location != LOCATION_ARENA:
        problems.append("the output is not an arena tensor")
    if len(node.words) != len(R.RECORD_FIELDS[node.opcode]):
        return problems + [f"{len(node.words)}-word record, {R.OPCODE_NAMES[node.opcode]} has {len(R.RECORD_FIELDS[node.opcode])}"]
    if node.param_offset < d.header["data_offset"]:
        problems.append(f"parameter record at {node.param_offset} lies before the data area")
    for name, ref, nbytes in R.const_refs(node.opcode, node.fields()):
        if not d.header["data_offset"] <= ref <= blob_bytes - nbytes:
            problems.append(f"{name} reference {ref}+{nbytes} lies outside the blob's data area")
    return problems


def describe(blob: bytes) -> list:
    """One readable line per tensor and node (for the generated source's comment and `edgesdk inspect`)."""
    d = decode(blob)
    lines = [f"{len(blob)} bytes: {len(d.tensors)} tensors, {len(d.nodes)} nodes"]
    for i, t in enumerate(d.tensors):
        where = "arena" if t.location == LOCATION_ARENA else "blob"
        lines.append(f"t{i}: {where}+{t.offset} {t.nbytes} B int8{list(t.dims)} scale {t.scale:.6g} zp {t.zero_point}")
    for i, node in enumerate(d.nodes):
        ins = ", ".join(f"t{k}" for k in node.inputs)
        lines.append(f"n{i}: {R.OPCODE_NAMES.get(node.opcode, node.opcode)}({ins}) -> t{node.output}, record "
                     f"+{node.param_offset} ({node.param_bytes} B), {R.kernel_cycles(node.opcode, node.fields())} cycles")
    return lines
