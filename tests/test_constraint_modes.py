"""The partitioner tells a constraint that takes the build's rounding modes from one that does not by its
parameters (edgesdk/partition/target.py _takes_modes, read from the function's code where it can)."""

import functools
import inspect

from edgesdk.partition.target import _takes_modes
from edgesdk.targets import get_target


def test_every_builtin_constraint_is_read_as_inspect_reads_it():
    checked = 0
    for name in ("npu", "c"):
        support = get_target(name).support
        for op_type in list(support.ops):
            for fn in [*support.generic, *support.ops[op_type]]:
                assert _takes_modes(fn) == ("modes" in inspect.signature(fn).parameters), fn
                checked += 1
    assert checked > 100


def test_wrapped_and_keyword_constraints():
    def plain(op):
        return True, ""

    def with_modes(op, modes):
        return True, ""

    def keyword_modes(op, *, modes=()):
        return True, ""

    @functools.wraps(with_modes)
    def wrapper(*args):
        return with_modes(*args)

    assert not _takes_modes(plain) and _takes_modes(with_modes) and _takes_modes(keyword_modes)
    assert _takes_modes(wrapper)  # follows __wrapped__, as inspect.signature does
