"""The LUT-1's part of edgesdk's build-time safety proof (Target.verify; the core proof is edgesdk/verify.py).

For every job of every job list the firmware will hold: its table lies inside the blob `lut_tables` (offset
word-aligned, 256 bytes inside), its length is its layer's element count and fits the LENGTH register, and the
bytes it reads and writes lie inside one planned arena buffer that holds the layer's input (output) and is
live while the layer runs. The driver adds these offsets to the blob's and the arena's base without a check,
so this is what keeps a LUT-1 run inside its memory.
"""

from __future__ import annotations

from .jobs import TABLE_ALIGN, TABLE_BYTES, lut_data, tables_blob
from .supported import MAX_ELEMENTS


def verify_jobs(compiled, proof) -> None:
    executor, plan = compiled.executor, compiled.plan
    blob_bytes = len(tables_blob(executor))
    step_of = {op: step for step, op in enumerate(compiled.graph.ops)}
    for list_index, job_list in enumerate(lut_data(executor).job_lists):
        for number, job in enumerate(job_list.jobs):
            proof.count("lut_jobs")
            where = f"LUT-1 job list {list_index} job {number} (layer {job.op.index})"
            if job.table_offset % TABLE_ALIGN or not 0 <= job.table_offset <= blob_bytes - TABLE_BYTES:
                proof.fail(f"{where}: table at {job.table_offset} is not a word-aligned 256-byte entry of the "
                           f"{blob_bytes}-byte table blob")
            x, y = job.op.inputs[0], job.op.outputs[0]
            if job.length != x.num_elements or not 0 < job.length <= MAX_ELEMENTS:
                proof.fail(f"{where}: length {job.length} is not the layer's {x.num_elements} elements")
            step = step_of.get(job.op)
            for what, tensor, offset in (("reads", x, job.src_offset), ("writes", y, job.dst_offset)):
                if step is None or not _inside_live_buffer(plan, tensor, offset, job.length, step):
                    proof.fail(f"{where} {what} arena bytes {offset}..{offset + job.length - 1}, which are not "
                               f"inside the live buffer of '{tensor.name}'")


def _inside_live_buffer(plan, tensor, offset: int, length: int, step: int) -> bool:
    return any(b.offset is not None and b.first <= step <= b.last and any(t is tensor for t in b.tensors)
               and b.offset <= offset and offset + length <= b.offset + b.size for b in plan.buffers)
