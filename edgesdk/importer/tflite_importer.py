"""Step 1: a .tflite flatbuffer -> the graph IR.

Reads with the `tflite` package, keeps quantization parameters exactly (float32 scales, per-channel axis),
computes explicit padding the way TFLite's kernels do, and legalizes uint8 models to int8 (values and zero
points shifted by -128; uint8 model inputs/outputs get an inserted QUANTIZE op so the executor's API still
takes and returns uint8). Every structural problem of the file becomes a ModelError naming where it is; ops
the compiler does not know become one UnsupportedOpError listing each of them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType

from ..errors import ModelError, UnsupportedOpError
from ..ir.graph import DTYPE_BYTES, Graph, Op, QuantParams, Tensor
from .names import sanitize_name

OP_NAMES = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
TENSOR_TYPES = {
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
ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}

# Largest tensor the importer accepts: far above any MCU's memory, small enough to never exhaust the host.
MAX_TENSOR_ELEMENTS = 1 << 28
MAX_RANK = 6
# Quantization scales edgesdk accepts: far wider than any trained model's, narrow enough that every ratio and
# product of two scales the requantization arithmetic forms stays a finite float32.
MIN_SCALE, MAX_SCALE = 2.0 ** -60, 2.0 ** 60
# Inputs an operator may omit (index -1 in the file): the bias of the convolutions and fully connected.
OPTIONAL_INPUTS = {"CONV_2D": {2}, "DEPTHWISE_CONV_2D": {2}, "FULLY_CONNECTED": {2}}
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


class _Importer:
    def __init__(self, path: Path, buf: bytes):
        self.path = path
        self.buf = buf
        self.model = tflite.Model.GetRootAsModel(buf, 0)
        self.tensors: dict[int, Tensor] = {}

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
        self.count(model.OperatorCodesLength(), "operator codes")
        if model.SubgraphsLength() < 1:
            raise self.fail("it has no subgraph")
        if model.SubgraphsLength() > 1:
            raise UnsupportedOpError(
                f"{self.path} has {model.SubgraphsLength()} subgraphs (control flow such as WHILE/IF). "
                "edgesdk compiles single-subgraph models only; convert without control flow."
            )
        sg = model.Subgraphs(0)
        for i in range(self.count(sg.TensorsLength(), "tensors")):
            self.tensors[i] = self.read_tensor(sg, i)
        ops, unsupported = [], []
        for i in range(self.count(sg.OperatorsLength(), "operators")):
            op = self.read_op(sg, i)
            if isinstance(op, str):
                unsupported.append(op)
            else:
                ops.append(op)
        if unsupported:
            raise UnsupportedOpError(
                f"{self.path} uses {len(unsupported)} operator(s) edgesdk cannot compile: " + "; ".join(unsupported) +
                ". Supported operators are listed by 'edgesdk inspect --list-ops' (docs/supported-ops.md). "
                "Replace these ops when exporting (e.g. fold them into neighbouring layers) or run them outside the model."
            )
        inputs = [self.tensor_ref(sg.Inputs(i), "subgraph input") for i in range(sg.InputsLength())]
        outputs = [self.tensor_ref(sg.Outputs(i), "subgraph output") for i in range(sg.OutputsLength())]
        if not inputs or not outputs:
            raise self.fail("the subgraph declares no inputs or no outputs")
        for what, tensors in (("input", inputs), ("output", outputs)):
            for t in tensors:
                if t.dtype not in DTYPE_BYTES:
                    raise self.fail(f"model {what} '{t.name}' has tensor type {t.dtype.removeprefix('type')}, which "
                                    f"edgesdk does not know (model inputs and outputs may be {', '.join(sorted(DTYPE_BYTES))})")
        description = (model.Description() or b"").decode("utf-8", "replace")
        graph = Graph(self.path.stem, list(self.tensors.values()), ops, inputs, outputs, description)
        _check_topological(graph, self)
        _legalize_uint8(graph)
        _drop_unused_tensors(graph)
        return graph

    # -- tensors ---------------------------------------------------------------------------------
    def tensor_ref(self, index: int, what: str) -> Tensor:
        if index not in self.tensors:
            raise self.fail(f"{what} refers to tensor {index}, but the subgraph has {len(self.tensors)} tensors")
        return self.tensors[index]

    def read_tensor(self, sg, index: int) -> Tensor:
        t = sg.Tensors(index)
        name = sanitize_name((t.Name() or b"").decode("utf-8", "replace")) or f"tensor_{index}"
        ttype = t.Type()
        if ttype not in TENSOR_TYPES:
            dtype = f"type{ttype}"
        else:
            dtype = TENSOR_TYPES[ttype]
        shape = tuple(int(d) for d in (t.ShapeAsNumpy() if t.ShapeLength() else []))
        if len(shape) > MAX_RANK or any(d < 0 for d in shape):
            raise self.fail(f"tensor {index} '{name}' has an invalid shape {list(shape)} (dynamic or negative dimensions are not supported)")
        count = math.prod(shape)  # Python integers: a product of int32 dimensions must not wrap around
        if count > MAX_TENSOR_ELEMENTS:
            raise self.fail(f"tensor {index} '{name}' has {count} elements, beyond any microcontroller")
        tensor = Tensor(index, name, shape, dtype, self.read_quant(t, index, name, shape))
        tensor.data = self.read_buffer(t, index, name, dtype, shape, count)
        if tensor.data is None and count == 0:  # an empty constant (e.g. a scalar's shape) is fine
            raise self.fail(f"tensor {index} '{name}' has a zero dimension {list(shape)}; empty activations are not supported")
        return tensor

    def read_quant(self, t, index: int, name: str, shape: tuple) -> QuantParams | None:
        q = t.Quantization()
        if q is None or q.ScaleLength() == 0:
            return None
        scale = np.array(q.ScaleAsNumpy(), dtype=np.float32).reshape(-1)
        zp = np.array(q.ZeroPointAsNumpy(), dtype=np.int64).reshape(-1) if q.ZeroPointLength() else np.zeros(scale.size, np.int64)
        if zp.size == 1 and scale.size > 1:
            zp = np.repeat(zp, scale.size)
        axis = int(q.QuantizedDimension())
        if zp.size != scale.size:
            raise self.fail(f"tensor {index} '{name}' has {scale.size} scales but {zp.size} zero points")
        low, high = ZERO_POINT_RANGES.get(TENSOR_TYPES.get(t.Type(), ""), (-(1 << 31), (1 << 31) - 1))
        if zp.size and (int(zp.min()) < low or int(zp.max()) > high):
            raise self.fail(f"tensor {index} '{name}' has a zero point outside [{low}, {high}], the range of its type")
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise self.fail(f"tensor {index} '{name}' has a non-positive or non-finite quantization scale")
        if np.any(scale < MIN_SCALE) or np.any(scale > MAX_SCALE):
            raise self.fail(f"tensor {index} '{name}' has a quantization scale outside [2^-60, 2^60] "
                            f"({float(scale.min()):.3g}..{float(scale.max()):.3g}); its arithmetic would overflow")
        if scale.size > 1 and not (0 <= axis < len(shape) and shape[axis] == scale.size):
            raise self.fail(f"tensor {index} '{name}' has {scale.size} per-channel scales that do not match axis {axis} of shape {list(shape)}")
        return QuantParams(scale, zp, axis)

    def read_buffer(self, t, index: int, name: str, dtype: str, shape: tuple, count: int) -> np.ndarray | None:
        b = t.Buffer()
        if b == 0:
            return None
        if b >= self.model.BuffersLength():
            raise self.fail(f"tensor {index} '{name}' refers to buffer {b}, but the model has {self.model.BuffersLength()} buffers")
        buffer = self.model.Buffers(b)
        if buffer.Offset() > 1:  # large models keep data after the flatbuffer
            start, size = int(buffer.Offset()), int(buffer.Size())
            if start + size > len(self.buf):
                raise self.fail(f"tensor {index} '{name}' data lies outside the file (truncated?)")
            raw = memoryview(self.buf)[start:start + size]  # views, not copies: the one copy is made below
        elif buffer.DataLength() == 0:
            return None
        else:
            raw = memoryview(buffer.DataAsNumpy())
        if dtype not in NUMPY_TYPES:
            raise self.fail(f"tensor {index} '{name}' is constant data of an unsupported type")
        expected = count * np.dtype(NUMPY_TYPES[dtype]).itemsize
        if len(raw) != expected:
            raise self.fail(f"tensor {index} '{name}' holds {len(raw)} bytes of data but its shape {list(shape)} needs {expected}")
        return np.frombuffer(raw, dtype=NUMPY_TYPES[dtype]).reshape(shape).copy()

    # -- operators -------------------------------------------------------------------------------
    def read_op(self, sg, i: int):
        op = sg.Operators(i)
        if op.OpcodeIndex() >= self.model.OperatorCodesLength():
            raise self.fail(f"operator #{i} uses opcode index {op.OpcodeIndex()}, beyond the opcode table")
        oc = self.model.OperatorCodes(op.OpcodeIndex())
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        name = OP_NAMES.get(code, f"builtin code {code}")
        if code == BuiltinOperator.CUSTOM:
            name = f"CUSTOM '{sanitize_name((oc.CustomCode() or b'').decode('utf-8', 'replace'))}'"
        inputs = [None if j < 0 else self.tensor_ref(int(j), f"operator #{i} ({name}) input") for j in (op.InputsAsNumpy() if op.InputsLength() else [])]
        outputs = [self.tensor_ref(int(j), f"operator #{i} ({name}) output") for j in (op.OutputsAsNumpy() if op.OutputsLength() else [])]
        out_name = outputs[0].name if outputs else "?"
        omitted = {k for k, t in enumerate(inputs) if t is None} - OPTIONAL_INPUTS.get(name, set())
        if omitted:
            raise self.fail(f"operator #{i} ({name}) omits input {min(omitted)} (index -1), which {name} requires")
        reader = OPTION_READERS.get(name)
        if reader is None:
            return f"{name} at operator #{i} (output '{out_name}')"
        if not outputs:
            raise self.fail(f"operator #{i} ({name}) has no outputs")
        ir_op = Op(i, name, inputs, outputs)
        ir_op.attrs = reader(self, op, ir_op)
        return ir_op


def _options(op, options_type, cls):
    """The op's builtin options table of type `cls`, or None when the file omits it (defaults apply)."""
    if op.BuiltinOptionsType() != options_type:
        return None
    table = op.BuiltinOptions()
    if table is None:
        return None
    opts = cls()
    opts.Init(table.Bytes, table.Pos)
    return opts


