"""Build the ONNX QDQ test corpus: small float ONNX models quantized by ONNX Runtime's own static quantizer.

    python3 tests/models/make_onnx_models.py [--only PATTERN] [--list] [--refresh]

Needs the `onnx` and `onnxruntime` packages (edgesdk's [tvm] extra). CI never runs this: it reads the committed
files in tests/models/onnx/ and their manifest.json.

Every model comes from a `Spec`: a name, the ONNX ops under test, input shapes, and a function that writes the
float graph with onnx.helper from constants drawn from a generator seeded with the spec's name. Each spec is
quantized with onnxruntime.quantization.quantize_static (QuantFormat.QDQ, int8 weights) in its variants:

    u8      activations QUInt8, per-tensor weights
    s8      activations QInt8 (quantize_static's default), per-tensor weights
    u8_pc   QUInt8, per-channel weights (weight ops only)
    s8_pc   QInt8, per-channel weights (weight ops only)

Calibration: 24 samples from numpy.random.default_rng(seeded by the spec's name), normal(0, 1) with the first
two at -3 and +3. `ForceQuantizeNoInputCheck` makes the quantizer quantize ops it would otherwise leave in float
when their input is not quantized yet (MaxPool, AveragePool, ...). The manifest records, per model, the ops of
the QDQ graph, the kernels ONNX Runtime runs at its default optimization level (ORT_ENABLE_ALL), and whether
`edgesdk build --rounding ort` is expected to reproduce it (`ort_buildable`, with the reason when not).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import logging
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

HERE = Path(__file__).resolve().parent
OUT = HERE / "onnx"
MANIFEST = OUT / "manifest.json"
OPSET = 13
CALIBRATION_SAMPLES = 24
VARIANTS = {"u8": (QuantType.QUInt8, False), "s8": (QuantType.QInt8, False),
            "u8_pc": (QuantType.QUInt8, True), "s8_pc": (QuantType.QInt8, True)}
PER_TENSOR = ("u8", "s8")
ALL = tuple(VARIANTS)


class Spec:
    def __init__(self, name, ops, inputs, build, variants=PER_TENSOR, outputs=1, note=""):
        self.name, self.ops, self.inputs, self.build = name, ops, dict(inputs), build
        self.variants, self.outputs, self.note = tuple(variants), outputs, note

    def rng(self):
        return np.random.default_rng(zlib.crc32(self.name.encode()))


SPECS: list = []


def spec(name, ops, inputs, variants=PER_TENSOR, outputs=1, note=""):
    def wrap(fn):
        assert not any(s.name == name for s in SPECS), name
        SPECS.append(Spec(name, ops, inputs, fn, variants, outputs, note))
        return fn
    return wrap


# -- graph helpers ------------------------------------------------------------------------------------------------
class G:
    """Nodes and initializers of one float graph, with seeded constants."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.count = rng, [], [], 0

    def const(self, shape, std=0.3, name=None):
        name = name or f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(self.rng.normal(0.0, std, shape).astype(np.float32), name))
        return name

    def scalar(self, value, name=None):
        name = name or f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.array(value, np.float32), name))
        return name

    def node(self, op, inputs, **attrs):
        self.count += 1
        out = f"{op.lower()}{self.count}"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=f"{op}_{self.count}", **attrs))
        return out

    def conv(self, x, c_in, c_out, k=3, stride=1, pad=None, group=1, std=0.3):
        pad = k // 2 if pad is None else pad
        w = self.const((c_out, c_in // group, k, k), std)
        b = self.const((c_out,), 0.1)
        return self.node("Conv", [x, w, b], pads=[pad] * 4, strides=[stride] * 2, group=group)


def finish(g: G, spec_: Spec, outputs: list) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in spec_.inputs.items()]
    outs = [helper.make_empty_tensor_value_info(o) for o in outputs]  # shapes from shape inference
    graph = helper.make_graph(g.nodes, spec_.name, inputs, outs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    del model.graph.value_info[:]
    onnx.checker.check_model(model)
    return model


IMG = (1, 3, 12, 12)
FEAT = (1, 8, 8, 8)


# -- convolutions -------------------------------------------------------------------------------------------------
@spec("conv3x3", ["Conv"], {"x": IMG}, ALL)
def _(g, x):
    return [g.conv(x, 3, 8)]


@spec("conv3x3_relu", ["Conv", "Relu"], {"x": IMG}, ALL, note="the quantizer folds the Relu into the output range")
def _(g, x):
    return [g.node("Relu", [g.conv(x, 3, 8)])]


@spec("conv_stride2", ["Conv"], {"x": IMG}, ALL)
def _(g, x):
    return [g.conv(x, 3, 16, k=3, stride=2, pad=1)]


@spec("conv1x1", ["Conv"], {"x": FEAT}, ALL)
def _(g, x):
    return [g.conv(x, 8, 16, k=1)]


@spec("conv5x5_valid", ["Conv"], {"x": FEAT}, ALL)
def _(g, x):
    return [g.conv(x, 8, 4, k=5, pad=0)]


@spec("depthwise3x3", ["Conv"], {"x": FEAT}, ALL)
def _(g, x):
    return [g.conv(x, 8, 8, group=8)]


@spec("depthwise3x3_mult2", ["Conv"], {"x": FEAT}, ALL)
def _(g, x):
    return [g.conv(x, 8, 16, group=8)]


@spec("depthwise_stride2", ["Conv"], {"x": FEAT}, ALL)
def _(g, x):
    return [g.conv(x, 8, 8, stride=2, group=8)]


# -- matrix products ----------------------------------------------------------------------------------------------
@spec("gemm", ["Gemm"], {"x": (1, 16)}, ALL)
def _(g, x):
    return [g.node("Gemm", [x, g.const((10, 16)), g.const((10,), 0.1)], transB=1)]


@spec("gemm_batch3", ["Gemm"], {"x": (3, 24)}, ALL)
def _(g, x):
    return [g.node("Gemm", [x, g.const((24, 12)), g.const((12,), 0.1)])]


@spec("matmul", ["MatMul"], {"x": (1, 16)}, ALL)
def _(g, x):
    return [g.node("MatMul", [x, g.const((16, 10))])]


@spec("matmul_bias_add", ["MatMul", "Add"], {"x": (1, 16)}, ALL, note="MatMul and the bias Add quantized separately")
def _(g, x):
    return [g.node("Add", [g.node("MatMul", [x, g.const((16, 10))]), g.const((10,), 0.2)])]


# -- elementwise --------------------------------------------------------------------------------------------------
@spec("add", ["Add"], {"a": FEAT, "b": FEAT})
def _(g, a, b):
    return [g.node("Add", [a, b])]


@spec("add_scalar", ["Add"], {"a": FEAT})
def _(g, a):
    return [g.node("Add", [a, g.scalar(0.75)])]


@spec("add_relu", ["Add", "Relu"], {"a": FEAT, "b": FEAT})
def _(g, a, b):
    return [g.node("Relu", [g.node("Add", [a, b])])]


@spec("mul", ["Mul"], {"a": FEAT, "b": FEAT})
def _(g, a, b):
    return [g.node("Mul", [a, b])]


@spec("mul_scalar", ["Mul"], {"a": FEAT})
def _(g, a):
    return [g.node("Mul", [a, g.scalar(-1.5)])]


# -- pooling ------------------------------------------------------------------------------------------------------
@spec("maxpool2x2", ["MaxPool"], {"x": FEAT})
def _(g, x):
    return [g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])]


