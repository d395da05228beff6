"""The NPU target's part of the build-time safety proof (Target.verify; the core proof is edgesdk/verify.py).

For every command table of the build: it passes every check the NPU makes before it runs one
(edgesdk.targets.npu.hw.validate, the mirror of the C model's static pass, at the highest region bases the board allows),
decodes (edgesdk.targets.npu.hw.cmdtable.decode) and ends with END; every tensor
descriptor and parameter reference lies inside its region (region 0 = the weights blob of its length, region 1 =
the arena of arena_bytes), arena operands inside one planned buffer live during the table, outputs in the
arena; a compressed weight stream lies in the weights blob and decodes to exactly its dense tensor; the
quantization fields and channel records are in the NPU's accepted ranges; tables and index maps lie in their
region, and every index map entry inside its source.
"""

from __future__ import annotations

import bisect
import math
import struct

from .hw import cmdtable as C
from .hw import registers as R
from .hw import validate, weight_codec
from .tables import tables_of, weights_of

WEIGHTS_REGION, ARENA_REGION = 0, 1
SHIFT_RANGE = (R.MIN_SHIFT, R.MAX_SHIFT)  # the requantization shifts the NPU accepts


def verify_tables(compiled, proof) -> None:
    """Prove every command table of the build (NpuTarget.verify)."""
    executor, plan = compiled.executor, compiled.plan
    weights = weights_of(executor)
    regions = {WEIGHTS_REGION: len(weights), ARENA_REGION: plan.arena_bytes}
    bases = _worst_region_bases(compiled.board, regions)
    step_of = {op: i for i, op in enumerate(compiled.graph.ops)}
    for index, table in enumerate(tables_of(executor)):
        proof.count("npu_tables")
        where = f"NPU table {index}"
        if len(table.data) > R.MAX_TABLE_BYTES:
            proof.fail(f"{where} has {len(table.data)} bytes, more than the NPU's {R.MAX_TABLE_BYTES}")
            continue
        # Everything the NPU checks before it runs a table (edgesdk.targets.npu.hw.validate mirrors the C model's static
        # pass): framing, fields, shapes, address ranges and limits -- so no compiled table can stop the NPU
        # with TABLE_*, BAD_OPCODE, CMD_SIZE, BAD_REGION, BAD_SHAPE, BAD_PARAM, ADDRESS_RANGE, TOO_LARGE,
        # NO_END or a BAD_QUANT field. What it can only find while running (BUS, the records' BAD_QUANT,
        # BAD_WEIGHTS) is excluded by the region, record and stream checks below.
        code, number = validate.check_table(table.data, bases)
        if code != R.ERR_NONE:
            at = "the table itself" if number is None else f"command {number}"
            proof.fail(f"{where}: the NPU would refuse it with {R.error_name(code)} at {at} "
                       f"({R.error_description(code)})")
        try:
            commands = C.decode(table.data)
        except (C.CommandTableError, struct.error) as exc:
            proof.fail(f"{where} does not decode: {exc}")
            continue
        if not commands or not isinstance(commands[-1], C.End) or any(isinstance(c, C.End) for c in commands[:-1]):
            proof.fail(f"{where} does not end with exactly one END command")
        steps = [step_of[op] for op in table.ops if op in step_of]
        live = _LiveBuffers([b for b in plan.buffers if steps and b.first <= max(steps) and min(steps) <= b.last])
        for number, command in enumerate(commands):
            proof.count("npu_commands")
            _check_command(f"{where} command {number} ({type(command).__name__})", command, regions, live,
                           weights, proof)


def _worst_region_bases(board, regions: dict) -> list:
    """The highest base each region can have on the board (the weights blob somewhere in flash, the arena in
    SRAM): the NPU's address-range checks pass there only if they pass wherever the linker puts them."""
    bases = [0] * 8
    for region, memory in ((WEIGHTS_REGION, board.flash), (ARENA_REGION, board.sram)):
        bases[region] = max(memory.base, memory.base + memory.size - regions[region])
    return bases


