"""The host C target: ops run on the RISC-V core as calls into the C kernel library (edgesdk/kernels/).

* `supported.C_SUPPORT` - the op table (constraints) the partitioner uses;
* `codegen.emit_op(op, ctx) -> CStep` - the C statements of one layer;
* `lut` - LiteRT's LOGISTIC/TANH tables; `testing` - run generated ops on the host against the references.
"""
