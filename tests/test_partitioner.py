"""BYOC-style partitioning: priority order, named constraint reasons, region merging, fallback errors."""

import pytest

from edgesdk.errors import UnsupportedOpError
from edgesdk.ir.graph import Graph, Op, Tensor
from edgesdk.partition.partitioner import annotate, merge_regions, partition, reason_of, target_of
from edgesdk.partition.target import TargetSupport


def small_kernel(op):
    """Kernel height must be at most 3."""
    k = op.attrs.get("k", 1)
    return k <= 3, f"kernel height {k}"


def any_op(op):
    """Anything goes."""
    return True, ""


ACCEL = TargetSupport("accel", {"CONV_2D": [small_kernel], "ADD": []})
HOST = TargetSupport("host", {"CONV_2D": [any_op], "ADD": [any_op], "SOFTMAX": [any_op]})


def _graph(specs):
    """specs: list of (type, attrs); ops chained through fresh tensors."""
    tensors = [Tensor(0, "in", (4,), "int8")]
    ops = []
    for i, (kind, attrs) in enumerate(specs):
        tensors.append(Tensor(i + 1, f"t{i + 1}", (4,), "int8"))
        ops.append(Op(i, kind, [tensors[i]], [tensors[i + 1]], attrs))
    return Graph("g", tensors, ops, [tensors[0]], [tensors[-1]])


def test_priority_order_and_reason_names_failed_constraint():
    g = _graph([("CONV_2D", {"k": 3}), ("CONV_2D", {"k": 5}), ("SOFTMAX", {})])
    regions = partition(g, ["accel", "host"], [ACCEL, HOST])
    targets, reasons = target_of(regions), reason_of(regions)
    assert [targets[op] for op in g.ops] == ["accel", "host", "host"]
    assert "small_kernel" in reasons[g.ops[1]] and "Kernel height must be at most 3" in reasons[g.ops[1]]
    assert "accel has no SOFTMAX" in reasons[g.ops[2]]
    assert not any(hasattr(op, "target") or hasattr(op, "reason") for op in g.ops)  # the IR is not written
    assert [(r.target, [o.index for o in r.ops]) for r in regions] == [("accel", [0]), ("host", [1, 2])]


def test_adjacent_ops_on_same_target_merge_into_one_region():
    g = _graph([("CONV_2D", {}), ("ADD", {}), ("SOFTMAX", {}), ("CONV_2D", {}), ("ADD", {})])
    regions = merge_regions(g.ops, annotate(g, ["accel", "host"], [ACCEL, HOST]))
    assert [(r.target, len(r.ops)) for r in regions] == [("accel", 2), ("host", 1), ("accel", 2)]


def test_single_target_takes_everything():
    g = _graph([("CONV_2D", {"k": 7}), ("SOFTMAX", {})])
    regions = partition(g, ["host"], [HOST])
    assert len(regions) == 1 and regions[0].target == "host"


def test_op_no_target_supports_is_named_with_location():
    g = _graph([("CONV_2D", {"k": 9}), ("MEAN", {})])
    with pytest.raises(UnsupportedOpError) as err:
        partition(g, ["accel"], [ACCEL])
    text = str(err.value)
    assert "operator #0 (CONV_2D" in text and "small_kernel" in text
    assert "operator #1 (MEAN" in text and "2 operator(s)" in text


def test_remembered_answers_ask_each_constraint_once_per_op_within_a_build():
    asked = []

    def counted(op):
        """Counts its calls."""
        asked.append(op)
        return op.attrs.get("k", 1) <= 3, ""

    accel = TargetSupport("accel", {"CONV_2D": [counted]})
    g = _graph([("CONV_2D", {"k": 3}), ("CONV_2D", {"k": 5})])
    from edgesdk.partition.target import remembered_answers

    with remembered_answers():
        first = [accel.check(op, ("ref",)) for op in g.ops]
        again = [accel.check(op, ("ref",)) for op in g.ops]  # what a target's codegen asks before lowering
        assert accel.check(g.ops[0], ("tflm",)) == first[0]  # another rounding mode is another question
    assert first == again and first[0] == (True, "") and not first[1][0]
    assert len(asked) == 3
    g.ops[1].attrs["k"] = 1  # outside a build nothing is remembered: a changed op gets a new answer
    assert accel.check(g.ops[1]) == (True, "") and len(asked) == 4
