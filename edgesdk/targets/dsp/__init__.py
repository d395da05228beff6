"""The DSP target: the board's DSP-1 vector DSP, driven by a host runtime that interprets a serialized
subgraph (the "JSON codegen + runtime" pattern of TVM's BYOC; docs/dsp-datasheet.md).

* `supported.DSP_SUPPORT` - op table with named constraints (int8 SOFTMAX, DEPTHWISE_CONV_2D, pooling,
  ADD, MUL, RESHAPE, LOGISTIC/TANH as tables);
* `codegen.build_region(ops, ctx)` - one region -> a blob (`blob.py`): tensor table, node list, parameter
  records computed at build time; the generated code is one `edgesdk_dsp_run(blob, ...)` call per region;
* firmware: runtime/edgesdk_dsp_runtime.c validates the blob and programs the DSP per node;
* hardware model: model/dsp_model.c (C, kernel library arithmetic), an EmulatedDevice through ctypes
  (`device.py`) and the Renode peripheral renode/EdgesdkDsp1.cs through P/Invoke;
* cost model: `registers.kernel_cycles` per node, which the model counts in its CYCLES register.

`TARGET` is its plugin object (edgesdk/targets/api.py), registered as entry point "dsp".
"""

from __future__ import annotations

from pathlib import Path

from ...dataclass_cache import dataclass
from ..api import LayerEstimate, MemoryWindows, PeripheralModel, RegionCode, RegionEstimate, Target
from .renode import RENODE_SOURCE, RENODE_TYPE

DSP_TYPE = "edgesdk-dsp1"
PACKAGE_DIR = Path(__file__).resolve().parent
RUNTIME_DIR = PACKAGE_DIR / "runtime"


@dataclass
class DspGraph:
    """One DSP region's blob as the build keeps it (ExecutorModel.target_data["dsp"])."""

    symbol: str
    data: bytes
    ops: list
    listing: list
    cycles: int
    node_cycles: list = None  # (op index, cycles, lower bound) per node, in order


