"""Which ops the LUT-1 takes: int8 elementwise activations whose 256 possible outputs fit one table.

Each constraint is a small function (op) -> (ok, detail) whose docstring states the rule; edgesdk's
partitioner and `edgesdk inspect` read them through TargetSupport, exactly as for the built-in targets.
"""

from __future__ import annotations

from edgesdk.partition.target import TargetSupport

MAX_ELEMENTS = 1 << 24  # the LENGTH register has 24 bits


def constraint_int8_in_and_out(op):
    """Input and output are int8 (one table maps the 256 input codes)"""
    x, y = op.inputs[0], op.outputs[0]
    return x.dtype == "int8" and y.dtype == "int8", f"{x.dtype} -> {y.dtype}"


def constraint_per_tensor_quantization(op):
    """Input and output have one scale and zero point each (one table for the whole tensor)"""
    x, y = op.inputs[0], op.outputs[0]
    ok = all(t.quant is not None and len(t.quant.scale) == 1 for t in (x, y))
    return ok, "per-channel or missing quantization"


def constraint_same_element_count(op):
    """The output has as many elements as the input (elementwise)"""
    x, y = op.inputs[0], op.outputs[0]
    return x.num_elements == y.num_elements, f"{x.num_elements} -> {y.num_elements} elements"


def constraint_length_fits_register(op):
    """At most 2^24 elements (the LENGTH register)"""
    n = op.inputs[0].num_elements
    return n <= MAX_ELEMENTS, f"{n} elements"


_CONSTRAINTS = [constraint_int8_in_and_out, constraint_per_tensor_quantization, constraint_same_element_count,
                constraint_length_fits_register]

LUT_SUPPORT = TargetSupport(
    name="lut",
    ops={op_type: list(_CONSTRAINTS) for op_type in ("LOGISTIC", "TANH", "RELU", "RELU6", "RELU_N1_TO_1")},
)
