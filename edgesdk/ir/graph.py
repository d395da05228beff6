"""Graph IR: tensors and ops with exact quantization parameters.

The importer builds it from a .tflite file; the partitioner annotates ops with targets; codegen and the
memory planner read it. uint8 models are legalized to int8 by the importer (values and zero points shifted
by -128), so every later step sees int8 activations only; `Tensor.orig_dtype` keeps "uint8" for model edges
and `Op.uint8_semantics` marks ops whose TFLite uint8 kernel rounds differently from the int8 one.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass, field

# Ops whose output the memory plan gives its input's bytes (same bytes, new shape): a view, not a copy.
ALIAS_OPS = {"RESHAPE", "EXPAND_DIMS", "SQUEEZE"}
DTYPE_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "float32": 4, "bool": 1,
               "resource": 0}  # a resource variable's handle: no data of its own (lowered by the importer)


@dataclass
class QuantParams:
    """A tensor's affine quantization: real = scale * (q - zero_point), per channel along `axis` or per tensor."""

    scale: np.ndarray  # float32, one per channel (or one)
    zero_point: np.ndarray  # int64, same length as scale
    axis: int = 0  # quantized dimension for per-channel parameters

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1

    @property
    def scale0(self) -> float:
        return float(self.scale[0])

    @property
    def zp0(self) -> int:
        return int(self.zero_point[0])


@dataclass(eq=False)
class Tensor:
    """A tensor of the model: its shape, type, quantization and, for a constant, its data."""

    id: int  # tensor index in the source model
    name: str
    shape: tuple
    dtype: str
    quant: QuantParams | None = None
    data: np.ndarray | None = None  # constant contents, else None
    orig_dtype: str | None = None  # "uint8" when legalized from uint8
    # State that survives between inferences (TFLite variable tensors, resource variables): a persistent
    # buffer of the memory plan, set to `initial` (or, if None, TFLite's reset value) by the model's reset.
    persistent: bool = False
    initial: np.ndarray | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n

    @property
    def nbytes(self) -> int:
        return self.num_elements * DTYPE_BYTES[self.dtype]

    def __repr__(self) -> str:
        return f"Tensor({self.id}:{self.name!r} {self.dtype}{list(self.shape)})"


@dataclass(eq=False)
class Op:
    """One operator of the model: its type, operand tensors and options."""

    index: int  # operator index in the source model
    type: str  # TFLite builtin name, e.g. "CONV_2D"
    inputs: list  # list[Tensor | None]
    outputs: list  # list[Tensor]
    attrs: dict = field(default_factory=dict)
    uint8_semantics: bool = False
    intermediates: list = field(default_factory=list)  # quantization-only tensors of recurrent ops (TFLite)
    # The .tflite subgraph the op comes from: 0 for the main one; control flow (WHILE, IF) inlines the ops of
    # other subgraphs into the graph's one schedule (edgesdk/importer/control_flow.py), `index` stays the
    # operator's index within its own subgraph.
    subgraph: int = 0

    @property
    def file_operator(self) -> bool:
        """An operator of the file's main subgraph as the file has it, named by its index alone (a tuning schedule
        does): not inserted by the importer, not inlined from a WHILE / IF subgraph, not a part of one."""
        return self.index >= 0 and not self.subgraph and "part" not in self.attrs

    @property
    def location(self) -> str:
        where = f"operator #{self.index}" + (f" of subgraph {self.subgraph}" if self.subgraph else "")
        if self.outputs:
            return f"{where} ({self.type}, output '{self.outputs[0].name}')"
        return f"{where} ({self.type})"

    def __repr__(self) -> str:
        return f"Op({self.index}:{self.type})"


@dataclass(eq=False)
class Graph:
    """The model as edgesdk's passes see it: tensors and ops in topological order, its inputs and outputs."""

    name: str
    tensors: list  # list[Tensor]
    ops: list  # list[Op], topological order
    inputs: list  # list[Tensor]
    outputs: list  # list[Tensor]
    description: str = ""
    warnings: list = field(default_factory=list)  # about the file (printed by the build, in report.json)
    source_path: object = None  # the ONNX file an imported graph came from (--rounding ort reads it again)
    # --stream-input: an int8 graph input whose edge conversion runs on each row the caller gives -> the uint8
    # tensor the caller gives (edgesdk/ops/stripes.py, absorb_input_conversions)
    stream_sources: dict = field(default_factory=dict)

    def producers(self) -> dict:
        return {t: op for op in self.ops for t in op.outputs}

    def consumers(self) -> dict:
        result: dict = {}
        for op in self.ops:
            for t in op.inputs:
                if t is not None:
                    result.setdefault(t, []).append(op)
        return result

    @property
    def state(self) -> list:
        """Persistent tensors (the model's state across inferences), in first-use order."""
        return [t for t in self.activation_tensors() if t.persistent]

    def activation_tensors(self) -> list:
        """Non-constant tensors that need memory: graph inputs and op outputs, in first-use order."""
        seen, result = set(), []
        for t in list(self.inputs) + [t for op in self.ops for t in op.inputs + op.outputs if t is not None] + [
                t for t in self.tensors if t.persistent]:
            if not t.is_const and t not in seen:
                seen.add(t)
                result.append(t)
        return result