@spec("maxpool3x3_pad", ["MaxPool"], {"x": FEAT})
def _(g, x):
    return [g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])]


@spec("avgpool2x2", ["AveragePool"], {"x": FEAT})
def _(g, x):
    return [g.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])]


@spec("avgpool3x3_pad", ["AveragePool"], {"x": FEAT}, note="count_include_pad 0: border windows average fewer taps")
def _(g, x):
    return [g.node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])]


@spec("avgpool_whole", ["AveragePool"], {"x": FEAT}, note="a window over the whole input: ONNX Runtime's global path")
def _(g, x):
    return [g.node("AveragePool", [x], kernel_shape=[8, 8])]


@spec("global_avgpool", ["GlobalAveragePool"], {"x": FEAT})
def _(g, x):
    return [g.node("GlobalAveragePool", [x])]


# -- data movement and activations --------------------------------------------------------------------------------
@spec("concat_inputs", ["Concat"], {"a": FEAT, "b": FEAT}, note="inputs quantized differently: requantization tables")
def _(g, a, b):
    return [g.node("Concat", [a, g.node("Mul", [b, g.scalar(3.0)])], axis=1)]


@spec("concat_convs", ["Conv", "Concat"], {"x": FEAT})
def _(g, x):
    return [g.node("Concat", [g.conv(x, 8, 4), g.conv(x, 8, 6, k=1)], axis=1)]


