"""VendorX LUT-1 as an edgesdk target: an example of an out-of-tree accelerator plugin.

The LUT-1 is a small memory-mapped engine that maps every byte of a buffer through a 256-entry table,
which is exactly what an int8 activation (LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1) is. This package
gives edgesdk everything it needs to use it, through the same plugin API the built-in NPU uses
(docs/porting-a-new-accelerator.md walks through each part):

    support             supported.py  which ops, under which named constraints
    check_board         below         the board's LUT-1 entry: a window that holds the registers and table,
                                      and timing figures that are positive integers
    in_place            below         "exact": the LUT-1 reads element i before it writes it
    layer_switches      below         "dma_table": the LUT-1 fetches a layer's table itself (no CPU stores)
    generate            below, jobs.py  tables in the named blob "lut_tables" (tables.py computes them; equal
                                      tables shared) + one job per layer in the region's job list
    render_sources      templates/    model_lut.c/.h: the job lists, one commented record per layer
    flash_bytes /       below         the job lists' bytes / at least one job per layer
      flash_lower_bound
    firmware_sources    hal/          the driver, compiled into the firmware
    peripherals         model/        the emulator's native C model of the LUT-1 (type "vendorx-lut1"), beside the
                                      NPU's in the emulator's library, reporting each job's cycles to
                                      `edgesdk run --profile`; device.py: the same in Python
    estimate            below         cost model: the device's cycle formula, with the board's figures
    verify              proof.py      every table inside the blob, every arena access inside a live buffer
    report / summary    below         report.json target_reports["lut"] and the build's summary line
    harness_failure /   below         on a failed run: the LUT-1 error and the layer, and what they mean
      describe_failure
    error_codes         below         the driver's statuses, named in model.h
    boards_dirs         boards/       riscv-npu-lut: the riscv-npu board with a LUT-1 at 0x40002000
"""

from __future__ import annotations

import re
from pathlib import Path

from edgesdk.errors import UsageError
from edgesdk.targets.api import NativeModelSpec, PeripheralModel, RegionCode, RegionEstimate, Target, render_template

from .device import CTRL_START, DEFAULT_TIMING, REG_CTRL, REG_CYCLES, WINDOW_BYTES, run_cycles, timing_of
from .jobs import JOB_BYTES, TABLE_BYTES, TABLES_BLOB, JobList, LutData, LutJob, lut_data, tables_blob
from .supported import LUT_SUPPORT
from .tables import op_table

PACKAGE_DIR = Path(__file__).resolve().parent
PERIPHERAL_TYPE = "vendorx-lut1"
DMA_TABLE = "dma_table"  # the layer switch (Target.layer_switches)

# The harness prints this after a failed run whose status is a LUT-1 error (describe_failure parses it).
HARNESS_FAILURE = """\
if (status <= LUTACCEL_ERR_ID && status >= LUTACCEL_ERR_LENGTH) {
    edgesdk_console_puts(" lut_error=");
    edgesdk_console_put_int(status);
    edgesdk_console_puts(" lut_layer=");
    edgesdk_console_put_int(lutaccel_last_failed_layer());
}"""


