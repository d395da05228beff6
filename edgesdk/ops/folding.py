"""Build-time folding: ops whose outputs are known at build time become constant tensors (issue 10).

TFLite models carry shape arithmetic -- SHAPE of a tensor whose shape is static, STRIDED_SLICE / GATHER / PACK /
CONCATENATION / RESHAPE / CAST and integer arithmetic of constants, FILL with constant dims and value -- that
TFLite Micro evaluates once in Prepare. edgesdk evaluates it once in the compiler, right after import
(`fold_constants`, called by edgesdk/compiler.py): each op's `OpDef.fold` (numpy, the reference kernel's
semantics) is tried in execution order until nothing changes; a folded op disappears and its outputs become
constant tensors in flash, so it costs neither arena bytes nor cycles on the device, and the ops that read them
run with constant operands.

* Which ops fold: those whose `fold` returns values (data movement of constants, SHAPE of any tensor, FILL of
  constant dims and value, ...). Op types whose definition has no fold of its own yet (CAST, SUB, integer
  arithmetic, reductions) fold through `FALLBACK_FOLDS` below, only for unquantized integer (and exact float32)
  tensors; anything quantized is left to its kernel.
* Large results stay ops: an output over FOLD_LIMIT_BYTES would move that many bytes into flash (a FILL or
  BROADCAST_TO of a constant), so such an op runs at run time instead.
* A graph output that becomes constant is still written by the firmware: the pass appends a copy op (an inserted
  RESHAPE, index -1, of the constant into the output's arena slot; attribute `folded_output` names the folded
  op), the only cost left of its chain.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass, field
from ..ir.graph import DTYPE_BYTES, Op, Tensor
from . import op_def
from .base import op_error

FOLD_LIMIT_BYTES = 64 * 1024


@dataclass
class FoldReport:
    """What the pass did (report.json `folding`)."""

    folded: list = field(default_factory=list)  # the folded ops, in execution order
    constant_outputs: list = field(default_factory=list)  # graph outputs now written by a copy of a constant
    kept_large: list = field(default_factory=list)  # foldable ops kept because their output is too large

    def to_json(self) -> dict:
        return {
            "folded_ops": [{"index": op.index, "type": op.type, "outputs": [t.name for t in op.outputs]}
                           for op in self.folded],
            "constant_outputs": list(self.constant_outputs),
            "kept_over_limit": [{"index": op.index, "type": op.type} for op in self.kept_large],
            "limit_bytes": FOLD_LIMIT_BYTES,
        }


def fold_constants(graph) -> FoldReport:
    """Fold every foldable op of `graph` in place (see the module docstring); return what was folded."""
    report = FoldReport()
    touched = set()
    changed = True
    while changed:
        changed = False
        for op in list(graph.ops):
            values = fold_op(op)
            if values is None:
                continue
            if sum(np.asarray(v).nbytes for v in values) > FOLD_LIMIT_BYTES:
                if op not in report.kept_large:
                    report.kept_large.append(op)
                continue
            for tensor, value in zip(op.outputs, values):
                tensor.data = _as_tensor_value(op, tensor, value)
            graph.ops.remove(op)
            report.folded.append(op)
            touched.update(op.outputs)
            changed = True
    report.kept_large = [op for op in report.kept_large if op in graph.ops]
    _keep_constant_outputs(graph, report)
    for op in graph.ops:  # rules that needed the now constant operands (a permutation, a slice's begin)
        definition = op_def(op.type)
        if definition is not None and any(t in touched for t in op.inputs if t is not None):
            definition.check(op)
    used = set(graph.inputs) | set(graph.outputs) | {t for op in graph.ops for t in op.inputs + op.outputs
                                                     if t is not None}
    graph.tensors = [t for t in graph.tensors if t in used]
    return report


def fold_op(op) -> list | None:
    """The op's output values when they are known at build time, else None."""
    if any(t.orig_dtype == "uint8" for t in op.inputs + op.outputs if t is not None):
        return None  # legalized uint8 data is shifted by -128: keep the reference's uint8 arithmetic at run time
    if any(t.dtype not in DTYPE_BYTES for t in op.outputs):
        return None  # a type edgesdk cannot hold as a constant (the partitioner reports the op)
    definition = op_def(op.type)
    values = definition.fold(op) if definition is not None else None
    if values is None and op.type in FALLBACK_FOLDS and all(t is not None and t.is_const for t in op.inputs):
        values = FALLBACK_FOLDS[op.type](op)
    if values is None or len(values) != len(op.outputs):
        return None
    return values


def _as_tensor_value(op, tensor, value) -> np.ndarray:
    """`value` as the tensor's constant data: its static shape and type, exactly (a fold never rounds)."""
    from ..importer.tflite_importer import NUMPY_TYPES

    value = np.asarray(value)
    if list(value.shape) != list(tensor.shape):
        raise op_error(op, f"computes '{tensor.name}' as shape {list(value.shape)}, but the file declares "
                           f"{list(tensor.shape)}")
    target = NUMPY_TYPES[tensor.dtype]
    converted = value.astype(target)
    if value.dtype != converted.dtype and not np.array_equal(converted.astype(value.dtype), value):
        raise op_error(op, f"computes values for '{tensor.name}' that a {tensor.dtype} tensor cannot hold")
    return np.array(converted, order="C")  # (np.ascontiguousarray would make a scalar 1-D)


