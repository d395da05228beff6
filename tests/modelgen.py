"""Build small single-op .tflite models without TensorFlow, with the `tflite` package's flatbuffer builders.

Used by the kernel tests to check ops the shared models do not contain (MUL, MAX_POOL_2D, PAD, ...) against
LiteRT's reference kernels and TFLite Micro. Usage:

    m = ModelBuilder()
    x = m.tensor((1, 8, 8, 4), "int8", scale=0.05, zero_point=-3)
    y = m.tensor((1, 4, 4, 4), "int8", scale=0.05, zero_point=-3)
    m.op("MAX_POOL_2D", [x], [y], "Pool2DOptions", Padding=VALID, StrideH=2, StrideW=2, FilterHeight=2, FilterWidth=2)
    data = m.build(inputs=[x], outputs=[y])

The `*_model` helpers below build the common single-op models in one call.
"""

from __future__ import annotations

import importlib

import flatbuffers
import numpy as np
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.TensorType import TensorType

SAME, VALID = 0, 1
ACTIVATION_CODES = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
TENSOR_TYPES = {"float32": TensorType.FLOAT32, "int8": TensorType.INT8, "uint8": TensorType.UINT8,
                "int16": TensorType.INT16, "int32": TensorType.INT32, "int64": TensorType.INT64,
                "bool": TensorType.BOOL}
NUMPY_TYPES = {"float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
               "int32": np.int32, "int64": np.int64, "bool": np.bool_}


# Opcode versions where LiteRT registers no version 1 (its op resolver refuses the model otherwise).
OPCODE_VERSIONS = {"BROADCAST_TO": 2}


def _module(name: str):
    return importlib.import_module(f"tflite.{name}")


class ModelBuilder:
    """Collects tensors and ops, then serializes one subgraph into a .tflite flatbuffer."""

    def __init__(self):
        self.tensors = []  # dicts: shape, dtype, scale, zero_point, axis, data, name
        self.ops = []  # dicts: name, inputs, outputs, options (class name), fields

    def tensor(self, shape, dtype, scale=None, zero_point=None, axis=0, data=None, name=None,
               variable=False) -> int:
        """Add a tensor; `scale`/`zero_point` may be scalars or per-channel sequences; `variable` marks TFLite
        variable tensors (a recurrent op's state, kept between inferences). Returns its index."""
        if data is not None:
            data = np.asarray(data, dtype=NUMPY_TYPES[dtype]).reshape(shape)
        self.tensors.append(dict(shape=tuple(int(d) for d in shape), dtype=dtype, scale=scale,
                                 zero_point=zero_point, axis=axis, data=data,
                                 name=name or f"t{len(self.tensors)}", variable=variable))
        return len(self.tensors) - 1

    def const(self, array, dtype, **quant) -> int:
        array = np.asarray(array)
        return self.tensor(array.shape, dtype, data=array, **quant)

    def op(self, name: str, inputs, outputs, options: str | None = None, intermediates=(), **fields) -> int:
        """Add a builtin op; `options` names its options table (e.g. "Conv2DOptions"), `fields` its values;
        `intermediates` are the op's quantization-only intermediate tensors (recurrent ops)."""
        self.ops.append(dict(name=name, inputs=list(inputs), outputs=list(outputs), options=options, fields=fields,
                             intermediates=list(intermediates)))
        return len(self.ops) - 1

    # -- serialization ------------------------------------------------------------------------------
    def build(self, inputs, outputs, subgraphs=()) -> bytes:
        """The .tflite bytes: this builder's tensors and ops as subgraph 0 (the main one), then `subgraphs`, a
        list of (ModelBuilder, inputs, outputs) that become subgraphs 1, 2, ... (a WHILE's condition and body,
        an IF's branches: WhileOptions(CondSubgraphIndex=1, BodySubgraphIndex=2))."""
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, None)]  # buffer 0 is the empty sentinel
        # A single-subgraph model gets no subgraph name: its bytes stay those of the committed example models.
        graphs = [(self, inputs, outputs, "main" if subgraphs else None)] + [
            (g, i, o, f"subgraph_{k + 1}") for k, (g, i, o) in enumerate(subgraphs)]
        opcodes = sorted({op["name"] for g, _, _, _ in graphs for op in g.ops})
        opcode_offsets = []

        def write_opcodes():  # after the main subgraph's tensors, before its operators (the bytes' order)
            opcode_offsets.extend(self._opcode(b, name) for name in opcodes)

        subgraph_offsets = [g._subgraph(b, buffers, opcodes, i, o, name, write_opcodes if k == 0 else None)
                            for k, (g, i, o, name) in enumerate(graphs)]

        mod = _module("Model")
        codes_vec = self._offset_vector(b, mod.ModelStartOperatorCodesVector, opcode_offsets)
        sg_vec = self._offset_vector(b, mod.ModelStartSubgraphsVector, subgraph_offsets)
        buf_vec = self._offset_vector(b, mod.ModelStartBuffersVector, buffers)
        description = b.CreateString("edgesdk modelgen")
        mod.ModelStart(b)
        mod.ModelAddVersion(b, 3)
        mod.ModelAddOperatorCodes(b, codes_vec)
        mod.ModelAddSubgraphs(b, sg_vec)
        mod.ModelAddDescription(b, description)
        mod.ModelAddBuffers(b, buf_vec)
        b.Finish(mod.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _subgraph(self, b, buffers: list, opcodes: list, inputs, outputs, name, before_operators=None):
        tensor_offsets = []
        for t in self.tensors:
            buffer_index = 0
            if t["data"] is not None:
                buffers.append(self._buffer(b, t["data"]))
                buffer_index = len(buffers) - 1
            tensor_offsets.append(self._tensor(b, t, buffer_index))
        if before_operators:
            before_operators()
        op_offsets = [self._operator(b, op, opcodes.index(op["name"])) for op in self.ops]
        mod = _module("SubGraph")
        t_vec = self._offset_vector(b, mod.SubGraphStartTensorsVector, tensor_offsets)
        in_vec = self._int_vector(b, mod.SubGraphStartInputsVector, inputs)
        out_vec = self._int_vector(b, mod.SubGraphStartOutputsVector, outputs)
        op_vec = self._offset_vector(b, mod.SubGraphStartOperatorsVector, op_offsets)
        name_offset = b.CreateString(name) if name else None
        mod.SubGraphStart(b)
        mod.SubGraphAddTensors(b, t_vec)
        mod.SubGraphAddInputs(b, in_vec)
        mod.SubGraphAddOutputs(b, out_vec)
        mod.SubGraphAddOperators(b, op_vec)
        if name_offset is not None:
            mod.SubGraphAddName(b, name_offset)
        return mod.SubGraphEnd(b)

    @staticmethod
    def _offset_vector(b, start_fn, offsets):
        start_fn(b, len(offsets))
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    @staticmethod
    def _int_vector(b, start_fn, values):
        start_fn(b, len(values))
        for v in reversed(values):
            b.PrependInt32(int(v))
        return b.EndVector()

    @staticmethod
    def _float_vector(b, start_fn, values):
        start_fn(b, len(values))
        for v in reversed(values):
            b.PrependFloat32(float(v))
        return b.EndVector()

    @staticmethod
    def _long_vector(b, start_fn, values):
        start_fn(b, len(values))
        for v in reversed(values):
            b.PrependInt64(int(v))
        return b.EndVector()

    def _buffer(self, b, data):
        mod = _module("Buffer")
        vec = None
        if data is not None:
            vec = b.CreateNumpyVector(np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8))
        mod.BufferStart(b)
        if vec is not None:
            mod.BufferAddData(b, vec)
        return mod.BufferEnd(b)

    def _tensor(self, b, t, buffer_index):
        quant = None
        if t["scale"] is not None:
            q = _module("QuantizationParameters")
            scales = np.atleast_1d(np.asarray(t["scale"], dtype=np.float32))
            zps = np.atleast_1d(np.asarray(0 if t["zero_point"] is None else t["zero_point"], dtype=np.int64))
            if zps.size == 1 and scales.size > 1:
                zps = np.repeat(zps, scales.size)
            s_vec = self._float_vector(b, q.QuantizationParametersStartScaleVector, scales)
            z_vec = self._long_vector(b, q.QuantizationParametersStartZeroPointVector, zps)
            q.QuantizationParametersStart(b)
            q.QuantizationParametersAddScale(b, s_vec)
            q.QuantizationParametersAddZeroPoint(b, z_vec)
            q.QuantizationParametersAddQuantizedDimension(b, int(t["axis"]))
            quant = q.QuantizationParametersEnd(b)
        mod = _module("Tensor")
        name = b.CreateString(t["name"])
        shape = self._int_vector(b, mod.TensorStartShapeVector, t["shape"])
        mod.TensorStart(b)
        mod.TensorAddShape(b, shape)
        mod.TensorAddType(b, TENSOR_TYPES[t["dtype"]])
        mod.TensorAddBuffer(b, buffer_index)
        mod.TensorAddName(b, name)
        if t.get("variable"):
            mod.TensorAddIsVariable(b, True)
        if quant is not None:
            mod.TensorAddQuantization(b, quant)
        return mod.TensorEnd(b)

    @staticmethod
    def _opcode(b, name):
        mod = _module("OperatorCode")
        if name.startswith("CUSTOM:"):  # a custom op by its custom code (e.g. "CUSTOM:TFLite_Detection_PostProcess")
            custom = b.CreateString(name[len("CUSTOM:"):])
            mod.OperatorCodeStart(b)
            mod.OperatorCodeAddDeprecatedBuiltinCode(b, BuiltinOperator.CUSTOM)
            mod.OperatorCodeAddBuiltinCode(b, BuiltinOperator.CUSTOM)
            mod.OperatorCodeAddCustomCode(b, custom)
            mod.OperatorCodeAddVersion(b, 1)
            return mod.OperatorCodeEnd(b)
        code = getattr(BuiltinOperator, name)
        mod.OperatorCodeStart(b)
        mod.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        mod.OperatorCodeAddBuiltinCode(b, code)
        mod.OperatorCodeAddVersion(b, OPCODE_VERSIONS.get(name, 1))
        return mod.OperatorCodeEnd(b)

    def _operator(self, b, op, opcode_index):
        options = None
        if op["options"]:
            mod = _module(op["options"])
            prefix = op["options"]
            vectors = {field: self._int_vector(b, getattr(mod, f"{prefix}Start{field}Vector"), value)
                       for field, value in op["fields"].items() if isinstance(value, (list, tuple))}
            getattr(mod, f"{prefix}Start")(b)
            for field, value in op["fields"].items():
                getattr(mod, f"{prefix}Add{field}")(b, vectors.get(field, value))
            options = getattr(mod, f"{prefix}End")(b)
        mod = _module("Operator")
        in_vec = self._int_vector(b, mod.OperatorStartInputsVector, op["inputs"])
        out_vec = self._int_vector(b, mod.OperatorStartOutputsVector, op["outputs"])
        mid_vec = self._int_vector(b, mod.OperatorStartIntermediatesVector, op["intermediates"]) if op.get(
            "intermediates") else None
        custom = op["fields"].get("custom_options") if op["name"].startswith("CUSTOM:") else None
        custom_vec = b.CreateNumpyVector(np.frombuffer(bytes(custom), np.uint8)) if custom is not None else None
        mod.OperatorStart(b)
        mod.OperatorAddOpcodeIndex(b, opcode_index)
        mod.OperatorAddInputs(b, in_vec)
        mod.OperatorAddOutputs(b, out_vec)
        if mid_vec is not None:
            mod.OperatorAddIntermediates(b, mid_vec)
        if options is not None:
            mod.OperatorAddBuiltinOptionsType(b, getattr(BuiltinOptions, op["options"]))
            mod.OperatorAddBuiltinOptions(b, options)
        if custom_vec is not None:  # flexbuffer bytes (CustomOptionsFormat FLEXBUFFERS, the default)
            mod.OperatorAddCustomOptions(b, custom_vec)
        return mod.OperatorEnd(b)


