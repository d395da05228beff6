"""Build-time proof that the generated firmware stays inside its memory plan, whatever the model says.

The compiler passes check the model as they go; this pass re-checks their *output*, independently, right
before anything is written. It reads what the firmware will contain and proves:

1. the memory plan: every buffer lies inside the arena, and no two buffers that are live at the same step
   share a byte (except where an in-place rule permits it, recomputed by memory_plan.verify_plan);
2. sizes: every size that becomes a C array bound or a memcpy length is positive and fits the 32-bit
   target (no integer overflow), and every integer literal in the executor fits an int32;
3. every graph output is written: the slot the caller reads (executor output) is the planned slot of a graph
   output tensor, of its size, and that tensor is an output of an op compiled into some region (or a graph
   input the caller writes) -- a graph output no op writes would return uninitialized SRAM (issue 12 item 6);
4. each target's own output (Target.verify), with the plan and this proof's `fail`/`count`: the C target its
   host layers from their structured calls (edgesdk/targets/c/proof.py), the NPU its command tables
   (edgesdk/targets/npu/proof.py), the DSP its serialized graphs, a plugin whatever it generates.

A failure raises VerificationError: no output is written. Every rule here is also documented in
docs/reliability.md.
"""

from __future__ import annotations

import re
from collections import Counter

from .dataclass_cache import dataclass, field
from .errors import ModelError

INT32_MAX = (1 << 31) - 1
INT32_MIN = -(1 << 31)
# A C object on the 32-bit target must be smaller than PTRDIFF_MAX.
MAX_OBJECT_BYTES = INT32_MAX
C_TYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "float": 4,
                "double": 8}


class VerificationError(ModelError):
    """The build-time safety proof failed: the firmware would access memory outside its plan."""


@dataclass
class Proof:
    """What was proven (counts for report.json) and what failed. Targets record through `fail` and `count`."""

    counts: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)

    def fail(self, text: str) -> None:
        """Record a violation: the build is refused."""
        self.failures.append(text)

    def count(self, what: str, n: int = 1) -> None:
        """Record that `n` more things of kind `what` were proven (e.g. a target's "<target>_commands")."""
        self.counts[what] += n


def verify_build(compiled) -> dict:
    """Prove the compiled model safe (see the module docstring); return counts for the report.

    `compiled` is edgesdk.compiler.Compiled. Raises VerificationError listing every failed check."""
    proof = Proof()
    plan, executor = compiled.plan, compiled.executor
    _check_plan(plan, compiled.graph, proof)
    _check_sizes(executor, proof)
    _check_outputs_written(compiled, proof)
    if not proof.failures:  # later checks rely on a sound plan and sizes
        _check_targets(compiled, proof)
    if proof.failures:
        shown = "; ".join(proof.failures[:8]) + (f"; and {len(proof.failures) - 8} more" if len(proof.failures) > 8 else "")
        raise VerificationError(
            f"edgesdk refused to write firmware for {compiled.graph.name}: the build-time safety proof failed "
            f"({shown}), so nothing was written: firmware built from it could access memory outside its plan or "
            "compute with undefined C arithmetic. The model's shapes, sizes or quantization parameters are "
            "inconsistent or out of range in a way the earlier checks did not catch; if the model runs in "
            "TFLite, this is an edgesdk bug: please report it with the model.")
    return dict(proof.counts)


# -- 1. memory plan ------------------------------------------------------------------------------------------
def _check_plan(plan, graph, proof: Proof) -> None:
    fail = proof.failures.append
    arena = plan.arena_bytes
    if not 0 < arena <= MAX_OBJECT_BYTES:
        fail(f"arena of {arena} bytes is not a valid C array size")
    for buf in plan.buffers:
        proof.count("buffers")
        if buf.offset is None or buf.size < 0 or buf.offset < 0 or buf.offset + buf.size > arena:
            fail(f"buffer '{buf.name}' at {buf.offset}+{buf.size} is outside the arena of {arena} bytes")
    # An intermediate of a cascade group only ever has a few rows in its stripe buffer: the NPU descriptors
    # and the host stripe calls that address it are each proven inside a live buffer (part 4), and verify_plan
    # recomputes the stripe buffer's size from the group's schedule.
    striped = {id(t) for b in plan.buffers if b.kind == "stripe" for t in b.tensors}
    holders = {}  # tensor -> the buffers that hold it (one, normally)
    for b in plan.buffers:
        if b.kind != "scratch":
            for t in b.tensors:
                holders.setdefault(id(t), []).append(b)
    for tensor in graph.activation_tensors():
        offset = plan.offsets.get(tensor)
        need = 1 if id(tensor) in striped else tensor.nbytes
        if offset is None:
            fail(f"tensor '{tensor.name}' has no place in the memory plan")
        elif not any(b.offset is not None and b.offset <= offset and offset + need <= b.offset + b.size
                     for b in holders.get(id(tensor), [])):
            fail(f"tensor '{tensor.name}' ({tensor.nbytes} bytes at {offset}) does not fit its planned buffer")
    # In-place execution: an op's output may overlap the input that dies at that op, where the op's rule
    # allows it (or a cascade group's output the input that dies in the group). memory_plan.verify_plan
    # recomputes each such permission from the op or the group's schedule, and each cascade group's stripe
    # buffers; every other pair of co-live buffers must be disjoint.
    permitted = {frozenset((id(o.output), id(o.input))) for o in getattr(plan, "overlaps", [])}
    if permitted or striped or getattr(plan, "cascades", None):
        from .aot.memory_plan import verify_plan
        try:
            verify_plan(plan)
        except AssertionError as exc:
            fail(str(exc))
    # Every pair of buffers live at a common step that share a byte (a sweep over the steps, not a test per
    # pair: memory_plan.co_live_overlaps) must be a permitted in-place overlap.
    from .aot.memory_plan import co_live_overlaps

    placed = [b for b in plan.buffers if b.offset is not None and b.size >= 0]
    for i, j in co_live_overlaps(placed):
        a, b = placed[i], placed[j]
        if frozenset((id(a), id(b))) not in permitted:
            fail(f"buffers '{a.name}' and '{b.name}' are live together (steps {max(a.first, b.first)}.."
                 f"{min(a.last, b.last)}) and share bytes {max(a.offset, b.offset)}..{min(a.offset + a.size, b.offset + b.size) - 1}")


