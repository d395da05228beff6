"""The reference interpreters edgesdk is checked against (docs/rounding.md).

* "ref"  (default): LiteRT's reference kernels, Interpreter(..., OpResolverType.BUILTIN_REF).
* "tflm": the TFLite Micro interpreter from the `tflite-micro` package (no uint8 kernels).
* "ort":  ONNX Runtime on its CPU execution provider, at the default graph optimization level
          (ORT_ENABLE_ALL, which fuses QDQ groups; edgesdk/importer/ort_plan.py), for ONNX models.

A sequence of inferences runs in one interpreter, so a stateful model (variable tensors, resource variables)
carries its state from step to step as the firmware does. LiteRT and TFLite Micro come with the `reference`
extra, ONNX Runtime with the `tvm` extra (the one ONNX models need anyway); without it the functions raise
MissingDependency (exit code 7, naming the extra).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import MissingDependency, UsageError

EXTRA = "reference"  # pyproject.toml [project.optional-dependencies]: ai-edge-litert, tflite-micro
MODULES = {"ref": ("ai_edge_litert", "LiteRT (ai-edge-litert)"), "tflm": ("tflite_micro", "TFLite Micro (tflite-micro)"),
           "ort": ("onnxruntime", "ONNX Runtime (onnxruntime)")}
EXTRAS = {"ort": "tvm"}  # the extra that installs a mode's reference, when it is not EXTRA
ORACLES = {"ref": "LiteRT BUILTIN_REF", "tflm": "TFLite Micro", "ort": "ONNX Runtime CPU (ORT_ENABLE_ALL)"}


def run_reference(model_path, inputs: list, mode: str = "ref", what: str = "Comparing with the reference") -> list:
    """Run the model on `inputs` (numpy arrays, model order) and return the outputs (model order); `what` says
    which command needed the reference (for the MissingDependency message)."""
    return run_reference_sequence(model_path, [inputs], mode, what)[-1]


def run_reference_sequence(model_path, steps: list, mode: str = "ref",
                           what: str = "Comparing with the reference") -> list:
    """Run the model on each step's inputs in one interpreter; return each step's outputs."""
    if mode not in MODULES:
        raise UsageError(f"Unknown rounding mode '{mode}': the reference is 'ref' (LiteRT), 'tflm' (TFLite Micro) or "
                         "'ort' (ONNX Runtime).")
    require_reference(mode, what)
    if mode == "tflm":
        return _run_tflm(model_path, steps)
    if mode == "ort":
        return _run_onnxruntime(model_path, steps)
    return _run_litert_reference(model_path, steps)


def require_reference(mode: str = "ref", what: str = "Comparing with the reference", extra: str = EXTRA) -> None:
    """Raise MissingDependency unless the reference interpreter of `mode` can be imported."""
    module, name = MODULES[mode if mode in MODULES else "ref"]
    extra = EXTRAS.get(mode, extra)
    try:
        __import__(module)
    except ImportError as exc:
        raise MissingDependency(what, extra, module, f"{name}: {exc}") from None


def _run_litert_reference(model_path, steps: list) -> list:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_path=str(model_path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    details = interp.get_input_details()
    results = []
    for inputs in steps:
        if len(details) != len(inputs):
            raise UsageError(f"The model has {len(details)} inputs, {len(inputs)} given.")
        for d, x in zip(details, inputs):
            interp.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]).reshape(d["shape"]))
        interp.invoke()
        results.append([interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()])
    return results


def _run_onnxruntime(model_path, steps: list) -> list:
    """ONNX Runtime's CPU provider with default session options (graph optimization ORT_ENABLE_ALL)."""
    import onnxruntime as ort

    if Path(model_path).suffix.lower() != ".onnx":
        raise UsageError(f"{model_path} is not an ONNX model: the 'ort' reference (ONNX Runtime) runs ONNX models only.")
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    results = []
    for step in steps:
        if len(inputs) != len(step):
            raise UsageError(f"The model has {len(inputs)} inputs, {len(step)} given.")
        feeds = {d.name: np.asarray(x) for d, x in zip(inputs, step)}
        results.append([np.asarray(y).copy() for y in session.run(None, feeds)])
    return results


def _run_tflm(model_path, steps: list) -> list:
    from tflite_micro.python.tflite_micro import runtime

    from .importer import import_tflite

    num_outputs = len(import_tflite(model_path).outputs)
    interp = runtime.Interpreter.from_file(str(model_path), arena_size=1 << 22)
    results = []
    for inputs in steps:
        for i, x in enumerate(inputs):
            interp.set_input(np.asarray(x), i)
        interp.invoke()
        results.append([np.asarray(interp.get_output(i)).copy() for i in range(num_outputs)])
    return results