# -- one-call builders for single-op models ----------------------------------------------------------
# Each returns the .tflite bytes; the model's only input is tensor 0 (and 1 for binary ops).

def unary_model(op_name, shape, in_q, out_q, dtype="int8", out_dtype=None, out_shape=None, options=None, **fields):
    """A model `y = op(x)`; in_q/out_q are (scale, zero_point) or None for float tensors."""
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *(in_q or (None, None)))
    y = m.tensor(out_shape or shape, out_dtype or dtype, *(out_q or (None, None)))
    m.op(op_name, [x], [y], options, **fields)
    return m.build([x], [y])


def binary_model(op_name, shape_a, shape_b, out_shape, qa, qb, qy, activation="NONE", dtype="int8"):
    """ADD/MUL/SUB with two activation inputs (broadcasting allowed)."""
    m = ModelBuilder()
    a = m.tensor(shape_a, dtype, *qa)
    b = m.tensor(shape_b, dtype, *qb)
    y = m.tensor(out_shape, dtype, *qy)
    options = {"ADD": "AddOptions", "MUL": "MulOptions", "SUB": "SubOptions"}[op_name]
    m.op(op_name, [a, b], [y], options, FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build([a, b], [y])


def pool_model(op_name, shape, filter_hw, stride_hw, padding, q_in, q_out=None, activation="NONE", dtype="int8"):
    out_shape = _conv_out_shape(shape, filter_hw, stride_hw, (1, 1), padding, shape[3])
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *q_in)
    y = m.tensor(out_shape, dtype, *(q_out or q_in))
    m.op(op_name, [x], [y], "Pool2DOptions", Padding=padding, StrideH=stride_hw[0], StrideW=stride_hw[1],
         FilterHeight=filter_hw[0], FilterWidth=filter_hw[1], FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build([x], [y])


def conv_model(shape, weights, bias, q_in, w_scale, q_out, stride=(1, 1), dilation=(1, 1), padding=SAME,
               activation="NONE", w_zero_point=0, dtype="int8"):
    """CONV_2D with OHWI `weights` (int8 or uint8 per dtype) and per-channel scales when w_scale is a sequence."""
    out_shape = _conv_out_shape(shape, weights.shape[1:3], stride, dilation, padding, weights.shape[0])
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *q_in)
    w = m.const(weights, dtype, scale=w_scale, zero_point=w_zero_point, axis=0)
    bscale = np.float32(q_in[0]) * np.atleast_1d(np.asarray(w_scale, np.float32))
    bias_t = m.const(bias, "int32", scale=bscale, zero_point=0, axis=0)
    y = m.tensor(out_shape, dtype, *q_out)
    m.op("CONV_2D", [x, w, bias_t], [y], "Conv2DOptions", Padding=padding, StrideH=stride[0], StrideW=stride[1],
         DilationHFactor=dilation[0], DilationWFactor=dilation[1], FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build([x], [y])


def depthwise_model(shape, weights, bias, q_in, w_scale, q_out, depth_multiplier=1, stride=(1, 1), dilation=(1, 1),
                    padding=SAME, activation="NONE", w_zero_point=0, dtype="int8"):
    """DEPTHWISE_CONV_2D with 1HW(C*M) `weights`; per-channel scales along axis 3."""
    out_shape = _conv_out_shape(shape, weights.shape[1:3], stride, dilation, padding, weights.shape[3])
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *q_in)
    w = m.const(weights, dtype, scale=w_scale, zero_point=w_zero_point, axis=3)
    bscale = np.float32(q_in[0]) * np.atleast_1d(np.asarray(w_scale, np.float32))
    bias_t = m.const(bias, "int32", scale=bscale, zero_point=0, axis=0)
    y = m.tensor(out_shape, dtype, *q_out)
    m.op("DEPTHWISE_CONV_2D", [x, w, bias_t], [y], "DepthwiseConv2DOptions", Padding=padding, StrideH=stride[0],
         StrideW=stride[1], DepthMultiplier=depth_multiplier, DilationHFactor=dilation[0],
         DilationWFactor=dilation[1], FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build([x], [y])


def fully_connected_model(batch, weights, bias, q_in, w_scale, q_out, activation="NONE", w_zero_point=0, dtype="int8"):
    m = ModelBuilder()
    x = m.tensor((batch, weights.shape[1]), dtype, *q_in)
    w = m.const(weights, dtype, scale=w_scale, zero_point=w_zero_point, axis=0)
    bscale = np.float32(q_in[0]) * np.atleast_1d(np.asarray(w_scale, np.float32))
    bias_t = m.const(bias, "int32", scale=bscale, zero_point=0, axis=0) if bias is not None else -1
    y = m.tensor((batch, weights.shape[0]), dtype, *q_out)
    m.op("FULLY_CONNECTED", [x, w, bias_t], [y], "FullyConnectedOptions",
         FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build([x], [y])


def softmax_model(shape, q_in, beta=1.0, dtype="int8"):
    out_q = (1.0 / 256, -128 if dtype == "int8" else 0)
    return unary_model("SOFTMAX", shape, q_in, out_q, dtype=dtype, options="SoftmaxOptions", Beta=beta)


def pad_model(shape, paddings, q, dtype="int8", pad_value=None):
    """PAD, or PADV2 with a constant pad value (quantized, of the input's type)."""
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *q)
    p = m.const(np.asarray(paddings, np.int32), "int32")
    out_shape = tuple(d + a + b for d, (a, b) in zip(shape, paddings))
    y = m.tensor(out_shape, dtype, *q)
    if pad_value is None:
        m.op("PAD", [x, p], [y], "PadOptions")
    else:
        v = m.const(np.asarray([pad_value], dtype), dtype, scale=q[0], zero_point=q[1])
        m.op("PADV2", [x, p, v], [y], "PadV2Options")
    return m.build([x], [y])


def concatenation_model(shapes, axis, q_ins, q_out, activation="NONE", dtype="int8"):
    m = ModelBuilder()
    xs = [m.tensor(s, dtype, *q) for s, q in zip(shapes, q_ins)]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    y = m.tensor(out_shape, dtype, *q_out)
    m.op("CONCATENATION", xs, [y], "ConcatenationOptions", Axis=axis,
         FusedActivationFunction=ACTIVATION_CODES[activation])
    return m.build(xs, [y])


def mean_model(shape, axes, keep_dims, q_in, q_out, dtype="int8"):
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *q_in)
    a = m.const(np.asarray(axes, np.int32), "int32")
    rank = len(shape)
    axes_n = {(ax + rank) % rank for ax in axes}
    out_shape = [1 if i in axes_n else d for i, d in enumerate(shape)] if keep_dims else \
        [d for i, d in enumerate(shape) if i not in axes_n]
    y = m.tensor(out_shape, dtype, *q_out)
    m.op("MEAN", [x, a], [y], "ReducerOptions", KeepDims=bool(keep_dims))
    return m.build([x], [y])


