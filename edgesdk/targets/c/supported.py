"""What the host C target runs: op types and the constraints each must meet (docs/supported-ops.md).

Each constraint is `(op) -> (ok, detail)`; the first line of its docstring is the rule shown to users.
The C target is the fallback of every build, so the table covers everything the kernel library does;
the limits are those of TFLite's own int8 kernels (same quantization requirements), never stricter.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...partition.target import TargetSupport
# The rules that follow from the ops' TFLite definitions live in the op layer (shared with other targets);
# the C target's op modules read them as supported.<rule>.
from ...ops.rules import (  # noqa: F401
    rank_at_most_6, int8_quantized_activations, int8_weights_int32_bias, per_channel_filters_symmetric,
    supported_fused_activation, input_output_same_quantization, conv_shapes, depthwise_shapes,
    fully_connected_shapes, pool_shapes, broadcastable_inputs, softmax_output_quantization,
    softmax_positive_beta, softmax_input_scale_in_range, sigmoid_input_scale_in_range,
    logistic_output_quantization, tanh_output_quantization, hard_swish_output_range, quantize_types,
    dequantize_types, reshape_same_size)


def c_support() -> TargetSupport:
    """The C target's op table: each op module's constraints (edgesdk/targets/c/ops/), plus the long-tail ops
    TVM lowers to C (tvm_lowered.py); an op type's entry is made when the table is first asked about it."""
    global _SUPPORT
    if _SUPPORT is None:
        _SUPPORT = TargetSupport(name="c", generic=[rank_at_most_6], ops=_OpTable())
    return _SUPPORT


class _OpTable(Mapping):
    """op type -> constraints, built per op type on first use: asking about one type imports only the op
    module that registers it (emit.c_op_entry); iterating imports them all."""

    def __init__(self):
        self._rules = {}

    def __getitem__(self, op_type: str) -> list:
        if op_type not in self._rules:
            rules = _rules_of(op_type)
            if rules is None:
                raise KeyError(op_type)
            self._rules[op_type] = rules
        return self._rules[op_type]

    def __contains__(self, op_type) -> bool:
        try:
            self[op_type]
        except KeyError:
            return False
        return True

    def __iter__(self):
        from .emit import c_ops
        from .tvm_lowered import LONG_TAIL_SUPPORT

        return iter(dict.fromkeys([*sorted(c_ops()), *LONG_TAIL_SUPPORT]))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _rules_of(op_type: str) -> list | None:
    """The constraints of one op type on the C target, or None if it has none (no kernel, not lowered by TVM)."""
    from .emit import c_op_entry
    from .tvm_lowered import LONG_TAIL_SUPPORT

    entry = c_op_entry(op_type)
    rules = list(entry.constraints) if entry is not None else None
    if rules is not None:
        from .ops.ort import CONSTRAINTS as ORT_RULES, KERNEL_TYPES as ORT_TYPES

        if op_type in ORT_TYPES:  # --rounding ort: these ops run ONNX Runtime's kernels, not TFLite's
            rules = [*map(_unless_ort, rules), *map(_only_ort, ORT_RULES)]
    tvm_rules = LONG_TAIL_SUPPORT.get(op_type)
    if tvm_rules is not None:
        # An op type with a kernel of its own (SUB, DIV, ...) still goes through TVM when it was imported
        # through TVM: each set of rules applies to its own kind of op.
        rules = [*map(_unless_tvm, rules), *map(_only_tvm, tvm_rules)] if rules is not None else tvm_rules
    return rules


_SUPPORT = None


def _unless_tvm(fn):
    """A kernel's constraint, which an op imported through TVM (lowered by TVM instead) does not need to meet."""
    def rule(op):
        return (True, "") if "relax_function" in op.attrs else fn(op)
    rule.__name__, rule.__doc__ = fn.__name__, fn.__doc__
    return rule


def _unless_ort(fn):
    """A TFLite kernel's constraint, which an op built for --rounding ort (ONNX Runtime's kernel) need not meet."""
    def rule(op):
        return (True, "") if "ort" in op.attrs else fn(op)
    rule.__name__, rule.__doc__ = fn.__name__, fn.__doc__
    return rule


def _only_ort(fn):
    """A constraint of ONNX Runtime's kernels, for ops built with --rounding ort only."""
    def rule(op):
        return fn(op) if "ort" in op.attrs else (True, "")
    rule.__name__ = fn.__name__
    rule.__doc__ = f"With --rounding ort: {fn.__doc__}"
    return rule


def _only_tvm(fn):
    """A TVM-lowering constraint, for ops imported through TVM only (the others run the kernel)."""
    def rule(op):
        return fn(op) if "relax_function" in op.attrs else (True, "")
    rule.__name__ = fn.__name__
    rule.__doc__ = f"Imported through TVM: {fn.__doc__}"
    return rule


def __getattr__(name):
    if name == "C_SUPPORT":  # the table, built on first use (the op modules import this module's rules)
        return c_support()
    raise AttributeError(name)