def _padding_attrs(imp, ir_op, padding_code, stride_h, stride_w, dil_h, dil_w, filter_h, filter_w) -> dict:
    """Explicit padding exactly as TFLite's ComputePaddingHeightWidth (extra odd pixel goes bottom/right)."""
    x, y = ir_op.inputs[0], ir_op.outputs[0]
    if len(x.shape) != 4 or len(y.shape) != 4:
        raise imp.fail(f"{ir_op.location} needs 4-D NHWC input and output, got {list(x.shape)} -> {list(y.shape)}")
    if x.shape[0] != y.shape[0]:
        raise imp.fail(f"{ir_op.location}: input batch {x.shape[0]} differs from output batch {y.shape[0]}")
    if min(stride_h, stride_w, dil_h, dil_w, filter_h, filter_w) < 1:
        raise imp.fail(f"{ir_op.location} has a zero or negative stride, dilation or filter size")
    attrs = {"stride_h": stride_h, "stride_w": stride_w, "dilation_h": dil_h, "dilation_w": dil_w}
    for axis, (stride, dil, filt, key) in enumerate([(stride_h, dil_h, filter_h, "h"), (stride_w, dil_w, filter_w, "w")], start=1):
        in_size, out_size = x.shape[axis], y.shape[axis]
        eff = (filt - 1) * dil + 1
        expected = (in_size + stride - 1) // stride if padding_code == 0 else (in_size - eff + stride) // stride
        if expected != out_size:
            raise imp.fail(f"{ir_op.location}: output {key} size {out_size} does not match the input {in_size}, "
                           f"filter {filt}, stride {stride}, dilation {dil} and {'SAME' if padding_code == 0 else 'VALID'} padding (expected {expected})")
        total = max((out_size - 1) * stride + eff - in_size, 0)
        before = total // 2
        attrs["pad_top" if key == "h" else "pad_left"] = before
        attrs["pad_bottom" if key == "h" else "pad_right"] = total - before
    attrs["padding"] = "SAME" if padding_code == 0 else "VALID"
    return attrs


