"""The C target's part of the build-time safety proof (Target.verify; the core proof is edgesdk/verify.py).

For every host layer it reads the structured calls the emitters produced (edgesdk/targets/c/calls.py) -- never
the C text -- and proves, through each kernel's footprint rule (registered beside its emitter with @footprint):

* every arena pointer lies inside the arena, and every byte a kernel reads or writes through it (computed from
  the parameter struct it receives) lies inside one planned buffer that is live at that layer;
* every constant array a kernel indexes holds at least what it reads (weights in the fast kernels' layouts,
  per-channel multipliers, lookup tables, ...); requantization shifts are in [-31, 30];
* the rendered run function contains exactly the rendered calls (a round trip: nothing else was added).

A footprint rule returns a list of accesses `(arg, bytes, what)` and failed preconditions (`str` items).
"""

from __future__ import annotations

import math
from collections import Counter
from numbers import Integral

import numpy as np

from ...ctext import UINT8_INPUT_READER
from .calls import READ_INPUT_ROWS, SHIFT_KERNEL, Arena, Cast, Const, Null, Params, PointerList, consts_of, render_layer, render_params
from .emit import footprint_rule
from .tvm_lowered import tvm_lowered_footprint

SHIFT_RANGE = (-31, 30)  # the requantization shifts the kernels define behaviour for
REQUANT_SHIFT_FIELDS = ("shift", "output_shift", "input1_shift", "input2_shift")


# -- helpers for footprint rules ------------------------------------------------------------------------------

def prod(values) -> int:
    return math.prod(int(v) for v in values)


def require(condition: bool, text: str) -> list:
    return [] if condition else [text]


def positive(p: Params, *keys) -> list:
    bad = [k for k in keys if not isinstance(p[k], Integral) or p[k] < 1]
    return require(not bad, f"fields {', '.join(bad)} must be >= 1")


def non_negative(p: Params, *keys) -> list:
    bad = [k for k in keys if not isinstance(p[k], Integral) or p[k] < 0]
    return require(not bad, f"fields {', '.join(bad)} must be >= 0")


def shift_checks(p: Params, channels: int | None = None, keys: tuple = REQUANT_SHIFT_FIELDS) -> list:
    """Requantization shifts in [-31, 30]: a larger shift is undefined behaviour in C."""
    result = []
    for key in keys:
        if key not in p.fields:
            continue
        value = p[key]
        values = value.values[:channels] if isinstance(value, Const) else [value]
        bad = [int(v) for v in values if not SHIFT_RANGE[0] <= int(v) <= SHIFT_RANGE[1]]
        if bad:
            result.append(f"requantization {key} {bad[0]} is outside [{SHIFT_RANGE[0]}, {SHIFT_RANGE[1]}] "
                          "(quantization scales out of range)")
    return result


def per_channel(p: Params, channels: int, *keys, element_bytes: int = 4) -> list:
    """Accesses to per-channel constant arrays named by params fields."""
    return [(p[k], element_bytes * channels, f"{k}[{channels}]") for k in keys]


def optional(arg, nbytes: int) -> int:
    """Bytes read through an optional pointer: none when it is null."""
    return 0 if isinstance(arg, Null) else nbytes


# -- the proof -----------------------------------------------------------------------------------------------

def verify_host_layers(compiled, layers: list, proof) -> None:
    """Prove every host layer of the build (the C target's part of edgesdk/verify.py)."""
    plan = compiled.plan
    step_of = {op: i for i, op in enumerate(compiled.graph.ops)}
    host_ops = [op for region in compiled.regions if region.target == "c" for op in region.ops]
    listed = [op for layer in layers for op in layer.layers]
    # a cascade group that crosses targets computes its host layers in several blocks (its runs of stripes)
    repeated = {op for op, n in Counter(listed).items() if n > 1}
    split = any(not layer.ops for layer in layers if repeated & set(layer.layers))  # only groups' runs repeat
    if list(dict.fromkeys(listed)) != host_ops or split:
        proof.fail(f"{len(layers)} host layers were generated for the {len(host_ops)} layers on the C target")
    _check_round_trip(compiled.executor, layers, proof)
    for layer in layers:
        proof.count("host_layers")
        if layer.ops:
            _check_group_calls(layer, proof)
        for call in layer.calls:
            op = getattr(call, "op", None) or layer.op  # a cascade group's call names the layer it computes
            _check_call(op, step_of[op], call, plan, proof, own_buffers=bool(layer.ops))


def _check_group_calls(layer, proof) -> None:
    """A cascade group's block (edgesdk/targets/c/stripes.py): each call computes one of the group's layers
    with that layer's kernel, moves rows of a stripe buffer or asks the caller for a streamed input's rows; the
    footprint rules then prove every byte of every stripe inside a buffer live over the group (the plan keeps
    the group's tensors live over all of its steps)."""
    members = set(layer.ops)
    proof.count("cascade_groups")
    for call in layer.calls:
        op = getattr(call, "op", None)
        if op is None and call.kernel not in (SHIFT_KERNEL, READ_INPUT_ROWS, UINT8_INPUT_READER) or op is not None and op not in members:
            proof.fail(f"{layer.op.location}: cascade call {call.kernel} computes no layer of its group")
        else:
            proof.count("stripe_calls")


