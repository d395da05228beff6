"""The host C target: ops run on the RISC-V core as calls into the C kernel library (edgesdk/kernels/).

* `supported` - the constraint functions and the op table (`c_support()`) the partitioner uses;
* `ops/` - per op type: its constraints, its emitter (a HostLayer of structured kernel calls, calls.py) and its
  kernels' footprint rules; `codegen.emit_layer(op, ctx)` dispatches to them;
* `proof` - the C target's part of the build-time safety proof, over the structured calls;
* `testing` - run generated ops on the host against the references;
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
        from .supported import c_support
        return c_support()

    def scratch_bytes(self, region, ctx) -> dict:
        from .codegen import scratch_bytes

        sizes = {op: scratch_bytes(op, ctx.rounding_mode) for op in region.ops}
        return {op: n for op, n in sizes.items() if n}

    def generate(self, region, ctx) -> RegionCode:
        from ...aot.executor import describe_op
        from .calls import render_layer
        from .codegen import emit_layer

        code = RegionCode()
        layers = ctx.data(self.name, list)  # the structured calls, for this target's proof (verify)
        for op in region.ops:
            layer = emit_layer(op, ctx)
            layers.append(layer)
            code.add(describe_op(op) + (f" ({layer.note})" if layer.note else ""), render_layer(layer))
        return code

    def firmware_sources(self) -> list:
        return sorted(KERNELS_DIR.glob("*.c")) + sorted(KERNELS_DIR.glob("*.h"))

    def estimate(self, region, board, model=None) -> RegionEstimate:
        instructions = sum(INSTRUCTIONS_PER_CALL + INSTRUCTIONS_PER_MAC * op_macs(op)
                           + (0 if op_macs(op) else INSTRUCTIONS_PER_ELEMENT * op_elements(op)) for op in region.ops)
        return RegionEstimate(int(instructions), int(board.cpu.get("clock_hz", 0)), "cpu")

    def verify(self, compiled, proof) -> None:
        """The host layers' memory accesses, from their structured calls (edgesdk/targets/c/proof.py)."""
        from .proof import verify_host_layers

        verify_host_layers(compiled, compiled.executor.target_data.get(self.name, []), proof)


TARGET = CTarget()