def _activation(imp, ir_op, code) -> str:
    if code not in ACTIVATIONS:
        raise imp.fail(f"{ir_op.location} has an unknown fused activation code {code}")
    return ACTIVATIONS[code]


def _read_conv(imp, op, ir_op) -> dict:
    o = _options(op, BuiltinOptions.Conv2DOptions, tflite.Conv2DOptions)
    _require_inputs(imp, ir_op, 2, const_from=1)
    w = ir_op.inputs[1]
    if len(w.shape) != 4:
        raise imp.fail(f"{ir_op.location} filter must be 4-D OHWI, got {list(w.shape)}")
    args = (o.Padding(), o.StrideH(), o.StrideW(), o.DilationHFactor(), o.DilationWFactor()) if o else (0, 1, 1, 1, 1)
    attrs = _padding_attrs(imp, ir_op, *args, w.shape[1], w.shape[2])
    attrs["activation"] = _activation(imp, ir_op, o.FusedActivationFunction() if o else 0)
    _require_bias(imp, ir_op, w.shape[0])
    return attrs


def _require_bias(imp, ir_op, channels: int) -> None:
    """The optional bias (input 2) holds one value per output channel."""
    b = ir_op.inputs[2] if len(ir_op.inputs) > 2 else None
    if b is not None and b.num_elements != channels:
        raise imp.fail(f"{ir_op.location} has a bias of {b.num_elements} values for {channels} output channels")


