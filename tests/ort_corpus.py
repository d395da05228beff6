"""The ONNX QDQ corpus (tests/models/onnx, made by tests/models/make_onnx_models.py) and ONNX Runtime runs of it.

* `models()`: the manifest's entries; `path(entry)` the file.
* `inputs(entry, case)`: the checked inputs: seeded random (normal and uniform at several ranges), extremes
  (+-1e4, 0, +-inf, NaN) and values on QuantizeLinear's rounding ties of the first input.
* `onnxruntime_outputs(path, feeds, level)`: ONNX Runtime's CPU provider at a graph optimization level.
* `HostGraphs`: the IR graphs of several models built with `--rounding ort` into one host library of the C
  target's generated code (edgesdk.targets.c.testing), run op by op on the host.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ONNX_DIR = Path(__file__).resolve().parent / "models" / "onnx"
RANDOM_CASES = 6
CASES = ("random",) * RANDOM_CASES + ("large", "small", "zero", "infinities", "nan", "ties")


def models() -> list:
    return json.loads((ONNX_DIR / "manifest.json").read_text())["models"]


def path(entry) -> Path:
    return ONNX_DIR / entry["file"]


def buildable(entry) -> bool:
    return bool(entry["ort_buildable"])


def inputs(entry, case: int, input_scales: dict | None = None) -> dict:
    """Model inputs (name -> float32 array) of check case `case` (an index into CASES)."""
    rng = np.random.default_rng(1000 + case)
    kind = CASES[case % len(CASES)]
    feeds = {}
    for k, (name, shape) in enumerate(entry["inputs"].items()):
        if kind == "random":
            spread = (0.5, 1.0, 3.0)[case % 3]
            x = rng.normal(0.0, spread, shape) if case % 2 else rng.uniform(-2 * spread, 2 * spread, shape)
        elif kind == "large":
            x = rng.choice([-1e4, 1e4], shape)
        elif kind == "small":
            x = rng.normal(0.0, 1e-3, shape)
        elif kind == "zero":
            x = np.zeros(shape)
        elif kind == "infinities":
            x = rng.choice([-np.inf, np.inf, 1.0], shape)
        elif kind == "nan":
            x = np.where(rng.random(shape) < 0.3, np.nan, rng.normal(0.0, 1.0, shape))
        else:  # ties: halfway between two quantized steps of the input quantizer (round half to even)
            scale = (input_scales or {}).get(name, 0.02)
            x = (rng.integers(-60, 60, shape) + 0.5) * np.float32(scale)
        feeds[name] = np.asarray(x, np.float32)
    return feeds


def input_scales(model_path: Path) -> dict:
    """The scale of the QuantizeLinear that reads each model input."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(model_path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    names = {i.name for i in model.graph.input}
    return {n.input[0]: float(inits[n.input[1]]) for n in model.graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] in names}


def onnxruntime_outputs(model_path, feeds: dict, level: str = "ORT_ENABLE_ALL") -> list:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def import_for_ort(model_path):
    """The model's IR graph with --rounding ort's plan, constants folded (as the build does)."""
    from edgesdk.importer.onnx_importer import import_model
    from edgesdk.importer.ort_plan import prepare
    from edgesdk.ops.folding import fold_constants

    graph = import_model(model_path)
    prepare(graph)
    fold_constants(graph)
    return graph


class HostGraphs:
    """Graphs compiled together (one host library: one C compile), each run op by op like the firmware."""

    def __init__(self, graphs: list):
        from edgesdk.targets.c.testing import OpLibrary

        self.graphs = list(graphs)
        for g in self.graphs:
            for op in g.ops:
                # The importer's layout transposes are lowered through TVM in firmware (model_tvm.c), which the host
                # library cannot link; the C target's own TRANSPOSE kernel moves the same bytes.
                if op.type == "TRANSPOSE" and op.attrs.get("relax_ops") == ["relax.permute_dims"] and "perm" in op.attrs:
                    op.attrs.pop("relax_function", None)
        self.lib = OpLibrary([op for g in self.graphs for op in g.ops], "ort")

    @staticmethod
    def runnable(graph) -> bool:
        """No op lowered through TVM other than the layout transposes."""
        return not any("relax_function" in op.attrs and not (op.type == "TRANSPOSE" and "perm" in op.attrs)
                       for op in graph.ops)

    def run(self, graph, arrays: list) -> list:
        for tensor, array in zip(graph.inputs, arrays):
            self.lib.write(tensor, np.asarray(array).reshape(tensor.shape))
        for op in graph.ops:
            self.lib.run(op, {})
        return [self.lib.read(t) for t in graph.outputs]


def same_bits(a, b) -> bool:
    a, b = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))