def _keep_constant_outputs(graph, report: FoldReport) -> None:
    """A graph output that became constant keeps its arena slot, written by a copy of the constant at the end of
    the run; the ops that read it read the constant."""
    next_id = max((t.id for t in graph.tensors), default=-1) + 1
    producers = {t: op for op in report.folded for t in op.outputs}
    for t in graph.outputs:
        if not t.is_const:
            continue
        constant = Tensor(next_id, f"{t.name}_folded", t.shape, t.dtype, t.quant, t.data, t.orig_dtype)
        next_id += 1
        graph.tensors.append(constant)
        for op in graph.ops:
            op.inputs = [constant if x is t else x for x in op.inputs]
        t.data = None
        source = producers.get(t)
        what = f"operator #{source.index} ({source.type})" if source is not None else "a constant"
        graph.ops.append(Op(-1, "RESHAPE", [constant], [t], {"folded_output": f"{what}, folded at build time"}))
        report.constant_outputs.append(t.name)


# -- folds of op types whose definition does not fold yet --------------------------------------------------------

INT_TYPES = ("int32", "int64")


def _plain(op, types=INT_TYPES) -> bool:
    """Unquantized tensors of `types`, no fused activation."""
    options = op.attrs.get("options", op.attrs)
    activation = op.attrs.get("activation", options.get("fused_activation_function", 0))
    return (activation in (0, "NONE") and all(t.quant is None and t.dtype in types for t in op.inputs + op.outputs)
            and len(op.outputs) == 1)


def _int_binary(fn, float_ok: bool = False):
    def fold(op):
        if len(op.inputs) != 2 or not _plain(op, INT_TYPES + (("float32",) if float_ok else ())):
            return None
        a, b = op.inputs
        if op.outputs[0].dtype == "float32":
            if a.dtype != "float32" or b.dtype != "float32":
                return None
            return [fn(a.data.astype(np.float32), b.data.astype(np.float32)).astype(np.float32)]
        if a.dtype not in INT_TYPES or b.dtype not in INT_TYPES:
            return None
        x, y = a.data.astype(object), b.data.astype(object)  # Python integers: no silent wrap-around
        try:
            result = np.asarray(fn(x, y), dtype=object)
        except ZeroDivisionError:
            return None
        info = np.iinfo(np.int64 if op.outputs[0].dtype == "int64" else np.int32)
        if result.size and (min(result.reshape(-1)) < info.min or max(result.reshape(-1)) > info.max):
            return None  # TFLite's C++ would overflow: leave it to run time
        return [result.astype(np.int64)]
    return fold


def _cast(op):
    if len(op.inputs) != 1 or len(op.outputs) != 1:
        return None
    x, y = op.inputs[0], op.outputs[0]
    data = x.data
    if y.dtype in ("int8", "int16", "int32", "int64") and data.dtype.kind == "f":
        info = np.iinfo(y.dtype)
        if not np.all(np.isfinite(data)) or np.any(np.trunc(data) < info.min) or np.any(np.trunc(data) > info.max):
            return None  # static_cast of an out-of-range float is undefined in C++
    if y.dtype == "bool":
        return [data != 0]
    from ..importer.tflite_importer import NUMPY_TYPES

    return [data.astype(NUMPY_TYPES[y.dtype])]  # C++ static_cast: truncation toward zero, modulo for integers


def _reduce(fn):
    def fold(op):
        if len(op.inputs) != 2 or not _plain(op) or op.inputs[1].dtype not in INT_TYPES:
            return None
        x, axes = op.inputs[0], np.asarray(op.inputs[1].data).reshape(-1)
        rank = len(x.shape)
        if any(not -rank <= a < rank for a in axes):
            return None
        keep = bool(op.attrs.get("keep_dims", op.attrs.get("options", {}).get("keep_dims", False)))
        axis = tuple(sorted({int(a) % rank for a in axes})) if rank else ()
        result = fn(x.data.astype(object), axis=axis, keepdims=keep)
        info = np.iinfo(np.int64 if op.outputs[0].dtype == "int64" else np.int32)
        flat = np.asarray(result, dtype=object).reshape(-1)
        if flat.size and (min(flat) < info.min or max(flat) > info.max):
            return None
        return [np.asarray(result, dtype=object).astype(np.int64)]
    return fold


def _floor_mod(a, b):
    return np.vectorize(lambda x, y: x % y, otypes=[object])(a, b)  # Python's % is TFLite's floor mod


def _floor_div(a, b):
    """TFLite's FLOOR_DIV: std::floor of the quotient in double; exact (Python's //) below 2^53."""
    def one(x, y):
        if abs(x) >= 1 << 53 or abs(y) >= 1 << 53:
            raise ZeroDivisionError  # not folded: the double quotient may round
        return x // y
    return np.vectorize(one, otypes=[object])(a, b)


FALLBACK_FOLDS = {
    "ADD": _int_binary(lambda a, b: a + b, float_ok=True),
    "SUB": _int_binary(lambda a, b: a - b, float_ok=True),
    "MUL": _int_binary(lambda a, b: a * b, float_ok=True),
    "FLOOR_DIV": _int_binary(_floor_div),
    "FLOOR_MOD": _int_binary(_floor_mod),
    "MAXIMUM": _int_binary(np.maximum),
    "MINIMUM": _int_binary(np.minimum),
    "CAST": _cast,
    "SUM": _reduce(np.sum),
    "REDUCE_PROD": _reduce(np.prod),
    "REDUCE_MAX": _reduce(np.max),
    "REDUCE_MIN": _reduce(np.min),
}