def _read_depthwise(imp, op, ir_op) -> dict:
    o = _options(op, BuiltinOptions.DepthwiseConv2DOptions, tflite.DepthwiseConv2DOptions)
    _require_inputs(imp, ir_op, 2, const_from=1)
    w = ir_op.inputs[1]
    if len(w.shape) != 4:
        raise imp.fail(f"{ir_op.location} filter must be 4-D 1HWC, got {list(w.shape)}")
    args = (o.Padding(), o.StrideH(), o.StrideW(), o.DilationHFactor(), o.DilationWFactor()) if o else (0, 1, 1, 1, 1)
    attrs = _padding_attrs(imp, ir_op, *args, w.shape[1], w.shape[2])
    attrs["activation"] = _activation(imp, ir_op, o.FusedActivationFunction() if o else 0)
    in_c = ir_op.inputs[0].shape[3]
    attrs["depth_multiplier"] = w.shape[3] // in_c if in_c else 0
    if in_c == 0 or w.shape[3] != in_c * attrs["depth_multiplier"] or ir_op.outputs[0].shape[3] != w.shape[3]:
        raise imp.fail(f"{ir_op.location}: channels do not match (input {in_c}, filter {w.shape[3]}, output {ir_op.outputs[0].shape[3]})")
    _require_bias(imp, ir_op, w.shape[3])
    return attrs


def _read_fully_connected(imp, op, ir_op) -> dict:
    o = _options(op, BuiltinOptions.FullyConnectedOptions, tflite.FullyConnectedOptions)
    _require_inputs(imp, ir_op, 2, const_from=1)
    if o is not None and o.WeightsFormat() != 0:
        raise UnsupportedOpError(f"FULLY_CONNECTED at {ir_op.location} uses shuffled weights; export with the default weights format.")
    w = ir_op.inputs[1]
    x = ir_op.inputs[0]
    if len(w.shape) != 2 or w.shape[1] == 0 or x.num_elements % w.shape[1] != 0:
        raise imp.fail(f"{ir_op.location}: weights {list(w.shape)} do not fit input {list(x.shape)}")
    _require_bias(imp, ir_op, w.shape[0])
    return {"activation": _activation(imp, ir_op, o.FusedActivationFunction() if o else 0),
            "keep_num_dims": bool(o.KeepNumDims()) if o else False}


