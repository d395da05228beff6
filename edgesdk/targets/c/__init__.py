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

from ...ir.cost import op_bytes_moved, op_elements, op_macs
from ..api import LayerEstimate, RegionCode, RegionEstimate, Target
from .kernel_cost import CALL_INSTRUCTIONS
from .layouts import KERNELS_DIR  # the kernel library: sources and headers

# The generic cost model, from benchmarks/run.py's per-layer profile of the --target c builds of the MLPerf Tiny
# models (instructions per MAC of the fast conv/depthwise/FC kernels, per output element elsewhere): before
# codegen, and for the kernels the calibrated model (kernel_cost.py) does not know.
INSTRUCTIONS_PER_MAC = 3.5
INSTRUCTIONS_PER_ELEMENT = 12
# per call: the calibrated model's (kernel_cost.py), which stripes.call_cost takes off op_instructions' figure
INSTRUCTIONS_PER_CALL = CALL_INSTRUCTIONS
# Lower bound: a 32-bit multiply yields at most two int8 products (16-bit lanes, as the paired FC kernel
# does), and every word of activations and weights is loaded or stored at least once.
LOWER_BOUND_MACS_PER_INSTRUCTION = 2
WORD_BYTES = 4


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

    def host_library(self, ops, mode: str):
        """The generated calls of `ops` compiled against the kernel library for the host (testing.OpLibrary)."""
        from .testing import OpLibrary

        return OpLibrary(ops, mode)

    # What a default build's host groups may add together: 2 % of the model's instructions (by the calibrated
    # instruction model, kernel_cost.py: on KWS, VWW, IC, MobileNetV2 and SSD groups the estimated increase is
    # within 1.1 points of the measured one of the group's layers). KWS's group costs 1.3 % of the model; the
    # --target c instruction goals leave KWS 3 % and IC under 0.1 % over op by op (docs/performance.md). A
    # model that does not fit still gets up to FIT_MAX_INCREASE.
    default_model_increase = 0.02

    def can_stripe(self, op) -> bool:
        """int8 windows and elementwise ops: their kernels take a row range (stripes.py)."""
        from .stripes import can_stripe

        return can_stripe(op)

    def stripe_cost(self, group, ctx) -> tuple | None:
        """Instructions of a cascade group in stripes and whole, by the cost model below (stripes.py)."""
        from .stripes import stripe_cost

        return stripe_cost(group, ctx, op_instructions)

    def scratch_bytes(self, region, ctx) -> dict:
        from .codegen import scratch_bytes

        sizes = {op: scratch_bytes(op, ctx.rounding_mode) for op in region.ops}
        return {op: n for op, n in sizes.items() if n}

    def generate(self, region, ctx) -> RegionCode:
        from ...ctext import describe_op
        from ...ops.stripes import groups_by_op
        from .calls import render_layer
        from .codegen import emit_layer
        from .stripes import lower_group

        code = RegionCode()
        layers = ctx.data(self.name, list)  # the structured calls, for this target's proof (verify)
        ctx.include("edgesdk_arith.h")  # the EDGESDK_ROUNDING_* values of the params structs
        groups = groups_by_op(ctx.plan.cascades if ctx.plan is not None else ())  # run in stripes (stripes.py)
        _choose_flash_layouts(region.ops, ctx)
        for op in region.ops:
            if op in groups and op is not groups[op].ops[0]:
                continue  # its stripes are calls of the group's block
            layer = lower_group(groups[op], ctx) if op in groups else emit_layer(op, ctx)
            layers.append(layer)
            for header in layer_kernel_files(layer)[0]:
                ctx.include(header)
            comment = "; ".join(describe_op(member) for member in layer.layers)
            code.add(comment + (f" ({layer.note})" if layer.note else ""), render_layer(layer),
                     [member.index for member in layer.layers])
        return code

    stripes_with_other_targets = True

    def generate_stripes(self, part, ctx) -> RegionCode:
        """One run of a group that crosses targets: a kernel call per stripe event (stripes.lower_group)."""
        from ...ctext import describe_op
        from .calls import render_layer
        from .ops.conv_2d import COMPACT_LAYERS, compact_conv_layers
        from .stripes import lower_group

        layers = ctx.data(self.name, list)  # the structured calls, for this target's proof (verify)
        ctx.include("edgesdk_arith.h")
        decided = ctx.data(COMPACT_LAYERS + ".decided", set)  # each layer once, at its first run
        fresh = [op for op in part.ops if op not in decided]
        ctx.data(COMPACT_LAYERS, set).update(compact_conv_layers(fresh, ctx))
        decided.update(fresh)
        layer = lower_group(part, ctx)
        layers.append(layer)
        for header in layer_kernel_files(layer)[0]:
            ctx.include(header)
        comment = "; ".join(describe_op(member) for member in layer.layers)
        return RegionCode().add(f"{comment} ({layer.note})", render_layer(layer), [op.index for op in part.ops])

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
            h, c = layer_kernel_files(layer)
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
        return self.cycles_on(board, sum(int(round(n)) for n in region_instructions(region, model).values()))

    def estimate_layers(self, region, board, model=None) -> list:
        """Instructions per layer (`region_instructions`) and the lower bound: MACs / 2 multiplies plus one
        load or store per word of the bytes the layer reads and writes."""
        counts = region_instructions(region, model)
        return [LayerEstimate(op.index, int(round(counts[op])), op_instructions_lower_bound(op))
                for op in region.ops]

    def verify(self, compiled, proof) -> None:
        """The host layers' memory accesses, from their structured calls (edgesdk/targets/c/proof.py)."""
        from .proof import verify_host_layers

        verify_host_layers(compiled, compiled.executor.target_data.get(self.name, []), proof)


