"""The NPU target: the board's NPU-1 layer engine (docs/npu-datasheet.md).

* `supported.NPU_SUPPORT` - op table with named constraints;
* `region.lower_ops(ops, ctx)` - one region's IR ops -> NPU-1 commands (one command table per region);
* hardware model: the shared C model in edgesdk/targets/npu/hw/model (built into the emulator, P/Invoked by Renode);
* cost model: edgesdk/targets/npu/hw/timing.py; HAL: edgesdk/targets/npu/hal/npu_driver.c.

`TARGET` is its plugin object (edgesdk/targets/api.py), registered as entry point "npu".
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

from ..api import LayerEstimate, PeripheralModel, RegionCode, RegionEstimate, Target

HAL_DIR = Path(__file__).resolve().parent / "hal"
NPU_TYPE = "edgesdk-npu1"
# Activations of one input that run as one TABLE command (codegen.lower_pointwise): element i from element i.
TABLE_UNARY = ("RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH")

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


def _read_rows_call(read, ctx) -> str:
    """The CPU's call for a streamed input's rows between two command tables (stripes.ReadInputRows)."""
    from ...ctext import UINT8_INPUT_READER, UINT8_INPUT_READER_TEXT

    args = f"{read.input_number}u, {read.start}u, {read.rows}u, edgesdk_arena + {read.arena_offset}"
    if not read.uint8:
        return f"edgesdk_default_read_input_rows({args});\n"
    ctx.define_function("stream.uint8_reader", UINT8_INPUT_READER_TEXT)
    return f"{UINT8_INPUT_READER}({args}, {read.nbytes}u);\n"


def _run_tables(parts: list, ops: list, label: str, ctx, code: RegionCode) -> RegionCode:
    """Blocks that run `parts` (region.split_tables: [(input reads, commands of one table)]) one table after
    another, each table made from its commands for layers `ops`."""
    from .codegen import board_memory
    from .hw import cmdtable, timing
    from .tables import WEIGHTS_BLOB, NpuTable, command_layers

    ctx.blob(WEIGHTS_BLOB)  # region 0 of every table exists even when no layer has weights
    ctx.include("npu_driver.h")
    ctx.include("model_npu.h")
    ctx.define_function("npu.run_table", RUN_TABLE_HELPER)
    tables = ctx.data(NpuTarget.name, list)
    layers = ", ".join(str(op.index) for op in ops)
    memory = board_memory(ctx.board)  # (the compile's one map)
    for k, (reads, commands) in enumerate(parts):
        table = NpuTable(f"edgesdk_npu_table_{len(tables)}", cmdtable.encode(commands), commands, ops,
                         timing.table_cycles(commands, memory))
        tables.append(table)
        part = f", part {k + 1} of {len(parts)}" if len(parts) > 1 else ""
        rows = "".join(f" after reading {r.note}" for r in reads)
        calls = "".join(_read_rows_call(r, ctx) for r in reads)
        code.add(f"{label}{part}: layers {layers} ({len(commands)} commands){rows}",
                 calls + f"status = run_npu_table({table.symbol}, sizeof({table.symbol}));\n"
                 "if (status != 0) {\n    return status;\n}", commands=command_layers(table))
    return code


@functools.cache
def _submodule(name: str):
    """This package's module `name`, imported on first use (the package itself stays light: a run imports it
    for the NPU model) and then without an import statement per call: the cascade search asks the hooks that
    use it a few hundred times a compile, ~1 us each."""
    return importlib.import_module(f"{__name__}.{name}")


class NpuTarget(Target):
    name = "npu"
    description = "the NPU-1 layer engine: one command table per region, weights streamed from flash"
    peripheral_types = (NPU_TYPE,)
    flash_data = "command tables"
    # edgesdk_npu_run()'s results (edgesdk/targets/npu/hal/npu_driver.h), which the generated code returns unchanged.
    error_codes = (
        ("NPU", -1, "the NPU stopped with an error: edgesdk_npu_last_status() (bits 15:8, the NPU error code of "
                    "docs/npu-datasheet.md) and edgesdk_npu_last_error_command() (npu_driver.h) say which and where"),
        ("NPU_TIMEOUT", -2, "the NPU did not report DONE or ERROR within EDGESDK_NPU_POLL_LIMIT polls; the driver "
                            "reset it"),
        ("NPU_ID", -3, "no NPU-1 with a supported command-table version answers at BOARD_NPU0_BASE"),
    )

    def layer_switches(self, op) -> dict:
        """Conv, depthwise and FC weights go compressed when that is smaller (codegen._conv_weights)."""
        return {"compress_weights": True} if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") else {}

    def in_place(self, op, x) -> str | None:
        """A command reads all its operands before it writes its output (docs/npu-datasheet.md section 4), so
        every rule holds; elementwise and one-input TABLE commands take the exact rule, window and fully
        connected ones raster."""
        if op.type in ("ADD", "MUL") or op.type in TABLE_UNARY:
            return "exact"
        if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "FULLY_CONNECTED"):
            return "raster"
        return None

    def scratch_bytes(self, region, ctx) -> dict:
        """A convolution with a kernel axis folded into its channels may need a padded copy of its input or
        its edge columns in scratch (fold.py)."""
        from . import fold
        from .codegen import conv_fold

        sizes = {}
        for op in region.ops:
            size = fold.scratch_bytes(op, conv_fold(op, ctx)[0]) if fold.candidates(op) else 0
            if size:
                sizes[op] = size
        return sizes

    def can_stripe(self, op) -> bool:
        return _submodule("stripes").can_stripe(op)

    def stripe_cost(self, group, ctx) -> tuple:
        return _submodule("stripes").stripe_cost(group, ctx)

    def stripe_cost_floor(self, group, ctx) -> int | None:
        return _submodule("stripe_floor").stripe_cost_floor(group, ctx)

    def stripes_use_scratch(self, op) -> bool:
        """Only a folded convolution takes scratch (fold.py); a stripe command is the one-command form."""
        return False

    def whole_cost(self, ops, ctx) -> int:
        """The ops' commands as an op-by-op build lowers them (a folded convolution's, fold.py)."""
        return _submodule("stripes").whole_cost(ops, ctx)

    @property
    def support(self):
        from .supported import NPU_SUPPORT
        return NPU_SUPPORT

    def generate(self, region, ctx) -> RegionCode:
        from .region import lower_ops, split_tables

        tables = ctx.data(self.name, list)
        index = len(tables)
        code = RegionCode()
        parts = split_tables(lower_ops(region.ops, ctx))  # one part unless a group streams an input
        return _run_tables(parts, list(region.ops), f"NPU region {index}", ctx, code)

    stripes_with_other_targets = True

    def generate_stripes(self, part, ctx) -> RegionCode:
        """One run of a group that crosses targets: its stripe commands as a table (or several, split at a
        streamed input's reads), kicked and waited for before the CPU's layers after it."""
        from .region import lower_stripe_run, split_tables

        tables = ctx.data(self.name, list)
        label = f"NPU stripes {len(tables)} (a cascade group with another target's layers)"
        return _run_tables(split_tables(lower_stripe_run(part, ctx)), list(part.ops), label, ctx, RegionCode())

    def render_sources(self, model, env, common: dict) -> dict:
        """model_npu.c/.h: the command tables, one commented chunk per command (templates/ beside this code)."""
        from ...ctext import c_value_lines
        from ..api import render_template
        from .tables import table_chunks, tables_of

        tables = tables_of(model)
        if not tables:
            return {}
        templates = Path(__file__).resolve().parent / "templates"
        return {
            "model_npu.h": render_template(templates, "model_npu.h.j2", **common, tables=tables),
            "model_npu.c": render_template(templates, "model_npu.c.j2", **common, tables=[
                {"symbol": t.symbol, "data_len": len(t.data), "cycles": t.cycles, "command_count": len(t.commands),
                 "layers": ", ".join(str(op.index) for op in t.ops), "chunks": table_chunks(t, c_value_lines)}
                for t in tables]),
        }

    def firmware_sources(self, model=None) -> list:
        return [HAL_DIR / "npu_driver.c", HAL_DIR / "npu_driver.h"]

    def flash_lower_bound(self, region) -> int:
        """A conv command's weights take at least a compressed stream's header (or the dense bytes, if
        fewer), and its channel records 12 bytes per output channel; other constants are stored densely."""
        from .hw import registers as R

        total = 0
        for op in region.ops:
            consts = [t for t in op.inputs if t is not None and t.is_const]
            if op.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"):
                w = op.inputs[1]
                total += min(w.num_elements, R.WEIGHT_STREAM_HEADER_BYTES)
                total += R.CHANNEL_PARAM_BYTES * op.outputs[0].shape[-1]
            elif op.type in ("ADD", "MUL", "CONCATENATION"):
                total += sum(t.nbytes for t in consts)
        return total

    def flash_bytes(self, model) -> int:
        """The command tables (the weights blob is counted with every blob by the compiler)."""
        from .tables import tables_of

        return sum(len(t.data) for t in tables_of(model))

    def peripherals(self) -> list:
        from .renode import RENODE_SOURCE, RENODE_TYPE, NpuReplAttributes, renode_library

        return [PeripheralModel(NPU_TYPE, RENODE_TYPE, _native_npu_model, (RENODE_SOURCE,), native=True,
                                renode_library=renode_library, repl_attributes=NpuReplAttributes())]

    def estimate(self, region, board, model=None) -> RegionEstimate | None:
        """The timing model (edgesdk/targets/npu/hw/timing.py) of the region's command table in `model`; None before
        codegen."""
        from .tables import tables_of

        ops = set(region.ops)  # several tables: a streamed input, or a group's runs between host layers
        parts = [t for t in (tables_of(model) if model else []) if t.ops and set(t.ops) <= ops]
        if not parts:
            return None
        return self.cycles_on(board, sum(t.cycles for t in parts))

    def estimate_layers(self, region, board, model=None) -> list:
        """Per layer, the timing model's figures of the commands made for it (tables.command_layers): cycles,
        the lower bound (all MACs busy, or every byte at full bandwidth), why the cycles exceed it
        (bound.py: command overhead, lane granularity; bytes moved more than once, against a
        schedule-independent bound), and the bytes they move, flash (weights, channel records) as weights
        and SRAM as activations. Nothing before codegen."""
        from .bound import table_layers
        from .hw import timing
        from .tables import command_layers, tables_of

        parts = [t for t in (tables_of(model) if model else []) if t.ops == region.ops]  # several: streamed input
        if not parts:
            return [LayerEstimate(op.index, None) for op in region.ops]
        memory = timing.MemoryMap.for_board(board)
        per_layer = {op.index: [] for op in region.ops}
        losses = {}
        for table in parts:
            costs = timing.table_cost(table.commands, memory).commands
            for layer, cost in zip(command_layers(table), costs):
                per_layer.setdefault(layer, []).append(cost)
            losses.update({entry["index"]: entry["losses"] for entry in table_layers(table, memory)})
        return [LayerEstimate(index, sum(c.cycles for c in costs), sum(c.lower_bound_cycles for c in costs),
                              activation_read_bytes=sum(c.sram_read_bytes for c in costs),
                              activation_write_bytes=sum(c.write_bytes for c in costs),
                              weight_read_bytes=sum(c.flash_read_bytes for c in costs),
                              losses=losses.get(index) or None)
                for index, costs in per_layer.items()]

    def verify(self, compiled, proof) -> None:
        """Every command table decodes and stays inside its regions (edgesdk/targets/npu/proof.py)."""
        from .proof import verify_tables

        verify_tables(compiled, proof)

    def report(self, model) -> dict:
        from .tables import tables_of

        tables = tables_of(model)
        return {"cycles": sum(t.cycles for t in tables), "table_bytes": sum(len(t.data) for t in tables),
                "tables": [{"symbol": t.symbol, "layers": [op.index for op in t.ops], "commands": len(t.commands),
                            "bytes": len(t.data), "cycles": t.cycles} for t in tables]}

    def summary(self, section: dict) -> list:
        if not section.get("tables"):
            return []
        return [f"npu: {section['cycles']} cycles (estimate) in {len(section['tables'])} command table(s) of "
                f"{section['table_bytes']} B"]

    harness_includes = ("npu_driver.h",)

    def describe_failure(self, uart: str) -> str | None:
        import re

        from .hw.registers import ERROR_NAMES

        found = re.search(r"npu_error=(-?\d+) npu_command=(-?\d+)", uart)
        if not found:
            return None
        code, command = int(found.group(1)), int(found.group(2)) & 0xFFFFFFFF
        name, meaning = ERROR_NAMES.get(code, (f"code {code}", "undocumented error code"))
        where = "the table header" if command == 0xFFFFFFFF else f"command {command}"
        return (f"The NPU stopped with error {name} ({meaning}) at {where} of its command table "
                "(docs/npu-datasheet.md lists the NPU error codes).")

    def hil_variables(self, section: dict, symbols: dict) -> dict:
        """NPU_TABLE_ADDRESS: where the first command table is (the NPU error suite corrupts it), else ""."""
        tables = section.get("tables") or []
        address = symbols.get(tables[0]["symbol"]) if tables else None
        return {"NPU_TABLE_ADDRESS": f"{address:#010x}" if address is not None else ""}

    def harness_failure(self) -> str:
        return NPU_HARNESS_FAILURE


# The test harness prints the NPU's error code and failing command (the runner and the HIL suites parse them;
# docs/npu-datasheet.md lists the codes).
NPU_HARNESS_FAILURE = """\
if (status == EDGESDK_NPU_ERR_STATUS) {
    uint32_t npu_status = edgesdk_npu_last_status();
    edgesdk_console_puts(" npu_error=");
    edgesdk_console_put_int((int32_t)((npu_status & EDGESDK_NPU_STATUS_ERROR_CODE_MASK) >> EDGESDK_NPU_STATUS_ERROR_CODE_SHIFT));
    edgesdk_console_puts(" npu_command=");
    edgesdk_console_put_int((int32_t)edgesdk_npu_last_error_command());
}"""


def _native_npu_model(peripheral, board):
    """The shared C NPU model (edgesdk/targets/npu/hw/model/), compiled into the emulator's native library (no Python on
    its hot path), told the memory classes of `board` as `peripheral` sees them."""
    from .hw import model as npu_model
    from .hw import registers
    from ..api import NativeModelSpec

    classes = npu_model.board_memory_classes(board, peripheral) if board is not None else ()
    return NativeModelSpec.from_registers(npu_model.model_sources(), npu_model.model_include_dirs(), registers,
                                          classes, symbol_prefix="npu")


TARGET = NpuTarget()
