"""How far edgesdk's default `--rounding ref` (TFLite's integer arithmetic) lands from ONNX Runtime on the network of
issue 12 item 18, quantized by onnxruntime's quantize_static with its default settings.

    python3 tests/models/issue12_ref_vs_ort.py [--seeds 20] [--inputs 50] [--width 8]

Needs onnx, onnxruntime and apache-tvm (edgesdk's [tvm] extra); CI does not run it (docs/rounding.md quotes its
figures). For each seed: the float network conv 3x3 -> depthwise 3x3 -> conv 1x1 -> residual Add (of the first conv)
-> GlobalAveragePool -> Flatten -> Gemm, with and without Relu after the first two convs, weights drawn from the
seed; quantize_static with default arguments (QDQ, QInt8 activations and weights, per tensor) on 24 calibration
samples; then, per input, the output of the host-built edgesdk graph (`--rounding ref` and `--rounding ort`) against
ONNX Runtime's (default session options), in steps of the output's scale. Inputs: normal(0, 1), uniform(-3, 3),
normal(0, 3) (beyond the calibration range), uniform(0, 1), and values halfway between two steps of the input's
QuantizeLinear ("ties": (k + 0.5) * input scale), where TFLite rounds away from zero and ONNX Runtime to even.
Each kind is reported on its own.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, quantize_static

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent))
SHAPE = (1, 3, 16, 16)
INPUT_KINDS = ("normal", "uniform3", "normal3", "unit", "ties")


def float_network(seed: int, width: int, relu: bool) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(shape, std):
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(rng.normal(0.0, std, shape).astype(np.float32), name))
        return name

    def node(op, inputs, **attrs):
        out = f"{op.lower()}{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{len(nodes)}", **attrs))
        return out

    def conv(x, c_in, c_out, k, group=1):
        return node("Conv", [x, const((c_out, c_in // group, k, k), 0.3), const((c_out,), 0.1)],
                    pads=[k // 2] * 4, group=group)

    act = (lambda t: node("Relu", [t])) if relu else (lambda t: t)
    c1 = act(conv("x", 3, width, 3))
    c2 = act(conv(c1, width, width, 3, group=width))
    c3 = conv(c2, width, width, 1)
    flat = node("Flatten", [node("GlobalAveragePool", [node("Add", [c1, c3])])])
    y = node("Gemm", [flat, const((10, width), 0.3), const((10,), 0.1)], transB=1)
    graph = helper.make_graph(nodes, "issue12", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


class Reader(CalibrationDataReader):
    def __init__(self, seed: int):
        rng = np.random.default_rng(10_000 + seed)
        samples = [np.full(SHAPE, -3.0, np.float32), np.full(SHAPE, 3.0, np.float32)]
        samples += [rng.normal(0.0, 1.0, SHAPE).astype(np.float32) for _ in range(22)]
        self.items = iter({"x": s} for s in samples)

    def get_next(self):
        return next(self.items, None)


def random_input(rng, kind: str, input_scale: float) -> np.ndarray:
    if kind == "ties":
        return ((rng.integers(-100, 100, SHAPE) + 0.5) * np.float32(input_scale)).astype(np.float32)
    if kind == "normal":
        x = rng.normal(0.0, 1.0, SHAPE)
    elif kind == "uniform3":
        x = rng.uniform(-3.0, 3.0, SHAPE)
    elif kind == "normal3":
        x = rng.normal(0.0, 3.0, SHAPE)
    else:
        x = rng.uniform(0.0, 1.0, SHAPE)
    return x.astype(np.float32)


def host_graph(path: Path, mode: str):
    from edgesdk.importer.onnx_importer import import_model
    from edgesdk.ops.folding import fold_constants

    graph = import_model(path)
    if mode == "ort":
        from edgesdk.importer.ort_plan import prepare

        prepare(graph)
    fold_constants(graph)
    for op in graph.ops:  # layout transposes: the C target's own kernel (as tests/ort_corpus.py HostGraphs)
        if op.type == "TRANSPOSE" and op.attrs.get("relax_ops") == ["relax.permute_dims"] and "perm" in op.attrs:
            op.attrs.pop("relax_function", None)
    return graph


def run_graph(library, graph, x: np.ndarray) -> np.ndarray:
    library.write(graph.inputs[0], x.reshape(graph.inputs[0].shape))
    for op in graph.ops:
        library.run(op, {})
    return library.read(graph.outputs[0]).reshape(-1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--inputs", type=int, default=50, help="random inputs per kind and model")
    parser.add_argument("--width", type=int, default=8, help="channels of the convolutions")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    from edgesdk.targets.c.testing import OpLibrary

    worst, totals = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            for relu in (True, False):
                float_path, path = Path(tmp) / "float.onnx", Path(tmp) / f"q{seed}_{int(relu)}.onnx"
                onnx.save(float_network(seed, args.width, relu), str(float_path))
                quantize_static(str(float_path), str(path), Reader(seed))  # the defaults: QDQ, QInt8, per tensor
                model = onnx.load(str(path))
                inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
                last_q = [n for n in model.graph.node if n.op_type == "QuantizeLinear"][-1]
                y_scale = float(inits[last_q.input[1]])
                session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
                first_q = next(n for n in model.graph.node if n.op_type == "QuantizeLinear")
                x_scale = float(inits[first_q.input[1]])
                line = [f"seed {seed:2d} relu {int(relu)}"]
                for mode in ("ref", "ort"):
                    graph = host_graph(path, mode)
                    library = OpLibrary(graph.ops, mode)
                    rng = np.random.default_rng(seed)
                    for kind in INPUT_KINDS:
                        steps, differing, values = [], 0, 0
                        for _ in range(args.inputs):
                            x = random_input(rng, kind, x_scale)
                            want = session.run(None, {"x": x})[0].reshape(-1)
                            got = run_graph(library, graph, x)
                            d = np.rint(np.abs(got.astype(np.float64) - want) / y_scale).astype(int)
                            steps.append(int(d.max()))
                            differing += int(np.count_nonzero(d))
                            values += d.size
                        key = (mode, kind)
                        worst[key] = max(worst.get(key, 0), max(steps))
                        totals[key] = [a + b for a, b in zip(totals.get(key, [0, 0, 0, 0]),
                                                             (differing, values, sum(v > 0 for v in steps), len(steps)))]
                        line.append(f"{mode} {kind}: max {max(steps)}, {differing}/{values} values")
                print("; ".join(line), flush=True)
    for (mode, kind), (differing, values, inputs, runs) in sorted(totals.items()):
        print(f"{mode:3s} {kind:8s}: at most {worst[mode, kind]} steps; {differing}/{values} output values differ, "
              f"on {inputs}/{runs} inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
