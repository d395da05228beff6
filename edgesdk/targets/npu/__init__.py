"""The NPU target: the board's NPU-1 layer engine (docs/npu-datasheet.md).

* `supported.NPU_SUPPORT` - op table with named constraints;
* `codegen.lower_ops(ops, ctx)` - one region's IR ops -> NPU-1 commands (one command table per region);
* hardware model: the shared C model in edgesdk/npu/model (built into the emulator, P/Invoked by Renode);
* cost model: edgesdk/npu/timing.py; HAL: edgesdk/hal/npu_driver.c.

`TARGET` is its plugin object (edgesdk/targets/api.py), registered as entry point "npu".
"""

from __future__ import annotations

from pathlib import Path

from ..api import PeripheralModel, RegionCode, RegionEstimate, Target

HAL_DIR = Path(__file__).resolve().parents[2] / "hal"
NPU_TYPE = "edgesdk-npu1"
RENODE_TYPE = "Edgesdk.Npu1"

# Runs one command table; emitted once into model.c when the model has an NPU region.
RUN_TABLE_HELPER = """\
/* NPU regions: 0 = weights blob (flash), 1 = activation arena (SRAM). */
static int32_t run_npu_table(const uint8_t *table, uint32_t table_bytes)
{
    const uint32_t regions[2] = {
        (uint32_t)(uintptr_t)edgesdk_npu_weights,
        (uint32_t)(uintptr_t)edgesdk_arena,
    };
    return edgesdk_npu_run(table, table_bytes, regions, 2u);
}"""


class NpuTarget(Target):
    name = "npu"
    description = "the NPU-1 layer engine: one command table per region, weights streamed from flash"
    peripheral_types = (NPU_TYPE,)

    @property
    def support(self):
        from .supported import NPU_SUPPORT
        return NPU_SUPPORT

    def generate(self, region, ctx) -> RegionCode:
        from ...aot.executor import NpuTable
        from ...importer.names import sanitize_name
        from ...npu import cmdtable, timing
        from .codegen import lower_ops

        commands = lower_ops(region.ops, ctx)
        index = len(ctx.model.npu_tables)
        table = NpuTable(f"edgesdk_npu_table_{index}", cmdtable.encode(commands), commands,
                         [sanitize_name(line, max_chars=400) for line in cmdtable.describe(commands)], region.ops,
                         timing.table_cycles(commands, timing.MemoryMap.for_board(ctx.board)))
        ctx.model.npu_tables.append(table)
        ctx.include("npu_driver.h")
        ctx.include("model_npu.h")
        ctx.define_function("npu.run_table", RUN_TABLE_HELPER)
        layers = ", ".join(str(op.index) for op in region.ops)
        return RegionCode().add(
            f"NPU region {index}: layers {layers} ({len(commands)} commands)",
            f"status = run_npu_table({table.symbol}, sizeof({table.symbol}));\n"
            "if (status != 0) {\n    return status;\n}")

    def render_sources(self, model, env, common: dict) -> dict:
        if not model.npu_tables:
            return {}
        from ...aot.render import table_chunks

        return {
            "model_npu.h": env.get_template("model_npu.h.j2").render(**common),
            "model_npu.c": env.get_template("model_npu.c.j2").render(**common, tables=[
                {"symbol": t.symbol, "data_len": len(t.data), "cycles": t.cycles, "command_count": len(t.listing),
                 "layers": ", ".join(str(op.index) for op in t.ops), "chunks": table_chunks(t)}
                for t in model.npu_tables]),
        }

    def firmware_sources(self) -> list:
        return [HAL_DIR / "npu_driver.c", HAL_DIR / "npu_driver.h"]

    def flash_lower_bound(self, region) -> int:
        """A conv command's weights take at least a compressed stream's header (or the dense bytes, if
        fewer), and its channel records 12 bytes per output channel; other constants are stored densely."""
        from ...npu import registers as R

        total = 0
        for op in region.ops:
            consts = [t for t in op.inputs if t is not None and t.is_const]
            if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
                w = op.inputs[1]
                total += min(w.num_elements, R.WEIGHT_STREAM_HEADER_BYTES)
                total += R.CHANNEL_PARAM_BYTES * op.outputs[0].shape[-1]
            elif op.type in ("ADD", "MUL", "CONCATENATION"):
                total += sum(t.nbytes for t in consts)
        return total

    def flash_bytes(self, model) -> int:
        """The command tables (the weights blob is ctx.add_weights data, counted by the compiler)."""
        return sum(len(t.data) for t in model.npu_tables)

    def peripherals(self) -> list:
        return [PeripheralModel(NPU_TYPE, RENODE_TYPE, _native_npu_model, _renode_sources())]

    def estimate(self, region, board, model=None) -> RegionEstimate | None:
        """The timing model (edgesdk/npu/timing.py) of the region's command table in `model`; None before
        codegen."""
        table = next((t for t in (model.npu_tables if model else []) if t.ops == region.ops), None)
        if table is None:
            return None
        return RegionEstimate(table.cycles, int(self.peripheral_of(board).props.get("clock_hz", 0)), "npu")

    def verify(self, compiled, proof) -> None:
        pass  # edgesdk/verify.py proves NPU command tables itself (section 4)


def _native_npu_model(peripheral, board):
    """The shared C NPU model, compiled into the emulator's native library (no Python on its hot path)."""
    from ...emulator.machine import default_npu_model
    return default_npu_model()


def _renode_sources() -> tuple:
    from ...renode import RENODE_DIR
    return (RENODE_DIR / "EdgesdkNpu1.cs",)


TARGET = NpuTarget()
