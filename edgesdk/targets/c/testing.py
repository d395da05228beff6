"""Run the C target's generated code on the host, one op at a time (tests and rounding research).

`OpLibrary(ops, mode)` generates one C file in which every tensor the ops touch is a global buffer
(`edgesdk_t<id>`) and every op is a function `edgesdk_op_<k>()` whose body is exactly what
`emit_op` produced, compiles it with the kernel library into a cached host shared library
(edgesdk.hostcc), and lets Python fill input buffers, run an op and read its output. The context here has
the same methods as the executor's CCodegenContext, so the code under test is the code the firmware gets.
"""

from __future__ import annotations

import ctypes
import hashlib
from pathlib import Path

import numpy as np

from ...hostcc import build_shared_library, cache_dir, load_shared_library
from ...output_dir import write_file_atomically
from ...importer.names import UniqueIdentifiers
from ...ops import op_def, prepared
from ...ops.base import ForcedMode
from ...ops.control_flow import control_flow_units
from .calls import C_TYPES, Statement, float_literal, render_layer
from .codegen import emit_layer
from .ops.add import OUTPUT_TABLE_ADDS, output_table_adds

KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"
NUMPY_TYPES = {"int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
               "float32": np.float32, "bool": np.bool_}
C_ARRAY_TYPES = {"int8_t": "int8_t", "int32_t": "int32_t", "uint8_t": "uint8_t", "float": "float", "int16_t": "int16_t",
                 "int64_t": "int64_t", "double": "double"}


def kernel_sources() -> list:
    return sorted(KERNELS_DIR.glob("*.c"))


_KERNELS = None


def kernels_library() -> ctypes.CDLL:
    """The kernel library built once for the host, loaded with global symbols (shared by all OpLibrary)."""
    global _KERNELS
    if _KERNELS is None:
        path = build_shared_library("edgesdk_kernels", kernel_sources(), [KERNELS_DIR])
        _KERNELS = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return _KERNELS


