"""The op layer: one module per TFLite builtin with its target-independent build-time data.

`op_def(type)` is the definition of an op type (edgesdk/ops/base.py), `prepared(op, mode)` its build-time data
for one op of a graph, computed once. Each module here registers its definitions with `@register`; the
registry imports every module of the package, so adding an op is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
import weakref

from .base import OpDef

_REGISTRY: dict = {}
_LOADED = False


def register(cls):
    """Class decorator: make an OpDef subclass the definition of its `types`."""
    definition = cls()
    for op_type in cls.types:
        if op_type in _REGISTRY:
            raise RuntimeError(f"op type {op_type} is defined twice ({type(_REGISTRY[op_type]).__name__}, {cls.__name__})")
        _REGISTRY[op_type] = definition
    return cls


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


def op_def(op_type: str) -> OpDef | None:
    """The definition of `op_type` (a TFLite builtin name), or None when edgesdk does not know the op."""
    _load_all()
    return _REGISTRY.get(op_type)


def known_types() -> list:
    _load_all()
    return sorted(_REGISTRY)


# Build-time data per op and rounding mode. Ops are compared by identity, and the cache lets go of an op when
# its graph does, so nothing is written into the IR.
_PREPARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def prepared(op, mode: str = "ref"):
    """`op_def(op.type).prepare(op, mode)`, computed once per op and mode."""
    per_op = _PREPARED.setdefault(op, {})
    if mode not in per_op:
        definition = op_def(op.type)
        per_op[mode] = definition.prepare(op, mode) if definition is not None else None
    return per_op[mode]