class DspTarget(Target):
    name = "dsp"
    description = "the DSP-1 vector DSP: one serialized subgraph per region, interpreted by a host runtime"
    peripheral_types = (DSP_TYPE,)
    flash_data = "serialized subgraphs"
    # edgesdk_dsp_run()'s results (runtime/edgesdk_dsp_runtime.h), which the generated code returns unchanged.
    error_codes = (
        ("DSP_DEVICE", -16, "the DSP stopped with an error: edgesdk_dsp_last_status() and edgesdk_dsp_last_node() "
                            "(edgesdk_dsp_runtime.h) say which and where"),
        ("DSP_TIMEOUT", -17, "the DSP did not report DONE or ERROR within EDGESDK_DSP_POLL_LIMIT polls; the runtime "
                             "reset it"),
        ("DSP_ID", -18, "no DSP-1 with a supported version answers at BOARD_DSP0_BASE"),
        ("DSP_BLOB", -19, "a serialized subgraph's header is wrong (magic, version, sizes): corrupt flash"),
        ("DSP_TABLE", -20, "a serialized subgraph refers outside itself: corrupt flash"),
        ("DSP_TENSOR", -21, "a serialized subgraph's tensor lies outside the arena: corrupt flash"),
    )

    def in_place(self, op, x) -> str | None:
        """The runtime's nodes read and write guest memory directly, elementwise nodes element by element (exact)
        and the pool and depthwise nodes output row by row, pixel by pixel (raster)."""
        if op.type in ("ADD", "MUL"):
            return "exact"
        if op.type in ("DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"):
            return "raster"
        return None

    @property
    def support(self):
        from .supported import DSP_SUPPORT
        return DSP_SUPPORT

    def generate(self, region, ctx) -> RegionCode:
        from .blob import describe, encode
        from .codegen import build_region

        builder = build_region(region.ops, ctx)
        layers = ", ".join(str(op.index) for op in region.ops)
        if not builder.nodes:
            return RegionCode().add(f"DSP region: layers {layers} (aliased reshapes only, nothing to run)", "")
        graphs = ctx.data(self.name, list)
        data = encode(builder)
        graph = DspGraph(ctx.symbol(f"dsp_graph_{len(graphs)}"), data, list(region.ops), describe(data),
                         _blob_cycles(builder), _node_cycles(builder))
        graphs.append(graph)
        ctx.include("edgesdk_dsp_runtime.h")
        ctx.include("model_dsp.h")
        return RegionCode().add(
            f"DSP region {len(graphs) - 1}: layers {layers} ({len(builder.nodes)} nodes, {len(data)}-byte blob)",
            f"status = edgesdk_dsp_run({graph.symbol}, sizeof({graph.symbol}), edgesdk_arena, "
            "EDGESDK_DEFAULT_ARENA_BYTES);\n"
            "if (status != 0) {\n    return status;\n}")

    def render_sources(self, model, env, common: dict) -> dict:
        graphs = model.target_data.get(self.name) or []
        if not graphs:
            return {}
        from .sources import render_model_dsp

        return render_model_dsp(graphs, common)

    def firmware_sources(self, model=None) -> list:
        return [RUNTIME_DIR / "edgesdk_dsp_runtime.c", RUNTIME_DIR / "edgesdk_dsp_runtime.h"]

    def peripherals(self) -> list:
        from .device import create_device, renode_library
        return [PeripheralModel(DSP_TYPE, RENODE_TYPE, create_device, (RENODE_SOURCE,), renode_library=renode_library,
                                repl_attributes=MemoryWindows())]

    def estimate(self, region, board, model=None) -> RegionEstimate | None:
        """DSP cycles of the region: per node, the overhead plus lane operations / 16 (registers.py), the
        same count the device model accumulates in CYCLES. From the generated blob when there is one."""
        graph = next((g for g in (model.target_data.get(self.name) or [] if model else []) if g.ops == region.ops),
                     None)
        if graph is not None:
            cycles = graph.cycles
        elif model is not None:
            cycles = 0  # generated, and nothing to run (aliased reshapes only)
        else:
            from .codegen import build_region
            cycles = _blob_cycles(build_region(region.ops, _EstimateContext()))
        return self.cycles_on(board, cycles)

    def estimate_layers(self, region, board, model=None) -> list:
        """Per layer, the cycles of its node (none for an aliased reshape) and the lower bound: its lane
        operations spread over all lanes, without the per-node overhead."""
        graph = next((g for g in (model.target_data.get(self.name) or [] if model else []) if g.ops == region.ops),
                     None)
        if graph is None and model is None:
            from .codegen import build_region
            nodes = _node_cycles(build_region(region.ops, _EstimateContext()))
        else:
            nodes = graph.node_cycles if graph is not None else []
        per_layer = {op.index: [0, 0] for op in region.ops}
        for index, cycles, bound in nodes:
            per_layer[index][0] += cycles
            per_layer[index][1] += bound
        return [LayerEstimate(index, cycles, bound) for index, (cycles, bound) in per_layer.items()]

    def flash_lower_bound(self, region) -> int:
        """A depthwise convolution's int8 filter goes into the serialized graph densely."""
        return sum(op.inputs[1].num_elements for op in region.ops
                   if op.type == "DEPTHWISE_CONV_2D" and op.inputs[1] is not None and op.inputs[1].is_const)

    def flash_bytes(self, model) -> int:
        return sum(len(g.data) for g in model.target_data.get(self.name) or [])

    harness_includes = ("edgesdk_dsp_runtime.h",)

    def harness_failure(self) -> str:
        """The DSP's error code (docs/dsp-datasheet.md) and the node it stopped at (the runner parses them)."""
        return DSP_HARNESS_FAILURE

    def describe_failure(self, uart: str) -> str | None:
        import re

        from .registers import ERROR_NAMES

        found = re.search(r"dsp_error=(-?\d+) dsp_node=(-?\d+)", uart)
        if not found:
            return None
        code = int(found.group(1))
        return (f"The DSP stopped with error {ERROR_NAMES.get(code, f'code {code}')} at node {found.group(2)} of its "
                "serialized subgraph (docs/dsp-datasheet.md lists the DSP error codes).")

    def verify(self, compiled, proof) -> None:
        """Every blob: header and tables consistent, every arena tensor inside the arena, every constant
        tensor, parameter record and constant reference inside the blob's data area (blob.check_blob)."""
        from .blob import check_blob

        fail = proof.fail
        for graph in compiled.executor.target_data.get(self.name) or []:
            for problem in check_blob(graph.data, compiled.executor.arena_bytes):
                fail(f"DSP blob {graph.symbol}: {problem}")
            if hasattr(proof, "dsp_blobs"):
                proof.count("dsp_blobs")


def _blob_cycles(builder) -> int:
    from .registers import kernel_cycles
    return sum(kernel_cycles(node.opcode, node.fields()) for node in builder.nodes)


def _node_cycles(builder) -> list:
    """(op index, cycles, lower bound: lane operations over all lanes) of every node of a blob."""
    from .registers import LANES, kernel_cycles, lane_ops
    return [(node.op_index, kernel_cycles(node.opcode, node.fields()), -(-lane_ops(node.opcode, node.fields()) // LANES))
            for node in builder.nodes]


class _EstimateContext:
    """Codegen context for a cost estimate before memory planning: nothing placed yet, LiteRT rounding."""

    rounding_mode = "ref"

    def arena_offset(self, tensor):
        return None

    def rounding_for(self, op) -> str:
        from ...ir.rounding import requant_rounding
        return requant_rounding(op, self.rounding_mode)


TARGET = DspTarget()


DSP_HARNESS_FAILURE = """\
if (status == EDGESDK_DSP_ERR_DEVICE) {
    uint32_t dsp_status = edgesdk_dsp_last_status();
    edgesdk_console_puts(" dsp_error=");
    edgesdk_console_put_int((int32_t)((dsp_status & EDGESDK_DSP_STATUS_ERROR_CODE_MASK) >> EDGESDK_DSP_STATUS_ERROR_CODE_SHIFT));
    edgesdk_console_puts(" dsp_node=");
    edgesdk_console_put_int((int32_t)edgesdk_dsp_last_node());
}"""