def reshape_model(shape, new_shape, q, dtype="int8"):
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *q)
    s = m.const(np.asarray(new_shape, np.int32), "int32")
    y = m.tensor(new_shape, dtype, *q)
    m.op("RESHAPE", [x, s], [y])
    return m.build([x], [y])


def transpose_conv_model(in_shape, weights, bias, q_in, w_scales, q_out, stride=(2, 2), padding=SAME,
                         out_hw=None, dtype="int8", bias_dtype=None, bias_type=None, activation=None):
    """TRANSPOSE_CONV (inputs: output shape, OHWI weights, input, optional bias); out_hw defaults to
    what the converter makes (SAME: in * stride, VALID: (in - 1) * stride + filter)."""
    fh, fw = weights.shape[1:3]
    if out_hw is None:
        out_hw = tuple(n * s if padding == SAME else (n - 1) * s + f
                       for n, s, f in zip(in_shape[1:3], stride, (fh, fw)))
    out_shape = (in_shape[0], *out_hw, weights.shape[0])
    m = ModelBuilder()
    shape = m.const(np.asarray(out_shape, np.int32), "int32")
    w = m.const(weights, "int8", scale=w_scales, zero_point=0, axis=0)
    x = m.tensor(in_shape, dtype, *q_in)
    inputs = [shape, w, x]
    if bias is not None:
        bias_dtype = bias_dtype or ("int32" if dtype == "int8" else "int64")
        inputs.append(m.const(np.asarray(bias), bias_dtype, scale=np.float32(q_in[0]) * np.asarray(w_scales, np.float32),
                              zero_point=0, axis=0))
    y = m.tensor(out_shape, dtype, *q_out)
    fields = dict(Padding=padding, StrideH=stride[0], StrideW=stride[1])
    if activation is not None:
        fields["FusedActivationFunction"] = ACTIVATION_CODES[activation]
    if bias_type is not None:
        fields["QuantizedBiasType"] = bias_type
    m.op("TRANSPOSE_CONV", inputs, [y], "TransposeConvOptions", **fields)
    return m.build([x], [y])


