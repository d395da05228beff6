"""The reference interpreters edgesdk is checked against (docs/rounding.md).

* "ref"  (default): LiteRT's reference kernels, Interpreter(..., OpResolverType.BUILTIN_REF).
* "tflm": the TFLite Micro interpreter from the `tflite-micro` package (int8 models only).
"""

from __future__ import annotations

import numpy as np

from .errors import UsageError


def run_reference(model_path, inputs: list, mode: str = "ref") -> list:
    """Run the model on `inputs` (numpy arrays, model order) and return the outputs (model order)."""
    if mode == "tflm":
        return _run_tflm(model_path, inputs)
    if mode == "ref":
        return _run_litert_reference(model_path, inputs)
    raise UsageError(f"There is no reference for rounding {mode!r}: it is 'ref' (LiteRT's reference kernels) or "
                     "'tflm' (TFLite Micro).")


def _run_litert_reference(model_path, inputs: list) -> list:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_path=str(model_path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    details = interp.get_input_details()
    if len(details) != len(inputs):
        raise UsageError(f"The model has {len(details)} inputs, {len(inputs)} given.")
    for d, x in zip(details, inputs):
        interp.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]).reshape(d["shape"]))
    interp.invoke()
    return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]


def _run_tflm(model_path, inputs: list) -> list:
    from tflite_micro.python.tflite_micro import runtime

    from .importer import import_tflite

    num_outputs = len(import_tflite(model_path).outputs)
    interp = runtime.Interpreter.from_file(str(model_path), arena_size=1 << 22)
    for i, x in enumerate(inputs):
        interp.set_input(np.asarray(x), i)
    interp.invoke()
    return [np.asarray(interp.get_output(i)).copy() for i in range(num_outputs)]
