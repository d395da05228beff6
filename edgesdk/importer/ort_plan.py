"""`--rounding ort`: how ONNX Runtime's CPU provider runs each QDQ group of an ONNX model.

ONNX Runtime's graph optimizer fuses `DequantizeLinear -> op -> QuantizeLinear` groups into quantized kernels
(QLinearConv, QLinearAdd, QGemm, ...) where its selectors allow it, and leaves the others as float ops between
DequantizeLinear and QuantizeLinear. What a group computes depends on which happened (edgesdk/ir/ort.py), and
that depends on the model's graph, the platform and the ONNX Runtime version: on x86-64 no int8 activations are
fused, and an int8 QuantizeLinear/DequantizeLinear pair is converted to uint8 only when the QuantizeLinear feeds
exactly one DequantizeLinear, so an int8 tensor read by two ops (a residual branch) keeps its producer and its
readers in float32. Rather than re-implementing those rules, the build asks the installed ONNX Runtime: it
optimizes the model at the level a default InferenceSession uses (ORT_ENABLE_ALL) and reads the result. A group
was fused when the float tensor its QuantizeLinear reads is gone from the optimized graph.

Each IR op that ends in a quantize binding knows which one (op.attrs["qdq_root"], the k-th QuantizeLinear node:
edgesdk/tvm/relax_import.py); the plan is mapped through it and checked against the node's scale and zero point.
Every op gets op.attrs["ort"], an edgesdk.ir.ort.OrtExecution.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..errors import MissingDependency, UnsupportedOpError, UsageError
from ..ir.ort import OrtExecution

OPTIMIZATION_LEVEL = "ORT_ENABLE_ALL"  # what onnxruntime.InferenceSession uses unless told otherwise
ACTIVATIONS = ("Relu", "Clip")  # absorbed into the group before a QuantizeLinear (fused activations)
EXTRA = "tvm"  # pyproject.toml: apache-tvm, onnx, onnxruntime


def prepare(graph) -> None:
    """Annotate every op of an imported ONNX graph with its OrtExecution (or refuse the model)."""
    path = getattr(graph, "source_path", None)
    if path is None or Path(path).suffix.lower() != ".onnx":
        raise UsageError("--rounding ort reproduces ONNX Runtime's execution of QDQ ONNX models; this model is not an "
                         "ONNX file. Use --rounding ref or tflm for TFLite models and Relax modules.")
    model, optimized_outputs = _onnx_and_optimized_outputs(Path(path))
    plan = group_executions(model, optimized_outputs)
    for op in graph.ops:
        k = op.attrs.get("qdq_root")
        if k is None:
            op.attrs["ort"] = _unrooted_execution(op)
            continue
        if k >= len(plan):
            raise UnsupportedOpError(f"{op.location}: edgesdk cannot match it with a QuantizeLinear node of the ONNX "
                                     "file (TVM's import produced more quantize bindings than the file has nodes).")
        node, execution = plan[k]
        _check_same_quantization(op, node, model)
        op.attrs["ort"] = execution
    refuse_unreproducible(graph)


def refuse_unreproducible(graph) -> None:
    """UnsupportedOpError listing the ops whose ONNX Runtime arithmetic edgesdk does not reproduce."""
    from ..ops.ort import unsupported_reason

    reasons = [r for r in (unsupported_reason(op) for op in graph.ops) if r]
    if reasons:
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        raise UnsupportedOpError(f"--rounding ort cannot reproduce ONNX Runtime for {reasons[0]}{more}. "
                                 "Build with --rounding ref to get TFLite's integer arithmetic instead.")


def _unrooted_execution(op) -> OrtExecution:
    """Ops the importer adds without a QuantizeLinear of their own: layout changes, output dequantization, float
    long-tail ops. ONNX Runtime's values for them are the same whether or not it fuses around them."""
    if op.type == "DEQUANTIZE":
        return OrtExecution("DequantizeLinear", False)
    if op.type in ("TRANSPOSE", "RESHAPE") and op.inputs[0].dtype == op.outputs[0].dtype:
        return OrtExecution(op.type, True, inserted=True)
    return OrtExecution(op.type, False)


def _modules():
    try:
        import onnx
        import onnxruntime
    except ImportError as exc:
        raise MissingDependency("--rounding ort", EXTRA, "onnxruntime",
                                f"ONNX Runtime and the onnx package: {exc}") from None
    return onnx, onnxruntime


