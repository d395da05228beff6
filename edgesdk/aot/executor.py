"""Step 5b: the ahead-of-time executor: one C function that runs every layer in order.

Inputs: the partitioned graph (regions), the memory plan, the rounding mode. For each region it asks the
region's target for code: the host C target returns C statements (kernel calls), the NPU target returns
commands, which become one command table per region plus a shared weights blob. Nothing is rendered
here: the result (`ExecutorModel`) is data that the templates in edgesdk/templates/ turn into C.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..importer.names import c_identifier, sanitize_name
from ..ir.graph import Graph, Tensor
from ..ir.rounding import requant_rounding
from .memory_plan import MemoryPlan

C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "float32": "float"}
WEIGHTS_REGION, ARENA_REGION = 0, 1


@dataclass
class ConstArray:
    symbol: str
    ctype: str
    values: np.ndarray
    comment: str = ""


@dataclass
class Step:
    """One block of the run function: a host layer (code) or an NPU region (table index)."""

    comment: str
    code: str = ""
    npu_table: int | None = None


@dataclass
class NpuTable:
    symbol: str
    data: bytes
    commands: list
    listing: list  # one human-readable line per command
    ops: list
    cycles: int


@dataclass
class IoTensor:
    name: str  # C identifier
    model_name: str
    dtype: str
    shape: tuple
    nbytes: int
    arena_offset: int
    quant: dict | None


@dataclass
class ExecutorModel:
    model_name: str
    arena_bytes: int
    steps: list = field(default_factory=list)
    declarations: list = field(default_factory=list)
    consts: list = field(default_factory=list)
    npu_tables: list = field(default_factory=list)
    npu_weights: bytearray = field(default_factory=bytearray)
    npu_weight_labels: list = field(default_factory=list)  # (offset, size, label)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)


class _Symbols:
    def __init__(self):
        self.used: set = set()

    def unique(self, hint: str) -> str:
        base = c_identifier(hint, "sym")
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name


class CCodegenContext:
    """What the host C target's codegen may ask of the executor (see edgesdk/targets/c/codegen.py)."""

    def __init__(self, model: ExecutorModel, plan: MemoryPlan | None, symbols: _Symbols, rounding_mode: str):
        self.model = model
        self.plan = plan
        self.symbols = symbols
        self.rounding_mode = rounding_mode
        self.current_op = None
        self.scratch_requests: dict = {}

    def tensor_ptr(self, tensor: Tensor) -> str:
        ctype = C_TYPES[tensor.dtype]
        offset = self.plan.offset(tensor) if self.plan is not None else 0
        return f"(({ctype} *)(edgesdk_arena + {offset}))"

    def const_array(self, name_hint: str, array: np.ndarray, ctype: str) -> str:
        symbol = self.symbols.unique(name_hint)
        self.model.consts.append(ConstArray(symbol, ctype, np.asarray(array).reshape(-1), self._op_comment()))
        return symbol

    def declare(self, c_text: str) -> None:
        self.model.declarations.append(c_text)

    def symbol(self, name_hint: str) -> str:
        return self.symbols.unique(name_hint)

    def rounding_for(self, op) -> str:
        return requant_rounding(op, self.rounding_mode)

    def scratch_ptr(self, nbytes: int) -> str:
        self.scratch_requests[self.current_op] = max(nbytes, self.scratch_requests.get(self.current_op, 0))
        offset = self.plan.scratch[self.current_op][0] if self.plan is not None and self.current_op in self.plan.scratch else 0
        return f"((void *)(edgesdk_arena + {offset}))"

    def _op_comment(self) -> str:
        return describe_op(self.current_op) if self.current_op is not None else ""


class NpuCodegenContext:
    """What the NPU target's codegen may ask: arena offsets, a weights blob in flash, the rounding."""

    def __init__(self, model: ExecutorModel, plan: MemoryPlan, rounding_mode: str):
        self.model = model
        self.plan = plan
        self.rounding_mode = rounding_mode

    def arena_offset(self, tensor: Tensor) -> int:
        return self.plan.offset(tensor)

    def add_weights(self, data: bytes, align: int = 16, label: str = "") -> int:
        blob = self.model.npu_weights
        blob.extend(b"\0" * (-len(blob) % align))
        offset = len(blob)
        blob.extend(bytes(data))
        self.model.npu_weight_labels.append((offset, len(data), sanitize_name(label)))
        return offset

    def rounding_for(self, op) -> str:
        return requant_rounding(op, self.rounding_mode)


def describe_op(op) -> str:
    where = f"layer {op.index}" if op.index >= 0 else "inserted"
    return sanitize_name(f"{where}: {op.type} -> '{op.outputs[0].name}'")


def collect_scratch_sizes(graph: Graph, regions: list, rounding_mode: str) -> dict:
    """Dry-run the host codegen to learn how much scratch each C layer asks for (before planning)."""
    from ..targets.c.codegen import emit_op

    dry = ExecutorModel(graph.name, 0)
    ctx = CCodegenContext(dry, None, _Symbols(), rounding_mode)
    for region in regions:
        if region.target == "c":
            for op in region.ops:
                ctx.current_op = op
                emit_op(op, ctx)
    return ctx.scratch_requests


def build_executor(graph: Graph, regions: list, plan: MemoryPlan, rounding_mode: str, board) -> ExecutorModel:
    from ..npu import cmdtable, timing
    from ..targets.c.codegen import emit_op
    from ..targets.npu.codegen import lower_ops

    model = ExecutorModel(c_identifier(graph.name, "model"), plan.arena_bytes)
    symbols = _Symbols()
    c_ctx = CCodegenContext(model, plan, symbols, rounding_mode)
    npu_ctx = NpuCodegenContext(model, plan, rounding_mode)
    memory_map = timing.MemoryMap.for_board(board)
    for region in regions:
        if region.target == "c":
            for op in region.ops:
                c_ctx.current_op = op
                step = emit_op(op, c_ctx)
                model.steps.append(Step(describe_op(op) + (f" ({step.comment})" if step.comment else ""), step.code))
        elif region.target == "npu":
            commands = lower_ops(region.ops, npu_ctx)
            index = len(model.npu_tables)
            table = NpuTable(f"edgesdk_npu_table_{index}", cmdtable.encode(commands), commands,
                             [sanitize_name(line, max_chars=400) for line in cmdtable.describe(commands)], region.ops,
                             timing.table_cycles(commands, memory_map))
            model.npu_tables.append(table)
            layers = ", ".join(str(op.index) for op in region.ops)
            model.steps.append(Step(f"NPU region {index}: layers {layers} ({len(commands)} commands)", npu_table=index))
        else:
            raise ValueError(f"no executor codegen for target {region.target}")
    model.inputs = [_io_tensor(t, plan, symbols) for t in graph.inputs]
    model.outputs = [_io_tensor(t, plan, symbols) for t in graph.outputs]
    return model


def _io_tensor(t: Tensor, plan: MemoryPlan, symbols: _Symbols) -> IoTensor:
    quant = None
    if t.quant is not None:
        quant = {"scale": [float(s) for s in t.quant.scale], "zero_point": [int(z) for z in t.quant.zero_point]}
    return IoTensor(symbols.unique(t.name), t.name, t.dtype, tuple(int(d) for d in t.shape), t.nbytes,
                    plan.offset(t), quant)