@spec("relu_branch", ["Conv", "Relu"], {"x": FEAT}, outputs=2,
      note="the conv output is also a model output, so the Relu stays a QDQ group of its own")
def _(g, x):
    c = g.conv(x, 8, 8)
    return [g.node("Relu", [c]), c]


@spec("conv_clip6", ["Conv", "Clip"], {"x": FEAT}, ALL, note="the quantizer folds the Clip(0, 6) into the output range")
def _(g, x):
    return [g.node("Clip", [g.conv(x, 8, 8, std=0.8), g.scalar(0.0), g.scalar(6.0)])]


@spec("elementwise_fanout", ["Add", "Relu", "Mul"], {"a": FEAT, "b": FEAT},
      note="a sum read by three ops: with int8 activations ONNX Runtime keeps these groups in float32")
def _(g, a, b):
    s = g.node("Add", [a, b])
    r = g.node("Relu", [s])
    return [g.node("Add", [s, g.node("Mul", [s, r])])]


@spec("fanout_convs", ["Conv", "Add"], {"x": FEAT}, ALL, outputs=3,
      note="a conv output read by four ops: with int8 activations ONNX Runtime runs every Conv here in float32 "
           "(MLAS: a depthwise conv with 2 filters per group, a single-filter conv, a pointwise conv)")
def _(g, x):
    a = g.conv(x, 8, 8)
    b = g.conv(a, 8, 16, stride=2, group=8)
    c = g.conv(a, 8, 1)
    return [b, c, g.node("Add", [a, g.conv(a, 8, 8, k=1, pad=0)])]


@spec("fanout_wide_conv", ["Conv", "Concat"], {"x": (1, 32, 6, 6)},
      note="an input read by two convs, one summing 288 products: int8 refused (MLAS may split sums past 256)")
def _(g, x):
    return [g.node("Concat", [g.conv(x, 32, 8, std=0.1), g.conv(x, 32, 8, k=1, std=0.1)], axis=1)]


@spec("fanout_gemm", ["Gemm", "MatMul", "Add"], {"x": (1, 16)}, ALL, outputs=2,
      note="a Gemm output read by a Gemm (transB 0), a MatMul and an Add: with int8 activations ONNX Runtime runs "
           "them in float32 (MLAS's M=1 kernels, B transposed or not)")
def _(g, x):
    h = g.node("Gemm", [x, g.const((10, 16)), g.const((10,), 0.1)], transB=1)
    out = g.node("Add", [h, g.node("Gemm", [h, g.const((10, 10)), g.const((10,), 0.1)])])
    return [out, g.node("MatMul", [h, g.const((10, 7))])]


@spec("fanout_gemm_batch", ["Gemm", "Add"], {"x": (3, 24)},
      note="three rows: ONNX Runtime's float32 Gemms (int8) use MLAS's packed SGEMM kernel (fused multiply-adds)")