def _read_pool(imp, op, ir_op) -> dict:
    o = _options(op, BuiltinOptions.Pool2DOptions, tflite.Pool2DOptions)
    if o is None:
        raise imp.fail(f"{ir_op.location} has no pooling options")
    _require_inputs(imp, ir_op, 1)
    attrs = _padding_attrs(imp, ir_op, o.Padding(), o.StrideH(), o.StrideW(), 1, 1, o.FilterHeight(), o.FilterWidth())
    attrs.update(filter_h=o.FilterHeight(), filter_w=o.FilterWidth(),
                 activation=_activation(imp, ir_op, o.FusedActivationFunction()))
    return attrs


def _read_binary(options_type, cls):
    def read(imp, op, ir_op) -> dict:
        _require_inputs(imp, ir_op, 2)
        o = _options(op, options_type, cls)
        return {"activation": _activation(imp, ir_op, o.FusedActivationFunction() if o else 0)}
    return read


def _read_softmax(imp, op, ir_op) -> dict:
    _require_inputs(imp, ir_op, 1)
    _require_same_size(imp, ir_op)
    if not ir_op.inputs[0].shape:
        raise imp.fail(f"{ir_op.location} is a softmax over a scalar (it needs at least one axis)")
    o = _options(op, BuiltinOptions.SoftmaxOptions, tflite.SoftmaxOptions)
    return {"beta": float(np.float32(o.Beta())) if o else 1.0}


def _read_concatenation(imp, op, ir_op) -> dict:
    o = _options(op, BuiltinOptions.ConcatenationOptions, tflite.ConcatenationOptions)
    _require_inputs(imp, ir_op, 1)
    y = ir_op.outputs[0]
    rank = len(y.shape)
    axis = o.Axis() if o else 0
    if axis < 0:
        axis += rank
    if not 0 <= axis < max(rank, 1):
        raise imp.fail(f"{ir_op.location} concatenates along axis {axis} of a rank-{rank} tensor")
    shapes = [list(t.shape) for t in ir_op.inputs]
    others_match = all(len(s) == rank and s[:axis] + s[axis + 1:] == list(y.shape[:axis] + y.shape[axis + 1:]) for s in shapes)
    if not others_match or sum(s[axis] for s in shapes) != y.shape[axis]:
        raise imp.fail(f"{ir_op.location}: inputs {shapes} do not concatenate along axis {axis} into {list(y.shape)}")
    return {"axis": axis, "activation": _activation(imp, ir_op, o.FusedActivationFunction() if o else 0)}


def _const_ints(imp, ir_op, k: int, what: str) -> np.ndarray:
    if len(ir_op.inputs) <= k or ir_op.inputs[k] is None or not ir_op.inputs[k].is_const:
        raise UnsupportedOpError(f"{ir_op.type} at {ir_op.location} has non-constant {what}; only constant {what} are supported.")
    return ir_op.inputs[k].data.astype(np.int64)


def _read_mean(imp, op, ir_op) -> dict:
    o = _options(op, BuiltinOptions.ReducerOptions, tflite.ReducerOptions)
    _require_inputs(imp, ir_op, 1)
    x, y = ir_op.inputs[0], ir_op.outputs[0]
    rank = len(x.shape)
    axes = tuple(sorted({int(a) + rank if a < 0 else int(a) for a in _const_ints(imp, ir_op, 1, "axes").reshape(-1)}))
    if any(not 0 <= a < rank for a in axes):
        raise imp.fail(f"{ir_op.location} reduces over axes {axes} of a rank-{rank} tensor")
    kept = math.prod(d for k, d in enumerate(x.shape) if k not in axes)
    if y.num_elements != kept:
        raise imp.fail(f"{ir_op.location}: reducing {list(x.shape)} over axes {list(axes)} leaves {kept} elements, "
                       f"not the {y.num_elements} of output {list(y.shape)}")
    return {"axes": axes, "keep_dims": bool(o.KeepDims()) if o else False}


