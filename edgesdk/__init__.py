"""edgesdk: ahead-of-time compiler from quantized TFLite models to bare-metal RISC-V + NPU firmware."""

__version__ = "0.1.0"
