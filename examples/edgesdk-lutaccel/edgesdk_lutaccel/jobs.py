"""The LUT-1's per-build data: its tables in one named blob, and one job list per region.

A job is one run of the LUT-1 over one layer: which table (an offset in the blob `lut_tables`), which arena
bytes it reads and writes, how many, and how the table gets into the device. The job lists are data in flash
(model_lut.c, rendered from templates/ by render_sources) that the driver walks (lutaccel_run_jobs), so the
build-time proof (proof.py) checks exactly what the firmware will do, and the firmware holds one 256-byte
table per distinct table, however many layers share it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

TABLES_BLOB = "lut_tables"  # ctx.blob name; C symbol edgesdk_lut_tables
TABLE_BYTES = 256
TABLE_ALIGN = 4  # the table DMA reads whole words
JOB_FORMAT = "<6I"  # struct lutaccel_job in hal/lutaccel.h
JOB_BYTES = struct.calcsize(JOB_FORMAT)
FLAG_DMA_TABLE = 1  # LUTACCEL_JOB_DMA_TABLE: the LUT-1 fetches the table itself


@dataclass
class LutJob:
    op: object
    table_offset: int  # in the blob
    src_offset: int  # in the arena
    dst_offset: int
    length: int
    dma_table: bool  # the layer switch "dma_table"
    cycles: int  # the device's cycles for this job (device.job_cycles)

    def words(self) -> tuple:
        return (self.table_offset, self.src_offset, self.dst_offset, self.length,
                FLAG_DMA_TABLE if self.dma_table else 0, self.op.index & 0xFFFFFFFF)


@dataclass
class JobList:
    symbol: str
    jobs: list

    @property
    def ops(self) -> list:
        return [job.op for job in self.jobs]


@dataclass
class LutData:
    """What the LUT-1's codegen keeps per build (ctx.data("lut", LutData))."""

    job_lists: list = field(default_factory=list)
    table_offsets: dict = field(default_factory=dict)  # table bytes -> offset in the blob (shared tables)

    def table_offset(self, blob, table: bytes, label: str) -> int:
        if table not in self.table_offsets:
            self.table_offsets[table] = blob.add(table, align=TABLE_ALIGN, label=label)
        return self.table_offsets[table]


def lut_data(model) -> LutData:
    """The LUT-1's data of an ExecutorModel (empty for a build without LUT-1 regions)."""
    return model.target_data.get("lut") or LutData()


def tables_blob(model) -> bytes:
    blob = model.blobs.get(TABLES_BLOB)
    return bytes(blob.data) if blob is not None else b""
