"""What a target declares to the partitioner: which ops it runs, under which named constraints.

A constraint is a small function `(op) -> (ok, detail)` whose docstring states the rule (as in Vela's
supported-operators tables); the supported-ops report and `edgesdk inspect` are generated from those
docstrings. A target lists, per TFLite op type, the constraints that op must satisfy there. A constraint whose
rule depends on the reference the build matches takes the build's rounding modes as a second parameter named
`modes` (`(op, modes) -> (ok, detail)`): the partitioner passes the build's own mode, and both TFLite
references when none is known yet (`edgesdk inspect`).
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Callable
from ..dataclass_cache import dataclass, field

# The rounding modes a constraint must hold for when the build's own is not known (edgesdk inspect).
UNKNOWN_MODES = ("ref", "tflm")

# Inside remembered_answers(): (id of the TargetSupport, op, modes) -> (the TargetSupport, its answer).
_ANSWERS: ContextVar = ContextVar("edgesdk_target_support_answers", default=None)


@contextmanager
def remembered_answers():
    """While it is open, each target's answer for an op (TargetSupport.failure) is worked out once: for one
    build, whose passes never change an op (the partitioner asks, then a target's codegen asks again before it
    lowers the op; the NPU's last rule lowers and checks the op's commands, which is not cheap)."""
    token = _ANSWERS.set({})
    try:
        yield
    finally:
        _ANSWERS.reset(token)


@lru_cache(maxsize=None)
def _takes_modes(fn: Callable) -> bool:
    code = getattr(fn, "__code__", None)
    if code is not None and not hasattr(fn, "__wrapped__") and not hasattr(fn, "__signature__"):
        # a plain function: its parameter names, without inspect.signature's cost (~0.2 ms each, per process)
        return "modes" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return "modes" in inspect.signature(fn).parameters


def run_constraint(fn: Callable, op, modes: tuple = UNKNOWN_MODES) -> tuple:
    """(ok, detail) of constraint `fn` for `op`, given the build's rounding modes if the rule depends on them."""
    return fn(op, modes) if _takes_modes(fn) else fn(op)


def constraint_rule(fn: Callable) -> str:
    """The one-line rule a constraint enforces: the first line of its docstring."""
    return (fn.__doc__ or fn.__name__).strip().splitlines()[0]


@dataclass(frozen=True)
class Failure:
    """A target's answer for an op it cannot run: the constraint that failed (empty: no such op at all)."""

    target: str
    constraint: str
    rule: str
    detail: str

    @property
    def text(self) -> str:
        if not self.constraint:
            return self.rule
        return f"{self.constraint}: {self.rule}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class TargetSupport:
    """The op table of one target.

    `ops` maps an op type to the constraints it must meet on this target; `generic` constraints apply to
    every op the target takes.
    """

    name: str
    ops: dict  # op type -> list of constraint functions
    generic: list = field(default_factory=list)

    def supports_type(self, op_type: str) -> bool:
        return op_type in self.ops

    def failure(self, op, modes: tuple = UNKNOWN_MODES) -> "Failure | None":
        """Why `op` cannot run on this target (the first constraint that fails) in a build for rounding `modes`,
        or None when it can."""
        answers = _ANSWERS.get()
        if answers is None:
            return self._failure(op, modes)
        key = (id(self), op, tuple(modes))
        if key not in answers:
            answers[key] = (self, self._failure(op, modes))  # (self kept alive: its id stays unique)
        return answers[key][1]

    def _failure(self, op, modes: tuple) -> "Failure | None":
        if op.type not in self.ops:
            return Failure(self.name, "", f"{self.name} has no {op.type} operation", "")
        for fn in (*self.generic, *self.ops[op.type]):
            ok, detail = fn(op, modes) if _takes_modes(fn) else fn(op)  # run_constraint, inline (~600 per model)
            if not ok:
                return Failure(self.name, fn.__name__, constraint_rule(fn), detail)
        return None

    def check(self, op, modes: tuple = UNKNOWN_MODES) -> tuple[bool, str]:
        """(True, "") when `op` can run on this target, else (False, "<constraint>: <rule> (<detail>)")."""
        failure = self.failure(op, modes)
        return (True, "") if failure is None else (False, failure.text)

    def rules(self) -> dict:
        """op type -> list of (constraint name, rule) for reports."""
        return {t: [(fn.__name__, constraint_rule(fn)) for fn in [*self.generic, *fns]] for t, fns in self.ops.items()}
