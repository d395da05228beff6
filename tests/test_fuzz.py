"""The fuzz harness (tests/fuzz/): a bounded campaign, every kept regression input, and the supervisor itself.

The long campaign is `scripts/fuzz.py --seconds 1500 --seed 1 --firmware-every 100` (docs/reliability.md);
here a fixed-seed run of a few hundred mutants must end without a crash, hang, memory blow-up or unsafe
output, and every input the fuzzer ever found (tests/fuzz/regressions/manifest.json) must now end in its
expected clear error.
"""

from __future__ import annotations

import random
import struct
from collections import Counter

import numpy as np
import pytest

from fuzz.harness import FINDINGS, Outcome, Worker, check_input, find_injection, fuzz, regression_cases, seed_corpus
from fuzz.mutate import Mutator

BOUNDED_SEED = 20261122


@pytest.fixture(scope="module")
def seeds():
    return seed_corpus()


@pytest.fixture(scope="module")
def worker():
    with Worker(timeout_s=30) as w:
        yield w


BOUNDED_INPUTS = 400


def test_bounded_campaign_has_no_findings(seeds):
    """A fixed number of inputs (no time limit: how many run in N seconds depends on the machine's load),
    so the same mutants, outcomes and corpus growth every time."""
    stats = fuzz(seeds, iterations=BOUNDED_INPUTS, seed=BOUNDED_SEED)
    summary = stats.summary()
    assert stats.inputs == BOUNDED_INPUTS, summary
    assert not stats.findings, [(f["kind"], f["mutation"], f["detail"][-600:]) for f in stats.findings]
    assert summary["crashes"] == summary["hangs"] == summary["memory_blowups"] == summary["unsafe"] == 0
    # The mutants reach many different checks, and some compile all the way through.
    assert stats.outcomes["ok"] > 0 and len(stats.signatures) >= 20, summary


def _regression_params() -> list:
    """Open findings (not fixed yet, see their 'status') are strict xfails: the test starts failing as soon
    as the fix lands, so the manifest gets updated."""
    return [pytest.param(path, entry, id=entry["file"], marks=[pytest.mark.xfail(
        strict=True, reason=f"open finding: {entry.get('cause', '')}")] if entry.get("status") == "open" else [])
        for path, entry in regression_cases()]


@pytest.mark.parametrize("path, entry", _regression_params())
def test_regression_input(worker, path, entry):
    outcome = worker.run(path.read_bytes(), entry["target"], entry["rounding"])
    assert outcome.kind not in FINDINGS, outcome.detail
    if entry["expect"] == "ok":
        assert outcome.kind == "ok", outcome.detail
    else:
        assert outcome.kind == "error" and outcome.detail.startswith(entry["expect"] + ":"), outcome.detail
        assert "Traceback" not in outcome.detail


def test_seed_models_compile_cleanly(seeds):
    """The unmutated seeds are the baseline: each real model compiles, verifies and renders."""
    for name in ("kws_ref_model", "simple_add_model", "op_concat_channels", "op_pad_hw"):
        outcome = check_input(seeds[name], "npu,c", "ref")
        assert outcome.kind == "ok", (name, outcome.detail)


EXTREME_SCALES = (2.0 ** -60, 2.0 ** -40, 1e-10, float(np.float32(2.0 ** -28) * np.float32(0.999)), 2.0 ** 60)


def test_extreme_scales_in_every_op_end_cleanly(seeds):
    """Every quantization scale of every single-op seed (each op, on the NPU and the C target), set to the
    ends of the importer's range and to the values that crashed the C codegen's fixed-point preprocessing:
    each build ends in 'ok' or a clear error, in both roundings, never in a traceback."""
    from fuzz.flatbuf import model_sites

    tried, outcomes = 0, Counter()
    for name, data in sorted(seeds.items()):
        if not name.startswith("op_"):
            continue
        for site in (s for s in model_sites(data) if s.kind == "quant.scale"):
            for value, rounding in zip(EXTREME_SCALES * 2, ("ref",) * 5 + ("tflm",) * 5):
                buf = bytearray(data)
                struct.pack_into("<f", buf, site.pos, value)
                outcome = check_input(bytes(buf), "npu,c", rounding, render=False)
                assert outcome.kind in ("ok", "error"), (name, site.pos, value, rounding, outcome.detail[-800:])
                if outcome.detail.startswith("VerificationError"):  # known: shifts beyond 30 (docs/reliability.md)
                    assert "quantization scales out of range" in outcome.detail, (name, value, outcome.detail)
                tried, outcomes[outcome.kind] = tried + 1, outcomes[outcome.kind] + 1
    assert tried >= 500 and outcomes["ok"] > 0 and outcomes["error"] > 0, (tried, outcomes)