def batch_matmul_model(a_shape, b_shape, dtype="int8", qa=None, qb=None, qy=None, adj_x=False, adj_y=False,
                       b_const=None):
    """BATCH_MATMUL of two inputs (or an input and a constant rhs `b_const`)."""
    rows = a_shape[-1] if adj_x else a_shape[-2]
    cols = b_shape[-2] if adj_y else b_shape[-1]
    batch = np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))
    m = ModelBuilder()
    a = m.tensor(a_shape, dtype, *(qa or (None, None)))
    if b_const is None:
        b = m.tensor(b_shape, dtype, *(qb or (None, None)))
    else:
        b = m.const(np.asarray(b_const).reshape(b_shape), dtype, **({} if qb is None else dict(scale=qb[0],
                                                                                          zero_point=qb[1])))
    y = m.tensor((*batch, rows, cols), dtype, *(qy or (None, None)))
    m.op("BATCH_MATMUL", [a, b], [y], "BatchMatMulOptions", AdjX=adj_x, AdjY=adj_y)
    return m.build([a] if b_const is not None else [a, b], [y])


def resize_model(op_name, in_shape, out_hw, dtype="int8", q=None, align_corners=False, half_pixel=False):
    m = ModelBuilder()
    x = m.tensor(in_shape, dtype, *(q or (None, None)))
    size = m.const(np.asarray(out_hw, np.int32), "int32")
    y = m.tensor((in_shape[0], *out_hw, in_shape[3]), dtype, *(q or (None, None)))
    options = "ResizeBilinearOptions" if op_name == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    m.op(op_name, [x, size], [y], options, AlignCorners=align_corners, HalfPixelCenters=half_pixel)
    return m.build([x], [y])


def _conv_out_shape(shape, filter_hw, stride, dilation, padding, out_c):
    dims = []
    for i in range(2):
        eff = (filter_hw[i] - 1) * dilation[i] + 1
        n = shape[1 + i]
        dims.append((n + stride[i] - 1) // stride[i] if padding == SAME else (n - eff + stride[i]) // stride[i])
    return (shape[0], dims[0], dims[1], out_c)


# -- a suite of single-op models with random quantization, for the kernel tests ----------------------------

def _q(rng, lo=0.005, hi=0.2, dtype="int8"):
    """A random (scale, zero_point) pair in the dtype's range."""
    scale = float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))
    zp = int(rng.integers(-128, 128)) if dtype == "int8" else int(rng.integers(0, 256))
    return scale, zp


def _weights(rng, shape, dtype="int8"):
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.integers(-127, 128, shape).astype(np.int8)


def single_op_suite(seed: int = 0) -> list:
    """[(name, .tflite bytes)]: every op of the C target in int8 (and uint8 where TFLite has it)."""
    rng = np.random.default_rng(seed)
    return (_suite_binary(rng) + _suite_pooling_and_shapes(rng) + _suite_activations(rng) + _suite_quantization(rng)
            + _suite_convolutions(rng) + _suite_layer_ops(rng) + _suite_elementwise(rng) + _suite_data_movement(rng)
            + _suite_reduce(rng) + _suite_unary(rng))


def _suite_binary(rng) -> list:
    u8 = dict(dtype="uint8")
    return [
        ("mul_same_shape", binary_model("MUL", (1, 4, 4, 8), (1, 4, 4, 8), (1, 4, 4, 8),
                                        _q(rng), _q(rng), _q(rng, 0.01, 0.05))),
        ("mul_broadcast_channel", binary_model("MUL", (1, 5, 3, 6), (1, 1, 1, 6), (1, 5, 3, 6),
                                               _q(rng), _q(rng), _q(rng), "RELU")),
        ("mul_broadcast_both", binary_model("MUL", (2, 1, 3, 4), (1, 5, 1, 4), (2, 5, 3, 4),
                                            _q(rng), _q(rng), _q(rng))),
        ("add_broadcast", binary_model("ADD", (1, 6, 6, 3), (1, 1, 6, 3), (1, 6, 6, 3),
                                       _q(rng), _q(rng), _q(rng), "RELU6")),
        ("add_uint8", binary_model("ADD", (1, 4, 4, 4), (1, 4, 4, 4), (1, 4, 4, 4),
                                   _q(rng, **u8), _q(rng, **u8), _q(rng, **u8), **u8)),
        ("mul_uint8", binary_model("MUL", (1, 4, 4, 4), (1, 1, 1, 4), (1, 4, 4, 4),
                                   _q(rng, **u8), _q(rng, **u8), _q(rng, 0.02, 0.2, **u8), **u8)),
    ]


def _suite_pooling_and_shapes(rng) -> list:
    u8 = dict(dtype="uint8")
    q = _q(rng)
    models = [
        ("max_pool_valid", pool_model("MAX_POOL_2D", (1, 9, 9, 5), (3, 3), (2, 2), VALID, q)),
        ("max_pool_same_relu6", pool_model("MAX_POOL_2D", (1, 7, 6, 3), (2, 3), (2, 2), SAME, q, activation="RELU6")),
        ("avg_pool_same", pool_model("AVERAGE_POOL_2D", (1, 7, 7, 4), (3, 3), (2, 2), SAME, _q(rng))),
        ("avg_pool_uint8_same", pool_model("AVERAGE_POOL_2D", (1, 7, 5, 3), (3, 3), (2, 2), SAME, _q(rng, **u8), **u8)),
        ("l2_pool_float_same", pool_model("L2_POOL_2D", (1, 7, 7, 3), (3, 3), (2, 2), SAME, (None, None), dtype="float32")),
        ("pad_hw", pad_model((1, 5, 4, 3), [(0, 0), (1, 2), (2, 1), (0, 0)], q)),
        ("pad_channels", pad_model((2, 3, 3, 2), [(1, 0), (0, 0), (0, 1), (3, 2)], q)),
        ("pad_2d", pad_model((3, 7), [(1, 1), (0, 4)], q)),
        ("padv2_value", pad_model((1, 3, 4, 2), [(0, 0), (2, 1), (0, 3), (0, 0)], q, pad_value=-77)),
        ("concat_channels", concatenation_model([(1, 4, 4, 3), (1, 4, 4, 5), (1, 4, 4, 1)], 3, [q, q, q], q)),
        ("concat_height", concatenation_model([(1, 2, 4, 3), (1, 5, 4, 3)], 1, [q, q], q)),
        ("concat_batch", concatenation_model([(2, 3), (1, 3)], 0, [q, q], q)),
        ("mean_hw_keepdims", mean_model((1, 6, 5, 8), [1, 2], True, _q(rng), _q(rng))),
        ("mean_hw", mean_model((1, 7, 7, 16), [1, 2], False, _q(rng), _q(rng))),
        ("mean_c", mean_model((1, 3, 4, 10), [3], False, _q(rng), _q(rng))),
        ("mean_same_q", mean_model((2, 4, 4, 3), [1, 2], True, q, q)),
        ("mean_uint8_hw", mean_model((1, 4, 4, 6), [1, 2], True, _q(rng, **u8), _q(rng, **u8), **u8)),
        ("reshape", reshape_model((1, 4, 4, 2), (1, 32), _q(rng))),
    ]
    return models


