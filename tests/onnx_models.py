"""Small ONNX test models, built with the `onnx` package (no downloads).

* `conv_net_qdq`: a float conv net (Conv/Relu, a residual Add, MaxPool, GlobalAveragePool, Gemm), quantized
  to QDQ by ONNX Runtime's own static quantizer (int8, per-channel weights) from seeded calibration data.
* `long_tail_qdq`: a hand-written QDQ model whose ops have no edgesdk kernel: an int8 Sub
  (DequantizeLinear -> Sub -> QuantizeLinear) and a float Abs after the output DequantizeLinear.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OPSET = 13
CONV_NET_INPUT = (1, 3, 16, 16)
LONG_TAIL_SHAPE = (1, 4, 6, 8)


def _onnx():
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    return onnx, TensorProto, helper, numpy_helper


def conv_net_float(path: Path, seed: int = 0) -> Path:
    onnx, TensorProto, helper, numpy_helper = _onnx()
    rng = np.random.default_rng(seed)

    def init(name, shape, std):
        return numpy_helper.from_array(rng.normal(0.0, std, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Add", ["r1", "r2"], ["res"]),
        helper.make_node("MaxPool", ["res"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w4", "b4"], ["y"], transB=1),
    ]
    inits = [init("w1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("w2", (8, 8, 3, 3), 0.2),
             init("b2", (8,), 0.1), init("w3", (16, 8, 3, 3), 0.2), init("b3", (16,), 0.1),
             init("w4", (10, 16), 0.3), init("b4", (10,), 0.1)]
    graph = helper.make_graph(nodes, "conv_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, CONV_NET_INPUT)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 10))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def conv_net_qdq(directory: Path, seed: int = 0) -> Path:
    """ONNX Runtime's quantize_static (QDQ format, int8 activations, per-channel int8 weights)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    directory = Path(directory)
    float_path = conv_net_float(directory / "conv_net_float.onnx", seed)
    rng = np.random.default_rng(seed + 1)
    samples = [{"x": rng.normal(0.0, 1.0, CONV_NET_INPUT).astype(np.float32)} for _ in range(16)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(samples)

        def get_next(self):
            return next(self.items, None)

    out = directory / "conv_net_qdq.onnx"
    quantize_static(str(float_path), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return out


def long_tail_qdq(path: Path) -> Path:
    """out = Abs(DQ(Q(DQ(Q(a)) - DQ(Q(b))))): an int8 SUB and a float ABS, neither has an edgesdk kernel."""
    onnx, TensorProto, helper, numpy_helper = _onnx()

    def qparams(name, scale, zp):
        return [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_scale"),
                numpy_helper.from_array(np.array(zp, np.int8), f"{name}_zp")]

    def q(src, name):
        return helper.make_node("QuantizeLinear", [src, f"{name}_scale", f"{name}_zp"], [f"{name}_q"])

    def dq(name, out):
        return helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_scale", f"{name}_zp"], [out])

    nodes = [q("a", "a"), dq("a", "a_f"), q("b", "b"), dq("b", "b_f"),
             helper.make_node("Sub", ["a_f", "b_f"], ["d"]), q("d", "d"), dq("d", "d_f"),
             helper.make_node("Abs", ["d_f"], ["y"])]
    inits = qparams("a", 0.021, 3) + qparams("b", 0.017, -5) + qparams("d", 0.033, 2)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, LONG_TAIL_SHAPE) for n in ("a", "b")]
    graph = helper.make_graph(nodes, "long_tail", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, LONG_TAIL_SHAPE)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def run_onnxruntime(path: Path, inputs: dict, optimize: bool = True) -> list:
    """ONNX Runtime on the CPU provider. optimize=False runs the QDQ graph as written (ORT_DISABLE_ALL):
    float ops between DequantizeLinear and QuantizeLinear; True lets ORT fuse them into QLinear kernels."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)
