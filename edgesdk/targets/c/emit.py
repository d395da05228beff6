"""The C target's per-op registry and the helper its emitters write with.

Each module in edgesdk/targets/c/ops/ registers, for the op types it covers:

    @c_op("RELU", "RELU6", constraints=[...])   the op's constraints on this target and its emitter
    def emit_relu(e: Emit) -> HostLayer

    @footprint("edgesdk_relu_s8")               the bytes a kernel touches through each pointer, from its
    def relu_footprint(call, op) -> list        arguments (edgesdk/targets/c/proof.py checks them)

An emitter reads the op's build-time data from the op layer (`e.data`, edgesdk/ops) and returns a HostLayer of
KernelCalls (edgesdk/targets/c/calls.py); `Emit` turns tensors into arena pointers and arrays into constants.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...ctext import describe_op
from ...ops import prepared
from .calls import C_TYPES, Arena, Const, HostLayer, Int, Macro, Null, Params, PointerList, render_params

ROUNDING_C = {"double": "EDGESDK_ROUNDING_DOUBLE", "single": "EDGESDK_ROUNDING_SINGLE",
              "fp64": "EDGESDK_ROUNDING_FP64", "f32": "EDGESDK_ROUNDING_F32"}


@dataclass
class COp:
    types: tuple
    emit: Callable
    constraints: list = field(default_factory=list)
    scratch: Callable | None = None  # (op, mode) -> bytes of arena scratch the kernel needs while the op runs
    headers: tuple = ()  # kernel headers model.c includes for these ops
    sources: tuple = ()  # kernel sources the firmware compiles for them (edgesdk/kernels/)


_OPS: dict = {}
_FOOTPRINTS: dict = {}
_LOADED = False


def c_op(*types: str, constraints: list, headers: tuple, sources: tuple, scratch: Callable | None = None):
    """Register an emitter for `types`: the constraints those ops must meet on the C target, and the kernel
    files (edgesdk/kernels/) their calls need."""
    def wrap(fn):
        for op_type in types:
            if op_type in _OPS:
                raise RuntimeError(f"the C target defines {op_type} twice")
            _OPS[op_type] = COp(types, fn, list(constraints), scratch, tuple(headers), tuple(sources))
        return fn
    return wrap


def footprint(*kernels: str):
    """Register the footprint rule of kernels (C function names)."""
    def wrap(fn):
        for kernel in kernels:
            _FOOTPRINTS[kernel] = fn
        return fn
    return wrap


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import ops as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def c_ops() -> dict:
    _load_all()
    return _OPS


def footprint_rule(kernel: str):
    """The footprint rule a kernel's emitter registered (functions TVM generated are proof.py's business)."""
    _load_all()
    return _FOOTPRINTS.get(kernel)


def _plain(value):
    """numpy scalars as Python numbers, so params fields compare and print plainly."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Emit:
    """What an emitter works with for one op: its tensors as arena pointers, constants, params structs."""

    def __init__(self, op, ctx):
        self.op = op
        self.ctx = ctx
        self.mode = ctx.rounding_mode
        self.layer = HostLayer(op)

    @property
    def data(self):
        """The op's build-time data from the op layer (edgesdk/ops/<op>.py prepare), for this rounding mode."""
        own = getattr(self.ctx, "prepared", None)  # the host test context may force a rounding
        return own(self.op) if own is not None else prepared(self.op, self.mode)

    def _hint(self, what: str) -> str:
        where = self.op.index if self.op.index >= 0 else "edge"
        return f"{self.op.type.lower()}_{where}_{what}"

    def arena(self, tensor) -> Arena:
        return Arena(tensor, self.ctx.arena_offset(tensor), C_TYPES[tensor.dtype])

    def tensor(self, tensor):
        """An input: its arena slot, or for a constant tensor (a converter folds operands into constants)
        its data as a constant array in flash, emitted once per build."""
        if not tensor.is_const:
            return self.arena(tensor)
        emitted = self.ctx.data("c.constant_tensors", dict)
        if tensor not in emitted:
            ctype = C_TYPES[tensor.dtype]
            values = np.ascontiguousarray(tensor.data).reshape(-1)
            symbol = self.ctx.const_array(f"tensor_{tensor.id}", values, ctype, f"constant tensor '{tensor.name}'")
            emitted[tensor] = Const(symbol, ctype, values)
        return emitted[tensor]

    def const(self, what: str, values, ctype: str) -> Const:
        array = np.ascontiguousarray(values).reshape(-1)
        return Const(self.ctx.const_array(self._hint(what), array, ctype, describe_op(self.op)), ctype, array)

    def float32s(self, what: str, values) -> Const:
        return self.const(what, np.asarray(values, dtype=np.float32), "float")

    def int32s(self, what: str, values) -> Const:
        return self.const(what, np.asarray(values, dtype=np.int64).astype(np.int32), "int32_t")

    def params(self, ctype: str, fields: dict) -> Params:
        fields = {k: _plain(v) for k, v in fields.items()}
        params = Params(ctype, self.ctx.symbol(self._hint("params")), fields)
        self.ctx.declare(render_params(params))
        return params

    def pointer_list(self, tensors) -> PointerList:
        return PointerList(self.ctx.symbol(self._hint("inputs")), tuple(self.tensor(t) for t in tensors))

    @staticmethod
    def rounding(name: str) -> Macro:
        return Macro(ROUNDING_C[name])

    @staticmethod
    def macro(name: str) -> Macro:
        return Macro(name)

    @staticmethod
    def null(ctype: str) -> Null:
        return Null(ctype)

    @staticmethod
    def int(value: int) -> Int:
        return Int(value)

    def call(self, kernel: str, *args) -> HostLayer:
        return self.layer.add(kernel, *args)