def _check_round_trip(executor, layers: list, proof) -> None:
    """What the templates render is what the proof checks: each layer's calls are one step of the run function,
    each params struct is declared exactly as rendered, and each constant array a call or struct names is the
    model_data.c array of that symbol, with the same type and values."""
    steps = [step.code for step in executor.steps if step.target == "c"]
    rendered = [render_layer(layer) for layer in layers]
    if steps != rendered:
        bad = next((i for i, (a, b) in enumerate(zip(steps, rendered)) if a != b), min(len(steps), len(rendered)))
        where = layers[bad].op.location if bad < len(layers) else "the end of the run function"
        proof.fail(f"{where}: the run function's statements differ from the calls the proof checked")
    declared = set(executor.declarations)
    arrays = {c.symbol: c for c in executor.consts}
    for layer in layers:
        for call in layer.calls:
            for params in (a for a in call.args if isinstance(a, Params)):
                if render_params(params) not in declared:
                    proof.fail(f"{layer.op.location}: {params.symbol} is not declared as the proof read it")
            for const in consts_of(list(call.args)):
                array = arrays.get(const.symbol)
                if (array is None or array.ctype != const.ctype or len(array.values) != const.count
                        or not _same_values(array.values, const.values)):
                    proof.fail(f"{layer.op.location}: constant array {const.symbol} in flash differs from the one "
                               "the proof read")


def _same_values(a, b) -> bool:
    """Equal arrays; floating-point ones bit for bit (a NaN equals the same NaN, -0.0 differs from 0.0)."""
    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return a.size == b.size and np.array_equal(a.astype(np.float64).view(np.uint64), b.astype(np.float64).view(np.uint64))
    return np.array_equal(a, b)


def _check_call(op, step: int, call, plan, proof, own_buffers: bool = False) -> None:
    """`own_buffers`: every arena access must lie in the buffer of the tensor its pointer names (a cascade
    group's stripes, whose pointers are computed rows of a tensor or stripe buffer), not just in some buffer
    live at the step."""
    where = f"{op.location}: {call.kernel}"
    # functions TVM generated for long-tail ops have one rule for all (tvm_lowered.py); kernels have their own
    rule = tvm_lowered_footprint if call.kernel.startswith("tvmgen_") else footprint_rule(call.kernel)
    if rule is None:
        proof.fail(f"{where} has no footprint rule, so its memory accesses cannot be proven")
        return
    for arg in call.args:
        arg = arg.arg if isinstance(arg, Cast) else arg
        for pointer in (arg.items if isinstance(arg, PointerList) else (arg,)):
            if isinstance(pointer, Arena):
                proof.count("arena_pointers")
                if not 0 <= pointer.offset < plan.arena_bytes:
                    proof.fail(f"{where}: pointer edgesdk_arena + {pointer.offset} is outside the arena")
    try:
        accesses = rule(call, op)
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
        proof.fail(f"{where}: unexpected arguments ({type(exc).__name__}: {exc})")
        return
    for access in accesses:
        if isinstance(access, str):  # a precondition that failed
            proof.fail(f"{where}: {access}")
            continue
        arg, nbytes, what = access
        arg = arg.arg if isinstance(arg, Cast) else arg
        if isinstance(arg, Arena):
            _check_arena_access(where, step, arg.offset, nbytes, what, plan, proof, arg.tensor if own_buffers else None)
        elif isinstance(arg, Const):
            if nbytes > arg.nbytes:
                proof.fail(f"{where} reads {nbytes} bytes of {what} from {arg.symbol}, which holds {arg.nbytes}")
        elif nbytes:
            proof.fail(f"{where}: {what} ({nbytes} bytes) is not an arena pointer or a constant array ({arg!r})")


def _check_arena_access(where: str, step: int, offset: int, nbytes: int, what: str, plan, proof,
                        tensor=None) -> None:
    if nbytes < 0 or offset < 0 or offset + nbytes > plan.arena_bytes:
        proof.fail(f"{where} accesses {nbytes} bytes of {what} at arena offset {offset}, outside the arena of "
                   f"{plan.arena_bytes} bytes")
        return
    live = [b for b in plan.buffers if b.first <= step <= b.last]
    if tensor is not None:
        live = [b for b in live if any(t is tensor for t in b.tensors) and b.kind != "scratch"]
        if nbytes and not any(b.offset <= offset and offset + nbytes <= b.offset + b.size for b in live):
            proof.fail(f"{where} accesses {nbytes} bytes of {what} at arena offset {offset}, outside the buffer of "
                       f"'{tensor.name}' live at this layer (a stripe out of its rows)")
        return
    if nbytes and not any(b.offset <= offset and offset + nbytes <= b.offset + b.size for b in live):
        proof.fail(f"{where} accesses {nbytes} bytes of {what} at arena offset {offset}, which is not inside one "
                   "buffer live at this layer (it would overwrite or read another tensor)")
