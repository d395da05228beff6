"""What the host C target runs: op types and the constraints each must meet (docs/supported-ops.md).

Each constraint is `(op) -> (ok, detail)`; the first line of its docstring is the rule shown to users.
The C target is the fallback of every build, so the table covers everything the kernel library does;
the limits are those of TFLite's own int8 kernels (same quantization requirements), never stricter.
"""

from __future__ import annotations

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
    TVM lowers to C (tvm_lowered.py)."""
    global _SUPPORT
    if _SUPPORT is None:
        from .emit import c_ops
        from .tvm_lowered import LONG_TAIL_SUPPORT

        ops = {op_type: entry.constraints for op_type, entry in sorted(c_ops().items())}
        from .ops.ort import CONSTRAINTS as ORT_RULES, KERNEL_TYPES as ORT_TYPES

        for op_type in ORT_TYPES:  # --rounding ort: these ops run ONNX Runtime's kernels, not TFLite's
            ops[op_type] = [*map(_unless_ort, ops[op_type]), *map(_only_ort, ORT_RULES)]
        for op_type, tvm_rules in LONG_TAIL_SUPPORT.items():
            # An op type with a kernel of its own (SUB, DIV, ...) still goes through TVM when it was imported
            # through TVM: each set of rules applies to its own kind of op.
            ops[op_type] = ([*map(_unless_tvm, ops[op_type]), *map(_only_tvm, tvm_rules)] if op_type in ops
                            else tvm_rules)
        _SUPPORT = TargetSupport(name="c", generic=[rank_at_most_6], ops=ops)
    return _SUPPORT


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
