"""An operator's builtin options table as a plain dict, for any op type.

TFLite keeps each op's parameters in a flatbuffer table of its own type (Conv2DOptions, ReducerOptions, ...).
Rather than one reader per op, this reads whatever table the operator carries through the `tflite` package's
generated accessors: every scalar field by its snake_case name (`StrideH` -> `stride_h`), every vector field as
a list. The op layer (edgesdk/ops) interprets the values; a missing table gives {} and the op's defaults apply.
"""

from __future__ import annotations

import functools
import re

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




def read_custom_options(op) -> dict:
    """A custom op's flexbuffer options map ({} when absent or unreadable: the op layer reports what is missing)."""
    from flatbuffers import flexbuffers

    if not op.CustomOptionsLength():
        return {}
    try:
        values = flexbuffers.Loads(bytes(op.CustomOptionsAsNumpy()))
    except Exception:  # noqa: BLE001 -- any malformed buffer is "no options"
        return {}
    return values if isinstance(values, dict) else {}


def read_options(op, expected: str | None = None) -> dict:
    """The operator's options as {snake_case name: value}. With `expected`, a table of another type is ignored
    (as TFLite's builtin_options_as_X() does) and {} returned."""
    if expected == FLEXBUFFER_OPTIONS:
        return read_custom_options(op)
    table_type = OPTION_TABLES.get(op.BuiltinOptionsType(), "NONE")
    if table_type == "NONE" or (expected is not None and table_type != expected):
        return {}
    table = op.BuiltinOptions()
    if table is None:
        return {}
    cls = tflite_schema.table_class(table_type)
    if cls is None:
        return {}
    options = cls()
    options.Init(table.Bytes, table.Pos)
    values = {}
    for key, accessor, length, kind in _accessors(cls):
        if kind == "vector":
            values[key] = [accessor(options, j) for j in range(length(options))]
        else:
            try:
                value = accessor(options)
            except TypeError:  # a nested table: no builtin op edgesdk reads has one
                continue
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            values[key] = value
    return values


@functools.lru_cache(maxsize=None)
def _accessors(cls) -> list:
    """(snake_case name, accessor, length accessor or None, kind) of each field of a generated options class."""
    return [(snake_case(name), getattr(cls, name), getattr(cls, f"{name}Length") if kind == "vector" else None, kind)
            for name, kind in _fields(cls)]
