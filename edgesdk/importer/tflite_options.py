"""An operator's builtin options table as a plain dict, for any op type.

TFLite keeps each op's parameters in a flatbuffer table of its own type (Conv2DOptions, ReducerOptions, ...).
Rather than one reader per op, this reads whatever table the operator carries, as the `tflite` package's
generated accessors define it: every scalar field by its snake_case name (`StrideH` -> `stride_h`), every vector
field as a list. The op layer (edgesdk/ops) interprets the values; a missing table gives {} and the op's defaults
apply. The fields are read straight from the file: what each accessor reads (its vtable slot, number type and
default) is learnt once per class by running it on a probe (_field_readers); a field of another kind, or a table
whose vtable looks corrupt, is read by the accessors themselves, so the result (or the error) is theirs.
"""

from __future__ import annotations

import functools
import re
import struct

import numpy as np

from . import tflite_schema

tflite_schema.install()

from tflite.BuiltinOptions import BuiltinOptions  # noqa: E402

from ..ops.base import FLEXBUFFER_OPTIONS  # noqa: E402

OPTION_TABLES = {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_")}
_SKIP_PREFIX = "GetRootAs"
_fields_cache: dict = {}


@functools.lru_cache(maxsize=None)  # a pure function of the schema's accessor names (a few hundred)
def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _fields(cls) -> list:
    """(name, kind) of a generated options class: "scalar" accessors and "vector" ones (with a Length())."""
    if cls not in _fields_cache:
        methods = {m for m in dir(cls) if not m.startswith("_") and callable(getattr(cls, m))}
        fields = []
        for m in sorted(methods):
            if m == "Init" or m.startswith(_SKIP_PREFIX) or m.endswith(("Length", "AsNumpy", "IsNone", "BufferHasIdentifier")):
                continue
            fields.append((m, "vector" if f"{m}Length" in methods else "scalar"))
        _fields_cache[cls] = fields
    return _fields_cache[cls]


def read_custom_options(table) -> dict:
    """A custom op's flexbuffer options map ({} when absent or unreadable: the op layer reports what is missing).
    `table` is the operator's flatbuffer table (tflite_importer._Table)."""
    from flatbuffers import flexbuffers

    start, length = table.vector(OPERATOR_CUSTOM_OPTIONS)
    if not length:
        return {}
    try:
        values = flexbuffers.Loads(bytes(np.frombuffer(table.buf, np.uint8, length, start)))
    except Exception:  # noqa: BLE001 -- any malformed buffer is "no options"
        return {}
    return values if isinstance(values, dict) else {}


def read_options(table, expected: str | None = None) -> dict:
    """The options of the operator whose flatbuffer table is `table` (tflite_importer._Table) as {snake_case
    name: value}. With `expected`, a table of another type is ignored (as TFLite's builtin_options_as_X() does)
    and {} returned."""
    if expected == FLEXBUFFER_OPTIONS:
        return read_custom_options(table)
    table_type = OPTION_TABLES.get(table.scalar(OPERATOR_BUILTIN_OPTIONS_TYPE, _U8), "NONE")
    if table_type == "NONE" or (expected is not None and table_type != expected):
        return {}
    at = table.at(OPERATOR_BUILTIN_OPTIONS)
    if not at:
        return {}
    position = at + _U32.unpack_from(table.buf, at)[0]  # (read before anything else, as the accessors do)
    cls = tflite_schema.table_class(table_type)
    if cls is None:
        return {}
    fields = _field_readers(cls)
    if not fields:
        return {}
    if plain_vtable(table.buf, position):
        try:
            return _read_fields(cls, type(table)(table.buf, position), fields)  # (table.table(...): the same)
        except Exception:  # noqa: BLE001 -- a corrupt table: the generated accessors fail (or not) their own way
            pass
    return _read_by_accessors(cls, table.buf, position)


def plain_vtable(buf, position: int) -> bool:
    """The table at `position` has a vtable the direct reads see as the generated accessors do: inside the file
    (their offsets are unsigned) and a whole number of slots long."""
    try:
        vtable = position - _I32.unpack_from(buf, position)[0]
        return vtable >= 0 and _U16.unpack_from(buf, vtable)[0] % 2 == 0
    except struct.error:
        return False


def _read_fields(cls, options, fields) -> dict:
    values = {}
    buf, pos, entries = options.buf, options.pos, options.fields
    for key, slot, how, kind, default in fields:
        if how == SCALAR:  # (options.at(slot), inline: a few fields an operator)
            entry = entries[slot] if slot < len(entries) else 0
            values[key] = kind.unpack_from(buf, pos + entry)[0] if entry else default
        elif how == STRING:
            if options.at(slot):
                start, length = options.vector(slot)
                values[key] = options.buf[start:start + length].decode("utf-8", "replace")
            else:
                values[key] = default
        elif how == VECTOR:
            values[key] = _vector_values(options, slot, kind)
        else:  # a field of a shape the readers above do not know: the generated accessor reads it
            _read_by_accessor(cls, options.buf, options.pos, key, slot, kind, values)
    return values


def _read_by_accessors(cls, buf, position: int) -> dict:
    """The options through the generated accessors alone (a table whose vtable looks corrupt: whatever they
    make of it, edgesdk keeps)."""
    values = {}
    for name, kind in _fields(cls):
        length = getattr(cls, f"{name}Length") if kind == "vector" else None
        _read_by_accessor(cls, buf, position, snake_case(name), getattr(cls, name), length, values)
    return values


def _vector_values(options, slot: int, element: struct.Struct) -> list:
    start, length = options.vector(slot)
    if not length:
        return []
    if start + length * element.size <= len(options.buf):
        return list(struct.unpack_from(f"<{length}{element.format[-1]}", options.buf, start))
    # past the end of the file: one value at a time, failing where (and as) the generated accessor fails
    return [element.unpack_from(options.buf, start + j * element.size)[0] for j in range(length)]


def _read_by_accessor(cls, buf, position: int, key: str, accessor, length, values: dict) -> None:
    """What read_options kept of a field through the generated accessors (`length`: a vector's length accessor)."""
    generated = cls()
    generated.Init(buf, position)
    if length is not None:
        values[key] = [accessor(generated, j) for j in range(length(generated))]
        return
    try:
        value = accessor(generated)
    except TypeError:  # a nested table: no builtin op edgesdk reads has one
        return
    values[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# Operator's fields (tflite/schema.fbs) and the ways an options field is read (_field_readers)
OPERATOR_BUILTIN_OPTIONS_TYPE, OPERATOR_BUILTIN_OPTIONS, OPERATOR_CUSTOM_OPTIONS = 3, 4, 5
SCALAR, STRING, VECTOR, ACCESSOR = range(4)
_U8, _U16, _U32, _I32 = (struct.Struct(f) for f in ("<B", "<H", "<I", "<i"))


@functools.lru_cache(maxsize=None)
def _field_readers(cls) -> tuple:
    """(snake_case name, vtable field number, SCALAR | STRING | VECTOR, struct of the value or element, default)
    of each field of a generated options class, read directly from the file (the generated accessors look the
    table's vtable up and check every offset again for each field: a quarter of the import's time); a field
    whose accessor does something else is read by it (ACCESSOR: (name, accessor, length accessor or None))."""
    return tuple(_field_reader(snake_case(name), getattr(cls, name), getattr(cls, f"{name}Length", None), kind)
                 for name, kind in _fields(cls))


def _field_reader(key: str, accessor, length, kind: str) -> tuple:
    fallback = (key, accessor, ACCESSOR, length if kind == "vector" else None, None)
    absent, present = _Probe.run(accessor, kind, False), _Probe.run(accessor, kind, True)
    if absent is None or present is None:
        return fallback
    (absent_calls, default), (calls, _) = absent, present
    if len(absent_calls) != 1 or absent_calls[0][0] != "Offset" or not calls or calls[0] != absent_calls[0]:
        return fallback
    slot = absent_calls[0][1]
    if (slot - 4) % 2 or slot < 4:
        return fallback
    field = (slot - 4) // 2
    steps = [c[0] for c in calls[1:]]
    if kind == "scalar" and steps == ["Get"] and _plain(calls[1][1]):
        return key, field, SCALAR, calls[1][1].packer_type, default
    if kind == "scalar" and steps == ["String"] and default is None:
        return key, field, STRING, None, None
    if (kind == "vector" and steps == ["Vector", "Get"] and _plain(calls[2][1]) and length is not None
            and (_Probe.run(length, "scalar", True) or ((),))[0] == [calls[0], ("VectorLen",)]):
        return key, field, VECTOR, calls[2][1].packer_type, None
    return fallback


def _plain(flags) -> bool:
    """Values of this flatbuffers number type come out of struct as the accessor returns them (int, float, bool)."""
    packer = getattr(flags, "packer_type", None)
    if not isinstance(packer, struct.Struct) or packer.format not in (f"<{packer.format[-1:]}", "?", "b", "B"):
        return False  # (one-byte types need no byte order)
    return type(packer.unpack(bytes(packer.size))[0]) is flags.py_type


class _Probe:
    """Stands in for a generated class's flatbuffers Table to see what one of its accessors reads: the vtable
    slot it asks for, then the reads it makes (a field present or absent)."""

    Pos = 0
    Bytes = b""

    def __init__(self, present: bool):
        self.present = present
        self.calls: list = []

    @classmethod
    def run(cls, accessor, kind: str, present: bool):
        """(calls, value) of `accessor` on a probe, None when it does something a probe cannot answer."""
        probe = cls(present)
        target = object.__new__(_ProbeTarget)
        target._tab = probe
        try:
            value = accessor(target, 0) if kind == "vector" else accessor(target)
        except Exception:  # noqa: BLE001 -- anything unexpected: the accessor reads that field
            return None
        return probe.calls, value

    def Offset(self, slot):
        self.calls.append(("Offset", slot))
        return 8 if self.present else 0

    def Get(self, flags, off):
        self.calls.append(("Get", flags))
        return flags.py_type(0)

    def String(self, off):
        self.calls.append(("String",))
        return b""

    def Vector(self, off):
        self.calls.append(("Vector",))
        return 16

    def VectorLen(self, off):
        self.calls.append(("VectorLen",))
        return 0


class _ProbeTarget:
    """The `self` an accessor runs on under a probe (the generated methods only read `self._tab`)."""

    __slots__ = ("_tab",)
