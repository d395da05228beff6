"""The host C target: ops run on the RISC-V core as calls into the C kernel library (edgesdk/kernels/).

* `supported.C_SUPPORT` - the op table (constraints) the partitioner uses;
* `codegen.emit_op(op, ctx) -> CStep` - the C statements of one layer;
* `lut` - LiteRT's LOGISTIC/TANH tables; `testing` - run generated ops on the host against the references;
* `tvm_lowered` - long-tail ops lowered through Apache TVM to plain C.

`TARGET` is its plugin object (edgesdk/targets/api.py), registered as entry point "c".
"""

from __future__ import annotations

from pathlib import Path

from ...ir.cost import op_elements, op_macs
from ..api import RegionCode, RegionEstimate, Target

KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"
# Cost model, from benchmarks/run.py's per-layer profile of the --target c builds of the MLPerf Tiny
# models (instructions per MAC of the fast conv/depthwise/FC kernels, per output element elsewhere).
INSTRUCTIONS_PER_MAC = 3.5
INSTRUCTIONS_PER_ELEMENT = 12
INSTRUCTIONS_PER_CALL = 60


class CTarget(Target):
    name = "c"
    description = "the host RISC-V core: one call into the C kernel library per layer"

    @property
    def support(self):
        from .supported import C_SUPPORT
        return C_SUPPORT

    def scratch_bytes(self, region, ctx) -> dict:
        from .codegen import emit_op

        for op in region.ops:  # a dry run of the codegen records what each layer asks for (ctx.scratch_ptr)
            ctx.current_op = op
            emit_op(op, ctx)
        return {op: ctx.scratch_requests[op] for op in region.ops if op in ctx.scratch_requests}

    def generate(self, region, ctx) -> RegionCode:
        from ...aot.executor import describe_op
        from .codegen import emit_op

        code = RegionCode()
        for op in region.ops:
            ctx.current_op = op
            step = emit_op(op, ctx)
            code.add(describe_op(op) + (f" ({step.comment})" if step.comment else ""), step.code)
        return code

    def firmware_sources(self) -> list:
        return sorted(KERNELS_DIR.glob("*.c")) + sorted(KERNELS_DIR.glob("*.h"))

    def flash_lower_bound(self, region) -> int:
        """Every convolution and fully connected layer stores its int8 filter at least densely (the blocked and
        paired layouts are larger)."""
        return sum(op.inputs[1].num_elements for op in region.ops
                   if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and op.inputs[1] is not None
                   and op.inputs[1].is_const)

    def estimate(self, region, board, model=None) -> RegionEstimate:
        instructions = sum(INSTRUCTIONS_PER_CALL + INSTRUCTIONS_PER_MAC * op_macs(op)
                           + (0 if op_macs(op) else INSTRUCTIONS_PER_ELEMENT * op_elements(op)) for op in region.ops)
        return RegionEstimate(int(instructions), int(board.cpu.get("clock_hz", 0)), "cpu")


TARGET = CTarget()
