"""The converter-made op corpus (tests/models/ops): every model edgesdk compiles is bit-exact, op by op, with
LiteRT's reference kernels (--rounding ref) and TFLite Micro (--rounding tflm), and the models it does not
compile are exactly those tests/corpus.py lists as not yet supported.

* host level (fast, every model): the C target's generated calls run on the host kernels (edgesdk.targets.c.
  testing) on each reference's own op inputs, for the cases the references were checked on (seeded random,
  all-min, all-max: tests/models/check_references.py);
* firmware (slow, one model per op and mode): built for the emulator and run end to end, a batch of models in
  one firmware image (each under a name of its own: edgesdk build --name, tests/image_batches.py).
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest

import corpus
from image_batches import batch, link_and_run, load_runs
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.ops.folding import fold_constants
from edgesdk.partition.partitioner import partition
from edgesdk.targets.c import testing

ENTRIES = corpus.entries()
BY_OP = defaultdict(list)
for _entry in ENTRIES:
    BY_OP[_entry["op"]].append(_entry)


def _compiles_on_c(entry) -> tuple:
    """(graph, None) when the C target takes every op of the model, else (None, the refusal)."""
    try:
        graph = import_tflite(corpus.CORPUS / entry["file"])
        fold_constants(graph)  # as the build does: shape arithmetic becomes constants (edgesdk/ops/folding.py)
        partition(graph, ["c"])
    except UnsupportedOpError as exc:
        return None, str(exc)
    except ModelError as exc:
        if corpus.expected_unsupported(entry) is None:
            raise  # a converter-made model is never "inconsistent"
        return None, str(exc)
    return graph, None


def _expected_refusal(entry):
    """corpus.expected_unsupported over the op types the build still compiles (folded ones need no kernel)."""
    try:
        graph = import_tflite(corpus.CORPUS / entry["file"])
        fold_constants(graph)
    except ModelError:
        return corpus.expected_unsupported(entry)
    return corpus.expected_unsupported(entry, {op.type for op in graph.ops})


def test_corpus_is_what_the_manifest_lists():
    files = {p.name for p in corpus.CORPUS.glob("*.tflite")}
    assert files == {e["file"] for e in ENTRIES}


def test_supported_and_not_yet_supported_models_are_as_listed():
    """A model outside tests/corpus.py's NOT_YET list compiles; one inside it is refused with a reason."""
    problems = []
    for entry in ENTRIES:
        expected = _expected_refusal(entry)
        try:
            graph, refusal = _compiles_on_c(entry)
        except Exception as exc:  # a crash or a ModelError on a converter-made model is a bug either way
            problems.append(f"{entry['file']}: {type(exc).__name__}: {exc}")
            continue
        if expected is None and refusal is not None:
            problems.append(f"{entry['file']}: refused: {refusal.splitlines()[1] if chr(10) in refusal else refusal}")
        elif expected is not None and refusal is None:
            problems.append(f"{entry['file']}: compiles now; remove '{expected}' from tests/corpus.py NOT_YET")
    assert not problems, "\n".join(problems)


def _mismatches(entry, graph, mode: str, library) -> list:
    problems = []
    path = corpus.CORPUS / entry["file"]
    if graph.state:  # stateful: the cases as one sequence of inferences, the state carried from step to step
        steps = [corpus.case_inputs(entry, case, 0) for case in corpus.CASES]
        refs = testing.reference_tensor_sequence(path, steps, mode)
        for op, diff, count in testing.compare_ops_sequence(graph, refs, mode, library):
            problems.append(f"{entry['file']} [{mode} sequence {'/'.join(corpus.CASES)}] {op.location}: {count} values "
                            f"differ (max {diff})")
        return problems
    for case in corpus.CASES:
        inputs = corpus.case_inputs(entry, case, 0)
        ref = testing.reference_tensors(path, inputs, mode)
        for op, diff, count in testing.compare_ops(graph, ref, mode, library):
            problems.append(f"{entry['file']} [{mode} {case}] {op.location}: {count} values differ (max {diff})")
    return problems


@pytest.mark.parametrize("mode", ["ref", "tflm"])
@pytest.mark.parametrize("op_type", sorted(BY_OP))
def test_corpus_host_bit_exact(op_type, mode):
    selected = []
    for entry in BY_OP[op_type]:
        if corpus.expected_unsupported(entry) or not corpus.reference_ok(entry, mode):
            continue
        graph, refusal = _compiles_on_c(entry)
        if graph is not None and _emits(graph, mode):
            selected.append((entry, graph))
    if not selected:
        pytest.skip(f"no {op_type} model runs on edgesdk and the {mode} reference yet")
    library = testing.OpLibrary([op for _, g in selected for op in g.ops], mode)
    problems = [p for entry, graph in selected for p in _mismatches(entry, graph, mode, library)]
    assert not problems, "\n".join(problems[:40])


def _emits(graph, mode: str) -> bool:
    """Whether the C target generates every op's code under rounding mode `mode`: an emitter may refuse one mode
    (a float32 LSTM builds for --rounding tflm only, docs/rounding.md)."""
    try:
        testing.generate_source(graph.ops, mode)
    except UnsupportedOpError:
        return False
    return True