class HostContext:
    """A codegen context for the host: every tensor the ops touch gets its own slot in one host arena array
    (`edgesdk_arena`), so the generated calls are exactly the firmware's, only the offsets differ."""

    ALIGN = 16

    def __init__(self, mode: str = "ref", force_rounding: dict | None = None, distinct_constants: bool = False):
        self.rounding_mode = mode
        self.force_rounding = force_rounding or {}  # op type -> rounding, to test alternatives
        # Each constant array initialized with its distinct values only (its declared size unchanged): for code
        # that is compiled but never run, such as the warning check of tests/test_c_codegen.py, where the
        # shared models' weights would be most of the compile.
        self.distinct_constants = distinct_constants
        self.declarations: list = []
        self.buffers: dict = {}  # Tensor -> (offset, nbytes); ops of several graphs may share a library
        self.arena_bytes = 0
        self._names = UniqueIdentifiers()
        self.target_data: dict = {}

    def arena_offset(self, tensor) -> int:
        if tensor not in self.buffers:
            offset = -(-self.arena_bytes // self.ALIGN) * self.ALIGN
            self.buffers[tensor] = (offset, max(tensor.nbytes, 1))
            self.arena_bytes = offset + max(tensor.nbytes, 1)
        return self.buffers[tensor][0]

    def layer_choice(self, op, name: str, default: bool) -> bool:
        return default  # no tuning schedule on the host

    def prepared(self, op):
        """The op layer's data, with the rounding forced where the test asks (research on alternatives)."""
        if op.type not in self.force_rounding:
            return prepared(op, self.rounding_mode)
        return op_def(op.type).prepare(op, ForcedMode(self.rounding_mode, self.force_rounding))

    def const_array(self, name_hint: str, array: np.ndarray, ctype: str, comment: str = "") -> str:
        symbol = self.symbol(name_hint)
        values = np.asarray(array).reshape(-1)
        size = max(values.size, 1)
        if self.distinct_constants:
            values = distinct_values(values)
        if ctype == "float":
            items = ", ".join(float_literal(v) for v in values)
        elif ctype == "double":
            items = ", ".join(float(v).hex() for v in values)
        else:
            items = ", ".join(str(int(v)) for v in values)
        self.declarations.append(f"static const {C_ARRAY_TYPES[ctype]} {symbol}[{size}] = {{{items or '0'}}};")
        return symbol

    def declare(self, c_text: str) -> None:
        self.declarations.append(c_text)

    def symbol(self, name_hint: str) -> str:
        return self._names.unique(name_hint)

    def data(self, target_name: str, default_factory):
        return self.target_data.setdefault(target_name, default_factory())


def distinct_values(values: np.ndarray) -> np.ndarray:
    """The values of a flat array with distinct bit patterns (so -0.0 and each NaN stay), in first-seen order."""
    values = np.ascontiguousarray(values)
    if values.size == 0:
        return values
    _, first = np.unique(values.view(f"u{values.itemsize}"), return_index=True)
    return values[np.sort(first)]


def generate_source(ops, mode: str = "ref", force_rounding: dict | None = None,
                    distinct_constants: bool = False) -> tuple:
    """(C source text, HostContext) with one function per op: edgesdk_op_<position>(), and one per inlined WHILE or
    IF with everything nested in it, edgesdk_unit_<position of its first op>() (control_flow_units): its loop
    and branches are statements that only compile together. `distinct_constants`: see HostContext."""
    ctx = HostContext(mode, force_rounding, distinct_constants)
    ctx.data(OUTPUT_TABLE_ADDS, set).update(output_table_adds(ops, None))  # as CTarget.generate, no flash limit
    bodies, rendered = [], []
    for k, op in enumerate(ops):
        layer = emit_layer(op, ctx)
        body = "\n".join("    " + line for line in render_layer(layer).splitlines())
        rendered.append(f"    /* {op.type} #{op.index}: {layer.note} */\n{body}")
        if not any(isinstance(call, Statement) for call in layer.calls):
            bodies.append(f"/* {op.type} #{op.index}: {layer.note} */\nvoid edgesdk_op_{k}(void)\n{{\n{body}\n}}\n")
    k = 0
    for unit in control_flow_units(list(ops)):
        if len(unit) > 1:
            text = "\n".join(rendered[k:k + len(unit)])
            bodies.append(f"/* {unit[0].location}, inlined */\nvoid edgesdk_unit_{k}(void)\n{{\n{text}\n}}\n")
        k += len(unit)
    lines = ["#include <stdint.h>", '#include "edgesdk_kernels.h"', "",
             f"uint8_t edgesdk_arena[{max(ctx.arena_bytes, 16)}] __attribute__((aligned(16)));",
             "", *ctx.declarations, "", *bodies]
    return "\n".join(lines), ctx


class OpLibrary:
    """The compiled ops; `run(k, {tensor: array})` -> {output tensor: array}."""

    def __init__(self, ops, mode: str = "ref", force_rounding: dict | None = None):
        self.ops = list(ops)
        source, self.ctx = generate_source(self.ops, mode, force_rounding)
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        src_dir = cache_dir() / "generated"
        src_dir.mkdir(parents=True, exist_ok=True)
        path = src_dir / f"ops_{digest}.c"
        if not path.exists():  # renamed into place whole: another process may compile it at the same moment
            write_file_atomically(path, source)
        self.source = source
        kernels_library()  # loaded RTLD_GLOBAL: the ops library resolves the kernels from it
        self.lib = load_shared_library(f"edgesdk_ops_{digest}", [path], [KERNELS_DIR])

    def _address(self, tensor) -> int:
        offset, _ = self.ctx.buffers[tensor]
        return ctypes.addressof(ctypes.c_uint8.in_dll(self.lib, "edgesdk_arena")) + offset

    def write(self, tensor, array) -> None:
        data = np.ascontiguousarray(np.asarray(array, dtype=NUMPY_TYPES[tensor.dtype])).tobytes()
        ctypes.memmove(self._address(tensor), data, len(data))

    def read(self, tensor) -> np.ndarray:
        data = ctypes.string_at(self._address(tensor), tensor.nbytes)
        return np.frombuffer(data, dtype=NUMPY_TYPES[tensor.dtype]).reshape(tensor.shape).copy()

    def run(self, op, inputs: dict) -> list:
        """Write `inputs` ({tensor: array}), run `op` (an Op of the library, or its position), return its outputs."""
        k = op if isinstance(op, int) else self.ops.index(op)
        for tensor, array in inputs.items():
            if tensor in self.ctx.buffers:  # an input the op's code never reads (ZEROS_LIKE) has no buffer
                self.write(tensor, array)
        getattr(self.lib, f"edgesdk_op_{k}")()
        return [self.read(t) for t in self.ops[k].outputs]

    def run_unit(self, unit: list, inputs: dict) -> None:
        """Write `inputs`, run a unit of control_flow_units (one op, or an inlined WHILE / IF as a whole)."""
        k = self.ops.index(unit[0])
        for tensor, array in inputs.items():
            if tensor in self.ctx.buffers:  # an input the code never reads (ZEROS_LIKE) has no buffer
                self.write(tensor, array)
        getattr(self.lib, f"edgesdk_unit_{k}" if len(unit) > 1 else f"edgesdk_op_{k}")()


# -- comparison against the references ---------------------------------------------------------------------

def reference_tensors(model, inputs: list, mode: str = "ref") -> dict:
    """Run LiteRT BUILTIN_REF ("ref") or TFLite Micro ("tflm") keeping every tensor: {tensor index: array}.

    `model` is a path or the .tflite bytes; `inputs` are the model inputs in order (model dtypes).
    """
    return reference_tensor_sequence(model, [inputs], mode)[0]


def reference_tensor_sequence(model, steps: list, mode: str = "ref") -> list:
    """reference_tensors for a sequence of inferences in one interpreter (a stateful model carries its state from
    step to step): one {tensor index: array} per step, each taken right after that step's invoke."""
    import tflite

    data = Path(model).read_bytes() if not isinstance(model, (bytes, bytearray)) else bytes(model)
    # Only the model's own tensors: the interpreter appends tensors of its own (other subgraphs, kernel temporaries)
    # whose indices the importer and folding reuse for the tensors they create.
    subgraph = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    count = subgraph.TensorsLength()
    # Resource handles hold no data (TFLite Micro crashes reading one).
    resources = {i for i in range(count) if subgraph.Tensors(i).Type() == tflite.TensorType.RESOURCE}
    results = []
    if mode == "ref":
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                         experimental_preserve_all_tensors=True)
        it.allocate_tensors()
        for inputs in steps:
            for detail, x in zip(it.get_input_details(), inputs):
                it.set_tensor(detail["index"], x)
            it.invoke()
            result = {}
            for detail in it.get_tensor_details():
                if detail["index"] >= count or detail["index"] in resources:
                    continue
                try:
                    result[detail["index"]] = it.get_tensor(detail["index"]).copy()
                except ValueError:  # tensors without data (e.g. optional inputs)
                    pass
            results.append(result)
        return results
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_bytes(data, arena_size=max(len(data) * 4, 1 << 20),
                                        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)
    for inputs in steps:
        for i, x in enumerate(inputs):
            it.set_input(x, i)
        it.invoke()
        result = {}
        for index in (i for i in range(count) if i not in resources):
            t = it.GetTensor(index, 0)
            if t and t.get("tensor_data") is not None:
                result[index] = np.asarray(t["tensor_data"]).reshape(t["shape"]).copy()
        results.append(result)
    return results


