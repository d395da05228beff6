"""One NPU region (consecutive IR ops) -> the commands of one NPU-1 command table.

`lower_ops(ops, ctx)` checks each op against the NPU's constraints (supported.NPU_SUPPORT) in the build's
reference, lowers it with its codegen lowering (codegen.WHOLE_LOWERINGS, else codegen.LOWERINGS), or its cascade group in stripes
(stripes.lower_group), and returns the commands in op order, ending with `End`. The context is codegen's.
A group that streams a graph input puts `stripes.ReadInputRows` markers among them (`split_tables`).
"""

from __future__ import annotations

from ...errors import UnsupportedOpError
from ...ops.stripes import groups_by_op
from . import pointwise
from .codegen import LOWERINGS, WHOLE_LOWERINGS, lower_pointwise, mode_of
from .hw import cmdtable as C
from .stripes import lower_group
from .supported import NPU_SUPPORT


def lower_ops(ops, ctx) -> list:
    """Commands for one NPU region, in order, ending with the completion command."""
    commands = []
    groups = groups_by_op(ctx.plan.cascades if ctx.plan is not None else ())  # run in stripes (stripes.py)
    tabulated = [op for op in ops if LOWERINGS.get(op.type) is lower_pointwise]
    if tabulated and not getattr(ctx, "probing", False):
        pointwise.evaluate(tabulated, mode_of(ctx))  # every table of the region from one host library
    for op in ops:
        ok, reason = NPU_SUPPORT.check(op, (ctx.rounding_mode,))
        if not ok:
            raise UnsupportedOpError(f"{op.location} cannot run on the NPU: {reason}. Assign it to the 'c' target.")
        if op not in groups:
            commands.extend(WHOLE_LOWERINGS.get(op.type, LOWERINGS[op.type])(op, ctx))
        elif op is groups[op].ops[0]:
            commands.extend(lower_group(groups[op], ctx, lambda member: LOWERINGS[member.type](member, ctx)))
    commands.append(C.End(note="end of NPU region"))
    return commands


def lower_stripe_run(part, ctx) -> list:
    """Commands for one run of a cascade group that crosses targets (ops.stripes.GroupPart), ending with `End`:
    the CPU runs the other targets' layers after it. Each op's whole command (its weights placed in the blob)
    is made once per build and shared by every run of its stripes."""
    whole = ctx.data("npu-cross-target-commands", dict)
    for op in part.ops:
        if op not in whole:
            ok, reason = NPU_SUPPORT.check(op, (ctx.rounding_mode,))
            if not ok:
                raise UnsupportedOpError(f"{op.location} cannot run on the NPU: {reason}. Assign it to the 'c' "
                                         "target.")
            whole[op] = LOWERINGS[op.type](op, ctx)
    commands = lower_group(part, ctx, lambda member: whole[member])
    return commands + [C.End(note="end of NPU stripes: the CPU goes on with the group")]


def split_tables(commands: list) -> list:
    """A region's commands split at its ReadInputRows markers: [(markers, commands of one table)], each table
    ending with END; the CPU runs its markers' reads before its table."""
    from .stripes import ReadInputRows

    parts, markers, current = [], [], []
    for command in commands:
        if isinstance(command, ReadInputRows):
            if current:
                parts.append((markers, current + [C.End(note="end of NPU region part: the CPU reads input rows")]))
                markers, current = [], []
            markers.append(command)
        else:
            current.append(command)
    parts.append((markers, current))
    return parts