def _(g, x):
    h = g.node("Gemm", [x, g.const((24, 12)), g.const((12,), 0.1)])
    return [g.node("Add", [h, g.node("Gemm", [h, g.const((12, 12)), g.const((12,), 0.1)], transB=1)])]


@spec("sigmoid", ["Conv", "Sigmoid"], {"x": FEAT})
def _(g, x):
    return [g.node("Sigmoid", [g.conv(x, 8, 8)])]


@spec("leaky_relu", ["Conv", "LeakyRelu"], {"x": FEAT}, note="no edgesdk kernel: lowered through TVM (exact float)")
def _(g, x):
    return [g.node("LeakyRelu", [g.conv(x, 8, 8)], alpha=0.1)]


@spec("flatten_gemm", ["GlobalAveragePool", "Flatten", "Gemm"], {"x": FEAT})
def _(g, x):
    f = g.node("Flatten", [g.node("GlobalAveragePool", [x])])
    return [g.node("Gemm", [f, g.const((5, 8)), g.const((5,), 0.1)], transB=1)]


# -- networks -----------------------------------------------------------------------------------------------------
@spec("net_issue12", ["Conv", "Relu", "Add", "GlobalAveragePool", "Flatten", "Gemm"], {"x": (1, 3, 16, 16)}, ALL,
      note="issue 12 item 18: conv -> depthwise conv -> conv -> residual add -> GlobalAveragePool -> Flatten -> Gemm")
def _(g, x):
    c1 = g.node("Relu", [g.conv(x, 3, 8)])
    c2 = g.node("Relu", [g.conv(c1, 8, 8, group=8)])
    c3 = g.conv(c2, 8, 8, k=1)
    f = g.node("Flatten", [g.node("GlobalAveragePool", [g.node("Add", [c1, c3])])])
    return [g.node("Gemm", [f, g.const((10, 8)), g.const((10,), 0.1)], transB=1)]


@spec("net_mixed", ["Conv", "Relu", "MaxPool", "Concat", "Sigmoid", "Mul", "AveragePool", "LeakyRelu", "Add",
                    "GlobalAveragePool", "Gemm"], {"x": (1, 3, 16, 16)},
      note="every kernel in one model (the firmware test builds it once)")
def _(g, x):
    c1 = g.node("Relu", [g.conv(x, 3, 8)])
    p = g.node("MaxPool", [c1], kernel_shape=[2, 2], strides=[2, 2])
    d = g.node("Relu", [g.conv(p, 8, 8, group=8)])
    cat = g.node("Concat", [d, g.conv(p, 8, 4, k=1)], axis=1)
    gate = g.node("Sigmoid", [g.conv(cat, 12, 12, k=1)])
    m = g.node("Mul", [cat, gate])
    a = g.node("LeakyRelu", [g.node("AveragePool", [m], kernel_shape=[2, 2], strides=[2, 2])], alpha=0.2)
    f = g.node("Flatten", [g.node("GlobalAveragePool", [g.node("Add", [a, g.node("Mul", [a, g.scalar(0.5)])])])])
    return [g.node("Gemm", [f, g.const((6, 12)), g.const((6,), 0.1)], transB=1)]


# -- quantization -------------------------------------------------------------------------------------------------
def calibration(spec_: Spec) -> list:
    rng = spec_.rng()
    samples = []
    for k in range(CALIBRATION_SAMPLES):
        sample = {}
        for name, shape in spec_.inputs.items():
            if k < 2:
                sample[name] = np.full(shape, -3.0 if k == 0 else 3.0, np.float32)
            else:
                sample[name] = rng.normal(0.0, 1.0, shape).astype(np.float32)
        samples.append(sample)
    return samples


class Reader(CalibrationDataReader):
    def __init__(self, samples):
        self.items = iter(samples)

    def get_next(self):
        return next(self.items, None)


