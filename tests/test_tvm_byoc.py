"""Export to TVM: edgesdk's target patterns as Relax BYOC patterns give `edgesdk inspect`'s partition."""

from __future__ import annotations

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed: pip install '.[tvm]' (docs/tvm-interop.md)")

from conftest import model_path  # noqa: E402
from edgesdk.importer import import_tflite  # noqa: E402
from edgesdk.partition.partitioner import annotate, merge_regions  # noqa: E402
from edgesdk.tvm.byoc import offloaded_ops, partition_for_edgesdk, register_edgesdk_patterns  # noqa: E402


def _relax(name):
    import tflite
    from tvm.relax.frontend.tflite import from_tflite

    return from_tflite(tflite.Model.GetRootAsModel(model_path(name).read_bytes(), 0))


def _inspect(name, targets=("npu", "c")):
    graph = import_tflite(model_path(name))
    return graph, annotate(graph, list(targets))


@pytest.mark.parametrize("name", ["kws", "ic"])
def test_composite_functions_are_the_ops_edgesdk_inspect_puts_on_the_npu(name):
    part = partition_for_edgesdk(_relax(name), "npu")
    offloaded = offloaded_ops(part)
    graph, choices = _inspect(name)
    npu_ops = [op for op in graph.ops if choices[op].target == "npu"]
    assert [op.type for _, _, op in offloaded] == [op.type for op in npu_ops]
    assert [op.outputs[0].shape for _, _, op in offloaded] == [op.outputs[0].shape for op in npu_ops]
    # MergeCompositeFunctions' functions are edgesdk's NPU regions.
    npu_regions = [r for r in merge_regions(graph.ops, choices) if r.target == "npu"]
    assert len({region for region, _, _ in offloaded}) == len(npu_regions)
    assert all(composite.startswith("edgesdk_npu.") for _, composite, _ in offloaded)


def test_patterns_check_the_target_constraints():
    """SOFTMAX has a pattern, but the NPU's table has no SOFTMAX: the C target's patterns take it."""
    npu = [op.type for _, _, op in offloaded_ops(partition_for_edgesdk(_relax("kws"), "npu"))]
    host = [op.type for _, _, op in offloaded_ops(partition_for_edgesdk(_relax("kws"), "c"))]
    assert "SOFTMAX" not in npu and "SOFTMAX" in host
    assert host == [op.type for op in import_tflite(model_path("kws")).ops]


def test_registered_patterns_work_with_fuse_ops_by_pattern():
    from tvm import relax
    from tvm.relax.backend.pattern_registry import get_patterns_with_prefix

    register_edgesdk_patterns("npu")
    patterns = get_patterns_with_prefix("edgesdk_npu")
    assert patterns and patterns[0].name == "edgesdk_npu.conv2d_clip"  # highest priority first
    mod = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False)(_relax("kws"))
    mod = relax.transform.MergeCompositeFunctions()(mod)
    assert [op.type for _, _, op in offloaded_ops(mod)] == [op.type for op, choice in _inspect("kws")[1].items() if choice.target == "npu"]


def test_registering_without_targets_registers_every_installed_target():
    """No target list: the patterns of every installed target (the registry's, not a built-in list)."""
    from tvm.relax.backend.pattern_registry import get_patterns_with_prefix

    from edgesdk.targets import available_targets

    register_edgesdk_patterns()
    for target in available_targets():
        names = {p.name for p in get_patterns_with_prefix(f"edgesdk_{target}.")}
        assert f"edgesdk_{target}.conv2d" in names and f"edgesdk_{target}.softmax" in names