def _choose_flash_layouts(ops, ctx) -> None:
    """The int8 CONV_2D layers that keep the compact layout, then the ADDs that get an output table, so that the
    model fits the board's flash (ops/conv_2d.py, ops/add.py). A region with neither op type has nothing to
    choose: it does not import their emitters (a fresh `edgesdk build` pays for what it uses)."""
    if not any(op.type in ("CONV_2D", "ADD") for op in ops):
        return
    from .ops.add import OUTPUT_TABLE_ADDS, output_table_adds
    from .ops.conv_2d import COMPACT_LAYERS, compact_conv_layers, flash_room_beside_paired_convs

    ctx.data(COMPACT_LAYERS, set).update(compact_conv_layers(ops, ctx))
    room = 0 if ctx.data(COMPACT_LAYERS, set) else flash_room_beside_paired_convs(ops, ctx)
    ctx.data(OUTPUT_TABLE_ADDS, set).update(output_table_adds(ops, room))  # after the convs'


def region_instructions(region, model=None) -> dict:
    """{op: estimated instructions} of a region's layers. With the build's code (`model`, an ExecutorModel):
    the calibrated model (kernel_cost.py) over the calls generated for them, stripes and all, the generic
    `op_instructions` for kernels it does not know; before codegen, `op_instructions` alone."""
    from .kernel_cost import layer_instructions

    ops = set(region.ops)
    layers = [layer for layer in (model.target_data.get(TARGET.name, []) if model is not None else [])
              if ops.intersection(layer.layers)]
    counts = layer_instructions(layers, op_instructions)
    return {op: counts[op] if op in counts else op_instructions(op) for op in region.ops}


def op_instructions(op) -> int:
    """Estimated instructions of one host layer: a call, then per MAC (conv, depthwise, FC) or per output
    element (everything else)."""
    macs = op_macs(op)
    work = INSTRUCTIONS_PER_MAC * macs if macs else INSTRUCTIONS_PER_ELEMENT * op_elements(op)
    return int(INSTRUCTIONS_PER_CALL + work)


def op_instructions_lower_bound(op) -> int:
    """Instructions no RV32IM kernel can go below for the layer (LOWER_BOUND_MACS_PER_INSTRUCTION)."""
    words = sum(-(-n // WORD_BYTES) for n in op_bytes_moved(op))
    return -(-op_macs(op) // LOWER_BOUND_MACS_PER_INSTRUCTION) + words


def layer_kernel_files(layer) -> tuple:
    """(headers, sources) of the kernel library that a HostLayer's calls need (a cascade group: every layer's,
    and the copy its row shifts call)."""
    from .calls import SHIFT_KERNEL

    headers, sources = [], []
    for op in layer.layers:
        h, c = kernel_files(op)
        headers += h
        sources += c
    if any(call.kernel == SHIFT_KERNEL for call in layer.calls) and layer.ops:
        h, c = kernel_files_of_type("RESHAPE")
        headers += h
        sources += c
    return tuple(dict.fromkeys(headers)), tuple(dict.fromkeys(sources))


def kernel_files_of_type(op_type: str) -> tuple:
    from .emit import c_op_entry

    entry = c_op_entry(op_type)
    return entry.headers, entry.sources


def kernel_files(op) -> tuple:
    """(headers, sources) of the kernel library that op's calls need."""
    from .emit import c_op_entry

    entry = c_op_entry(op.type)
    if entry is None or "relax_function" in op.attrs:
        return (), ()
    if "ort" in op.attrs:  # built for --rounding ort: maybe ONNX Runtime's kernel (edgesdk/targets/c/ops/ort.py)
        from .ops.ort import HEADERS as ORT_HEADERS, SOURCES as ORT_SOURCES, uses_ort_kernel

        if uses_ort_kernel(op):
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