def one_per_op_and_mode() -> list:
    chosen = {}
    for entry in ENTRIES:
        chosen.setdefault((entry["op"], entry["mode"]), entry)
    return [chosen[k] for k in sorted(chosen)]


FIRMWARE_ENTRIES = [e for e in one_per_op_and_mode() if not corpus.expected_unsupported(e)]
FIRMWARE_FILES = [e["file"] for e in FIRMWARE_ENTRIES]
FIRMWARE_CASES = ("seed0", "min", "max")
FIRMWARE_BATCH = 12  # corpus models per firmware image (each built for up to 2 targets x 2 modes)


@pytest.fixture(scope="session")
def corpus_firmware(session_builds):
    """file -> ([(target, mode) built], {case: {(file, target, mode): (status, outputs, uart)}}): the model's
    builds, compiled (sources only) under names of their own with the other models of its batch, linked into one
    firmware image and run on each case, once per session (any worker; tests/image_batches.py)."""
    by_file = {e["file"]: e for e in FIRMWARE_ENTRIES}

    def get(file: str):
        index, members = batch(FIRMWARE_FILES, file, FIRMWARE_BATCH)

        def make(out):
            builds, plans = {}, {}
            for k, member in enumerate(members):
                plans[member] = _compile_builds(by_file[member], out, f"e{k}", builds)
            link_and_run(out, builds, {case: {key: corpus.case_inputs(by_file[key[0]], case, 0) for key in builds}
                                       for case in FIRMWARE_CASES})
            (out / "builds.pkl").write_bytes(pickle.dumps(plans))

        out = session_builds(f"corpus-batch{index}", make)
        return pickle.loads((out / "builds.pkl").read_bytes())[file], load_runs(out)

    return get


def _compile_builds(entry, out, name: str, builds: dict) -> list:
    """The (target, mode) builds of `entry` the firmware test checks, compiled into out/<name>_<target>_<mode>/
    and added to `builds` {(file, target, mode): directory}: --target c and npu,c (npu,c only when the NPU takes
    an op: else its program is --target c's), each rounding mode whose reference runs the model and that its ops
    build for (a mode refused on one target, e.g. a float32 LSTM under --rounding ref, is not tried again)."""
    from edgesdk.compiler import BuildOptions, build, compile_model

    path = corpus.CORPUS / entry["file"]
    refused, built = set(), []
    for target in ("c", "npu,c"):
        for mode in ("ref", "tflm"):
            if not corpus.reference_ok(entry, mode) or mode in refused:
                continue
            options = BuildOptions(target=target, rounding=mode)
            build_name = f"{name}_{target.replace(',', '_')}_{mode}"
            try:
                if target == "npu,c" and not _npu_takes_an_op(compile_model(path, options)):
                    continue  # the same program as --target c: compiled (above), not built into firmware again
                report = build(path, out / build_name, replace(options, name=build_name, compile_firmware=False))
            except UnsupportedOpError:
                refused.add(mode)  # a mode the model's ops do not build for (a float32 LSTM under --rounding ref)
                continue
            _check_targets(report, options)
            builds[entry["file"], target, mode] = out / build_name
            built.append((target, mode))
    return built


@pytest.mark.slow
@pytest.mark.parametrize("entry", FIRMWARE_ENTRIES, ids=lambda e: e["file"])
def test_corpus_firmware_bit_exact(entry, corpus_firmware):
    """One model per op and mode, built into firmware and run on the emulator, against each reference that
    runs it, on --target c and npu,c (tests/image_batches.py: in a firmware image with other corpus models,
    under a name of its own)."""
    from edgesdk.reference import run_reference

    path = corpus.CORPUS / entry["file"]
    built, runs = corpus_firmware(entry["file"])
    problems = []
    references = {}  # (mode, case) -> the reference's outputs: the same for both targets' firmware
    for target, mode in built:
        for case in FIRMWARE_CASES:
            status, outputs, _ = runs[case][entry["file"], target, mode]
            if status != 0:
                problems.append(f"{mode} {target} {case}: exit {-status}")
                continue
            if (mode, case) not in references:
                references[mode, case] = run_reference(path, corpus.case_inputs(entry, case, 0), mode)
            expected = references[mode, case]
            assert len(outputs) == len(expected), f"{mode} {target} {case}"
            for want, got in zip(expected, outputs):
                differ = np.count_nonzero(np.asarray(want).reshape(-1).view(np.uint8)
                                          != np.asarray(got).reshape(-1).view(np.uint8))
                if differ:
                    problems.append(f"{mode} {target} {case}: {differ} bytes differ")
    assert not problems, "\n".join(problems)


def _check_targets(report, options) -> None:
    if options.target == "npu,c":
        assert any(op["target"] == "npu" for op in report["ops"]), "the build disagrees with its compile step"


def _npu_takes_an_op(compiled) -> bool:
    """Whether the partition puts any op on the NPU. About half of the corpus builds for npu,c place every op on
    the C target: their executor is --target c's, so only the compile step is run for them (a firmware build
    costs about 20 times as much)."""
    return any(region.target == "npu" for region in compiled.regions)
