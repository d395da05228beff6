"""Models that enter through Apache TVM: ONNX files -> Relax -> the graph IR.

    model.onnx --tvm.relax.frontend.onnx.from_onnx--> Relax (QDQ) --edgesdk.tvm.relax_import--> Graph

`import_model(path)` picks the importer by file type: .tflite goes to edgesdk's own TFLite importer (no
TVM needed), .onnx goes through TVM (the optional `tvm` extra: pip install 'edgesdk[tvm]'). A Relax
IRModule built in Python skips the file: edgesdk.compiler.build_from_relax.
docs/tvm-interop.md describes the QDQ recognition and how results compare with ONNX Runtime.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelError, UsageError
from .tflite_importer import import_tflite



def import_model(path):
    """The graph IR of a .tflite or .onnx model."""
    path = Path(path)
    if path.suffix.lower() == ".onnx":
        return import_onnx(path)
    return import_tflite(path)


def model_file_name(path) -> str:
    """Name of the model copy in a build directory: model.tflite, model.onnx (model.relax.py for Relax)."""
    name = Path(path).name.lower()
    return "model.relax.py" if name.endswith(".relax.py") else f"model{Path(path).suffix.lower() or '.tflite'}"


def import_onnx(path):
    path = Path(path)
    onnx = _require("onnx")
    try:
        model = onnx.load(str(path))
    except FileNotFoundError:
        raise ModelError(f"Cannot read model file {path}: no such file.") from None
    except Exception as exc:
        raise ModelError(f"{path} is not a readable ONNX model ({type(exc).__name__}: {exc}). "
                         "Export it again with onnx.save.") from None
    _require("tvm")
    from tvm.relax.frontend.onnx import from_onnx

    initializers = {i.name for i in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    try:
        mod = from_onnx(model, keep_params_in_input=False)
    except Exception as exc:
        raise ModelError(f"TVM's ONNX frontend cannot import {path} ({type(exc).__name__}: {str(exc).strip()[:300]}). "
                         "Check that the model is valid (onnx.checker) and uses static shapes.") from None
    from ..tvm.relax_import import relax_to_graph

    graph = relax_to_graph(mod, path.stem, input_names, output_names)
    graph.source_path = path
    return graph


def _require(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        package = {"tvm": "apache-tvm", "onnx": "onnx"}[module]
        raise UsageError(f"Importing this model needs the Python package '{package}', which is not installed. "
                         "Install edgesdk's TVM extra: pip install 'edgesdk[tvm]' (apache-tvm, onnx, onnxruntime).") from None
