"""The `tflite` package's generated flatbuffer classes, each imported when first used.

The package's `__init__` imports all ~190 of its modules (about 40 ms of CPU in a fresh process) where a
model reads about 20 (Model, SubGraph, Tensor, Operator and the option tables of its op types). `install()`
puts a stand-in for the package in `sys.modules` before anything imports it: `import tflite.X` then loads
module X alone, and binds X's names on the package as the real `__init__` does (`from tflite.X import *`);
the first access to a name not bound yet runs the real `__init__`, so any other user of the package in this
process sees what it would have seen.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types

PACKAGE = "tflite"


class _LazyPackage(types.ModuleType):
    _complete = False

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            # A submodule just imported: bind its names, as the package's `from tflite.X import *` lines do.
            for key, item in vars(value).items():
                if not key.startswith("_"):
                    super().__setattr__(key, item)

    def __getattr__(self, name):  # only for names not bound yet
        if self._complete:
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        super().__setattr__("_complete", True)
        with open(self.__file__, encoding="utf-8") as f:
            exec(compile(f.read(), self.__file__, "exec"), self.__dict__)  # the real __init__
        return super().__getattribute__(name)


def install() -> None:
    """Stand in for the `tflite` package unless it is imported already (or not installed)."""
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return
    package = _LazyPackage(PACKAGE)
    package.__spec__, package.__file__, package.__package__ = spec, spec.origin, PACKAGE
    package.__path__ = list(spec.submodule_search_locations)
    package.__loader__ = spec.loader
    sys.modules[PACKAGE] = package


@functools.lru_cache(maxsize=None)  # (an import_module call per operator otherwise)
def table_class(name: str):
    """The generated class of flatbuffer table `name` (e.g. "Conv2DOptions"), or None if the schema has none."""
    try:
        module = importlib.import_module(f"{PACKAGE}.{name}")
    except ImportError:
        return None
    return getattr(module, name, None)
