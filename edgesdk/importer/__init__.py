"""Step 1: model files -> graph IR."""

from .tflite_importer import import_tflite

__all__ = ["import_tflite"]
