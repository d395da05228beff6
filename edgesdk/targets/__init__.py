"""Targets: the places an op can run. Each declares its op table (TargetSupport) and its codegen.

Built-in targets: "npu" (the board's NPU-1 layer engine: command tables) and "c" (the host RISC-V core:
calls into the C kernel library). A build names them in priority order, e.g. "npu,c"; the last is the
fallback.
"""

from __future__ import annotations

import importlib

from ..errors import UsageError

# target name -> module that defines SUPPORT (TargetSupport) for it
_BUILTIN = {
    "npu": "edgesdk.targets.npu.supported",
    "c": "edgesdk.targets.c.supported",
}
_SUPPORT_ATTR = {"npu": "NPU_SUPPORT", "c": "C_SUPPORT"}


def available_targets() -> list:
    return list(_BUILTIN)


def target_support(name: str):
    if name not in _BUILTIN:
        raise UsageError(f"Unknown target '{name}'. Available targets: {', '.join(available_targets())}.")
    module = importlib.import_module(_BUILTIN[name])
    return getattr(module, _SUPPORT_ATTR[name])


def parse_target_list(spec: str, board) -> list:
    """'npu,c' -> ['npu', 'c'], checked against the known targets and the board's hardware."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise UsageError("--target is empty; give a priority list such as \"npu,c\" or \"c\".")
    if len(set(names)) != len(names):
        raise UsageError(f"--target \"{spec}\" names a target twice.")
    for n in names:
        target_support(n)
        if n == "npu" and board.npu is None:
            raise UsageError(f"Board '{board.name}' has no NPU; use --target c.")
    return names