def test_mutants_are_reproducible(seeds):
    a = [Mutator(seeds, random.Random(5)).mutant() for _ in range(1)]
    first, second = Mutator(seeds, random.Random(5)), Mutator(seeds, random.Random(5))
    assert [first.mutant() for _ in range(30)] == [second.mutant() for _ in range(30)]
    assert a[0][0] != seeds[a[0][1].split(":")[0]]  # a mutant differs from its seed


def test_mutator_survives_many_generations(seeds):
    """Values beyond a field's range are wrapped (or become infinities), corpus growth stays bounded."""
    from fuzz.mutate import _wrap

    assert _wrap(1e300, "<f") == float("inf") and _wrap(1 << 40, "<i") == 0 and _wrap(-1, "<I") == 0xFFFFFFFF
    mutator = Mutator(seeds, random.Random(3))
    for k in range(3000):
        data, _ = mutator.mutant()
        assert len(data) <= mutator.max_bytes
        if k % 300 == 0:
            mutator.add_seed(f"grown{k}", data)


def test_mutations_cover_the_hostile_field_kinds(seeds):
    """Within a bounded number of mutants (the seed corpus grows with every op family, so how soon a kind shows
    up varies), the mutator reaches every kind of hostile field."""
    wanted = {"tensor.shape", "tensor.buffer", "operator.inputs", "quant.scale", "quant.zero_point",
              "options.field", "tensor.name", "operator.opcode_index", "quant.quantized_dimension"}
    kinds = set()
    mutator = Mutator(seeds, random.Random(1))
    for _ in range(5000):
        kinds.update(step.split("@")[0].strip() for step in mutator.mutant()[1].split(": ", 1)[1].split("; "))
        if wanted <= kinds and any(k.startswith("truncated") for k in kinds) and any("bit flips" in k for k in kinds):
            break
    assert wanted <= kinds, sorted(wanted - kinds)
    assert any(k.startswith("truncated") for k in kinds) and any("bit flips" in k for k in kinds)


def test_supervisor_classifies_hangs_deaths_and_memory(monkeypatch):
    """Classification, not speed: an endless loop is a hang because it uses up its CPU budget (counted by the
    kernel, whatever the load), the other faults are recognised for what they are, and no wall-clock limit
    decides anything here (the backstop is generous)."""
    monkeypatch.setenv("EDGESDK_FUZZ_SELFTEST", "1")
    # 2 CPU-seconds, not 1: filling 1 GiB to its limit takes CPU too (page faults), and within 1 s the memory
    # case was sometimes cut short as a hang
    with Worker(timeout_s=2, memory_mb=1024, wall_timeout_s=600) as w:
        hang = w.run(b"selftest:hang", "c", "ref")
        assert hang.kind == "hang" and "CPU seconds" in hang.detail, hang
        assert w.run(b"selftest:die", "c", "ref").kind == "crash"
        assert w.run(b"selftest:memory", "c", "ref").kind == "memory"
        assert w.run(b"not a model", "c", "ref").kind == "error"  # the worker was restarted and works


def test_a_blocked_worker_is_stopped_by_the_wall_clock_backstop(monkeypatch):
    """A worker that sleeps uses no CPU: the wall-clock backstop ends it (a sleeping input is a hang however
    loaded the machine is, so the short backstop cannot misclassify anything here)."""
    monkeypatch.setenv("EDGESDK_FUZZ_SELFTEST", "1")
    with Worker(timeout_s=2, memory_mb=1024, wall_timeout_s=2) as w:
        blocked = w.run(b"selftest:block", "c", "ref")
        assert blocked.kind == "hang" and "wall-clock" in blocked.detail, blocked


def test_a_time_out_is_a_hang_only_when_it_repeats(monkeypatch, tmp_path):
    """A time-out that a fresh worker does not repeat (as when a loaded machine starved the worker) is not a
    hang: the campaign retries every time-out on a fresh worker and counts the ones that do not repeat."""
    from fuzz.harness import Stats, run_confirmed

    monkeypatch.setenv("EDGESDK_FUZZ_SELFTEST", "1")
    monkeypatch.setenv("EDGESDK_FUZZ_SELFTEST_MARK", str(tmp_path / "hung"))
    stats = Stats()
    with Worker(timeout_s=1, memory_mb=1024, wall_timeout_s=600) as w:
        assert run_confirmed(w, stats, b"selftest:hang-once", "c", "ref").kind == "error"
        assert stats.timeouts_not_reproduced == 1 and (tmp_path / "hung").exists()
        assert run_confirmed(w, stats, b"selftest:hang", "c", "ref").kind == "hang"
        assert stats.timeouts_not_reproduced == 1
        assert stats.summary()["timeouts_not_reproduced"] == 1