def shape_op_model(op_name, inputs, outputs, consts=(), options=None, order=None, **fields):
    """One op over int8 data tensors (`inputs`: shapes of the model inputs, `outputs`: output shapes or
    (shape, dtype)) and constant parameters (`consts`: (values, dtype)); `order` places the operands (indices
    into inputs + consts) when the data is not first."""
    m = ModelBuilder()
    q = (0.05, -3)
    xs = [m.tensor(shape, "int8", *q) for shape in inputs]
    cs = [m.const(np.asarray(v), dtype, **({"scale": q[0], "zero_point": q[1]} if dtype == "int8" else {}))
          for v, dtype in consts]
    ys = [m.tensor(o[0], o[1]) if isinstance(o[1], str) else m.tensor(o, "int8", *q) for o in outputs]
    operands = xs + cs
    m.op(op_name, [operands[k] for k in order] if order else operands, ys, options, **fields)
    return m.build(xs, ys)


def _suite_data_movement(rng) -> list:
    """The data movement and shape family (int8; tests/test_ops_shape.py has every type): constant parameters,
    so that any input values are valid."""
    i32 = "int32"
    m = ModelBuilder()  # SHAPE of the input (folded at build time into a constant graph output) beside a copy
    x = m.tensor((2, 3, 5), "int8", 0.05, -3)
    shape = m.tensor((3,), "int32")
    m.op("SHAPE", [x], [shape], "ShapeOptions", OutType=2)
    flat = m.tensor((6, 5), "int8", 0.05, -3)
    m.op("RESHAPE", [x, m.const(np.asarray([6, 5]), "int32")], [flat])
    shape_model = m.build([x], [shape, flat])
    m = ModelBuilder()  # BROADCAST_ARGS of constants beside a copy
    x = m.tensor((4,), "int8", 0.05, -3)
    y = m.tensor((4,), "int8", 0.05, -3)
    m.op("RESHAPE", [x, m.const(np.asarray([4]), "int32")], [y])
    shape = m.tensor((3,), "int32")
    m.op("BROADCAST_ARGS", [m.const(np.asarray([2, 1, 3]), "int32"), m.const(np.asarray([4, 1]), "int32")], [shape])
    broadcast_args_model = m.build([x], [y, shape])
    return [
        ("transpose", shape_op_model("TRANSPOSE", [(2, 3, 4)], [(4, 2, 3)], [([2, 0, 1], i32)])),
        ("slice", shape_op_model("SLICE", [(3, 6, 4)], [(2, 3, 4)], [([1, 2, 0], i32), ([2, 3, -1], i32)])),
        ("strided_slice", shape_op_model("STRIDED_SLICE", [(4, 7, 3)], [(2, 3)],
                                         [([3, 6, 1], i32), ([0, 0, 2], i32), ([-2, -2, 1], i32)],
                                         "StridedSliceOptions", ShrinkAxisMask=4)),
        ("reverse_v2", shape_op_model("REVERSE_V2", [(3, 4, 2)], [(3, 4, 2)], [([0, 1], i32)])),
        ("split", shape_op_model("SPLIT", [(2, 6)], [(2, 2)] * 3, [(np.int32(1), i32)], "SplitOptions",
                                 order=[1, 0], NumSplits=3)),
        ("split_v", shape_op_model("SPLIT_V", [(5, 2)], [(1, 2), (4, 2)], [([1, -1], i32), (np.int32(0), i32)],
                                   "SplitVOptions", NumSplits=2)),
        ("unpack", shape_op_model("UNPACK", [(3, 2, 4)], [(3, 4)] * 2, (), "UnpackOptions", Num=2, Axis=1)),
        ("pack", shape_op_model("PACK", [(2, 3)] * 3, [(2, 3, 3)], (), "PackOptions", ValuesCount=3, Axis=-1)),
        ("gather", shape_op_model("GATHER", [(5, 3)], [(2, 2, 3)], [([[4, 0], [2, 2]], i32)], "GatherOptions")),
        ("gather_nd", shape_op_model("GATHER_ND", [(3, 4, 2)], [(3, 2)], [([[0, 3], [2, 1], [1, 1]], i32)])),
        ("embedding_lookup", shape_op_model("EMBEDDING_LOOKUP", [(6, 3)], [(4, 3)], [([5, 0, 5, 2], i32)],
                                            order=[1, 0])),
        ("expand_dims", shape_op_model("EXPAND_DIMS", [(3, 4)], [(3, 4, 1)], [(np.int32(-1), i32)])),
        ("squeeze", shape_op_model("SQUEEZE", [(1, 3, 1, 4)], [(3, 4)], (), "SqueezeOptions", SqueezeDims=[])),
        ("broadcast_to", shape_op_model("BROADCAST_TO", [(2, 1, 3)], [(2, 4, 3)], [([2, 4, 3], i32)])),
        ("mirror_pad", shape_op_model("MIRROR_PAD", [(3, 4)], [(5, 9)], [([[1, 1], [3, 2]], i32)],
                                      "MirrorPadOptions", Mode=0)),
        ("depth_to_space", shape_op_model("DEPTH_TO_SPACE", [(1, 2, 2, 12)], [(1, 4, 4, 3)], (),
                                          "DepthToSpaceOptions", BlockSize=2)),
        ("space_to_depth", shape_op_model("SPACE_TO_DEPTH", [(1, 6, 3, 2)], [(1, 2, 1, 18)], (),
                                          "SpaceToDepthOptions", BlockSize=3)),
        ("batch_to_space_nd", shape_op_model("BATCH_TO_SPACE_ND", [(4, 3, 2, 2)], [(1, 5, 4, 2)],
                                             [([2, 2], i32), ([[0, 1], [0, 0]], i32)])),
        ("space_to_batch_nd", shape_op_model("SPACE_TO_BATCH_ND", [(1, 4, 6, 2)], [(6, 2, 2, 2)],
                                             [([2, 3], i32), ([[0, 0], [0, 0]], i32)])),
        ("fill", shape_op_model("FILL", [()], [(2, 5)], [([2, 5], i32)], order=[1, 0])),
        ("dynamic_update_slice", shape_op_model("DYNAMIC_UPDATE_SLICE", [(4, 5), (2, 2)], [(4, 5)],
                                                [([3, 1], i32)])),
        ("shape", shape_model),
        ("broadcast_args", broadcast_args_model),
    ]