def reset_value(tensor) -> np.ndarray:
    """A persistent tensor's value after the model's reset (edgesdk_default_reset): its initial value, or TFLite's
    reset fill (the zero point of an int8 tensor, else 0)."""
    if tensor.initial is not None:
        return np.asarray(tensor.initial).reshape(tensor.shape)
    fill = int(tensor.quant.zero_point[0]) if tensor.dtype == "int8" and tensor.quant is not None else 0
    return np.full(tensor.shape, fill, dtype=NUMPY_TYPES[tensor.dtype])


def ir_value(tensor, graph, ref: dict):
    """A tensor's value in IR terms from the reference's tensors (uint8 tensors shifted to int8)."""
    if tensor.id in ref and not _is_edge(tensor, graph):
        value = ref[tensor.id]
        if tensor.orig_dtype == "uint8" and tensor.dtype == "int8":
            return (value.astype(np.int16) - 128).astype(np.int8)
        return value
    # A uint8 model edge inserted by the importer: same bytes as its int8 partner, before the shift.
    for op in graph.ops:
        if op.type == "QUANTIZE" and op.attrs.get("edge"):
            if op.inputs[0] is tensor and op.outputs[0].id in ref:
                return ref[op.outputs[0].id]
            if op.outputs[0] is tensor and op.inputs[0].id in ref:
                return ref[op.inputs[0].id]
    return None


