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
from typing import Callable

import numpy as np

from ...ctext import describe_op
from ...dataclass_cache import dataclass, field
from ...ops import prepared
from .calls import C_TYPES, Arena, Const, HostLayer, Int, Macro, Null, Params, PointerList, render_params

ROUNDING_C = {"double": "EDGESDK_ROUNDING_DOUBLE", "single": "EDGESDK_ROUNDING_SINGLE",
              "fp64": "EDGESDK_ROUNDING_FP64", "f32": "EDGESDK_ROUNDING_F32"}


@dataclass
class COp:
    """The C target's emitter of some op types: its code, constraints and scratch rule."""

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
    import pkgutil  # here: a build loads only its ops' emitter modules (c_op_entry), never scans the package

    from . import ops as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def c_ops() -> dict:
    _load_all()
    return _OPS


# Which module of ops/ registers each op type, so that a build imports only the emitters it uses (all of them
# and the op layer modules they read cost a fresh process ~50 ms of CPU). tests/test_op_index.py checks it
# against the registrations; a type missing here is still found, by importing every module.
_MODULE_TYPES = {
    "activations": ("HARD_SWISH", "LOGISTIC", "RELU", "RELU6", "RELU_N1_TO_1", "TANH"), "add": ("ADD",),
    "add_n": ("ADD_N",), "arg_min_max": ("ARG_MAX", "ARG_MIN"), "batch_matmul": ("BATCH_MATMUL",),
    "binary": ("DIV", "FLOOR_DIV", "FLOOR_MOD", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"),
    "broadcast_args": ("BROADCAST_ARGS",),
    "comparisons": ("EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "NOT_EQUAL"),
    "concatenation": ("CONCATENATION",), "control_flow": ("IF", "WHILE"), "conv_2d": ("CONV_2D",),
    "cumsum": ("CUMSUM",), "depthwise_conv_2d": ("DEPTHWISE_CONV_2D",),
    "detection_postprocess": ("DETECTION_POSTPROCESS",), "dynamic_update_slice": ("DYNAMIC_UPDATE_SLICE",),
    "fill": ("FILL", "SHAPE"), "fully_connected": ("FULLY_CONNECTED",),
    "gather": ("EMBEDDING_LOOKUP", "GATHER", "GATHER_ND"), "l2_normalization": ("L2_NORMALIZATION",),
    "log_softmax": ("LOG_SOFTMAX",), "logical": ("LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR"),
    "lstm": ("UNIDIRECTIONAL_SEQUENCE_LSTM",), "mean": ("MEAN", "SUM"), "mul": ("MUL",), "pack": ("PACK",),
    "pad": ("PAD", "PADV2"), "pool_2d": ("AVERAGE_POOL_2D", "L2_POOL_2D", "MAX_POOL_2D"), "prelu": ("PRELU",),
    "quantize": ("DEQUANTIZE", "QUANTIZE"), "reduce": ("REDUCE_ALL", "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN"),
    "reshape": ("RESHAPE",), "resize": ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"),
    "select": ("SELECT", "SELECT_V2"),
    "slicing": ("BATCH_TO_SPACE_ND", "BROADCAST_TO", "DEPTH_TO_SPACE", "MIRROR_PAD", "REVERSE_V2", "SLICE",
                "SPACE_TO_DEPTH", "SPLIT", "SPLIT_V", "STRIDED_SLICE", "TRANSPOSE", "UNPACK"),
    "softmax": ("SOFTMAX",), "space_to_batch": ("SPACE_TO_BATCH_ND",), "squeeze": ("EXPAND_DIMS", "SQUEEZE"),
    "sub": ("SUB",), "svdf": ("SVDF",), "transpose_conv": ("TRANSPOSE_CONV",),
    "unary": ("ABS", "CAST", "CEIL", "COS", "ELU", "EXP", "FLOOR", "LEAKY_RELU", "LOG", "NEG", "ROUND", "RSQRT", "SIN",
              "SQRT", "SQUARE", "ZEROS_LIKE"),
    "variables": ("ASSIGN_VARIABLE", "READ_VARIABLE"),
}
_MODULE_OF = {op_type: module for module, types in _MODULE_TYPES.items() for op_type in types}


def c_op_entry(op_type: str) -> COp | None:
    """The C target's entry for one op type (None: no emitter), importing only the module that registers it."""
    if op_type not in _OPS and not _LOADED:
        if op_type in _MODULE_OF:
            importlib.import_module(f"{__package__}.ops.{_MODULE_OF[op_type]}")
        if op_type not in _OPS:
            _load_all()
    return _OPS.get(op_type)


def footprint_rule(kernel: str):
    """The footprint rule a kernel's emitter registered (functions TVM generated are proof.py's business)."""
    if kernel not in _FOOTPRINTS:  # registered beside the emitter, or in a module of shared rules
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
