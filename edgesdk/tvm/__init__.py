"""Apache TVM interop (docs/tvm-interop.md).

* import: Relax (from TVM's ONNX/TFLite frontends or Python) -> edgesdk's integer graph IR, with QDQ
  patterns recognised as integer ops (relax_import.py, qdq.py);
* export: edgesdk's target patterns as Relax BYOC patterns for FuseOpsByPattern (byoc.py);
* long tail: ops with no hand-written host kernel lowered through TE/TIR to plain C (lowering.py).

Needs the optional `tvm` extra (apache-tvm); nothing else in edgesdk imports TVM.
"""
