"""Work counts of IR ops that the targets' cost models start from."""

from __future__ import annotations

MAC_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def op_macs(op) -> int:
    """Multiply-accumulates of a CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED op (0 for other ops)."""
    if op.type not in MAC_OPS or len(op.inputs) < 2 or op.inputs[1] is None:
        return 0
    y, w = op.outputs[0], op.inputs[1]
    if op.type == "FULLY_CONNECTED":
        return int(y.num_elements) * int(w.shape[1])
    if op.type == "DEPTHWISE_CONV_2D":
        return int(y.num_elements) * int(w.shape[1]) * int(w.shape[2])
    return int(y.num_elements) * int(w.shape[1]) * int(w.shape[2]) * int(w.shape[3])


def op_elements(op) -> int:
    """Elements the op writes (its outputs together)."""
    return sum(int(t.num_elements) for t in op.outputs)


def op_bytes_moved(op) -> tuple:
    """(activation bytes read, activation bytes written, constant bytes read) of one op, each tensor once:
    its non-constant inputs, its outputs and its constant inputs (weights, biases, tables) as the graph
    holds them."""
    inputs = list(dict.fromkeys(t for t in op.inputs if t is not None))
    read = sum(int(t.nbytes) for t in inputs if not t.is_const)
    weights = sum(int(t.nbytes) for t in inputs if t.is_const)
    written = sum(int(t.nbytes) for t in dict.fromkeys(op.outputs) if t is not None)
    return read, written, weights
