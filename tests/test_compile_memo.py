"""Per-compile memos (edgesdk.targets.api.compile_scope / compile_memo): within one compile the NPU works out an
op's channel records, its weight streams and its kernel fold once, though the partitioner's check, the cascade
search's pricing and the codegen each lower the op; nothing is kept from one compile to the next (the benchmark
compiles the same model again and again in one process)."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from conftest import model_path
from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.targets.api import compile_memo, compile_scope
from edgesdk.targets.npu import codegen, fold
from edgesdk.targets.npu.hw import weight_codec


@pytest.fixture
def lowering_work(monkeypatch):
    """Records each weight encoding (its bytes), requantization multiplier computation and fold choice (its op)."""
    work = {"encoded": [], "multipliers": [], "folds": []}

    def counted(name, module, attr, key=lambda *a: a[0]):
        real = getattr(module, attr)
        monkeypatch.setattr(module, attr, lambda *a, **k: work[name].append(key(*a)) or real(*a, **k))

    counted("encoded", weight_codec, "_compress_if_smaller")
    counted("multipliers", codegen, "quantize_multipliers", key=lambda scales: tuple(scales))
    counted("folds", fold, "choose")
    return work


def _one_compile(work) -> dict:
    for calls in work.values():
        calls.clear()
    compile_model(model_path("kws"), BuildOptions())
    return {name: list(calls) for name, calls in work.items()}


def test_each_compile_does_the_same_lowering_work_once(lowering_work):
    first, second = _one_compile(lowering_work), _one_compile(lowering_work)
    assert {k: len(v) for k, v in first.items()} == {k: len(v) for k, v in second.items()}
    assert first["encoded"] and first["multipliers"] and first["folds"]  # kws compresses, requantizes, folds
    # within the compile: each weight layout encoded once, each op's fold chosen once, each set of requantization
    # scales quantized once (the NPU's requant check and the lowering share them)
    assert len(first["encoded"]) == len(set(first["encoded"]))
    assert len(first["multipliers"]) == len(set(first["multipliers"]))
    assert len(first["folds"]) == len(set(map(id, first["folds"])))


def test_without_the_scope_the_same_build_lowers_more(lowering_work, monkeypatch):
    remembered = _one_compile(lowering_work)
    monkeypatch.setattr("edgesdk.compiler.compile_scope", nullcontext)
    forgotten = _one_compile(lowering_work)
    for name in ("encoded", "multipliers", "folds"):
        assert len(forgotten[name]) > len(remembered[name]), name
    for name in ("encoded", "multipliers"):  # the same work, only repeated
        assert set(forgotten[name]) == set(remembered[name]), name


def test_memos_live_only_inside_their_scope():
    outside = compile_memo("test")
    outside["k"] = 1
    assert compile_memo("test") == {}  # outside a compile nothing is kept
    with compile_scope():
        compile_memo("test")["k"] = 2
        assert compile_memo("test") == {"k": 2}
        with compile_scope():  # a compile inside a compile (the tuner's candidates) starts empty
            assert compile_memo("test") == {}
        assert compile_memo("test") == {"k": 2}
    with compile_scope():
        assert compile_memo("test") == {}


def test_a_compile_makes_no_listing_until_the_tables_are_rendered(monkeypatch):
    """The listing lines of the NPU tables (model_npu.c's comments) are made when first read, from the commands."""
    from edgesdk.targets.npu.hw import cmdtable
    from edgesdk.targets.npu.tables import tables_of

    described = []
    real = cmdtable.describe
    monkeypatch.setattr(cmdtable, "describe", lambda commands: described.append(commands) or real(commands))
    tables = tables_of(compile_model(model_path("kws"), BuildOptions()).executor)
    assert tables and not described
    assert [len(t.listing) for t in tables] == [len(t.commands) for t in tables]
    assert all(line.startswith(type(c).__name__ + "(") for t in tables for line, c in zip(t.listing, t.commands))


def test_a_dry_blob_gives_the_offsets_and_charges_of_a_real_one():
    """A dry codegen context's blob (aot.executor.DryBlob) keeps no bytes, and places and charges as Blob does."""
    from edgesdk.aot.executor import Blob, DryBlob

    charges = {"real": [], "dry": []}
    real, dry = Blob("w", "edgesdk_w"), DryBlob("w", "edgesdk_w")
    real.charge = lambda n, label: charges["real"].append((n, label))
    dry.charge = lambda n, label: charges["dry"].append((n, label))
    adds = [(b"\1" * 5, 16, "a"), (b"", 4, "empty"), (b"\2" * 3, 1, "b"), (b"\3" * 7, 4, "c"), (b"\4" * 33, 16, "d")]
    assert [dry.add(*a) for a in adds] == [real.add(*a) for a in adds]
    assert charges["dry"] == charges["real"] and dry.size == len(real.data) and dry.align == real.align
    assert not dry.data and not dry.labels
