"""Apache TVM interop (docs/tvm-interop.md).

* import: Relax (from TVM's ONNX/TFLite frontends or Python) -> edgesdk's integer graph IR, with QDQ
  patterns recognised as integer ops (relax_import.py, qdq.py);
* export: edgesdk's target patterns as Relax BYOC patterns for FuseOpsByPattern (byoc.py);
* long tail: ops with no hand-written host kernel lowered through TE/TIR to plain C (lowering.py).

Needs the optional `tvm` extra (apache-tvm); nothing else in edgesdk imports TVM.
"""

# Relax op -> the TFLite builtin name its long-tail IR op gets (edgesdk has no hand-written kernel for these).
# Here, not in relax_import.py: the C target's rules name these op types, and a build that does not import
# through TVM should not load the importer (and its QDQ pattern classes) to learn them.
LONG_TAIL_TYPES = {
    "relax.permute_dims": "TRANSPOSE", "relax.subtract": "SUB", "relax.divide": "DIV",
    "relax.maximum": "MAXIMUM", "relax.minimum": "MINIMUM", "relax.power": "POW",
    "relax.abs": "ABS", "relax.negative": "NEG", "relax.exp": "EXP", "relax.log": "LOG", "relax.sqrt": "SQRT",
    "relax.rsqrt": "RSQRT", "relax.square": "SQUARE", "relax.sin": "SIN", "relax.cos": "COS",
    "relax.floor": "FLOOR", "relax.ceil": "CEIL", "relax.nn.gelu": "GELU", "relax.erf": "ERF",
    "relax.nn.leakyrelu": "LEAKY_RELU", "relax.nn.silu": "SILU", "relax.round": "ROUND", "relax.sign": "SIGN",
}