def _suite_activations(rng) -> list:
    u8 = dict(dtype="uint8")
    models = []
    for op, out_q in (("LOGISTIC", (1.0 / 256, -128)), ("TANH", (1.0 / 128, 0))):
        for i, in_q in enumerate([(0.0625, 0), _q(rng, 0.01, 0.1), _q(rng, 0.02, 0.3)]):
            models.append((f"{op.lower()}_{i}", unary_model(op, (1, 256), in_q, out_q)))
    models.append(("logistic_uint8", unary_model("LOGISTIC", (1, 256), _q(rng, 0.02, 0.1, **u8), (1.0 / 256, 0), **u8)))
    models.append(("tanh_uint8", unary_model("TANH", (1, 256), _q(rng, 0.02, 0.1, **u8), (1.0 / 128, 128), **u8)))
    for i in range(3):
        in_q, out_q = _q(rng, 0.01, 0.1), _q(rng, 0.005, 0.05)
        models.append((f"hard_swish_{i}", unary_model("HARD_SWISH", (1, 256), in_q, out_q)))
    for op in ("RELU", "RELU6", "RELU_N1_TO_1"):
        for i in range(2):
            in_q = _q(rng, 0.01, 0.1)
            out_q = in_q if i == 0 else _q(rng, 0.005, 0.05)
            models.append((f"{op.lower()}_{i}", unary_model(op, (1, 256), in_q, out_q)))
    models.append(("relu_uint8", unary_model("RELU", (1, 256), _q(rng, **u8), _q(rng, **u8), **u8)))
    for i, beta in enumerate((1.0, 0.5, 2.7)):
        models.append((f"softmax_{i}", softmax_model((2, 10), _q(rng, 0.02, 0.3), beta=beta)))
    models.append(("softmax_uint8", softmax_model((1, 12), _q(rng, 0.02, 0.3, **u8), **u8)))
    return models


def _suite_quantization(rng) -> list:
    models = [(f"requantize_{i}", unary_model("QUANTIZE", (1, 256), _q(rng), _q(rng))) for i in range(3)]
    models.append(("quantize_float", unary_model("QUANTIZE", (1, 300), None, _q(rng, 0.01, 0.05),
                                                 dtype="float32", out_dtype="int8")))
    models.append(("dequantize", unary_model("DEQUANTIZE", (1, 256), _q(rng), None, out_dtype="float32")))
    return models


def _suite_convolutions(rng) -> list:
    """Dilation, depth multiplier, groups, per-tensor weights, uint8 with a filter zero point."""
    u8 = dict(dtype="uint8")
    x_q, out_q = _q(rng), _q(rng, 0.02, 0.2)
    w = _weights(rng, (6, 3, 3, 4))
    scales = [float(np.float32(s)) for s in rng.uniform(0.002, 0.02, 6)]
    bias = rng.integers(-3000, 3000, 6).astype(np.int32)
    dw = _weights(rng, (1, 3, 3, 8))
    dw_scales = [float(np.float32(s)) for s in rng.uniform(0.002, 0.02, 8)]
    dw_bias = rng.integers(-3000, 3000, 8).astype(np.int32)
    fw = _weights(rng, (10, 24))
    fb = rng.integers(-2000, 2000, 10).astype(np.int32)
    fc_scales = [float(np.float32(s)) for s in rng.uniform(0.002, 0.02, 10)]

    def u8_weights(shape):
        return _weights(rng, shape, "uint8"), int(rng.integers(100, 156))

    w_u8, w_u8_zp = u8_weights((6, 3, 3, 4))
    dw_u8, dw_u8_zp = u8_weights((1, 3, 3, 8))
    fw_u8, fw_u8_zp = u8_weights((10, 24))
    return [
        ("conv_dilated", conv_model((1, 9, 9, 4), w, bias, x_q, scales, out_q, stride=(1, 2), dilation=(2, 2),
                                    activation="RELU")),
        ("conv_per_tensor_valid", conv_model((1, 8, 7, 4), w, bias, x_q, scales[0], out_q, stride=(2, 2),
                                             padding=VALID)),
        ("conv_grouped", conv_model((1, 6, 6, 8), w, bias, x_q, scales, out_q)),
        ("conv_uint8", conv_model((1, 7, 7, 4), w_u8, bias, _q(rng, **u8), scales[0], _q(rng, 0.05, 0.3, **u8),
                                  stride=(2, 2), w_zero_point=w_u8_zp, activation="RELU6", **u8)),
        ("depthwise_multiplier2", depthwise_model((1, 7, 7, 4), dw, dw_bias, x_q, dw_scales, out_q,
                                                  depth_multiplier=2)),
        ("depthwise_dilated", depthwise_model((1, 9, 8, 8), dw, dw_bias, x_q, dw_scales, out_q, dilation=(2, 3),
                                              stride=(2, 1), activation="RELU6")),
        ("depthwise_uint8", depthwise_model((1, 6, 6, 8), dw_u8, dw_bias, _q(rng, **u8), dw_scales[0],
                                            _q(rng, 0.05, 0.3, **u8), w_zero_point=dw_u8_zp, **u8)),
        ("fc_per_tensor", fully_connected_model(3, fw, fb, x_q, 0.01, out_q, activation="RELU")),
        ("fc_per_channel", fully_connected_model(2, fw, fb, x_q, fc_scales, out_q)),
        ("fc_no_bias", fully_connected_model(1, fw, None, x_q, 0.01, out_q)),
        ("fc_uint8", fully_connected_model(2, fw_u8, fb, _q(rng, **u8), 0.01, _q(rng, 0.05, 0.3, **u8),
                                           w_zero_point=fw_u8_zp, **u8)),
    ]


def _suite_layer_ops(rng) -> list:
    """TRANSPOSE_CONV, BATCH_MATMUL and the resizes in int8 (tests/test_ops_conv.py covers their other types)."""
    w = _weights(rng, (3, 3, 3, 4))
    return [
        ("transpose_conv_same", transpose_conv_model((1, 4, 3, 4), w, rng.integers(-500, 500, 3), _q(rng),
                                                     [0.01, 0.02, 0.015], _q(rng))),
        ("batch_matmul_adj_y", batch_matmul_model((2, 3, 5), (2, 4, 5), qa=_q(rng), qb=_q(rng), qy=_q(rng, 0.2, 1.0),
                                                  adj_y=True)),
        ("resize_bilinear_half_pixel", resize_model("RESIZE_BILINEAR", (1, 3, 4, 2), (7, 9), q=_q(rng),
                                                    half_pixel=True)),
        ("resize_nearest_align", resize_model("RESIZE_NEAREST_NEIGHBOR", (1, 5, 2, 3), (3, 7), q=_q(rng),
                                              align_corners=True)),
    ]
