"""Targets: the places an op can run, discovered as plugins (edgesdk/targets/api.py).

A build names targets in priority order, e.g. "npu,dsp,c"; the last is the fallback. Every target, built-in
or not, is a `Target` object registered under the Python entry-point group `edgesdk.targets`; edgesdk's own
pyproject.toml registers "npu" (NPU-1 command tables), "dsp" (serialized subgraph interpreted by a host
runtime that drives the vector DSP) and "c" (calls into the host kernel library). The built-ins are also
known by module path, so a source checkout that was never pip-installed still finds them.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from ..errors import UsageError
from .api import Target

ENTRY_POINT_GROUP = "edgesdk.targets"
_BUILTIN = {
    "npu": "edgesdk.targets.npu:TARGET",
    "dsp": "edgesdk.targets.dsp:TARGET",
    "c": "edgesdk.targets.c:TARGET",
}


class PluginError(UsageError):
    """A target plugin that cannot be loaded or does not follow the API."""


def _load(name: str, spec: str, loader) -> Target:
    try:
        obj = loader()
    except Exception as exc:  # a broken plugin must not take the whole tool down
        raise PluginError(f"Target plugin '{name}' ({spec}) failed to load: {exc!r}. Reinstall the package "
                          "that provides it, or uninstall it.") from None
    target = obj() if isinstance(obj, type) else obj
    if not isinstance(target, Target):
        raise PluginError(f"Target plugin '{name}' ({spec}) is a {type(target).__name__}, not an "
                          "edgesdk.targets.api.Target (docs/porting-a-new-accelerator.md).")
    if target.name != name:
        raise PluginError(f"Target plugin registered as '{name}' ({spec}) calls itself '{target.name}'; the "
                          "entry-point name and Target.name must agree.")
    if target.support is None:
        raise PluginError(f"Target plugin '{name}' ({spec}) declares no supported ops (Target.support).")
    return target


def _import_spec(spec: str):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


@lru_cache(maxsize=1)
def _registry() -> dict:
    """name -> (spec, loader): entry points first, built-ins where no entry point names them."""
    from importlib import metadata  # here, not at import: a build with built-in targets never scans them

    found = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, (ep.value, ep.load))
    for name, spec in _BUILTIN.items():  # built-in names always mean the built-in targets
        found[name] = (spec, lambda spec=spec: _import_spec(spec))
    return found


@lru_cache(maxsize=None)
def get_target(name: str) -> Target:
    if name in _BUILTIN:  # no need to scan the installed packages' entry points for a built-in
        return _load(name, _BUILTIN[name], lambda: _import_spec(_BUILTIN[name]))
    registry = _registry()
    if name not in registry:
        raise UsageError(f"Unknown target '{name}'. Available targets: {', '.join(available_targets())}. "
                         "A vendor target becomes available when its package is pip-installed "
                         "(docs/porting-a-new-accelerator.md).")
    spec, loader = registry[name]
    return _load(name, spec, loader)


def target_origin(name: str) -> str:
    """Where a target comes from: its entry point ("module:attribute")."""
    return _registry()[name][0]


def available_targets() -> list:
    return list(_registry())


def all_targets() -> list:
    """Every installed target that loads (a broken plugin is skipped here; get_target names its error)."""
    targets = []
    for name in available_targets():
        try:
            targets.append(get_target(name))
        except PluginError:
            continue
    return targets


def target_support(name: str):
    return get_target(name).support


def peripheral_model(type_name: str):
    """The PeripheralModel of board peripheral type `type_name` from any installed target, or None."""
    for target in all_targets():
        for model in target.peripherals():
            if model.type == type_name:
                return model
    return None


def extra_board_dirs() -> list:
    """Board directories that installed target packages ship."""
    return [d for target in all_targets() for d in target.boards_dirs()]


def default_target_list(board) -> str:
    """The priority list of a build that names none: the board's board.json "default_targets", else every
    installed target whose hardware the board has, the accelerators (targets that drive a peripheral) first and
    the host-core targets last, each group in registry order."""
    if board.default_targets:
        return board.default_targets
    usable = []
    for target in all_targets():
        try:
            target.check_board(board)
        except UsageError:
            continue
        usable.append(target)
    ordered = [t for t in usable if t.peripheral_types] + [t for t in usable if not t.peripheral_types]
    return ",".join(t.name for t in ordered)


def parse_target_list(spec: str, board) -> list:
    """'npu,c' -> ['npu', 'c'], checked against the installed targets and the board's hardware."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise UsageError("--target is empty; give a priority list such as \"npu,c\" or \"c\".")
    if len(set(names)) != len(names):
        raise UsageError(f"--target \"{spec}\" names a target twice.")
    for n in names:
        get_target(n).check_board(board)
    return names
