"""The C target's data movement family (TRANSPOSE, SLICE, GATHER, PACK, FILL, ...): shared constraints, the
rendering of an op-layer AxisMap into `edgesdk_gather_axes` parameters, and that kernel's footprint rule.

Data movement copies elements as bytes, so one kernel serves every element type and is bit-exact with both
references by construction; what differs between ops is only which input element each output element is."""

from __future__ import annotations

import numpy as np

from ....ops import prepared
from ....ops.axis_map import PAD, AxisMap, _affine_step
from ..calls import Const, Null
from ..emit import Emit, footprint
from ..proof import prod, require

MAX_DIMS = 6
MOVABLE_TYPES = ("int8", "int16", "int32", "int64", "float32", "bool")
ELEMENT_BYTES = {"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "int32": 4, "float32": 4, "int64": 8}
KERNEL_FILES = dict(headers=("edgesdk_gather_axes.h",), sources=("edgesdk_gather_axes.c",))


def element_bytes(tensor) -> int:
    return ELEMENT_BYTES[tensor.dtype]


# -- constraints ---------------------------------------------------------------------------------------------

def data_tensor_types(op):
    """The data tensors are int8, int16, int32, int64, float32 or bool, input and output of one type"""
    data = [op.inputs[k] for k in _data_inputs(op)] + list(op.outputs)
    bad = [f"{t.name} ({t.dtype})" for t in data if t is not None and t.dtype not in MOVABLE_TYPES]
    if bad:
        return False, f"unsupported type: {', '.join(bad)}"
    types = {t.dtype for t in data if t is not None}
    return len(types) == 1, f"input and output types differ: {sorted(types)}"


def constant_parameters(op):
    """Parameters that fix the output's layout (permutation, begin/end/strides, axis, sizes, paddings, block shape, dims) are constant, or folded at build time"""
    return prepared(op, "ref") is not None, "a parameter tensor is computed at run time"


def _data_inputs(op) -> list:
    """Positions of the inputs whose elements are moved (the others are parameters or indices)."""
    return {"SPLIT": [1], "FILL": [1], "GATHER": [0], "GATHER_ND": [0], "EMBEDDING_LOOKUP": [1],
            "DYNAMIC_UPDATE_SLICE": [0, 1], "PACK": list(range(len(op.inputs))),
            "CONCATENATION": list(range(len(op.inputs)))}.get(op.type, [0])


# -- AxisMap -> edgesdk_gather_axes_params ------------------------------------------------------------------------

def pad_bytes(value, tensor) -> list:
    """The pad element's bytes (8, zero-filled beyond the element)."""
    from ....importer.tflite_importer import NUMPY_TYPES

    raw = np.asarray(0 if value is None else value).astype(NUMPY_TYPES[tensor.dtype]).tobytes()
    return list(raw) + [0] * (8 - len(raw))


def axes_fields(e: Emit, m: AxisMap, tensor, what: str = "axis") -> dict:
    """The params fields of edgesdk_gather_axes for map `m` over elements of `tensor`'s type: dimensions that
    step evenly become (step), the others (padding, mirrored or split indices) a constant table."""
    eb = element_bytes(tensor)
    s = m.simplified()
    dims = [(1, (0,))] * (MAX_DIMS - len(s.out_shape)) + list(zip(s.out_shape, s.maps))
    if len(dims) > MAX_DIMS:
        raise ValueError(f"{e.op.location}: the movement needs {len(s.out_shape)} dimensions")
    base, shape, steps, tables = s.base, [], [], []
    for d, (n, values) in enumerate(dims):
        step = _affine_step(values)
        shape.append(int(n))
        if step is not None:
            base += values[0]
            steps.append(step * eb)
            tables.append(Null("int32_t"))
        else:
            steps.append(0)
            tables.append(e.int32s(f"{what}{d}", [v * eb if v != PAD else -1 for v in values]))
    return {"element_bytes": eb, "base": base * eb, "out_shape": shape, "step": steps, "table": tables,
            "pad_value": pad_bytes(m.pad_value, tensor)}


def emit_gather_axes(e: Emit, m: AxisMap, x, y, what: str = "axis"):
    params = e.params("edgesdk_gather_axes_params", axes_fields(e, m, y, what))
    return e.call("edgesdk_gather_axes", params, e.tensor(x), e.arena(y))


def axes_accesses(fields, input_arg, output_arg) -> list:
    """The bytes edgesdk_gather_axes touches for `fields` (a gather_axes params struct's fields): the tables,
    the input from its lowest to its highest element read, and the whole output; preconditions: element size
    1/2/4/8, offsets that are whole elements (the typed copies are aligned), the lowest read not below the
    input pointer."""
    eb, base = fields["element_bytes"], fields["base"]
    shape, steps, tables = [int(v) for v in fields["out_shape"]], fields["step"], fields["table"]
    checks = require(eb in (1, 2, 4, 8) and len(shape) == len(steps) == len(tables) == MAX_DIMS
                     and all(n >= 1 for n in shape) and len(fields["pad_value"]) == 8,
                     f"element size {eb}, shape {shape} and {len(tables)} tables do not describe a walk")
    if checks:
        return checks
    low, high, reads, accesses = base, base, True, []
    offsets = [base]
    for d, (n, step, table) in enumerate(zip(shape, steps, tables)):
        if isinstance(table, Const):
            accesses.append((table, 4 * n, f"table {d}"))
            values = [int(v) for v in table.values[:n]]
            valid = [v for v in values if v >= 0]
            if not valid:
                reads = False
                continue
            low, high = low + min(valid), high + max(valid)
            offsets += valid
        elif isinstance(table, Null):
            low, high = low + min(0, (n - 1) * int(step)), high + max(0, (n - 1) * int(step))
            offsets.append(int(step))
        else:
            return [f"table {d} is neither a constant array nor null"]
    checks += require(all(v % eb == 0 for v in offsets), "an offset is not a whole number of elements")
    if reads:
        checks += require(low >= 0, f"the walk reads {-low} bytes before the input")
    return checks + accesses + [(input_arg, high + eb if reads else 0, "input"),
                                (output_arg, prod(shape) * eb, "output")]


@footprint("edgesdk_gather_axes")
def gather_axes_footprint(call, op) -> list:
    p, x, y = call.args
    return axes_accesses(p.fields, x, y)


@footprint("edgesdk_slice_dynamic")
def slice_dynamic_footprint(call, op) -> list:
    """The walk from any clamped begin: the lowest read is at the origin's lowest position (begin 0) and the
    highest at the highest begin (in_shape - size per dimension); the begin tensor is `rank` indices."""
    p, x, begin, y = call.args
    rank, ib = p["rank"], p["index_bytes"]
    sizes, dims, strides = ([int(v) for v in p[k]] for k in ("size", "in_shape", "in_strides"))
    checks = require(1 <= rank <= MAX_DIMS and ib in (4, 8) and all(0 < s <= n for s, n in zip(sizes, dims))
                     and all(v >= 0 for v in strides), f"rank {rank}, sizes {sizes} of {dims}, strides {strides}")
    if checks:
        return checks
    shift = sum((n - s) * st for n, s, st in zip(dims[:rank], sizes[:rank], strides[:rank]))
    walk = axes_accesses(p["axes"], x, y)
    result = []
    for access in walk:
        if isinstance(access, tuple) and access[2] == "input":
            result.append((x, access[1] + shift if access[1] else 0, "input"))
        else:
            result.append(access)
    return result + [(begin, rank * ib, "begin")]