def _suite_elementwise(rng) -> list:
    """The elementwise family: int8 SUB, MINIMUM/MAXIMUM, SQUARED_DIFFERENCE, DIV (a constant divisor away from its
    zero point, which LiteRT refuses), PRELU, the comparisons feeding the logical ops and SELECT_V2; float32
    arithmetic, FLOOR_DIV/FLOOR_MOD and ADD_N; SELECT (v1, LiteRT only). Model inputs are never bool (the bool
    tensors come from comparisons inside the model)."""
    models = [("sub_broadcast", binary_model("SUB", (1, 5, 4, 6), (1, 1, 4, 6), (1, 5, 4, 6),
                                             _q(rng), _q(rng), _q(rng), "RELU"))]
    q = _q(rng)
    for op in ("MAXIMUM", "MINIMUM"):
        m = ModelBuilder()
        a, b, y = m.tensor((2, 3, 8), "int8", *q), m.tensor((3, 1), "int8", *q), m.tensor((2, 3, 8), "int8", *q)
        m.op(op, [a, b], [y])
        models.append((op.lower(), m.build([a, b], [y])))
    qa, qb = _q(rng), _q(rng)
    m = ModelBuilder()
    a, b = m.tensor((4, 9), "int8", *qa), m.tensor((9,), "int8", *qb)
    y = m.tensor((4, 9), "int8", float(np.float32((2 * max(qa[0], qb[0])) ** 2 * 40)), -100)
    m.op("SQUARED_DIFFERENCE", [a, b], [y])
    models.append(("squared_difference", m.build([a, b], [y])))
    qa, qb, qy = _q(rng), _q(rng), _q(rng)
    m = ModelBuilder()
    a = m.tensor((3, 8), "int8", *qa)
    divisor = rng.integers(-128, 128, (8,))
    divisor[divisor == qb[1]] = qb[1] + (1 if qb[1] < 127 else -1)
    b = m.const(divisor, "int8", scale=qb[0], zero_point=qb[1])
    y = m.tensor((3, 8), "int8", *qy)
    m.op("DIV", [a, b], [y], "DivOptions", FusedActivationFunction=0)
    models.append(("div_const_divisor", m.build([a], [y])))
    m = ModelBuilder()
    x = m.tensor((1, 4, 4, 5), "int8", *_q(rng))
    alpha = m.const(rng.integers(-128, 128, (1, 1, 5)), "int8", scale=0.01, zero_point=3)
    y = m.tensor((1, 4, 4, 5), "int8", *_q(rng))
    m.op("PRELU", [x, alpha], [y])
    models.append(("prelu", m.build([x], [y])))

    m = ModelBuilder()
    a, b = m.tensor((3, 7), "int8", *q), m.tensor((7,), "int8", *_q(rng))
    flags = {}
    for op in ("EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"):
        flags[op] = m.tensor((3, 7), "bool")
        m.op(op, [a, b], [flags[op]])
    both, either, neither = (m.tensor((3, 7), "bool") for _ in range(3))
    m.op("LOGICAL_AND", [flags["LESS_EQUAL"], flags["NOT_EQUAL"]], [both])
    m.op("LOGICAL_OR", [flags["EQUAL"], flags["GREATER"]], [either])
    m.op("LOGICAL_NOT", [flags["GREATER_EQUAL"]], [neither])
    other = m.tensor((3, 7), "int8", *q)
    chosen = m.tensor((3, 7), "int8", *q)
    m.op("MAXIMUM", [a, a], [other])
    m.op("SELECT_V2", [flags["LESS"], other, a], [chosen])
    models.append(("compare_logical_select", m.build([a, b], [both, either, neither, chosen])))

    m = ModelBuilder()
    a, b, c = (m.tensor((2, 6), "float32") for _ in range(3))
    outputs = []
    for op, options in (("ADD", "AddOptions"), ("SUB", "SubOptions"), ("MUL", "MulOptions"), ("DIV", "DivOptions"),
                        ("SQUARED_DIFFERENCE", None), ("FLOOR_DIV", None), ("FLOOR_MOD", None)):
        y = m.tensor((2, 6), "float32")
        m.op(op, [a, b], [y], options, **({"FusedActivationFunction": ACTIVATION_CODES["RELU6"]} if options else {}))
        outputs.append(y)
    y = m.tensor((2, 6), "float32")
    m.op("ADD_N", [a, b, c], [y])
    alpha = m.const(np.array([0.5, -0.25, 2.0, 0.0, 1.0, -3.0], np.float32), "float32")
    z = m.tensor((2, 6), "float32")
    m.op("PRELU", [a, alpha], [z])
    models.append(("float_arithmetic", m.build([a, b, c], outputs + [y, z])))

    m = ModelBuilder()
    a, b = m.tensor((3, 4), "float32"), m.tensor((3, 4), "float32")
    u, v = m.tensor((3,), "float32"), m.tensor((3,), "float32")
    flag, row, chosen, first = (m.tensor((3, 4), "bool"), m.tensor((3,), "bool"), m.tensor((3, 4), "float32"),
                                m.tensor((3, 4), "float32"))
    m.op("GREATER", [a, b], [flag])
    m.op("SELECT", [flag, a, b], [chosen])
    m.op("LESS", [u, v], [row])
    m.op("SELECT", [row, b, a], [first])  # a condition vector along the first dimension
    models.append(("select_v1_litert_only", m.build([a, b, u, v], [chosen, first])))
    return models
# -- reductions and normalizations (SUM, REDUCE_*, ARG_*, CUMSUM, L2_NORMALIZATION, LOG_SOFTMAX, SOFTMAX) ---------

REDUCER_OPTIONS = {"MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
                   "REDUCE_MIN": "ReducerOptions", "REDUCE_ANY": "ReducerOptions", "REDUCE_ALL": "ReducerOptions",
                   "REDUCE_PROD": "ReducerOptions"}


def reduced_shape(shape, axes, keep_dims) -> list:
    rank = len(shape)
    axes_n = {(ax + rank) % rank for ax in axes} if rank else set()
    return ([1 if i in axes_n else d for i, d in enumerate(shape)] if keep_dims else
            [d for i, d in enumerate(shape) if i not in axes_n])


def reduce_model(op_name, shape, axes, keep_dims, q_in=None, q_out=None, dtype="int8", out_shape=None):
    """MEAN, SUM, REDUCE_MAX/MIN/ANY/ALL over constant `axes` (q_in/q_out None for float32 and bool)."""
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *(q_in or (None, None)))
    a = m.const(np.asarray(axes, np.int32), "int32")
    y = m.tensor(reduced_shape(shape, axes, keep_dims) if out_shape is None else out_shape, dtype,
                 *(q_out or q_in or (None, None)))
    m.op(op_name, [x, a], [y], REDUCER_OPTIONS[op_name], KeepDims=bool(keep_dims))
    return m.build([x], [y])


