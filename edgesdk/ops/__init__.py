"""The op layer: one module per TFLite builtin with its target-independent build-time data.

`op_def(type)` is the definition of an op type (edgesdk/ops/base.py), `prepared(op, mode)` its build-time data
for one op of a graph, computed once. Each module here registers its definitions with `@register`; op_def
imports the module that `_MODULE_TYPES` names for a type (a build imports only the op modules it uses), and
every module of the package for a type not listed there.
"""

from __future__ import annotations

import importlib
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


# Which module defines each op type, so that op_def imports only the modules a build uses (importing all of
# them costs a fresh process ~60 ms of CPU). tests/test_op_index.py checks it against the modules' `types`; a
# type missing here is still found, by importing every module.
_MODULE_TYPES = {
    "add": ("ADD",), "add_n": ("ADD_N",), "arg_min_max": ("ARG_MAX", "ARG_MIN"), "batch_matmul": ("BATCH_MATMUL",),
    "broadcast_to": ("BROADCAST_ARGS", "BROADCAST_TO"),
    "comparisons": ("EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "NOT_EQUAL"),
    "concatenation": ("CONCATENATION",), "control_flow": ("IF", "WHILE"), "conv_2d": ("CONV_2D",),
    "cumsum": ("CUMSUM",), "depth_to_space": ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH"),
    "depthwise_conv_2d": ("DEPTHWISE_CONV_2D",), "dequantize": ("DEQUANTIZE",),
    "detection_postprocess": ("DETECTION_POSTPROCESS",), "div": ("DIV",),
    "dynamic_update_slice": ("DYNAMIC_UPDATE_SLICE",), "fill": ("FILL",), "floor_div": ("FLOOR_DIV", "FLOOR_MOD"),
    "fully_connected": ("FULLY_CONNECTED",), "gather": ("EMBEDDING_LOOKUP", "GATHER", "GATHER_ND"),
    "hard_swish": ("HARD_SWISH",), "l2_normalization": ("L2_NORMALIZATION",), "log_softmax": ("LOG_SOFTMAX",),
    "logical": ("LOGICAL_AND", "LOGICAL_NOT", "LOGICAL_OR"), "lstm": ("UNIDIRECTIONAL_SEQUENCE_LSTM",),
    "maximum_minimum": ("MAXIMUM", "MINIMUM"), "mean": ("MEAN", "SUM"), "mirror_pad": ("MIRROR_PAD",),
    "mul": ("MUL",), "pack": ("PACK",), "pad": ("PAD", "PADV2"),
    "pool_2d": ("AVERAGE_POOL_2D", "L2_POOL_2D", "MAX_POOL_2D"), "prelu": ("PRELU",), "quantize": ("QUANTIZE",),
    "reduce": ("REDUCE_ALL", "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN"),
    "relu": ("RELU", "RELU6", "RELU_0_TO_1", "RELU_N1_TO_1"), "reshape": ("RESHAPE",),
    "resize": ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"), "reverse": ("REVERSE_V2",),
    "select": ("SELECT", "SELECT_V2"), "shape": ("SHAPE",), "sigmoid": ("LOGISTIC", "TANH"), "slice": ("SLICE",),
    "softmax": ("SOFTMAX",), "space_to_batch": ("BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND"),
    "split": ("SPLIT", "SPLIT_V", "UNPACK"), "squared_difference": ("SQUARED_DIFFERENCE",),
    "squeeze": ("EXPAND_DIMS", "SQUEEZE"), "strided_slice": ("STRIDED_SLICE",), "sub": ("SUB",), "svdf": ("SVDF",),
    "transpose": ("TRANSPOSE",), "transpose_conv": ("TRANSPOSE_CONV",),
    "unary": ("ABS", "CAST", "CEIL", "COS", "ELU", "EXP", "FLOOR", "LEAKY_RELU", "LOG", "NEG", "ROUND", "RSQRT", "SIN",
              "SQRT", "SQUARE", "ZEROS_LIKE"),
    "variables": ("ASSIGN_VARIABLE", "CALL_ONCE", "READ_VARIABLE", "VAR_HANDLE"),
}
_MODULE_OF = {t: module for module, types in _MODULE_TYPES.items() for t in types}


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    import pkgutil  # here: a build loads only its ops' modules (op_def), never scans the package

    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")


def op_def(op_type: str) -> OpDef | None:
    """The definition of `op_type` (a TFLite builtin name), or None when edgesdk does not know the op."""
    if op_type not in _REGISTRY:
        if op_type in _MODULE_OF:
            importlib.import_module(f"{__name__}.{_MODULE_OF[op_type]}")
        else:
            _load_all()
    return _REGISTRY.get(op_type)


def is_defined(op_type: str) -> bool:
    """Whether the op layer defines `op_type`, answered from the index without importing anything."""
    return op_type in _MODULE_OF


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
