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

import re

from ...ir.cost import op_elements, op_macs
from ..api import RegionCode, RegionEstimate, Target
from .layouts import KERNELS_DIR  # the kernel library: sources and headers

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

    def layer_switches(self, op) -> dict:
        """An int8 FULLY_CONNECTED may take the paired-lane weight layout (ops/fully_connected.py)."""
        from .layouts import FC_PAIRED_WEIGHTS

        return {"fc_paired": FC_PAIRED_WEIGHTS} if op.type == "FULLY_CONNECTED" else {}

    def in_place(self, op, x) -> str | None:
        """The int8 kernels' rules (in_place.py); an op lowered through TVM never overlaps."""
        from .in_place import in_place_rule

        return None if "relax_function" in op.attrs else in_place_rule(op, x)

    def scratch_bytes(self, region, ctx) -> dict:
        from .codegen import scratch_bytes

        sizes = {op: scratch_bytes(op, ctx.rounding_mode) for op in region.ops}
        return {op: n for op, n in sizes.items() if n}

    def generate(self, region, ctx) -> RegionCode:
        from ...ctext import describe_op
        from .calls import render_layer
        from .codegen import emit_layer

        code = RegionCode()
        layers = ctx.data(self.name, list)  # the structured calls, for this target's proof (verify)
        ctx.include("edgesdk_arith.h")  # the EDGESDK_ROUNDING_* values of the params structs
        for op in region.ops:
            layer = emit_layer(op, ctx)
            layers.append(layer)
            for header in kernel_files(op)[0]:
                ctx.include(header)
            code.add(describe_op(op) + (f" ({layer.note})" if layer.note else ""), render_layer(layer))
        return code

    def render_sources(self, model, env, common: dict) -> dict:
        """The long-tail ops' TVM-generated C (model_tvm.c/.h), if the build has any."""
        from .tvm_lowered import tvm_sources

        return tvm_sources(model.target_data.get(self.name, []))

    def firmware_sources(self, model=None) -> list:
        """The kernel sources the build's layers call and every kernel header they include (all of the library
        when `model` is None)."""
        if model is None:
            return sorted(KERNELS_DIR.glob("*.c")) + sorted(KERNELS_DIR.glob("*.h"))
        headers, sources = set(), set()
        for layer in model.target_data.get(self.name, []):
            h, c = kernel_files(layer.op)
            headers.update(h)
            sources.update(c)
        if not model.target_data.get(self.name):
            return []
        return [KERNELS_DIR / name for name in sorted(sources)] + included_headers(["edgesdk_arith.h",
                                                                                   *sorted(headers | sources)])

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

    def verify(self, compiled, proof) -> None:
        """The host layers' memory accesses, from their structured calls (edgesdk/targets/c/proof.py)."""
        from .proof import verify_host_layers

        verify_host_layers(compiled, compiled.executor.target_data.get(self.name, []), proof)


def kernel_files(op) -> tuple:
    """(headers, sources) of the kernel library that op's calls need."""
    from .emit import c_ops

    from .ops.ort import HEADERS as ORT_HEADERS, SOURCES as ORT_SOURCES, uses_ort_kernel

    entry = c_ops().get(op.type)
    if entry is None or "relax_function" in op.attrs:
        return (), ()
    if uses_ort_kernel(op):  # --rounding ort (edgesdk/targets/c/ops/ort.py)
        return entry.headers + ORT_HEADERS, entry.sources + ORT_SOURCES
    return entry.headers, entry.sources


def included_headers(files: list) -> list:
    """The kernel headers `files` include, directly or through other headers (#include "..." lines)."""
    pending, seen = list(files), set()
    while pending:
        name = pending.pop()
        path = KERNELS_DIR / name
        if name in seen or not path.is_file():
            continue
        seen.add(name)
        pending += re.findall(r'^#include "([^"]+)"', path.read_text(), re.M)
    return [KERNELS_DIR / name for name in sorted(seen) if name.endswith(".h")]


TARGET = CTarget()
