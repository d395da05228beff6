"""Resource variables: VAR_HANDLE, CALL_ONCE, READ_VARIABLE, ASSIGN_VARIABLE.

Their schemas here are what the importer checks; edgesdk/importer/variables.py then lowers them: VAR_HANDLE and
CALL_ONCE disappear, READ_VARIABLE becomes a copy of a persistent state tensor into a tensor, ASSIGN_VARIABLE a
copy of a tensor into the state (its input is then the value, its output the state)."""

from __future__ import annotations

from .base import OpDef, Operands, op_error
from . import register


@register
class VarHandle(OpDef):
    types = ("VAR_HANDLE",)
    operands = Operands(inputs=(), outputs=("resource",))
    options = "VarHandleOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"options": options}


@register
class CallOnce(OpDef):
    types = ("CALL_ONCE",)
    operands = Operands(inputs=(), outputs=())
    options = "CallOnceOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"options": options}


@register
class ReadVariable(OpDef):
    types = ("READ_VARIABLE",)
    operands = Operands(inputs=("resource",), outputs=("value",))


@register
class AssignVariable(OpDef):
    """After lowering: inputs [value], outputs [state]."""

    types = ("ASSIGN_VARIABLE",)
    operands = Operands(inputs=("resource", "value"), outputs=())

    def check(self, op) -> None:
        if op.inputs[1].is_const and not op.inputs[1].shape and op.inputs[1].num_elements == 0:
            raise op_error(op, "assigns an empty value")
