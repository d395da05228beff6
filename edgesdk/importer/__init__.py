"""Step 1: model files -> graph IR.

`import_model(path)` reads a .tflite directly (tflite_importer.py) or an .onnx through Apache TVM's Relax
frontend (onnx_importer.py, edgesdk/tvm/).
"""

from .onnx_importer import import_model
from .tflite_importer import import_tflite

__all__ = ["import_model", "import_tflite"]