def arg_min_max_model(op_name, shape, axis, q_in=None, dtype="int8", output_type="int32"):
    m = ModelBuilder()
    x = m.tensor(shape, dtype, *(q_in or (None, None)))
    a = m.const(np.asarray([axis], np.int32), "int32")
    rank = len(shape)
    y = m.tensor([d for i, d in enumerate(shape) if i != (axis + rank) % rank], output_type)
    options = "ArgMaxOptions" if op_name == "ARG_MAX" else "ArgMinOptions"
    m.op(op_name, [x, a], [y], options, OutputType=TENSOR_TYPES[output_type])
    return m.build([x], [y])


def cumsum_model(shape, axis, exclusive=False, reverse=False, dtype="float32"):
    m = ModelBuilder()
    x = m.tensor(shape, dtype)
    a = m.const(np.asarray(axis, np.int32), "int32")
    y = m.tensor(shape, dtype)
    m.op("CUMSUM", [x, a], [y], "CumsumOptions", Exclusive=bool(exclusive), Reverse=bool(reverse))
    return m.build([x], [y])


def _suite_reduce(rng) -> list:
    f32 = dict(dtype="float32")
    q = _q(rng)
    return [
        ("sum_hw", reduce_model("SUM", (1, 4, 5, 3), [1, 2], True, _q(rng, 0.01, 0.05), _q(rng, 0.2, 1.0))),
        ("sum_float_all", reduce_model("SUM", (3, 4), [0, 1], False, **f32)),
        ("mean_float_last", reduce_model("MEAN", (2, 3, 7), [-1], False, **f32)),
        ("reduce_max_mid", reduce_model("REDUCE_MAX", (2, 5, 3), [1], False, q, q)),
        ("reduce_min_all_keep", reduce_model("REDUCE_MIN", (2, 3, 4), [0, 1, 2], True, q, q)),
        ("reduce_max_float", reduce_model("REDUCE_MAX", (4, 6), [0], True, **f32)),
        ("reduce_all_bool", reduce_model("REDUCE_ALL", (3, 2, 2), [1, 2], False, dtype="bool")),
        ("reduce_any_bool", reduce_model("REDUCE_ANY", (3, 4), [0], False, dtype="bool")),
        ("arg_max_last", arg_min_max_model("ARG_MAX", (3, 9), -1, _q(rng))),
        ("arg_min_axis0", arg_min_max_model("ARG_MIN", (5, 4), 0, _q(rng))),
        ("arg_max_float", arg_min_max_model("ARG_MAX", (2, 3, 4), 1, dtype="float32")),
        ("cumsum_exclusive_reverse", cumsum_model((3, 5, 2), 1, exclusive=True, reverse=True)),
        ("l2_normalization", unary_model("L2_NORMALIZATION", (2, 3, 8), _q(rng, 0.01, 0.1), (1 / 128, 0),
                                         options="L2NormOptions", FusedActivationFunction=0)),
        ("l2_normalization_float", unary_model("L2_NORMALIZATION", (3, 5), None, None, dtype="float32",
                                               options="L2NormOptions", FusedActivationFunction=0)),
        ("log_softmax", unary_model("LOG_SOFTMAX", (2, 10), _q(rng, 0.02, 0.3), (16 / 256, 127),
                                    options="LogSoftmaxOptions")),
        ("log_softmax_float", unary_model("LOG_SOFTMAX", (3, 7), None, None, dtype="float32",
                                          options="LogSoftmaxOptions")),
        ("softmax_int16", unary_model("SOFTMAX", (3, 11), (float(np.float32(rng.uniform(1e-4, 1e-3))), 0),
                                      (1 / 32768, 0), dtype="int16", options="SoftmaxOptions", Beta=1.0)),
        ("softmax_float", unary_model("SOFTMAX", (2, 9), None, None, dtype="float32", options="SoftmaxOptions",
                                      Beta=0.7)),
    ]


def _suite_unary(rng) -> list:
    """Single-input elementwise ops. Names: "litert_only" models TFLite Micro cannot run (no such kernel or
    dtype), "tflm_only" ones LiteRT's reference resolver lacks (tests/test_kernels.py filters on them)."""
    f32 = dict(dtype="float32")
    floor_zp = (float(np.float32(rng.uniform(0.01, 0.05))), -128)  # inputs >= the zero point: real values >= 0
    models = [
        ("abs_rescale", unary_model("ABS", (1, 64), _q(rng), _q(rng))),
        ("abs_float", unary_model("ABS", (2, 9), None, None, **f32)),
        ("neg_float", unary_model("NEG", (2, 9), None, None, **f32)),
        ("neg_int32_litert_only", unary_model("NEG", (7,), None, None, dtype="int32")),
        ("square_float", unary_model("SQUARE", (3, 5), None, None, **f32)),
        ("sqrt_float", unary_model("SQRT", (3, 5), None, None, **f32)),
        ("rsqrt_float", unary_model("RSQRT", (3, 5), None, None, **f32)),
        ("floor_float", unary_model("FLOOR", (3, 5), None, None, **f32)),
        ("ceil_float_tflm_only", unary_model("CEIL", (3, 5), None, None, **f32)),
        ("round_float_tflm_only", unary_model("ROUND", (3, 5), None, None, **f32)),
        ("rsqrt_int8", unary_model("RSQRT", (1, 64), floor_zp, _q(rng, 0.01, 0.1))),
        ("sqrt_int8_litert_only", unary_model("SQRT", (1, 64), floor_zp, _q(rng, 0.005, 0.02))),
        ("exp_int8_litert_only", unary_model("EXP", (1, 64), _q(rng, 0.01, 0.03), _q(rng, 0.01, 0.1))),
        ("log_int8_litert_only", unary_model("LOG", (1, 64), floor_zp, _q(rng, 0.01, 0.05))),
        ("elu_int8_tflm_only", unary_model("ELU", (1, 64), _q(rng), _q(rng))),
        ("leaky_relu", unary_model("LEAKY_RELU", (1, 64), _q(rng), _q(rng), options="LeakyReluOptions", Alpha=0.2)),
        ("leaky_relu_float", unary_model("LEAKY_RELU", (2, 9), None, None, options="LeakyReluOptions", Alpha=0.1, **f32)),
        ("relu_float", unary_model("RELU", (2, 9), None, None, **f32)),
        ("zeros_like_float", unary_model("ZEROS_LIKE", (2, 5), None, None, **f32)),
        ("cast_float_int32", unary_model("CAST", (2, 5), None, None, out_dtype="int32", **f32)),
        ("cast_int8_float", unary_model("CAST", (2, 5), None, None, dtype="int8", out_dtype="float32")),
    ]
    for op in ("EXP", "LOG", "SIN", "COS", "TANH", "LOGISTIC", "HARD_SWISH"):
        models.append((f"{op.lower()}_float", unary_model(op, (3, 7), None, None, **f32)))
    models.append(("elu_float_tflm_only", unary_model("ELU", (3, 7), None, None, **f32)))
    return models
