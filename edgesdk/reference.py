"""The reference interpreters edgesdk is checked against (docs/rounding.md).

* "ref"  (default): LiteRT's reference kernels, Interpreter(..., OpResolverType.BUILTIN_REF).
* "tflm": the TFLite Micro interpreter from the `tflite-micro` package (no uint8 kernels).

A sequence of inferences runs in one interpreter, so a stateful model (variable tensors, resource variables)
carries its state from step to step as the firmware does. Both come with the `reference` extra; without it the
functions raise MissingDependency (exit code 7, naming the extra).
"""

from __future__ import annotations

import numpy as np

from .errors import MissingDependency, UsageError

EXTRA = "reference"  # pyproject.toml [project.optional-dependencies]: ai-edge-litert, tflite-micro
MODULES = {"ref": ("ai_edge_litert", "LiteRT (ai-edge-litert)"), "tflm": ("tflite_micro", "TFLite Micro (tflite-micro)")}


def run_reference(model_path, inputs: list, mode: str = "ref", what: str = "Comparing with the reference") -> list:
    """Run the model on `inputs` (numpy arrays, model order) and return the outputs (model order); `what` says
    which command needed the reference (for the MissingDependency message)."""
    return run_reference_sequence(model_path, [inputs], mode, what)[-1]


def run_reference_sequence(model_path, steps: list, mode: str = "ref",
                           what: str = "Comparing with the reference") -> list:
    """Run the model on each step's inputs in one interpreter; return each step's outputs."""
    if mode not in MODULES:
        raise UsageError(f"Unknown rounding mode '{mode}': the reference is 'ref' (LiteRT) or 'tflm' (TFLite Micro).")
    require_reference(mode, what)
    if mode == "tflm":
        return _run_tflm(model_path, steps)
    return _run_litert_reference(model_path, steps)


def require_reference(mode: str = "ref", what: str = "Comparing with the reference", extra: str = EXTRA) -> None:
    """Raise MissingDependency unless the reference interpreter of `mode` can be imported."""
    module, name = MODULES["tflm" if mode == "tflm" else "ref"]
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
