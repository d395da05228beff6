"""The reference interpreters edgesdk is checked against (docs/rounding.md).

* "ref"  (default): LiteRT's reference kernels, Interpreter(..., OpResolverType.BUILTIN_REF).
* "tflm": the TFLite Micro interpreter from the `tflite-micro` package (no uint8 kernels).

A sequence of inferences runs in one interpreter, so a stateful model (variable tensors, resource variables)
carries its state from step to step as the firmware does.
"""

from __future__ import annotations

import numpy as np

from .errors import UsageError

REFERENCE_EXTRA = ("The reference interpreters are not installed; install them with "
                   "pip install 'edgesdk[reference]' (ai-edge-litert and tflite-micro).")


def run_reference(model_path, inputs: list, mode: str = "ref") -> list:
    """Run the model on `inputs` (numpy arrays, model order) and return the outputs (model order)."""
    return run_reference_sequence(model_path, [inputs], mode)[-1]


def run_reference_sequence(model_path, steps: list, mode: str = "ref") -> list:
    """Run the model on each step's inputs in one interpreter; return each step's outputs."""
    if mode not in ("ref", "tflm"):
        raise UsageError(f"Unknown rounding mode '{mode}': the reference is 'ref' (LiteRT) or 'tflm' (TFLite Micro).")
    if mode == "tflm":
        return _run_tflm(model_path, steps)
    return _run_litert_reference(model_path, steps)


def _run_litert_reference(model_path, steps: list) -> list:
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise UsageError(REFERENCE_EXTRA) from None

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
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        raise UsageError(REFERENCE_EXTRA) from None

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