class LutTarget(Target):
    name = "lut"
    description = "VendorX LUT-1: int8 activations through a 256-entry lookup table"
    support = LUT_SUPPORT
    peripheral_types = (PERIPHERAL_TYPE,)
    flash_data = "lookup tables with their job lists"
    error_codes = (
        ("LUT_ID", -20, "no VendorX LUT-1 answers at BOARD_LUT0_BASE"),
        ("LUT_TIMEOUT", -21, "the LUT-1 never reported DONE"),
        ("LUT_BUS", -22, "the LUT-1 could not read its input or table, or write its output (a bus error)"),
        ("LUT_LENGTH", -23, "the LUT-1 refused a job's length (0 or more than 2^24)"),
    )
    harness_includes = ("lutaccel.h",)

    # -- partitioning and planning --
    def check_board(self, board) -> None:
        """The default check (a vendorx-lut1 peripheral), then its entry: the register window must hold the
        table, and the timing figures the cost model and the emulator read must be positive integers."""
        super().check_board(board)
        lut = self.peripheral_of(board)
        if lut.size < WINDOW_BYTES:
            raise UsageError(f"Board '{board.name}': peripheral {lut.name} maps {lut.size} bytes, but the LUT-1's "
                             f"registers and table take {WINDOW_BYTES:#x}. Fix its size in {board.path}.")
        for name in ("clock_hz",) + tuple(DEFAULT_TIMING):
            value = lut.props.get(name, DEFAULT_TIMING.get(name))
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise UsageError(f"Board '{board.name}': peripheral {lut.name} needs '{name}' as a positive "
                                 f"integer (it has {value!r}). Fix it in {board.path}.")

    def in_place(self, op, x) -> str | None:
        """The LUT-1 reads each element before it writes it (hal/lutaccel.h: in and out may be the same
        buffer), so its output may lie exactly over the input it maps."""
        return "exact" if x is op.inputs[0] else None

    def layer_switches(self, op) -> dict:
        """dma_table: the LUT-1 fetches the layer's table from flash itself (64 more device cycles, 64 fewer
        CPU stores); off by default, so the CPU writes the table window."""
        return {DMA_TABLE: False}

    # -- codegen --
    def generate(self, region, ctx) -> RegionCode:
        from edgesdk.ctext import describe_op

        data = ctx.data(self.name, LutData)
        blob = ctx.blob(TABLES_BLOB)
        timing = self._timing(ctx.board)
        jobs = []
        for op in region.ops:
            x, y = op.inputs[0], op.outputs[0]
            table = op_table(op, ctx.rounding_for(op), ctx.rounding_mode).tobytes()
            dma = ctx.layer_choice(op, DMA_TABLE, False)
            jobs.append(LutJob(op, data.table_offset(blob, table, f"{describe_op(op)}: table"),
                               ctx.arena_offset(x), ctx.arena_offset(y), x.num_elements, dma,
                               run_cycles(x.num_elements, timing, dma)))
        job_list = JobList(f"edgesdk_lut_jobs_{len(data.job_lists)}", jobs)
        data.job_lists.append(job_list)
        ctx.include("lutaccel.h")
        ctx.include("model_lut.h")
        layers = ", ".join(str(op.index) for op in region.ops)
        return RegionCode().add(
            f"LUT-1 job list {len(data.job_lists) - 1}: layers {layers}",
            f"status = lutaccel_run_jobs({blob.symbol}, edgesdk_arena, {job_list.symbol}, {len(jobs)}u);\n"
            "if (status != 0) {\n    return status;\n}",
            commands=[op.index for op in region.ops])  # one job (a run of one command) per layer: profiles

    def render_sources(self, model, env, common: dict) -> dict:
        """model_lut.c/.h from templates/ beside this code: the job lists as commented records."""
        from edgesdk.ctext import comment_text, describe_op

        data = lut_data(model)
        if not data.job_lists:
            return {}
        lists = [{"symbol": jl.symbol, "layers": ", ".join(str(op.index) for op in jl.ops),
                  "cycles": sum(j.cycles for j in jl.jobs),
                  "jobs": [{"comment": comment_text(f"{describe_op(j.op)}" + (", table by DMA" if j.dma_table else "")),
                            "table_offset": j.table_offset, "src_offset": j.src_offset, "dst_offset": j.dst_offset,
                            "length": j.length, "flags": "LUTACCEL_JOB_DMA_TABLE" if j.dma_table else "0u",
                            "layer": j.op.index}
                           for j in jl.jobs]}
                 for jl in data.job_lists]
        templates = PACKAGE_DIR / "templates"
        blob = model.blobs[TABLES_BLOB]
        return {
            "model_lut.h": render_template(templates, "model_lut.h.j2", **common, job_lists=lists),
            "model_lut.c": render_template(templates, "model_lut.c.j2", **common, job_lists=lists,
                                           blob_symbol=blob.symbol, table_count=len(data.table_offsets),
                                           table_bytes=len(blob.data)),
        }

    def flash_bytes(self, model) -> int:
        """The job lists model_lut.c holds (the tables blob is counted with every blob)."""
        return JOB_BYTES * sum(len(jl.jobs) for jl in lut_data(model).job_lists)

    def flash_lower_bound(self, region) -> int:
        """One job record per layer (tables may be shared between regions, so they are not claimed)."""
        return JOB_BYTES * len(region.ops)

    def firmware_sources(self, model=None) -> list:
        return [PACKAGE_DIR / "hal" / "lutaccel.c", PACKAGE_DIR / "hal" / "lutaccel.h"]

    # -- hardware model, cost model, proof --
    def peripherals(self) -> list:
        """The LUT-1 for the emulator: its native C model (model/), compiled into the emulator's library next
        to the NPU's, told the board entry's timing. device.Lut1Device is the same device in Python (an
        EmulatedDevice: simpler to change, e.g. to inject faults; slower)."""
        return [PeripheralModel(PERIPHERAL_TYPE, "VendorX.Lut1", native_model, native=True)]

    def estimate(self, region, board, model=None) -> RegionEstimate:
        """The device's cycle formula per layer: the jobs as generated, or before codegen the default (the CPU
        loads every table)."""
        jobs = [j for jl in (lut_data(model).job_lists if model is not None else []) if jl.ops == region.ops
                for j in jl.jobs]
        timing = self._timing(board)
        cycles = (sum(j.cycles for j in jobs) if jobs
                  else sum(run_cycles(op.inputs[0].num_elements, timing) for op in region.ops))
        return self.cycles_on(board, cycles)

    def verify(self, compiled, proof) -> None:
        from .proof import verify_jobs

        verify_jobs(compiled, proof)

    def _timing(self, board) -> dict:
        peripheral = self.peripheral_of(board) if board is not None else None
        return timing_of(peripheral.props if peripheral else {})

    # -- reports --
    def report(self, model) -> dict:
        data = lut_data(model)
        jobs = [j for jl in data.job_lists for j in jl.jobs]
        return {"cycles": sum(j.cycles for j in jobs), "jobs": len(jobs), "tables": len(data.table_offsets),
                "table_bytes": len(tables_blob(model)), "dma_table_layers": [j.op.index for j in jobs if j.dma_table],
                "job_lists": [{"symbol": jl.symbol, "layers": [op.index for op in jl.ops],
                               "cycles": sum(j.cycles for j in jl.jobs)} for jl in data.job_lists]}

    def summary(self, section: dict) -> list:
        if not section.get("jobs"):
            return []
        return [f"lut: {section['cycles']} cycles (estimate) in {section['jobs']} job(s) of "
                f"{len(section['job_lists'])} job list(s); {section['tables']} distinct table(s), "
                f"{section['table_bytes']} B"]

    def harness_failure(self) -> str:
        return HARNESS_FAILURE

    def describe_failure(self, uart: str) -> str | None:
        found = re.search(r"lut_error=(-?\d+) lut_layer=(-?\d+)", uart)
        if not found:
            return None
        code, layer = int(found.group(1)), int(found.group(2))
        meaning = next((text for _, value, text in self.error_codes if value == code), f"error {code}")
        return f"The VendorX LUT-1 failed at layer {layer}: {meaning} (hal/lutaccel.h lists the codes)."

    def boards_dirs(self) -> list:
        return [PACKAGE_DIR / "boards"]


TARGET = LutTarget()


def native_model(peripheral, board) -> NativeModelSpec:
    """The LUT-1's C model (model/lut1_model.c, functions lut1_*), with the board entry's timing figures as its
    settings; the emulator sums CYCLES after every START and counts the starts as "runs"."""
    timing = timing_of(peripheral.props)
    model_dir = PACKAGE_DIR / "model"
    return NativeModelSpec((model_dir / "lut1_model.c",), (model_dir,), REG_CTRL, CTRL_START,
                           {"cycles": (REG_CYCLES, None)}, symbol_prefix="lut1",
                           settings=tuple(timing[name] for name in DEFAULT_TIMING), starts_name="runs")
