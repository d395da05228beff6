"""WHILE and IF on the host: the loop and the branches are C statements of the run function, around the inlined
ops of the subgraphs (edgesdk/importer/control_flow.py); the data moves between the op and its subgraphs are
byte copies (edgesdk_reshape, a memmove that skips a copy onto itself).

    WHILE  init: loop variables <- inputs      loop: for (;;) {      test: if (!cond) { break; }
           copy: result -> its copy aside        next: loop variables <- results     end: }
    IF     if: if (cond) {     results: outputs <- branch results     else: } else {     end: }
"""

from __future__ import annotations

from ....ops.control_flow import IF_PARTS, WHILE_PARTS, part
from ..emit import Emit, c_op, footprint

STATEMENTS = {  # (op type, part) -> (footprint rule name, C text (str.format), whether it reads the condition)
    ("WHILE", "loop"): ("edgesdk_while_loop", "for (;;) {{", False),
    ("WHILE", "test"): ("edgesdk_while_test", "if (!*{0}) {{\n    break;\n}}", True),
    ("WHILE", "end"): ("edgesdk_block_end", "}}", False),
    ("IF", "if"): ("edgesdk_if_then", "if (*{0}) {{", True),
    ("IF", "else"): ("edgesdk_if_else", "}} else {{", False),
    ("IF", "end"): ("edgesdk_block_end", "}}", False),
}
NOTES = {
    ("WHILE", "init"): "loop variables <- the WHILE's inputs",
    ("WHILE", "loop"): "the loop: condition, then body, until the condition is false",
    ("WHILE", "test"): "leave the loop unless the condition holds",
    ("WHILE", "copy"): "a body result set aside before the loop variables change",
    ("WHILE", "next"): "loop variables <- the body's results",
    ("WHILE", "end"): "end of the loop",
    ("IF", "if"): "the then branch runs if the condition holds",
    ("IF", "results"): "outputs <- the branch's results",
    ("IF", "else"): "otherwise the else branch",
    ("IF", "end"): "end of the branches",
}


def known_part(op):
    """The subgraphs are inlined into the schedule; the loop, its test and the branches run as C statements"""
    parts = WHILE_PARTS if op.type == "WHILE" else IF_PARTS
    return part(op) in parts, f"part {part(op)!r}" if part(op) else "not inlined"


def copies_keep_type_and_size(op):
    """Data moves between the op and its subgraphs as byte copies of the same type and number of elements"""
    if part(op) in STATEMENT_PARTS.get(op.type, ()):
        return True, ""
    bad = [(x, y) for x, y in zip(op.inputs, op.outputs)
           if x.dtype != y.dtype or x.num_elements != y.num_elements]
    if len(op.inputs) != len(op.outputs) or bad:
        return False, ", ".join(f"{x.dtype}{list(x.shape)} -> {y.dtype}{list(y.shape)}" for x, y in bad) or \
            f"{len(op.inputs)} values for {len(op.outputs)} tensors"
    return True, ""


STATEMENT_PARTS = {t: {p for (u, p) in STATEMENTS if u == t} for t in ("WHILE", "IF")}


@c_op("WHILE", "IF", constraints=[known_part, copies_keep_type_and_size], headers=("edgesdk_reshape.h",),
      sources=("edgesdk_reshape.c",))
def emit_control_flow(e: Emit):
    key = (e.op.type, part(e.op))
    e.layer.note = NOTES.get(key, "")
    if key in STATEMENTS:
        kernel, text, reads_condition = STATEMENTS[key]
        return e.layer.statement(kernel, text, *([e.tensor(e.op.inputs[0])] if reads_condition else []))
    for x, y in e.data.pairs:  # init, copy, next, results: byte copies, in order (edgesdk/ops/control_flow.py)
        if x is y:
            continue  # a loop variable the body passes through unchanged
        e.call("edgesdk_reshape", e.int(y.nbytes), e.tensor(x), e.arena(y))
    return e.layer


@footprint("edgesdk_while_loop", "edgesdk_block_end", "edgesdk_if_else")
def no_footprint(call, op) -> list:
    """Statements that touch no memory."""
    return [] if not call.args else ["a statement without operands was given some"]


@footprint("edgesdk_while_test", "edgesdk_if_then")
def condition_footprint(call, op) -> list:
    """The condition: one bool byte."""
    (condition,) = call.args
    return [(condition, 1, "condition")]
