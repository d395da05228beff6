"""The schedule a build is applying, as the code generators see it.

`compile_model` runs its passes inside `applying(schedule)`; the NPU and host C code generators ask
`layer_choice(op, name, default)` for their per-layer switches (weight compression, paired FC layout). With
no schedule (every default build) the answer is always `default`, so default builds are unchanged.

A context variable rather than a field of the codegen context: the switches must reach every lowering of
the build, including the dry lowerings done while sizing scratch and costing cascade groups, which create
contexts of their own.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_ACTIVE: ContextVar = ContextVar("edgesdk_tuning_schedule", default=None)


@contextmanager
def applying(schedule):
    """Make `schedule` (edgesdk.tune.schedule.Schedule or None) the active one for the enclosed passes."""
    token = _ACTIVE.set(schedule)
    try:
        yield schedule
    finally:
        _ACTIVE.reset(token)


def active_schedule():
    return _ACTIVE.get()


def layer_choice(op, name: str, default: bool) -> bool:
    """The active schedule's switch `name` ("compress_weights" or "fc_paired") for `op`, else `default`."""
    schedule = _ACTIVE.get()
    if schedule is None or not op.file_operator:  # ops inlined from WHILE / IF subgraphs keep the defaults
        return default
    value = schedule.switch(op.index, name)
    return default if value is None else value
