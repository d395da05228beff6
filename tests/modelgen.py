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
                "int16": TensorType.INT16, "int32": TensorType.INT32, "int64": TensorType.INT64, "bool": TensorType.BOOL}
NUMPY_TYPES = {"float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
               "int32": np.int32, "int64": np.int64, "bool": np.bool_}


def _module(name: str):
    return importlib.import_module(f"tflite.{name}")


class ModelBuilder:
    """Collects tensors and ops, then serializes one subgraph into a .tflite flatbuffer."""

    def __init__(self):
        self.tensors = []  # dicts: shape, dtype, scale, zero_point, axis, data, name
        self.ops = []  # dicts: name, inputs, outputs, options (class name), fields

    def tensor(self, shape, dtype, scale=None, zero_point=None, axis=0, data=None, name=None) -> int:
        """Add a tensor; `scale`/`zero_point` may be scalars or per-channel sequences. Returns its index."""
        if data is not None:
            data = np.asarray(data, dtype=NUMPY_TYPES[dtype]).reshape(shape)
        self.tensors.append(dict(shape=tuple(int(d) for d in shape), dtype=dtype, scale=scale,
                                 zero_point=zero_point, axis=axis, data=data,
                                 name=name or f"t{len(self.tensors)}"))
        return len(self.tensors) - 1

    def const(self, array, dtype, **quant) -> int:
        array = np.asarray(array)
        return self.tensor(array.shape, dtype, data=array, **quant)

    def op(self, name: str, inputs, outputs, options: str | None = None, **fields) -> int:
        """Add a builtin op; `options` names its options table (e.g. "Conv2DOptions"), `fields` its values."""
        self.ops.append(dict(name=name, inputs=list(inputs), outputs=list(outputs), options=options, fields=fields))
        return len(self.ops) - 1

    # -- serialization ------------------------------------------------------------------------------
    def build(self, inputs, outputs) -> bytes:
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, None)]  # buffer 0 is the empty sentinel
        tensor_offsets = []
        for t in self.tensors:
            buffer_index = 0
            if t["data"] is not None:
                buffers.append(self._buffer(b, t["data"]))
                buffer_index = len(buffers) - 1
            tensor_offsets.append(self._tensor(b, t, buffer_index))
        opcodes = sorted({op["name"] for op in self.ops})
        opcode_offsets = [self._opcode(b, name) for name in opcodes]
        op_offsets = [self._operator(b, op, opcodes.index(op["name"])) for op in self.ops]

        mod = _module("SubGraph")
        t_vec = self._offset_vector(b, mod.SubGraphStartTensorsVector, tensor_offsets)
        in_vec = self._int_vector(b, mod.SubGraphStartInputsVector, inputs)
        out_vec = self._int_vector(b, mod.SubGraphStartOutputsVector, outputs)
        op_vec = self._offset_vector(b, mod.SubGraphStartOperatorsVector, op_offsets)
        mod.SubGraphStart(b)
        mod.SubGraphAddTensors(b, t_vec)
        mod.SubGraphAddInputs(b, in_vec)
        mod.SubGraphAddOutputs(b, out_vec)
        mod.SubGraphAddOperators(b, op_vec)
        subgraph = mod.SubGraphEnd(b)

        mod = _module("Model")
        codes_vec = self._offset_vector(b, mod.ModelStartOperatorCodesVector, opcode_offsets)
        sg_vec = self._offset_vector(b, mod.ModelStartSubgraphsVector, [subgraph])
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
        if quant is not None:
            mod.TensorAddQuantization(b, quant)
        return mod.TensorEnd(b)

    @staticmethod
    def _opcode(b, name):
        mod = _module("OperatorCode")
        code = getattr(BuiltinOperator, name)
        mod.OperatorCodeStart(b)
        mod.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        mod.OperatorCodeAddBuiltinCode(b, code)
        mod.OperatorCodeAddVersion(b, 1)
        return mod.OperatorCodeEnd(b)

    def _operator(self, b, op, opcode_index):
        options = None
        if op["options"]:
            mod = _module(op["options"])
            prefix = op["options"]
            getattr(mod, f"{prefix}Start")(b)
            for field, value in op["fields"].items():
                getattr(mod, f"{prefix}Add{field}")(b, value)
            options = getattr(mod, f"{prefix}End")(b)
        mod = _module("Operator")
        in_vec = self._int_vector(b, mod.OperatorStartInputsVector, op["inputs"])
        out_vec = self._int_vector(b, mod.OperatorStartOutputsVector, op["outputs"])
        mod.OperatorStart(b)
        mod.OperatorAddOpcodeIndex(b, opcode_index)
        mod.OperatorAddInputs(b, in_vec)
        mod.OperatorAddOutputs(b, out_vec)
        if options is not None:
            mod.OperatorAddBuiltinOptionsType(b, getattr(BuiltinOptions, op["options"]))
            mod.OperatorAddBuiltinOptions(b, options)
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
            + _suite_convolutions(rng) + _suite_unary(rng))


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