def quantize(float_path: Path, out: Path, spec_: Spec, variant: str) -> None:
    activation, per_channel = VARIANTS[variant]
    quantize_static(str(float_path), str(out), Reader(calibration(spec_)), quant_format=QuantFormat.QDQ,
                    activation_type=activation, weight_type=QuantType.QInt8, per_channel=per_channel,
                    extra_options={"ForceQuantizeNoInputCheck": True})
    model = onnx.load(str(out))
    for node in model.graph.node:  # deterministic bytes: the quantizer names some initializers with uuids
        node.doc_string = ""
    onnx.save(model, str(out))


def ort_kernels(path: Path) -> list:
    """The op types of ONNX Runtime's optimized graph (ORT_ENABLE_ALL), in order."""
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(Path(tmp) / "o.onnx")
        options.log_severity_level = 3
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]


def ort_buildable(path: Path) -> tuple:
    """(True, "") when edgesdk's --rounding ort plan accepts the model, else (False, the refusal)."""
    sys.path.insert(0, str(HERE.parents[1]))
    from edgesdk.errors import EdgesdkError
    from edgesdk.importer.onnx_importer import import_model
    from edgesdk.importer.ort_plan import prepare

    try:
        prepare(import_model(path))
    except EdgesdkError as exc:
        return False, str(exc).split(". Build with")[0]
    return True, ""


def make(spec_: Spec) -> list:
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        g = G(spec_.rng())
        outputs = spec_.build(g, *spec_.inputs)
        float_path = Path(tmp) / f"{spec_.name}_float.onnx"
        onnx.save(finish(g, spec_, outputs), str(float_path))
        for variant in spec_.variants:
            out = OUT / f"{spec_.name}_{variant}.onnx"
            quantize(float_path, out, spec_, variant)
            model = onnx.load(str(out))
            ok, why = ort_buildable(out)
            data = out.read_bytes()
            entries.append({
                "file": out.name, "spec": spec_.name, "variant": variant, "ops": spec_.ops, "note": spec_.note,
                "activation": "uint8" if variant.startswith("u8") else "int8",
                "per_channel": variant.endswith("_pc"),
                "inputs": {k: list(v) for k, v in spec_.inputs.items()}, "outputs": spec_.outputs,
                "qdq_ops": [n.op_type for n in model.graph.node],
                "ort_kernels": ort_kernels(out),
                "ort_buildable": ok, "ort_refusal": why,
                "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return entries


def refresh() -> int:
    manifest = json.loads(MANIFEST.read_text())
    for entry in manifest["models"]:
        path = OUT / entry["file"]
        entry["ort_kernels"] = ort_kernels(path)
        entry["ort_buildable"], entry["ort_refusal"] = ort_buildable(path)
    manifest["onnxruntime"] = ort.__version__
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="fnmatch pattern of spec names (the rest of the manifest is kept)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--refresh", action="store_true",
                        help="keep the models; recompute the manifest's ONNX Runtime kernels and edgesdk's verdicts")
    args = parser.parse_args(argv)
    if args.refresh:
        return refresh()
    if args.list:
        for s in SPECS:
            print(f"{s.name:22s} {','.join(s.variants):20s} {' '.join(s.ops)}")
        return 0
    logging.disable(logging.WARNING)  # the quantizer's "consider pre-processing" advice
    OUT.mkdir(parents=True, exist_ok=True)
    old = json.loads(MANIFEST.read_text())["models"] if MANIFEST.is_file() else []
    chosen = [s for s in SPECS if not args.only or fnmatch.fnmatch(s.name, args.only)]
    names = {s.name for s in chosen}
    entries = [e for e in old if e["spec"] not in names]
    for s in chosen:
        entries += make(s)
        print(f"{s.name}: {', '.join(s.variants)}", flush=True)
    order = {s.name: k for k, s in enumerate(SPECS)}
    entries.sort(key=lambda e: (order.get(e["spec"], len(order)), list(VARIANTS).index(e["variant"])))
    manifest = {"generator": "tests/models/make_onnx_models.py", "onnx": onnx.__version__,
                "onnxruntime": ort.__version__, "opset": OPSET, "models": entries}
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