class _LiveBuffers:
    """The plan's buffers live during one NPU table, sorted by offset: `holds(first, last)` tells whether one
    of them contains the arena bytes first..last (a bisection, not a scan of every buffer)."""

    def __init__(self, buffers: list):
        ordered = sorted((b.offset, b.offset + b.size) for b in buffers if b.offset is not None)
        self.starts = [start for start, _ in ordered]
        self.reach, top = [], -1  # reach[k]: the highest end among the first k + 1 buffers
        for _, end in ordered:
            top = max(top, end)
            self.reach.append(top)

    def holds(self, first: int, last: int) -> bool:
        k = bisect.bisect_right(self.starts, first) - 1
        return k >= 0 and self.reach[k] > last


def _descriptors(command) -> tuple:
    """(inputs, outputs) tensor descriptors of a decoded command."""
    if isinstance(command, (C.DmaCopy, C.GatherHW)):
        return [command.src], [command.dst]
    if isinstance(command, C.Conv2D):  # compressed weights are a byte stream instead: _check_weight_stream
        return [command.input] + ([] if command.weight_stream_bytes else [command.weights]), [command.output]
    if isinstance(command, (C.MaxPool2D, C.AvgPool2D, C.Table)):
        return [command.input], [command.output]
    if isinstance(command, C._Elementwise):
        return [command.input1, command.input2], [command.output]
    return [], []


def record_bytes(command) -> int:
    """One channel record of a conv command: int32 bias (int64 for 16x8 layers), then multiplier and shift or
    an f64 scale."""
    return R.CHANNEL_PARAM_BYTES_WIDE if command.input.dtype == R.DTYPE_INT16 else R.CHANNEL_PARAM_BYTES


def _param_bytes(where: str, ref, nbytes: int, what: str, regions: dict, weights: bytes, proof):
    """The `nbytes` bytes a parameter reference points at (None when outside its region: a failure)."""
    proof.count("npu_param_refs")
    size = regions.get(ref.region)
    if size is None or ref.offset < 0 or ref.offset + nbytes > size:
        proof.fail(f"{where} {what} r{ref.region}+{ref.offset} ({nbytes} bytes) are outside region {ref.region}")
        return None
    return bytes(weights[ref.offset:ref.offset + nbytes]) if ref.region == WEIGHTS_REGION else None


def _check_command(where: str, command, regions: dict, live: list, weights: bytes, proof) -> None:
    inputs, outputs = _descriptors(command)
    for role, desc in [("input", d) for d in inputs] + [("output", d) for d in outputs]:
        proof.count("npu_descriptors")
        _check_descriptor(f"{where} {role}", desc, role == "output", regions, live, proof)
    if isinstance(command, C.Conv2D) and command.weight_stream_bytes:
        proof.count("npu_descriptors")
        _check_weight_stream(f"{where} weights", command, regions, weights, proof)
    if isinstance(command, C.Conv2D):
        records = 1 if command.per_tensor_params else command.output.shape[3]
        data = _param_bytes(where, command.params, record_bytes(command) * records, "channel records", regions,
                            weights, proof)
        if data is not None:
            _check_records(where, command, data, proof)
    if isinstance(command, C.Table):
        _param_bytes(where, command.table, table_bytes(command), "tables", regions, weights, proof)
    if isinstance(command, C.GatherHW):
        _check_gather_maps(where, command, regions, weights, proof)
    if isinstance(command, (C.Add, C.Mul)):
        fields = {"output_shift": command.output_shift}
        if isinstance(command, C.Add):
            fields.update(input1_shift=command.input1_shift, input2_shift=command.input2_shift)
        for key, value in fields.items():
            if not SHIFT_RANGE[0] <= value <= SHIFT_RANGE[1]:
                proof.fail(f"{where} {key} {value} is outside [{SHIFT_RANGE[0]}, {SHIFT_RANGE[1]}]")


def _check_descriptor(where: str, desc, is_output: bool, regions: dict, live: list, proof) -> None:
    size = regions.get(desc.region)
    if size is None:
        proof.fail(f"{where} names region {desc.region}; tables may only use 0 (weights) and 1 (arena)")
        return
    if is_output and desc.region != ARENA_REGION:
        proof.fail(f"{where} writes into region {desc.region}; outputs must go to the arena (region 1)")
    if any(d < 1 for d in desc.shape):
        proof.fail(f"{where} has a zero dimension {list(desc.shape)}")
        return
    extents = [(d - 1) * s for d, s in zip(desc.shape, desc.strides)]
    first = desc.offset + sum(e for e in extents if e < 0)
    last = desc.offset + sum(e for e in extents if e > 0) + desc.element_bytes - 1
    if first < 0 or last >= size:
        proof.fail(f"{where} r{desc.region}+{desc.offset}{list(desc.shape)} reaches bytes {first}..{last} of "
                              f"region {desc.region}, which has {size} bytes")
    elif desc.region == ARENA_REGION and not live.holds(first, last):
        proof.fail(f"{where} arena bytes {first}..{last} are not inside one buffer live during the table")


