"""Step 1: a .tflite flatbuffer -> the graph IR.

Reads with the `tflite` package, keeps quantization parameters exactly (float32 scales, per-channel axis),
computes explicit padding the way TFLite's kernels do, and legalizes uint8 models to int8 (values and zero
points shifted by -128; uint8 model inputs/outputs get an inserted QUANTIZE op so the executor's API still
takes and returns uint8). Every structural problem of the file becomes a ModelError naming where it is; ops
the compiler does not know become one UnsupportedOpError listing each of them.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np

from . import tflite_schema

tflite_schema.install()  # before the first `import tflite`: load the schema's modules one by one

from tflite.BuiltinOperator import BuiltinOperator  # noqa: E402
from tflite.BuiltinOptions import BuiltinOptions  # noqa: E402
from tflite.Model import Model  # noqa: E402
from tflite.TensorType import TensorType  # noqa: E402

from ..errors import ModelError, UnsupportedOpError
from ..ir.graph import DTYPE_BYTES, Graph, Op, QuantParams, Tensor
from ..ops import op_def
from .names import sanitize_name
from .control_flow import inline_control_flow
from .tflite_options import plain_vtable, read_options
from .variables import lower_resource_variables

OP_NAMES = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
# Custom ops TFLite's kernels define, by custom code: the op type edgesdk's op layer knows them as.
CUSTOM_TYPES = {"TFLite_Detection_PostProcess": "DETECTION_POSTPROCESS"}
TENSOR_TYPES = {
    TensorType.RESOURCE: "resource",  # a resource variable's handle (lowered away: importer/variables.py)
    TensorType.FLOAT32: "float32",
    TensorType.INT8: "int8",
    TensorType.UINT8: "uint8",
    TensorType.INT16: "int16",
    TensorType.INT32: "int32",
    TensorType.INT64: "int64",
    TensorType.BOOL: "bool",
}
NUMPY_TYPES = {"float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "int32": np.int32,
               "int64": np.int64, "bool": np.bool_}
ITEM_BYTES = {name: np.dtype(t).itemsize for name, t in NUMPY_TYPES.items()}

# UNIDIRECTIONAL_SEQUENCE_LSTM inputs that are biases (the four gates' and the projection's).
LSTM_BIAS_INPUTS = (12, 13, 14, 15, 17)
# Largest tensor the importer accepts: far above any MCU's memory, small enough to never exhaust the host.
MAX_TENSOR_ELEMENTS = 1 << 28
MAX_RANK = 6
# Quantization scales edgesdk accepts: far wider than any trained model's, narrow enough that every ratio and
# product of two scales the requantization arithmetic forms stays a finite float32.
MIN_SCALE, MAX_SCALE = 2.0 ** -60, 2.0 ** 60
# Zero points a quantized tensor of each type can hold (TFLite's kernels assume them).
ZERO_POINT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
                     "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 31), (1 << 31) - 1)}


def import_tflite(path) -> Graph:
    """Read `path` into a Graph, or raise ModelError/UnsupportedOpError with a message for the user."""
    path = Path(path)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"Cannot read model file {path}: {exc.strerror or exc}.") from None
    if len(buf) < 8 or buf[4:8] != b"TFL3":
        raise ModelError(
            f"{path} is not a TFLite model (no 'TFL3' flatbuffer identifier). "
            "Pass a .tflite file produced by the TFLite converter."
        )
    try:
        graph = _Importer(path, buf).run()
    except (ModelError, UnsupportedOpError):
        raise
    except Exception as exc:  # flatbuffers raises assorted errors on corrupt offsets
        raise ModelError(
            f"{path} is malformed or truncated: its flatbuffer could not be decoded ({type(exc).__name__}: {exc}). "
            "Re-export the model with the TFLite converter."
        ) from None
    return graph


_I8, _U8, _I32, _U32, _U64, _U16 = (struct.Struct(f) for f in ("<b", "<B", "<i", "<I", "<Q", "<H"))


class _Arrays(dict):
    """The struct of n little-endian values of one type, by n: made once (struct.unpack_from(f"<{n}H", ...)
    formats and looks up its string each call, half the cost of a short read). The same struct, so the same
    values and errors; a few hundred lengths kept (a corrupt file's are not)."""

    def __init__(self, code: str):
        super().__init__()
        self.code = code

    def __missing__(self, n: int) -> struct.Struct:
        array = struct.Struct(f"<{n}{self.code}")
        if len(self) < 256:
            self[n] = array
        return array


_VTABLE_ENTRIES, _INT32_ARRAYS, _UINT32_ARRAYS = _Arrays("H"), _Arrays("i"), _Arrays("I")


class _Table:
    """One flatbuffer table, its vtable read once: its fields read by field number, in the schema's order, with
    the `tflite` package's defaults (its generated accessors look the vtable up again for every field). The
    tables of a model's subgraphs and operators; a tensor's three (Tensor, QuantizationParameters, Buffer),
    ~90 a model, are read with no object at all, by _table_fields."""

    __slots__ = ("buf", "pos", "fields")

    def __init__(self, buf: bytes, pos: int):
        self.buf, self.pos = buf, pos
        self.fields = _vtable_entries(buf, pos)

    def at(self, field: int) -> int:
        """The position of a field's value, 0 when the table does not have it."""
        return self.pos + self.fields[field] if field < len(self.fields) and self.fields[field] else 0

    # (scalar and vector test the field as `at` does, inline: they run a dozen times per tensor)
    def scalar(self, field: int, kind: struct.Struct, default=0):
        fields = self.fields
        if field < len(fields) and fields[field]:
            return kind.unpack_from(self.buf, self.pos + fields[field])[0]
        return default

    def vector(self, field: int) -> tuple:
        """(position of the first element, element count) of a vector field; (0, 0) when absent."""
        fields = self.fields
        if not (field < len(fields) and fields[field]):
            return 0, 0
        return _vector(self.buf, self.pos + fields[field])

    def array(self, field: int, dtype) -> np.ndarray:
        """A vector field as a numpy array (a view of the file)."""
        start, length = self.vector(field)
        return np.frombuffer(self.buf, dtype, length, start)

    def table(self, field: int) -> "_Table | None":
        at = self.at(field)
        return _Table(self.buf, at + _U32.unpack_from(self.buf, at)[0]) if at else None

    def table_positions(self, field: int) -> list:
        """The position of each table of a vector-of-tables field (each element is an offset to its table)."""
        start, length = self.vector(field)
        offsets = _UINT32_ARRAYS[length].unpack_from(self.buf, start) if length else ()
        return [start + 4 * i + offset for i, offset in enumerate(offsets)]


_ABSENT_FIELDS = (0,) * 8


def _vtable_entries(buf: bytes, pos: int) -> tuple:
    """The vtable entries of the table at `pos`, one per field the table's writer knew (0: absent): a field's
    value lies at pos + its entry."""
    vtable = pos - _I32.unpack_from(buf, pos)[0]
    count = (_U16.unpack_from(buf, vtable)[0] - 4) // 2
    return _VTABLE_ENTRIES[count].unpack_from(buf, vtable + 4) if count > 0 else ()


def _table_fields(buf: bytes, pos: int, count: int) -> tuple:
    """The vtable entries of the first `count` fields of the table at `pos`, as _Table reads them."""
    fields = _vtable_entries(buf, pos)
    return fields[:count] if len(fields) >= count else fields + _ABSENT_FIELDS[:count - len(fields)]


def _plain_table_fields(buf: bytes, pos: int, count: int) -> tuple | None:
    """_table_fields of a table whose vtable the generated flatbuffers accessors read as _Table does
    (tflite_options.plain_vtable); None for any other."""
    return _table_fields(buf, pos, count) if plain_vtable(buf, pos) else None


def _vector(buf: bytes, at: int) -> tuple:
    """(position of the first element, element count) of the vector whose offset is at `at` (_Table.vector)."""
    start = at + _U32.unpack_from(buf, at)[0]
    return start + 4, _U32.unpack_from(buf, start)[0]


# Field numbers (tflite/schema.fbs).
TENSOR_SHAPE, TENSOR_TYPE, TENSOR_BUFFER, TENSOR_NAME, TENSOR_QUANTIZATION, TENSOR_IS_VARIABLE = range(6)
QUANT_SCALE, QUANT_ZERO_POINT, QUANT_DIMENSION = 2, 3, 6
# The element types of those vectors as the `tflite` package gives them (little endian, marked so).
SCALE_TYPE, ZERO_POINT_TYPE = np.dtype("float32").newbyteorder("<"), np.dtype("int64").newbyteorder("<")
BUFFER_DATA, BUFFER_OFFSET, BUFFER_SIZE = range(3)
MODEL_OPERATOR_CODES, MODEL_BUFFERS = 1, 4
SUBGRAPH_TENSORS, SUBGRAPH_INPUTS, SUBGRAPH_OUTPUTS, SUBGRAPH_OPERATORS = range(4)
OPERATOR_OPCODE_INDEX, OPERATOR_INPUTS, OPERATOR_OUTPUTS, OPERATOR_INTERMEDIATES = 0, 1, 2, 8
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce  # (ndarray.min() and max() add a Python call)
INDEX_TYPE = np.dtype("int32").newbyteorder("<")  # tensor indices in operators and subgraphs


class _Importer:
    def __init__(self, path: Path, buf: bytes):
        self.path = path
        self.buf = buf
        self.model = Model.GetRootAsModel(buf, 0)
        self.buffer_count = self.model.BuffersLength()
        self.buffer_positions: list | None = None  # read on first use (after the count is checked)
        self.opcodes: dict = {}  # opcode index -> (builtin code, op type name)
        self.opcode_count = 0  # the opcode table's length, read and checked by run() before any operator
        self.opcode_positions: list | None = None  # where each opcode table is, read on first use
        self.arity_problems: dict = {}  # (op type, inputs, outputs, omitted inputs) -> Operands.arity_problem
        self.tensors: dict[int, Tensor] = {}
        self.intermediate_ids: set = set()
        self.warnings: list = []  # what the build prints and records in report.json (a file one reference refuses)
        self.axis_beyond_rank: dict = {}  # tensor index -> the ModelError text, unless only LSTM biases use it

    def fail(self, what: str) -> ModelError:
        return ModelError(f"{self.path}: {what}. The model file is inconsistent; re-export it with the TFLite converter.")

    def count(self, length: int, what: str) -> int:
        """A vector length from the file, checked against the file size (a corrupt length would make the
        importer loop over garbage for a long time): every element takes at least 4 bytes."""
        if length * 4 > len(self.buf):
            raise self.fail(f"it claims {length} {what}, more than its {len(self.buf)} bytes can hold (truncated or corrupt)")
        return length

    def run(self) -> Graph:
        model = self.model
        self.count(model.SubgraphsLength(), "subgraphs")
        self.count(model.BuffersLength(), "buffers")
        self.opcode_count = self.count(model.OperatorCodesLength(), "operator codes")
        if model.SubgraphsLength() < 1:
            raise self.fail("it has no subgraph")
        tensors, ops, inputs, outputs = self.read_subgraph(0)
        if not inputs or not outputs:
            raise self.fail("the subgraph declares no inputs or no outputs")
        for what, io in (("input", inputs), ("output", outputs)):
            for t in io:
                if t.dtype not in DTYPE_BYTES or t.dtype == "resource":
                    raise self.fail(f"model {what} '{t.name}' has tensor type {t.dtype.removeprefix('type')}, which "
                                    f"edgesdk does not know (model inputs and outputs may be "
                                    f"{', '.join(sorted(d for d in DTYPE_BYTES if d != 'resource'))})")
        description = (model.Description() or b"").decode("utf-8", "replace")
        graph = Graph(self.path.stem, tensors, ops, inputs, outputs, description)
        inline_control_flow(graph, self)  # WHILE / IF: their subgraphs' ops join the one schedule
        graph.warnings = list(self.warnings)
        lower_resource_variables(graph, self)
        _check_topological(graph, self)
        _legalize_uint8(graph)
        _drop_unused_tensors(graph)
        return graph

    def read_subgraph(self, index: int) -> tuple:
        """(tensors, ops, inputs, outputs) of subgraph `index` (tensors local to it)."""
        if not 0 <= index < self.model.SubgraphsLength():
            raise self.fail(f"an operator refers to subgraph {index}, but the model has "
                            f"{self.model.SubgraphsLength()} subgraphs")
        sg = _Table(self.buf, self.model.Subgraphs(index)._tab.Pos)
        outer, self.tensors = self.tensors, {}
        outer_beyond, self.axis_beyond_rank = self.axis_beyond_rank, {}
        try:
            self.count(sg.vector(SUBGRAPH_TENSORS)[1], "tensors")
            self.count(sg.vector(SUBGRAPH_OPERATORS)[1], "operators")
            operators = [_Table(self.buf, pos) for pos in sg.table_positions(SUBGRAPH_OPERATORS)]
            intermediates = [_indices(op, OPERATOR_INTERMEDIATES) for op in operators]
            self.intermediate_ids = {j for op_intermediates in intermediates for j in op_intermediates}
            for i, pos in enumerate(sg.table_positions(SUBGRAPH_TENSORS)):
                self.tensors[i] = self.read_tensor(pos, i)
            ops = [self.read_op(op, i, intermediates[i]) for i, op in enumerate(operators)]
            inputs = [self.tensor_ref(j, "subgraph input") for j in sg.array(SUBGRAPH_INPUTS, INDEX_TYPE).tolist()]
            outputs = [self.tensor_ref(j, "subgraph output") for j in sg.array(SUBGRAPH_OUTPUTS, INDEX_TYPE).tolist()]
            self.check_axis_beyond_rank(ops, inputs + outputs)
            return list(self.tensors.values()), ops, inputs, outputs
        finally:
            self.tensors = outer
            self.axis_beyond_rank = outer_beyond

    # -- tensors ---------------------------------------------------------------------------------
    def tensor_ref(self, index: int, what: str) -> Tensor:
        if index not in self.tensors:
            raise self.fail(f"{what} refers to tensor {index}, but the subgraph has {len(self.tensors)} tensors")
        return self.tensors[index]

    def operand(self, index: int, op_number: int, op_name: str, role: str) -> Tensor:
        """tensor_ref for an operator's operand (its message only worked out when the tensor is missing)."""
        tensor = self.tensors.get(index)
        return tensor if tensor is not None else self.tensor_ref(index, f"operator #{op_number} ({op_name}) {role}")

    def read_tensor(self, pos: int, index: int) -> Tensor:
        # The Tensor table's fields straight from its vtable (no _Table: ~90 tensors a model, the import's
        # busiest path), read in the order, and with the reads, of the _Table accessors (the same error on a
        # corrupt file).
        buf = self.buf
        shape_at, type_at, buffer_at, name_at, quant_at, variable_at = _table_fields(buf, pos, 6)  # (TENSOR_*)
        start, length = _vector(buf, pos + name_at) if name_at else (0, 0)
        name = sanitize_name(buf[start:start + length].decode("utf-8", "replace")) or f"tensor_{index}"
        ttype = _I8.unpack_from(buf, pos + type_at)[0] if type_at else 0
        dtype = TENSOR_TYPES[ttype] if ttype in TENSOR_TYPES else f"type{ttype}"
        start, length = _vector(buf, pos + shape_at) if shape_at else (0, 0)
        shape = _INT32_ARRAYS[length].unpack_from(buf, start) if length else ()
        if len(shape) > MAX_RANK or (shape and min(shape) < 0):
            raise self.fail(f"tensor {index} '{name}' has an invalid shape {list(shape)} (dynamic or negative dimensions are not supported)")
        count = math.prod(shape)  # Python integers: a product of int32 dimensions must not wrap around
        if count > MAX_TENSOR_ELEMENTS:
            raise self.fail(f"tensor {index} '{name}' has {count} elements, beyond any microcontroller")
        quant = self.read_quant(pos + quant_at if quant_at else 0, ttype, index, name, shape)
        tensor = Tensor(index, name, shape, dtype, quant)
        buffer = _U32.unpack_from(buf, pos + buffer_at)[0] if buffer_at else 0
        tensor.data = data = self.read_buffer(buffer, index, name, dtype, shape, count) if buffer else None
        # TFLite variable tensors (an LSTM's activation and cell state) keep their value between inferences.
        tensor.persistent = bool(_U8.unpack_from(buf, pos + variable_at)[0] if variable_at else 0) and data is None
        # Empty constants (a scalar's shape) are fine, and so are the quantization-only "intermediate" tensors
        # the converter attaches to recurrent ops (they hold scales, never data).
        if data is None and count == 0 and index not in self.intermediate_ids:
            raise self.fail(f"tensor {index} '{name}' has a zero dimension {list(shape)}; empty activations are not supported")
        return tensor

    def read_quant(self, at: int, ttype: int, index: int, name: str, shape: tuple) -> QuantParams | None:
        """The QuantizationParameters table whose offset is at `at` (0: the tensor has none)."""
        if not at:
            return None
        buf = self.buf
        pos = at + _U32.unpack_from(buf, at)[0]
        fields = _table_fields(buf, pos, QUANT_DIMENSION + 1)
        scale_at, zero_point_at, axis_at = fields[QUANT_SCALE], fields[QUANT_ZERO_POINT], fields[QUANT_DIMENSION]
        start, count = _vector(buf, pos + scale_at) if scale_at else (0, 0)
        if count == 0:
            return None
        scale = np.frombuffer(buf, SCALE_TYPE, count, start).astype(np.float32)  # (a copy: not a file view)
        start, zp_count = _vector(buf, pos + zero_point_at) if zero_point_at else (0, 0)
        zp = np.frombuffer(buf, ZERO_POINT_TYPE, zp_count, start).astype(np.int64) if zp_count \
            else np.zeros(count, np.int64)
        if zp.size == 1 and count > 1:
            zp = np.repeat(zp, count)
        axis = int(_I32.unpack_from(buf, pos + axis_at)[0]) if axis_at else 0
        if zp.size != count:
            raise self.fail(f"tensor {index} '{name}' has {count} scales but {zp.size} zero points")
        low, high = ZERO_POINT_RANGES.get(TENSOR_TYPES.get(ttype, ""), (-(1 << 31), (1 << 31) - 1))
        # One value: a Python number, no array temporaries. Per channel (a weight's, often hundreds): numpy's
        # reductions, the zero points' skipped when all are 0 (0 is in every range) as int8 weights' are; a NaN
        # scale makes min() and max() NaN, out of range.
        if count == 1:
            zero_point = zp.item()
            zero_point_in_range = low <= zero_point <= high
            in_range = MIN_SCALE <= scale.item() <= MAX_SCALE
        else:
            zero_point_in_range = not np.count_nonzero(zp) or (low <= _MIN(zp) and _MAX(zp) <= high)
            in_range = MIN_SCALE <= _MIN(scale) and _MAX(scale) <= MAX_SCALE
        if not zero_point_in_range:
            raise self.fail(f"tensor {index} '{name}' has a zero point outside [{low}, {high}], the range of its type")
        if not in_range:
            if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
                raise self.fail(f"tensor {index} '{name}' has a non-positive or non-finite quantization scale")
            raise self.fail(f"tensor {index} '{name}' has a quantization scale outside [2^-60, 2^60] "
                            f"({float(scale.min()):.3g}..{float(scale.max()):.3g}); its arithmetic would overflow")
        if scale.size > 1 and not (0 <= axis < len(shape) and shape[axis] == scale.size):
            problem = f"tensor {index} '{name}' has {scale.size} per-channel scales that do not match axis {axis} of shape {list(shape)}"
            if not (len(shape) == 1 and axis >= len(shape) and scale.size == shape[0]):
                raise self.fail(problem)
            # A 1-D tensor with one scale per element but a quantized dimension beyond its rank: what some
            # converters write for an LSTM's gate biases. LiteRT refuses the file, TFLite Micro runs it (its LSTM
            # never reads a bias scale). Accepted with a warning if LSTM biases are its only use (check_axis_beyond_rank).
            self.axis_beyond_rank[index] = problem
        return QuantParams(scale, zp, axis)

    def read_buffer(self, b: int, index: int, name: str, dtype: str, shape: tuple, count: int) -> np.ndarray | None:
        """The constant data of a tensor that refers to buffer `b` (not 0, TFLite's empty buffer)."""
        if b >= self.buffer_count:
            raise self.fail(f"tensor {index} '{name}' refers to buffer {b}, but the model has {self.buffer_count} buffers")
        buf = self.buf
        if self.buffer_positions is None:
            self.buffer_positions = _Table(buf, self.model._tab.Pos).table_positions(MODEL_BUFFERS)
        pos = self.buffer_positions[b]
        data_at, offset_at, size_at = _table_fields(buf, pos, 3)  # (BUFFER_*)
        offset = _U64.unpack_from(buf, pos + offset_at)[0] if offset_at else 0
        if offset > 1:  # large models keep data after the flatbuffer
            start, size = int(offset), int(_U64.unpack_from(buf, pos + size_at)[0] if size_at else 0)
            if start + size > len(buf):
                raise self.fail(f"tensor {index} '{name}' data lies outside the file (truncated?)")
            raw = memoryview(buf)[start:start + size]  # views, not copies: the one copy is made below
        else:
            start, size = _vector(buf, pos + data_at) if data_at else (0, 0)
            if size == 0:
                return None
            raw = memoryview(buf)[start:start + size]
        if dtype not in NUMPY_TYPES:
            raise self.fail(f"tensor {index} '{name}' is constant data of an unsupported type")
        expected = count * ITEM_BYTES[dtype]
        if len(raw) != expected:
            raise self.fail(f"tensor {index} '{name}' holds {len(raw)} bytes of data but its shape {list(shape)} needs {expected}")
        return np.frombuffer(raw, dtype=NUMPY_TYPES[dtype]).reshape(shape).copy()

    def check_axis_beyond_rank(self, ops, io) -> None:
        """The per-channel quantization whose axis lies beyond the tensor's rank is accepted only on LSTM biases
        (whose scales no integer LSTM kernel reads): anywhere else it is the inconsistent file it looks like."""
        accepted: dict = {}
        for index, problem in sorted(self.axis_beyond_rank.items()):
            tensor = self.tensors[index]
            uses = [(op, k) for op in ops for k, t in enumerate(op.inputs) if t is tensor]
            if tensor in io or not uses or any(op.type != "UNIDIRECTIONAL_SEQUENCE_LSTM" or k not in LSTM_BIAS_INPUTS
                                               for op, k in uses):
                raise self.fail(problem)
            for op, _ in uses:
                accepted.setdefault(op.index, []).append(tensor)
        for op_index, tensors in sorted(accepted.items()):
            t = tensors[0]
            names = ", ".join(f"'{x.name}'" for x in tensors)
            self.warnings.append(
                f"{self.path.name}: operator #{op_index} (UNIDIRECTIONAL_SEQUENCE_LSTM): bias tensor(s) {names} are "
                f"quantized per channel along axis {t.quant.axis}, beyond their rank {len(t.shape)}. LiteRT refuses "
                "this file; TFLite Micro runs it, and so does edgesdk (the integer LSTM never reads a bias scale): check "
                "the build against TFLite Micro (--rounding tflm). docs/rounding.md, 'Recurrent ops'.")

    # -- operators -------------------------------------------------------------------------------
    def read_op(self, table: _Table, i: int, intermediates: list):
        """One operator: its type, operands (checked against the op layer's schema), attributes and rules.
        An op type edgesdk has no definition for is imported as it is: the partitioner reports it together
        with every other op that cannot run (one message for the whole model). `intermediates`: its
        intermediate tensors' indices (read before the tensors)."""
        code, name = self.opcode(table.scalar(OPERATOR_OPCODE_INDEX, _U32), i)
        raw_inputs = _indices(table, OPERATOR_INPUTS)
        inputs = [None if j < 0 else self.operand(j, i, name, "input") for j in raw_inputs]
        outputs = [self.operand(j, i, name, "output") for j in _indices(table, OPERATOR_OUTPUTS)]
        ir_op = Op(i, name, inputs, outputs)
        ir_op.intermediates = [self.operand(j, i, name, "intermediate") for j in intermediates]
        definition = op_def(name)
        if definition is None:
            if not outputs:
                raise self.fail(f"operator #{i} ({name}) has no outputs")
            ir_op.attrs = {"options": read_options(table)}
            return ir_op
        omitted = frozenset(k for k, j in enumerate(raw_inputs) if j < 0) if None in inputs else frozenset()
        arity = name, len(inputs), len(outputs), omitted
        if arity not in self.arity_problems:  # (a model has a few op types, each with its operand counts)
            self.arity_problems[arity] = definition.operands.arity_problem(len(inputs), len(outputs), omitted)
        problem = self.arity_problems[arity]
        if problem:
            raise self.fail(f"{ir_op.location} {problem}")
        options = read_options(table, definition.options)
        ir_op.attrs = definition.attributes(ir_op, options)
        definition.check(ir_op)
        return ir_op

    def opcode(self, index: int, op_number: int) -> tuple:
        """(builtin code, op type name) of an opcode table entry, read once per model."""
        if index not in self.opcodes:
            if index >= self.opcode_count:
                raise self.fail(f"operator #{op_number} uses opcode index {index}, beyond the opcode table")
            code = self.builtin_code(index)
            name = OP_NAMES.get(code, f"BUILTIN_{code}")
            if code == BuiltinOperator.CUSTOM:
                custom = (self.model.OperatorCodes(index).CustomCode() or b'').decode('utf-8', 'replace')
                name = CUSTOM_TYPES.get(custom) or f"CUSTOM '{sanitize_name(custom)}'"
            self.opcodes[index] = code, name
        return self.opcodes[index]

    def builtin_code(self, index: int) -> int:
        """The builtin code of opcode table entry `index`: max(BuiltinCode(), DeprecatedBuiltinCode()) of the
        `tflite` package's accessors, read directly (theirs cost ~10 us an opcode) unless the model's or the
        entry's table is one they would read otherwise or fail on (then theirs is the value, or the error)."""
        try:
            code = self.builtin_code_read_directly(index)
        except struct.error:  # a read past the end: the accessors fail their own way
            code = None
        if code is None:
            oc = self.model.OperatorCodes(index)
            code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        return code

    def builtin_code_read_directly(self, index: int) -> int | None:
        buf = self.buf
        if self.opcode_positions is None:
            model_pos = self.model._tab.Pos
            if _plain_table_fields(buf, model_pos, 0) is None:
                return None
            self.opcode_positions = _Table(buf, model_pos).table_positions(MODEL_OPERATOR_CODES)
        pos = self.opcode_positions[index]
        fields = _plain_table_fields(buf, pos, 4)
        if fields is None:
            return None
        deprecated_at, _, _, builtin_at = fields
        deprecated = _I8.unpack_from(buf, pos + deprecated_at)[0] if deprecated_at else 0
        builtin = _I32.unpack_from(buf, pos + builtin_at)[0] if builtin_at else 0
        # BuiltinCode() gives DeprecatedBuiltinCode() below PLACEHOLDER_FOR_GREATER_OP_CODES (schema 3a)
        return max(builtin if builtin >= BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES else deprecated, deprecated)


def _indices(table: _Table, field: int) -> list:
    """A vector of tensor indices (an operator's inputs, outputs or intermediates) as Python ints, what
    table.array(field, INDEX_TYPE).tolist() gives: read by struct when it lies inside the file, else by numpy,
    whose error on a vector past the end is the one the user sees."""
    start, length = table.vector(field)
    if not start:  # absent (a vector's elements never start at 0): most operators' intermediates
        return []
    if length and start + 4 * length <= len(table.buf):
        return list(_INT32_ARRAYS[length].unpack_from(table.buf, start))
    return np.frombuffer(table.buf, INDEX_TYPE, length, start).tolist()


def _check_topological(graph: Graph, imp) -> None:
    """Every op input must be a constant, a graph input, state or produced by an earlier op."""
    available = set(graph.inputs) | {t for t in graph.tensors if t.persistent}
    for op in graph.ops:
        for t in op.inputs:
            if t is not None and not t.is_const and t not in available:
                raise imp.fail(f"{op.location} reads tensor '{t.name}' before any operator produces it")
        for t in op.outputs:
            if t.is_const:
                raise imp.fail(f"{op.location} writes into constant tensor '{t.name}'")
            # a second writer; state tensors are rewritten by design, and so are the loop variables and branch
            # outputs of inlined WHILE / IF parts (control_flow.py; ir/health.py makes the same exception)
            if t in available and not t.persistent and "part" not in op.attrs:
                raise imp.fail(f"{op.location} writes tensor '{t.name}', which a graph input or an earlier operator "
                               "already provides (each tensor has one producer)")
            available.add(t)
    for t in graph.inputs + graph.outputs:
        if t.is_const:
            raise imp.fail(f"graph input or output '{t.name}' is a constant tensor (the caller cannot read or write it)")
    for t in graph.outputs:
        if t not in available:
            raise imp.fail(f"graph output '{t.name}' is never produced")


def _legalize_uint8(graph: Graph) -> None:
    """Shift every uint8 tensor to int8 (q - 128, zp - 128); wrap uint8 model edges in QUANTIZE ops.

    (q - zp) is unchanged by the shift, so every op computes the same real values; ops whose uint8 TFLite
    kernel rounds differently are flagged with `uint8_semantics`.
    """
    uint8_tensors = [t for t in graph.tensors if t.dtype == "uint8"]
    if not uint8_tensors:
        return
    for op in graph.ops:
        if any(t is not None and t.dtype == "uint8" for t in op.inputs + op.outputs):
            op.uint8_semantics = True
    edge_inputs = [t for t in graph.inputs if t.dtype == "uint8"]
    edge_outputs = [t for t in graph.outputs if t.dtype == "uint8"]
    for t in uint8_tensors:
        t.dtype = "int8"
        t.orig_dtype = "uint8"
        if t.quant is not None:
            t.quant = QuantParams(t.quant.scale, t.quant.zero_point - 128, t.quant.axis)
        if t.data is not None:
            t.data = (t.data.astype(np.int16) - 128).astype(np.int8)
    next_id = max(t.id for t in graph.tensors) + 1
    for t in edge_inputs:
        edge = _edge_tensor(t, next_id)
        next_id += 1
        graph.tensors.append(edge)
        graph.inputs[graph.inputs.index(t)] = edge
        graph.ops.insert(0, Op(-1, "QUANTIZE", [edge], [t], {"edge": "uint8 input"}, uint8_semantics=True))
    for t in edge_outputs:
        edge = _edge_tensor(t, next_id)
        next_id += 1
        graph.tensors.append(edge)
        graph.outputs[graph.outputs.index(t)] = edge
        graph.ops.append(Op(-1, "QUANTIZE", [t], [edge], {"edge": "uint8 output"}, uint8_semantics=True))


def _edge_tensor(t: Tensor, new_id: int) -> Tensor:
    """The uint8 view of a legalized model input/output, as the user sees it: it keeps the model's name."""
    quant = QuantParams(t.quant.scale, t.quant.zero_point + 128, t.quant.axis) if t.quant else None
    edge = Tensor(new_id, t.name, t.shape, "uint8", quant, orig_dtype="uint8")
    t.name = t.name + "_int8"
    return edge


def _drop_unused_tensors(graph: Graph) -> None:
    used = set(graph.inputs) | set(graph.outputs) | {t for op in graph.ops for t in op.inputs + op.outputs if t is not None}
    graph.tensors = [t for t in graph.tensors if t in used]
