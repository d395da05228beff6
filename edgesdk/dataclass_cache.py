"""`@dataclass` with the methods it writes compiled once per machine instead of once per process.

The standard decorator writes the source of each class's `__init__`, `__repr__`, `__eq__` (and `__hash__`,
`__setattr__`, ... as asked) and compiles it with `exec()` every time the class is created: about 350
functions for the modules one compile imports, a sixth of a fresh `edgesdk build` process's instructions
(VWW: 189 M of 1,101 M). This `dataclass` is the standard one; only while it runs, each source text the
standard code compiles is looked up in a table kept in $EDGESDK_CACHE/dataclass-code/ (resources.cache_path)
and compiled only when missing. The key is the exact source text, in a file per bytecode version
(importlib's MAGIC_NUMBER), so an entry cannot go stale: a changed class writes another text, which is
compiled and added. The functions are made from the same code objects, in the same namespaces, as the
standard decorator's: the classes are the same. Without a readable or writable cache folder the texts are
compiled as usual; new entries are written once, at exit (a temporary file renamed over the old one). Like
Python's own __pycache__ and Jinja's template cache in the same folder, the file holds code that is run: it
is as trusted as the user's cache folder. (Not tied to PYTHONDONTWRITEBYTECODE, as the Jinja cache is not.)

    from ..dataclass_cache import dataclass, field     # as `from dataclasses import dataclass, field`
"""

from __future__ import annotations

import atexit
import dataclasses
import marshal
import os
import sys
from dataclasses import field, fields, replace  # noqa: F401  (re-exported: one import line for the module)
from importlib._bootstrap_external import MAGIC_NUMBER

_MAX_ENTRIES = 4000  # edgesdk uses ~400; beyond this the file keeps only the texts this process used

_table: dict | None = None  # source text -> marshalled code object, as read from the file
_used: dict = {}  # the entries this process compiled or read


def cache_file():
    """The table's file: one per bytecode format and optimisation level (-O), which decide the code objects."""
    from .resources import cache_path

    return cache_path("dataclass-code", f"{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}.marshal")


def _load() -> dict:
    try:
        with open(cache_file(), "rb") as f:
            magic, table = marshal.loads(f.read())
    except Exception:  # noqa: BLE001 - missing, unreadable or truncated: compile as usual
        return {}
    return table if magic == MAGIC_NUMBER and isinstance(table, dict) else {}


def _compiled(source: str):
    """The code object `exec(source)` compiles in dataclasses' module (no __future__ flags), from the table when
    it holds `source`."""
    global _table
    if _table is None:
        _table = _load()
        atexit.register(_save)
    entry = _table.get(source)
    if entry is not None:
        try:
            code = marshal.loads(entry)
        except Exception:  # noqa: BLE001 - a damaged entry: compile it again
            code = None
        if type(code) is type(_compiled.__code__):
            _used[source] = entry
            return code
    code = compile(source, "<string>", "exec", dont_inherit=True)
    _used[source] = marshal.dumps(code)
    return code


def _exec(source, globals=None, locals=None, /):  # noqa: A002 - exec()'s own parameter names
    """exec() as dataclasses calls it, the source compiled through the table."""
    if globals is None:  # exec()'s defaults: the calling frame's namespaces (dataclasses passes its own)
        caller = sys._getframe(1)
        globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
    if type(source) is str:
        source = _compiled(source)
    return exec(source, globals, locals)


def dataclass(cls=None, /, **options):
    """dataclasses.dataclass(cls, **options), its generated methods compiled through the table."""
    if cls is None:
        return lambda c: dataclass(c, **options)
    had, before = hasattr(dataclasses, "exec"), getattr(dataclasses, "exec", None)
    dataclasses.exec = _exec  # the module's global `exec`, looked up before the builtin one
    try:
        return dataclasses.dataclass(cls, **options)
    finally:
        if had:
            dataclasses.exec = before
        else:
            vars(dataclasses).pop("exec", None)


def _save() -> None:
    """Add this process's new texts to the file (as it is now: another process may have added some)."""
    if _table is None or all(source in _table for source in _used):
        return
    temporary = None
    try:
        path = cache_file()
        table = {**_load(), **_used}
        if len(table) > _MAX_ENTRIES:
            table = dict(_used)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_bytes(marshal.dumps((MAGIC_NUMBER, table)))
        os.replace(temporary, path)
    except Exception:  # noqa: BLE001 - no home folder, a read-only or full disk: the next process compiles them
        if temporary is not None:
            try:
                temporary.unlink()
            except OSError:
                pass
