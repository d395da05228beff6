"""Control flow: WHILE and IF, whose bodies are other subgraphs of the .tflite file.

The schemas and rules here are what the importer checks on the operators as the file has them (TFLite's
Prepare: WHILE passes N tensors through a condition and a body subgraph and has N outputs; IF's first input is a
one-element bool condition, the others go to the branch that runs). edgesdk/importer/control_flow.py then inlines
the subgraphs into the graph's one schedule: each WHILE or IF becomes a few ops of the same type, its *parts*
(`attrs["part"]`), around the inlined ops of its subgraphs:

    WHILE  "init" (inputs -> loop variables)  "loop" (the loop begins)  cond ops  "test" (leave the loop unless
           the condition holds)  body ops  "copy" (a body result set aside before the loop variables change)
           "next" (body results -> loop variables)  "end" (of the loop)
    IF     "if" (the then branch runs if the condition holds)  then ops  "results" (then results -> outputs)
           "else" (otherwise the else branch runs)  else ops  "results" (else results -> outputs)  "end"
    both   "copy" (a subgraph input whose type, shape or quantization differs from the tensor passed in gets its
           own copy)

Nothing is computed at build time: the parts only copy bytes and steer the execution (TFLite copies tensor data
between the op and its subgraphs the same way, whatever the quantization parameters say).
"""

from __future__ import annotations

from ..dataclass_cache import dataclass
from .base import OpDef, Operands, op_error
from . import register

WHILE_PARTS = ("init", "loop", "test", "copy", "next", "end")
IF_PARTS = ("if", "results", "else", "end", "copy")


COPY_PARTS = ("init", "copy", "next", "results")


def part(op) -> str | None:
    """The control-flow part an inlined WHILE/IF op plays (None: the operator as read from the file)."""
    return op.attrs.get("part")


@dataclass(frozen=True)
class Copies:
    """What a copying part does: (source, destination) tensors, copied in this order."""

    pairs: tuple


def copies(op, mode: str) -> Copies | None:
    """The copies of a part that moves data (init, copy, next, results); None for the others.

    The loop variables' update ("next") is where the references differ. A body result that is another loop
    variable passed on unchanged (`attrs["passthrough"]`: result j is variable k): TFLite Micro updates every
    variable from the body's results at once (edgesdk sets such a result aside first); LiteRT updates them one
    after the other in place (its body reads the WHILE's outputs), so variable j gets variable k's value as
    already updated in this same step when k < j. docs/rounding.md, "Control flow"."""
    if part(op) not in COPY_PARTS:
        return None
    pairs = list(zip(op.inputs, op.outputs))
    if part(op) == "next" and str(mode) == "ref":
        for j, k in op.attrs.get("passthrough", {}).items():
            pairs[j] = (op.outputs[k], op.outputs[j])
    return Copies(tuple(pairs))


@register
class While(OpDef):
    types = ("WHILE",)
    operands = Operands(inputs=(), repeated="loop_variable", repeated_output=True)
    options = "WhileOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"cond_subgraph": int(options.get("cond_subgraph_index", -1)),
                "body_subgraph": int(options.get("body_subgraph_index", -1))}

    def check(self, op) -> None:
        if part(op) is not None:
            return
        if len(op.inputs) != len(op.outputs):
            raise op_error(op, f"has {len(op.inputs)} loop variables but {len(op.outputs)} outputs")
        if any(t is None for t in op.inputs):
            raise op_error(op, "omits a loop variable")

    def prepare(self, op, mode: str):
        return copies(op, mode)


@register
class If(OpDef):
    types = ("IF",)
    operands = Operands(inputs=(), repeated="input", repeated_output=True)
    options = "IfOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"then_subgraph": int(options.get("then_subgraph_index", -1)),
                "else_subgraph": int(options.get("else_subgraph_index", -1))}

    def check(self, op) -> None:
        if part(op) is not None:
            return
        cond = op.inputs[0]
        if cond is None or cond.dtype != "bool" or cond.num_elements != 1:
            what = "no condition" if cond is None else f"condition '{cond.name}' {cond.dtype}{list(cond.shape)}"
            raise op_error(op, f"has {what}; IF needs a bool condition of one element")
        if any(t is None for t in op.inputs[1:]):
            raise op_error(op, "omits an input")

    def prepare(self, op, mode: str):
        return copies(op, mode)


OPENING_PARTS = ("loop", "if")  # the blocks after these run in the loop or a branch, up to the matching "end"


def is_part(op) -> bool:
    return op.type in ("WHILE", "IF") and part(op) is not None


def control_flow_units(ops: list) -> list:
    """`ops` (a schedule) cut into units that run on their own: one op, or a whole inlined WHILE / IF with
    everything nested in it, from its "init" / "if" part to its "end". Ops inside a loop or a branch only mean
    something as part of their unit: they run several times, or not at all."""
    units, current, depth = [], None, 0
    for op in ops:
        if current is None:
            current = [op]
            if not (is_part(op) and part(op) in ("init", "if")):
                units.append(current)
                current = None
                continue
        else:
            current.append(op)
        if is_part(op):
            depth += (part(op) in OPENING_PARTS) - (part(op) == "end")
            if depth == 0 and part(op) == "end":
                units.append(current)
                current = None
    if current is not None:
        units.append(current)
    return units