def _read_pad(imp, op, ir_op) -> dict:
    _require_inputs(imp, ir_op, 1)
    pads = _const_ints(imp, ir_op, 1, "paddings")
    x, y = ir_op.inputs[0], ir_op.outputs[0]
    rank = len(x.shape)
    if pads.shape != (rank, 2) or np.any(pads < 0):
        raise imp.fail(f"{ir_op.location} has paddings of shape {list(pads.shape)} (need [{rank}, 2], non-negative)")
    padded = [int(d + before + after) for d, (before, after) in zip(x.shape, pads)]
    if padded != list(y.shape):
        raise imp.fail(f"{ir_op.location}: input {list(x.shape)} padded by {pads.tolist()} is {padded}, not the output {list(y.shape)}")
    return {"paddings": [tuple(int(v) for v in row) for row in pads]}


def _read_reshape(imp, op, ir_op) -> dict:
    x, y = ir_op.inputs[0], ir_op.outputs[0]
    if x is None or x.num_elements != y.num_elements:
        raise imp.fail(f"{ir_op.location} reshapes {list(x.shape) if x else '?'} into {list(y.shape)}: element counts differ")
    return {}


def _read_plain(imp, op, ir_op) -> dict:
    _require_inputs(imp, ir_op, 1)
    _require_same_size(imp, ir_op)
    return {}


def _require_same_size(imp, ir_op) -> None:
    """Elementwise ops (activations, (de)quantize, softmax) map each input element to one output element."""
    x, y = ir_op.inputs[0], ir_op.outputs[0]
    if x.num_elements != y.num_elements:
        raise imp.fail(f"{ir_op.location} maps {x.num_elements} input elements to {y.num_elements} outputs")


def _require_inputs(imp, ir_op, count: int, const_from: int | None = None) -> None:
    present = [t for t in ir_op.inputs[:count] if t is not None]
    if len(present) < count:
        raise imp.fail(f"{ir_op.location} needs {count} inputs, has {len(present)}")
    if const_from is not None:
        for t in ir_op.inputs[const_from:]:
            if t is not None and not t.is_const:
                raise UnsupportedOpError(
                    f"{ir_op.type} at {ir_op.location} has non-constant weights or bias ('{t.name}'); "
                    "edgesdk needs constant weights (export with weights folded as constants).")


OPTION_READERS = {
    "CONV_2D": _read_conv,
    "DEPTHWISE_CONV_2D": _read_depthwise,
    "FULLY_CONNECTED": _read_fully_connected,
    "AVERAGE_POOL_2D": _read_pool,
    "MAX_POOL_2D": _read_pool,
    "ADD": _read_binary(BuiltinOptions.AddOptions, tflite.AddOptions),
    "MUL": _read_binary(BuiltinOptions.MulOptions, tflite.MulOptions),
    "SOFTMAX": _read_softmax,
    "RESHAPE": _read_reshape,
    "QUANTIZE": _read_plain,
    "DEQUANTIZE": _read_plain,
    "PAD": _read_pad,
    "CONCATENATION": _read_concatenation,
    "MEAN": _read_mean,
    "LOGISTIC": _read_plain,
    "TANH": _read_plain,
    "HARD_SWISH": _read_plain,
    "RELU": _read_plain,
    "RELU6": _read_plain,
    "RELU_N1_TO_1": _read_plain,
}


def _check_topological(graph: Graph, imp) -> None:
    """Every op input must be a constant, a graph input or produced by an earlier op."""
    available = set(graph.inputs)
    for op in graph.ops:
        for t in op.inputs:
            if t is not None and not t.is_const and t not in available:
                raise imp.fail(f"{op.location} reads tensor '{t.name}' before any operator produces it")
        for t in op.outputs:
            if t.is_const:
                raise imp.fail(f"{op.location} writes into constant tensor '{t.name}'")
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