# -- 2. sizes --------------------------------------------------------------------------------------------------
def _check_sizes(executor, proof: Proof) -> None:
    fail = proof.failures.append
    for const in executor.consts:
        proof.count("const_arrays")
        nbytes = len(const.values) * C_TYPE_BYTES.get(const.ctype, 8)
        if not 0 < len(const.values) or nbytes > MAX_OBJECT_BYTES:
            fail(f"constant array {const.symbol} of {len(const.values)} elements is not a valid C array")
    for blob in executor.blobs.values():
        if len(blob.data) > MAX_OBJECT_BYTES:
            fail(f"blob {blob.name} of {len(blob.data)} bytes is too large for the 32-bit target")
    for io in list(executor.inputs) + list(executor.outputs):
        if getattr(io, "streamed", False):  # no slot: its rows go to its stripe buffer (the plan's proof)
            if not 0 < io.nbytes <= MAX_OBJECT_BYTES or io.arena_offset is not None:
                fail(f"streamed model input '{io.model_name}' ({io.nbytes} bytes) has an arena slot or a bad size")
            continue
        if not 0 < io.nbytes <= MAX_OBJECT_BYTES or io.arena_offset < 0 or io.arena_offset + io.nbytes > executor.arena_bytes:
            fail(f"model input/output '{io.model_name}' ({io.nbytes} bytes at arena offset {io.arena_offset}) "
                 f"is outside the arena of {executor.arena_bytes} bytes")
    texts = list(executor.declarations) + [step.code for step in executor.steps]
    for text in texts:
        for literal in _integer_literals(text):
            if not INT32_MIN <= literal <= INT32_MAX:
                fail(f"integer {literal} in the generated executor does not fit an int32")


_HEX_FLOAT = re.compile(r"0x[0-9a-fA-F]*\.?[0-9a-fA-F]*p[-+]?\d+f?")
_INTEGER = re.compile(r"(?<![\w.])(-?\d+)u?(?![\w.])")


def _integer_literals(text: str) -> list:
    return [int(m.group(1)) for m in _INTEGER.finditer(_HEX_FLOAT.sub(" ", text))]


# -- 3. every graph output is written ----------------------------------------------------------------------
def _check_outputs_written(compiled, proof: Proof) -> None:
    """Each output slot of the executor is a graph output's planned slot, and some compiled op writes that tensor.
    The importer checks each op's outputs against its schema (a RELU has one output); this re-checks the result
    after partitioning, folding and planning, whatever produced it."""
    fail = proof.failures.append
    graph, plan, executor = compiled.graph, compiled.plan, compiled.executor
    written = {id(t) for t in graph.inputs}  # the caller writes those
    for region in compiled.regions:
        for op in region.ops:
            written.update(id(t) for t in op.outputs if t is not None)
    if len(executor.outputs) != len(graph.outputs):
        fail(f"the executor returns {len(executor.outputs)} outputs, the graph has {len(graph.outputs)}")
    for tensor, slot in zip(graph.outputs, executor.outputs):
        proof.count("outputs_written")
        if id(tensor) not in written:
            fail(f"graph output '{tensor.name}' is written by no compiled operator (the firmware would return "
                 "uninitialized memory)")
        elif plan.offsets.get(tensor) != slot.arena_offset or slot.nbytes != tensor.nbytes:
            fail(f"output slot '{slot.model_name}' ({slot.nbytes} bytes at {slot.arena_offset}) is not the planned "
                 f"slot of graph output '{tensor.name}' ({tensor.nbytes} bytes at {plan.offsets.get(tensor)})")


# -- 4. targets: each proves its own output (the C target its host layers, edgesdk/targets/c/proof.py) ----------
def _check_targets(compiled, proof: Proof) -> None:
    """Each target of the build proves its own generated data (Target.verify: the DSP's blobs, a plugin's)."""
    from .targets import get_target

    for name in dict.fromkeys(region.target for region in compiled.regions):
        get_target(name).verify(compiled, proof)
        proof.count("target_checks")
