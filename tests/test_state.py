"""Stateful models: state that survives between inferences (issue 10, part 2).

Resource variables (VAR_HANDLE / CALL_ONCE / READ_VARIABLE / ASSIGN_VARIABLE) and TFLite variable tensors become
persistent tensors: buffers of the memory plan that live across inferences, set by the generated
edgesdk_default_reset() to their initial value. `edgesdk run --steps N` runs N inferences in one boot and checks
every step against the reference interpreter run on the same sequence.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from edgesdk.compiler import BuildOptions, build, compile_model
from edgesdk.importer import import_tflite
from edgesdk.reference import run_reference_sequence
from edgesdk.runner import random_inputs, run_sequence

STATE_MODELS = REPO / "tests" / "models" / "state"
CORPUS = REPO / "tests" / "models" / "ops"
needs_toolchain = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                     reason="RISC-V cross compiler not installed")


def test_resource_variables_become_persistent_tensors():
    graph = import_tflite(STATE_MODELS / "accumulator_int8.tflite")
    assert [op.type for op in graph.ops] == ["READ_VARIABLE", "QUANTIZE", "ADD", "DEQUANTIZE", "ASSIGN_VARIABLE"]
    (state,) = graph.state
    assert state.persistent and state.dtype == "float32" and state.shape == (1, 8)
    assert np.allclose(state.initial, np.linspace(-1, 1, 8).reshape(1, 8))  # the CALL_ONCE initializer
    read, assign = graph.ops[0], graph.ops[-1]
    assert read.inputs == [state] and assign.outputs == [state]


def test_lstm_variable_tensors_and_intermediates_import():
    """The converter's LSTM state tensors are variable tensors, its gate scales zero-size 'intermediates': both
    import (they are not an inconsistent file)."""
    graph = import_tflite(CORPUS / "lstm_classifier_int8.tflite")
    lstm = graph.ops[0]
    assert lstm.type == "UNIDIRECTIONAL_SEQUENCE_LSTM" and len(lstm.intermediates) == 5
    assert {t.dtype for t in graph.state} == {"int8", "int16"}


def test_state_buffers_live_across_the_whole_run_and_are_never_shared():
    compiled = compile_model(STATE_MODELS / "delay_line_int8.tflite", BuildOptions(target="c"))
    (state,) = compiled.graph.state
    buffer = next(b for b in compiled.plan.buffers if state in b.tensors)
    assert buffer.kind == "state" and buffer.first == -1 and buffer.last == len(compiled.graph.ops)
    others = [b for b in compiled.plan.buffers if b is not buffer and b.size]
    assert not any(buffer.overlaps_in_space(b) for b in others)
    assert compiled.executor.state[0].initial is not None  # zeros from the initializer, copied by the reset


def _write_model_c(tmp_path, name: str) -> str:
    out = tmp_path / name
    build(STATE_MODELS / f"{name}.tflite", out, BuildOptions(target="c", compile_firmware=False))
    return (out / "src" / "model.c").read_text(), (out / "src" / "model.h").read_text()


def test_reset_function_sets_each_state_and_is_empty_without_state(tmp_path, models_dir):
    model_c, model_h = _write_model_c(tmp_path, "accumulator_int8")
    body = model_c.split("void edgesdk_default_reset(void)")[1].split("}")[0]
    assert "memcpy(edgesdk_arena + " in body and "state_Variable_initial, 32u" in body
    assert "void edgesdk_default_reset(void);" in model_h and "EDGESDK_DEFAULT_STATE_BYTES 32u" in model_h
    out = tmp_path / "stateless"
    build(models_dir / "tflite_micro" / "hello_world_int8.tflite", out, BuildOptions(target="c", compile_firmware=False))
    text = (out / "src" / "model.c").read_text()
    assert "void edgesdk_default_reset(void)\n{\n}" in text


@needs_toolchain
@pytest.mark.parametrize("rounding", ["ref", "tflm"])
@pytest.mark.parametrize("name", ["accumulator_int8", "delay_line_int8"])
def test_sequences_in_one_boot_are_bit_exact_step_by_step(tmp_path, name, rounding):
    out = tmp_path / "out"
    report = build(STATE_MODELS / f"{name}.tflite", out, BuildOptions(target="c", rounding=rounding))
    steps = [random_inputs(report, seed) for seed in range(6)]
    result = run_sequence(out, steps)
    assert result.exit_code == 0 and len(result.step_outputs) == 6 and len(result.step_instructions) == 6
    expected = run_reference_sequence(out / "model.tflite", steps, rounding)
    for step, (want, got) in enumerate(zip(expected, result.step_outputs)):
        assert np.array_equal(want[0], got[0]), f"step {step}"
    # The state matters: step 3 on its own (a fresh state) gives another answer than step 3 of the sequence.
    alone = run_sequence(out, [steps[3]])
    assert not np.array_equal(alone.outputs[0], result.step_outputs[3][0])


@needs_toolchain
def test_run_steps_from_the_command_line(tmp_path):
    out = tmp_path / "out"
    build(STATE_MODELS / "accumulator_int8.tflite", out, BuildOptions(target="c"))
    stacked = np.random.default_rng(1).integers(-128, 128, (4, 1, 8)).astype(np.int8)
    np.save(tmp_path / "x.npy", stacked)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "edgesdk", "run", str(out), *map(str, args)], capture_output=True,
                              text=True, cwd=REPO, timeout=600)

    proc = run("--input", tmp_path / "x.npy", "--steps", 4, "--check", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["steps"] == 4 and summary["reference"]["bit_exact"] and summary["reference"]["steps"] == 4
    assert np.load(out / "run" / "output_0.npy").shape == (4, 1, 8)
    bad = run("--input", tmp_path / "x.npy", "--steps", 3)
    assert bad.returncode == 7 and "stacked along a new first axis" in bad.stderr and "Traceback" not in bad.stderr