def _is_edge(tensor, graph) -> bool:
    return tensor.dtype == "uint8" and tensor.orig_dtype == "uint8"


def random_model_inputs(model, seed: int) -> list:
    """Seeded random inputs covering each input's range (model dtypes)."""
    import tflite

    data = Path(model).read_bytes() if not isinstance(model, (bytes, bytearray)) else bytes(model)
    sg = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    rng = np.random.default_rng(seed)
    types = {0: np.float32, 9: np.int8, 3: np.uint8, 2: np.int32, 7: np.int16, 4: np.int64, 6: np.bool_}
    result = []
    for i in range(sg.InputsLength()):
        t = sg.Tensors(sg.Inputs(i))
        shape = tuple(t.ShapeAsNumpy()) if t.ShapeLength() else ()
        dtype = types[t.Type()]
        if dtype == np.float32:
            result.append(rng.normal(0.0, 2.0, shape).astype(np.float32))
        elif dtype == np.bool_:
            result.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            info = np.iinfo(dtype)
            result.append(rng.integers(info.min, info.max + 1, shape, dtype=np.int64).astype(dtype))
    return result


def compare_ops(graph, ref: dict, mode: str = "ref", library: OpLibrary | None = None) -> list:
    """Run every op of `graph` on the reference's own inputs; list (op, max |diff|, mismatches) that differ.
    State (persistent tensors) starts from its reset value, as in a fresh interpreter."""
    return compare_ops_sequence(graph, [ref], mode, library)


def compare_ops_sequence(graph, refs: list, mode: str = "ref", library: OpLibrary | None = None) -> list:
    """compare_ops over a sequence of inferences (`refs`: reference_tensor_sequence). The ops read the model's state
    (persistent tensors) as edgesdk keeps it -- its reset value, then whatever the ops wrote -- and the state after
    each step is compared with the reference's too."""
    library = library or OpLibrary(graph.ops, mode)
    state = {t: reset_value(t) for t in graph.state}
    failures = []
    for ref in refs:
        for unit in control_flow_units(graph.ops):
            produced = {t for op in unit for t in op.outputs}
            inputs = {}
            for t in (t for op in unit for t in op.inputs):
                if t is not None and not t.is_const and (t not in produced or t in state):
                    inputs[t] = state[t] if t in state else ir_value(t, graph, ref)
            if any(v is None for v in inputs.values()):
                continue
            library.run_unit(unit, inputs)
            touched = [t for op in unit for t in op.inputs + op.outputs if t is not None]
            written = list(dict.fromkeys(t for t in touched if t in state))
            for t in written:
                state[t] = library.read(t)
            # A WHILE / IF unit: only its own outputs (those of its parts) mean the same as the reference's tensors.
            compared = unit[0].outputs if len(unit) == 1 else [t for op in unit if op.subgraph == unit[0].subgraph
                                                               for t in op.outputs]
            compared = list(dict.fromkeys(compared))
            for tensor, got in [(t, library.read(t)) for t in compared] + [(t, state[t]) for t in written
                                                                           if t not in produced]:
                want = ir_value(tensor, graph, ref)
                if want is None:
                    continue
                failure = _difference(got, np.asarray(want).reshape(got.shape))
                if failure is not None:
                    failures.append((unit[0], *failure))
    return failures


def _difference(got, want):
    """(max |diff|, mismatches) when the bytes differ, else None."""
    if got.dtype == np.float32:
        if got.tobytes() == want.astype(np.float32).tobytes():
            return None
        differ = got.view(np.uint32) != want.astype(np.float32).view(np.uint32)
        return float(np.max(np.abs(got - want))), int(np.sum(differ))
    delta = np.abs(got.astype(np.int64) - want.astype(np.int64))
    count = int(np.count_nonzero(delta))
    return (int(delta.max(initial=0)), count) if count else None
