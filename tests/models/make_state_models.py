"""Make the small stateful models of tests/models/state/ with TensorFlow's converter (run with a Python that has
tensorflow; CI uses the committed .tflite files):

    python tests/models/make_state_models.py

* accumulator_int8.tflite: a streaming running sum. Its state (a tf.Variable, float32 as the converter keeps it)
  starts at a non-zero constant (a CALL_ONCE initialization subgraph), each call adds the int8 input to it and
  returns the new sum; the converter emits VAR_HANDLE, CALL_ONCE, READ_VARIABLE, ASSIGN_VARIABLE around int8 ops.
* delay_line_int8.tflite: returns the previous call's input and remembers the current one (the state is the
  whole previous frame), with an int8 ADD of input and previous frame as a second output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parent / "state"
SHAPE = (1, 8)


def convert(module, name: str) -> None:
    rng = np.random.default_rng(0)

    def representative():
        for _ in range(64):
            yield [rng.uniform(-4, 4, SHAPE).astype(np.float32)]

    concrete = module.__call__.get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], module)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    converter.experimental_enable_resource_variables = True
    (OUT / name).write_bytes(converter.convert())


class Accumulator(tf.Module):
    def __init__(self):
        super().__init__()
        self.total = tf.Variable(np.linspace(-1.0, 1.0, SHAPE[1]).reshape(SHAPE).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32)])
    def __call__(self, x):
        total = self.total + x
        self.total.assign(total)
        return total


class DelayLine(tf.Module):
    def __init__(self):
        super().__init__()
        self.previous = tf.Variable(tf.zeros(SHAPE))

    @tf.function(input_signature=[tf.TensorSpec(SHAPE, tf.float32)])
    def __call__(self, x):
        previous = tf.identity(self.previous)
        self.previous.assign(x)
        return previous + x


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    convert(Accumulator(), "accumulator_int8.tflite")
    convert(DelayLine(), "delay_line_int8.tflite")
    for path in sorted(OUT.glob("*.tflite")):
        print(path.name, path.stat().st_size)