def _onnx_and_optimized_outputs(path: Path) -> tuple:
    """(the ONNX model, {tensor name: op type of the node producing it ("domain.Op" outside the default domain)} of
    ONNX Runtime's optimized graph at the default level)."""
    onnx, ort = _modules()
    model = onnx.load(str(path))
    with tempfile.TemporaryDirectory(prefix="edgesdk-ort-") as tmp:
        optimized_path = Path(tmp) / "optimized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION_LEVEL)
        options.optimized_model_filepath = str(optimized_path)
        options.log_severity_level = 3  # the NCHWc serialization warning is expected here
        try:
            ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ONNX Runtime's own refusal, with its message
            raise UnsupportedOpError(f"ONNX Runtime cannot load {path.name} ({type(exc).__name__}: "
                                     f"{str(exc).strip()[:300]}), so --rounding ort has nothing to reproduce.") from None
        optimized = onnx.load(str(optimized_path))
    outputs = {name: f"{node.domain}.{node.op_type}" if node.domain else node.op_type
               for node in optimized.graph.node for name in node.output}
    return model, outputs


def group_executions(model, optimized_outputs: dict) -> list:
    """For each QuantizeLinear node of the model, in file order: (node, OrtExecution of the group it ends)."""
    graph = model.graph
    producers = {name: node for node in graph.node for name in node.output}
    consumers: dict = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    plan = []
    for node in graph.node:
        if node.op_type != "QuantizeLinear":
            continue
        source = node.input[0]
        producer = producers.get(source)
        if producer is None:  # a model input (or a constant): ONNX Runtime's QuantizeLinear kernel
            plan.append((node, OrtExecution("QuantizeLinear", False, node=node.name or node.output[0])))
            continue
        chain = [producer]  # the group's float values, back through a fused activation
        while chain[-1].op_type in ACTIVATIONS and chain[-1].input[0] in producers \
                and len(consumers.get(chain[-1].input[0], [])) == 1:
            chain.append(producers[chain[-1].input[0]])
        core = chain[-1]
        if core.op_type == "DequantizeLinear":
            kernel = chain[-2].op_type if len(chain) > 1 else "DequantizeLinear"
            chain = chain[:-1]
        else:
            kernel = core.op_type
        fused = not any(out in optimized_outputs for n in chain for out in n.output)
        named = chain[-1] if chain else producer
        optimized = "" if fused or not chain else optimized_outputs.get(chain[-1].output[0], "")
        plan.append((node, OrtExecution(kernel, fused, node=named.name or named.output[0], optimized=optimized,
                                        attributes=_numeric_attributes(chain[-1] if chain else producer))))
    return plan


def _numeric_attributes(node) -> tuple:
    """(name, value) of the node's integer and float attributes."""
    from onnx import AttributeProto, helper

    return tuple(sorted((a.name, helper.get_attribute_value(a)) for a in node.attribute
                        if a.type in (AttributeProto.INT, AttributeProto.FLOAT)))


def _check_same_quantization(op, node, model) -> None:
    """The IR op's output must carry the QuantizeLinear node's scale and zero point (uint8 legalized to int8)."""
    inits = {i.name: i for i in model.graph.initializer}
    names = list(node.input[1:3])
    if len(names) < 2 or any(n not in inits for n in names):
        raise UnsupportedOpError(f"{op.location}: its QuantizeLinear node '{node.name or node.output[0]}' has no constant "
                                 "scale and zero point; --rounding ort needs constant quantization parameters.")
    from onnx import numpy_helper

    scale = numpy_helper.to_array(inits[names[0]]).astype(np.float32).reshape(-1)
    zp_array = numpy_helper.to_array(inits[names[1]])
    zp = zp_array.astype(np.int64).reshape(-1) - (128 if zp_array.dtype == np.uint8 else 0)
    y = op.outputs[0]
    if y.quant is None or not (np.array_equal(np.asarray(y.quant.scale, np.float32).reshape(-1), scale)
                               and np.array_equal(np.asarray(y.quant.zero_point).reshape(-1), zp)):
        raise UnsupportedOpError(f"{op.location}: edgesdk cannot match it with the ONNX file's QuantizeLinear node "
                                 f"'{node.name or node.output[0]}' (the quantization differs), so it cannot tell how "
                                 "ONNX Runtime runs it. --rounding ort needs the QDQ model as written by a quantizer.")