def _check_weight_stream(where: str, command, regions: dict, weights: bytes, proof) -> None:
    """COMPRESSED_WEIGHTS (docs/npu-datasheet.md 3.1): the NPU reads `weight_stream_bytes` bytes at the
    descriptor's offset and decodes them to the dense tensor of its shape. The stream must lie in the
    weights blob and decode (edgesdk.targets.npu.hw.weight_codec, the reference of the NPU's decoder) to exactly that
    many bytes -- so the NPU cannot fail with BAD_WEIGHTS at run time either."""
    desc, nbytes = command.weights, command.weight_stream_bytes
    end = desc.offset + nbytes
    if desc.region != WEIGHTS_REGION or desc.offset < 0 or end > regions[WEIGHTS_REGION]:
        proof.fail(f"{where}: a compressed stream r{desc.region}+{desc.offset} of {nbytes} bytes is "
                              f"not inside the weights blob of {regions[WEIGHTS_REGION]} bytes")
        return
    dense = math.prod(int(d) for d in desc.shape)
    try:
        weight_codec.decode(bytes(weights[desc.offset:end]), expected_bytes=dense)
    except weight_codec.WeightStreamError as exc:
        proof.fail(f"{where}: the compressed stream r0+{desc.offset} ({nbytes} bytes) does not decode to "
                              f"the {dense}-byte tensor {list(desc.shape)}: {exc}")


def _check_records(where: str, command, data: bytes, proof) -> None:
    """The channel records the NPU will read: accepted multipliers/shifts (or FP64 scales); a 16x8 layer's
    64-bit requantization shifts right by 15 - shift, so its shifts are at most MAX_SHIFT_WIDE."""
    size = record_bytes(command)
    wide = size == R.CHANNEL_PARAM_BYTES_WIDE
    top = R.MAX_SHIFT_WIDE if wide else SHIFT_RANGE[1]
    for i in range(len(data) // size):
        record = data[i * size:(i + 1) * size]
        if command.rounding == R.ROUNDING_FP64:
            (scale,) = struct.unpack_from("<d", record, size - 8)
            if not (math.isfinite(scale) and scale >= 0):
                proof.fail(f"{where} channel {i} has FP64 scale {scale}")
                return
        else:
            multiplier, shift = struct.unpack_from("<ii", record, size - 8)
            if multiplier < 0 or not SHIFT_RANGE[0] <= shift <= top:
                proof.fail(f"{where} channel {i} has multiplier {multiplier}, shift {shift} "
                                      f"(the NPU accepts >= 0 and [{SHIFT_RANGE[0]}, {top}])")
                return


def table_bytes(command) -> int:
    entries = R.TABLE_ENTRIES_INT16 if command.input.dtype == R.DTYPE_INT16 else R.TABLE_ENTRIES_INT8
    return command.table_count * entries * command.input.element_bytes


def _check_gather_maps(where: str, command, regions: dict, weights: bytes, proof) -> None:
    """A GATHER_HW's index maps lie in their region and (in the weights blob) name rows and columns of its
    source only, so the NPU cannot stop with BAD_INDEX."""
    rows, cols = command.dst.shape[1], command.dst.shape[2]
    if command.maps.region != WEIGHTS_REGION:
        proof.fail(f"{where} index maps are in region {command.maps.region}, not the weights blob")
        return
    data = _param_bytes(where, command.maps, 2 * (rows + cols), "index maps", regions, weights, proof)
    if data is None:
        return
    values = struct.unpack(f"<{rows + cols}H", data)
    bad_rows = [v for v in values[:rows] if v >= command.src.shape[1]]
    bad_cols = [v for v in values[rows:] if v >= command.src.shape[2]]
    if bad_rows or bad_cols:
        proof.fail(f"{where} index map names row(s) {bad_rows[:4]} / column(s) {bad_cols[:4]} outside its source "
                   f"{list(command.src.shape)}")
