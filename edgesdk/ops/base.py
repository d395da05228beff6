"""What every op definition declares (the op layer's contract, docs/architecture.md).

An `OpDef` is edgesdk's build-time knowledge of one TFLite builtin (or a few that share all of it, such as
RELU / RELU6 / RELU_N1_TO_1), independent of any target -- what TFLite Micro's Prepare() does:

    operands      the schema: named inputs (optional ones, a repeated one) and outputs; the importer
                  refuses a file whose operator does not match it (a RELU with two outputs is malformed)
    options       the TFLite BuiltinOptions table the op reads (None: no options)
    attributes    IR attributes from the raw options (e.g. explicit padding from SAME/VALID)
    check         shape and parameter rules every TFLite kernel relies on; a violation is a malformed file
    prepare       the op's build-time data for a rounding mode (quantization constants, loop bounds), computed
                  once and shared by every target's constraints and code generator
    fold          the op's value when all its inputs are constants (build-time folding of shape arithmetic)

Targets never recompute what `prepare` gives them; a target states which ops and dtypes it runs through its
own constraints (edgesdk/partition/target.py).
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..errors import ModelError


@dataclass(frozen=True)
class Operands:
    """An op's schema: input names in order, which may be omitted, and the outputs.

    `optional` inputs may be missing at the end of the list or given as -1 (omitted). A `repeated` input
    takes one or more tensors (CONCATENATION's values, ADD_N's inputs); it is the only input then.
    `outputs` names a fixed list; `repeated_output` ops (SPLIT, UNPACK) have one or more outputs.
    """

    inputs: tuple = ("input",)
    optional: tuple = ()
    repeated: str | None = None
    outputs: tuple = ("output",)
    repeated_output: bool = False

    def arity_problem(self, n_inputs: int, n_outputs: int, omitted: set) -> str | None:
        """Why an operator with these counts does not match the schema (None: it does)."""
        if self.repeated is not None:
            if n_inputs < 1:
                return f"needs at least one {self.repeated} input"
        else:
            required = [k for k, name in enumerate(self.inputs) if name not in self.optional]
            needed = max(required) + 1 if required else 0
            if not needed <= n_inputs <= len(self.inputs):
                return (f"takes {needed} to {len(self.inputs)} inputs ({', '.join(self.inputs)}), not {n_inputs}"
                        if needed != len(self.inputs) else
                        f"takes {needed} input(s) ({', '.join(self.inputs)}), not {n_inputs}")
            bad = sorted(k for k in omitted if k >= len(self.inputs) or self.inputs[k] not in self.optional)
            if bad:
                return f"omits input {bad[0]} ({self.inputs[bad[0]]}), which is required"
        if self.repeated_output:
            if n_outputs < 1:
                return "needs at least one output"
        elif n_outputs != len(self.outputs):
            return f"has {len(self.outputs)} output(s) ({', '.join(self.outputs)}), not {n_outputs}"
        return None


# An OpDef's `options` for a custom op whose options are a flexbuffer map (TFLite's custom_options).
FLEXBUFFER_OPTIONS = "flexbuffer"


class OpDef:
    """Base class of op definitions; subclass it in edgesdk/ops/<op>.py and decorate with @register."""

    types: tuple = ()
    operands: Operands = Operands()
    options: str | None = None  # e.g. "Conv2DOptions"

    def attributes(self, op, options: dict) -> dict:
        """IR attributes from the raw options (snake_case names, {} when the file omits the table)."""
        return {}

    def check(self, op) -> None:
        """Raise op_error(op, ...) when the op's shapes or parameters contradict each other."""

    def prepare(self, op, mode: str):
        """The op's build-time data under rounding mode `mode` ("ref" or "tflm"); None if it has none."""
        return None

    def fold(self, op) -> list | None:
        """The outputs (numpy arrays) of `op` when every input is constant; None: not foldable."""
        return None


def op_error(op, what: str) -> ModelError:
    """A ModelError naming the operator: the file is inconsistent (TFLite would refuse it too)."""
    return ModelError(f"{op.location}: {what}. The model file is inconsistent; re-export it with the TFLite "
                      "converter.")


# -- small helpers shared by op definitions -------------------------------------------------------------------

def present(op) -> list:
    """The op's tensors that are there (omitted optional inputs left out)."""
    return [t for t in op.inputs + op.outputs if t is not None]


def input_of(op, k: int):
    """Input k, or None when the op omits it or has fewer inputs."""
    return op.inputs[k] if len(op.inputs) > k else None


def const_values(op, k: int, what: str):
    """The int64 values of constant input k; raise a ModelError if it is missing."""
    t = input_of(op, k)
    if t is None:
        raise op_error(op, f"has no {what} input")
    if not t.is_const:
        return None
    return t.data.astype(np.int64)


def normalized_axis(op, axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as 0..rank-1; a ModelError when outside [-rank, rank)."""
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise op_error(op, f"has {what} {axis} for a rank-{rank} tensor")
    return axis + rank if axis < 0 else axis


def require_same_shape(op, a, b) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise op_error(op, f"'{a.name}' {list(a.shape)} and '{b.name}' {list(b.shape)} must have the same shape")


def require_same_elements(op) -> None:
    """Elementwise ops map each input element to one output element."""
    x, y = op.inputs[0], op.outputs[0]
    if x.num_elements != y.num_elements:
        raise op_error(op, f"maps {x.num_elements} input elements to {y.num_elements} outputs")


FUSED_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


def fused_activation(op, options: dict) -> str:
    """The name of the op's fused activation (ActivationFunctionType)."""
    code = options.get("fused_activation_function", 0)
    if code not in FUSED_ACTIVATIONS:
        raise op_error(op, f"has an unknown fused activation code {code}")
    return FUSED_ACTIVATIONS[code]


QUANTIZED_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def dtype_range(dtype: str) -> tuple:
    return QUANTIZED_RANGES[dtype]


class ForcedMode(str):
    """A rounding mode ("ref"/"tflm") with some op types forced to another rounding: research and tests of the
    alternatives (edgesdk/targets/c/testing.py); never used by a build."""

    def __new__(cls, mode: str, forced: dict):
        value = super().__new__(cls, mode)
        value.forced = dict(forced)
        return value


def rounding_of(op, mode: str) -> str:
    """The requantization arithmetic `op` uses under `mode` (edgesdk.ir.rounding), unless a ForcedMode says."""
    from ..ir.rounding import requant_rounding

    forced = getattr(mode, "forced", {}).get(op.type)
    return forced or requant_rounding(op, str(mode))
