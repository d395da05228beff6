"""Every op is checked against its schema, and every graph output is proven written (issue 12, item 6).

The finding: a RELU with outputs [t1, t2] was accepted; t2, a graph output, was never written and the firmware
returned uninitialized SRAM with exit 0. The class: the importer checks every op type's input and output counts
against its op-layer schema (edgesdk/ops/base.py Operands), and the safety proof (edgesdk/verify.py) re-checks,
after partitioning, folding and planning, that every output slot the caller reads is a graph output some compiled
op writes. Types are each target's constraints (an op with a type no target runs is an UnsupportedOpError).
"""

from __future__ import annotations

import dataclasses

import pytest

from conftest import model_path
from modelgen import ModelBuilder

from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.errors import ModelError
from edgesdk.importer import import_tflite
from edgesdk.importer.tflite_importer import CUSTOM_TYPES
from edgesdk.ops import known_types, op_def
from edgesdk.verify import VerificationError, verify_build


CUSTOM_CODES = {op_type: code for code, op_type in CUSTOM_TYPES.items()}  # custom ops the op layer defines


def _model(tmp_path, op_type: str, n_inputs: int, n_outputs: int):
    m = ModelBuilder()
    inputs = [m.tensor((1, 8), "int8", 0.1, 0) for _ in range(n_inputs)]
    outputs = [m.tensor((1, 8), "int8", 0.1, 0) for _ in range(n_outputs)]
    m.op(f"CUSTOM:{CUSTOM_CODES[op_type]}" if op_type in CUSTOM_CODES else op_type, inputs, outputs)
    path = tmp_path / f"{op_type}.tflite"
    path.write_bytes(m.build(inputs, outputs))
    return path


def _arity_cases():
    """(op type, inputs, outputs, expected fragment) for every registered op type: one output too many, one input
    too many, and one input too few, wherever the schema makes that count wrong."""
    for op_type in known_types():
        schema = op_def(op_type).operands
        n_in = 1 if schema.repeated else len(schema.inputs)
        n_out = 1 if schema.repeated_output else len(schema.outputs)
        if not schema.repeated_output:
            yield op_type, n_in, n_out + 1, "output(s)"
        if not schema.repeated:
            yield op_type, n_in + 1, n_out, "input"
            required = [k for k, name in enumerate(schema.inputs) if name not in schema.optional]
            if required:
                yield op_type, max(required), n_out, "input"
        else:
            yield op_type, 0, n_out, "at least one"


CASES = list(_arity_cases())


def test_the_cases_cover_every_op_type():
    assert {c[0] for c in CASES} == set(known_types()) and len(known_types()) >= 100


@pytest.mark.parametrize("op_type,n_inputs,n_outputs,fragment", CASES,
                         ids=[f"{c[0]}-{c[1]}in-{c[2]}out" for c in CASES])
def test_every_op_type_refuses_operand_counts_its_schema_does_not_have(tmp_path, op_type, n_inputs, n_outputs,
                                                                       fragment):
    with pytest.raises(ModelError) as err:
        import_tflite(_model(tmp_path, op_type, n_inputs, n_outputs))
    text = str(err.value)
    assert f"({op_type}" in text and fragment in text and (", not " in text or "at least one" in text), text


def test_a_relu_with_two_outputs_is_refused(tmp_path):
    """The finding itself, through the CLI's build path."""
    with pytest.raises(ModelError, match=r"RELU.*has 1 output\(s\) \(output\), not 2"):
        compile_model(_model(tmp_path, "RELU", 1, 2), BuildOptions(target="c"))


@pytest.mark.parametrize("target", ["c", "npu,c"])
def test_the_proof_refuses_a_graph_output_no_operator_writes(target):
    compiled = compile_model(model_path("hello_world"), BuildOptions(target=target))
    assert verify_build(compiled)["outputs_written"] == len(compiled.graph.outputs)
    last = next(r for r in reversed(compiled.regions) if r.ops)
    producer = next(op for op in last.ops if compiled.graph.outputs[0] in op.outputs)
    last.ops.remove(producer)
    with pytest.raises(VerificationError, match="is written by no compiled operator"):
        verify_build(compiled)


def test_the_proof_refuses_an_output_slot_that_is_not_the_planned_one():
    compiled = compile_model(model_path("hello_world"), BuildOptions(target="c"))
    slot = compiled.executor.outputs[0]
    compiled.executor.outputs[0] = dataclasses.replace(slot, arena_offset=slot.arena_offset + 4)
    with pytest.raises(VerificationError, match="is not the planned slot of graph output"):
        verify_build(compiled)
