"""NPU-1 timing model: cycles per command, the hardware lower bound, and table totals.

The same integer formulas as the C model's PERF_CYCLES counter (edgesdk/targets/npu/hw/model/npu_model.c,
docs/npu-datasheet.md "Timing model"); tests/test_npu_model.py checks they agree exactly.

    cycles(cmd)      = CMD_OVERHEAD_CYCLES + max(compute_cycles, memory_cycles)
    memory_cycles    = sum over operand streams of ceil(bytes * 256 / bytes_per_cycle_x256)
    lower_bound(cmd) = max(ceil(ops / 128), memory_cycles)         (no overhead, no lane losses)

A compressed weight stream (flag COMPRESSED_WEIGHTS) costs max(fetch of its compressed bytes, worst-case
decode at WEIGHT_DECODE_LANES weights per cycle) instead of a fetch of the dense weights.

compute_cycles counts the lanes the channel granularity wastes: the MAC array does 8 output x 16 input
channels per cycle for CONV2D (and fully connected; 8 int16 input channels: a 16x8 product takes two 8x8
lanes) and TRANSPOSE_CONV2D (over the input pixels, each spread over every tap); the vector engine does 16
channels (8 int16 ones) x 8 output columns per cycle for depthwise, pooling, elementwise and table commands.
DMA_COPY and GATHER_HW only move bytes.
"""

from __future__ import annotations

from ....dataclass_cache import dataclass, field
from . import cmdtable as C
from . import registers as R


@dataclass(frozen=True)
class MemoryClass:
    """Kind (SRAM or flash, for the byte counters) and bandwidth of a memory."""

    kind: int  # R.MEM_KIND_SRAM or R.MEM_KIND_FLASH
    bytes_per_cycle_x256: int

    @classmethod
    def from_region(cls, region, peripheral=None) -> "MemoryClass":
        """From a board MemoryRegion (edgesdk.board): rom -> flash, else SRAM; the NPU's bandwidth to it is
        its peripheral's "<memory>_bytes_per_cycle" property (board.json), else the datasheet's default."""
        kind = R.MEM_KIND_FLASH if region.kind == "rom" else R.MEM_KIND_SRAM
        props = peripheral.props if peripheral is not None else {}
        value = props.get(f"{region.name}_bytes_per_cycle")
        return cls(kind, bandwidth_x256(value) if value is not None else R.DEFAULT_BYTES_PER_CYCLE_X256)


DEFAULT_CLASS = MemoryClass(R.MEM_KIND_SRAM, R.DEFAULT_BYTES_PER_CYCLE_X256)


def bandwidth_x256(bytes_per_cycle: float) -> int:
    value = round(float(bytes_per_cycle) * R.BANDWIDTH_SCALE)
    if value < 1:
        raise ValueError(f"bandwidth {bytes_per_cycle} bytes/cycle is not positive")
    return value


@dataclass
class MemoryMap:
    """Which memory class an operand at (region, offset) is in.

    At compile time only the region convention is known (region 0 = weights in flash, region 1 = arena in
    SRAM): `for_board`. With absolute region bases and address ranges (what the C model is configured
    with) the classification is by address, exactly like the model: `for_addresses`.
    """

    region_classes: dict = field(default_factory=dict)  # region -> MemoryClass
    ranges: list = field(default_factory=list)  # (base, size, MemoryClass)
    region_bases: tuple | None = None

    @classmethod
    def for_board(cls, board, peripheral=None) -> "MemoryMap":
        """Region 0 (weights) in the board's flash, region 1 (arena) in its SRAM, with the bandwidths of the
        board's NPU (`peripheral`, default: its first edgesdk-npu1)."""
        peripheral = peripheral if peripheral is not None else npu_peripheral(board)
        return cls(region_classes={0: MemoryClass.from_region(board.flash, peripheral),
                                   1: MemoryClass.from_region(board.sram, peripheral)})

    @classmethod
    def for_addresses(cls, ranges, region_bases) -> "MemoryMap":
        return cls(ranges=list(ranges), region_bases=tuple(region_bases))

    def class_of(self, region: int, offset: int) -> MemoryClass:
        if self.region_bases is None:
            return self.region_classes.get(region, DEFAULT_CLASS)
        addr = self.region_bases[region] + offset
        for base, size, mclass in self.ranges:
            if base <= addr < base + size:
                return mclass
        return DEFAULT_CLASS


@dataclass
class CommandCost:
    compute_cycles: int = 0
    memory_cycles: int = 0
    ops: int = 0  # MACs for conv commands, element operations for pooling/elementwise
    macs: int = 0  # what PERF_MACS counts (conv commands only)
    sram_read_bytes: int = 0
    flash_read_bytes: int = 0
    write_bytes: int = 0

    @property
    def cycles(self) -> int:
        return R.CMD_OVERHEAD_CYCLES + max(self.compute_cycles, self.memory_cycles)

    @property
    def lower_bound_cycles(self) -> int:
        """The hardware limit: all 128 MACs busy every cycle, or every byte moved at full bandwidth."""
        return max(_ceil_div(self.ops, R.MACS_PER_CYCLE), self.memory_cycles)

    @property
    def efficiency(self) -> float:
        return self.lower_bound_cycles / self.cycles


@dataclass
class TableCost:
    commands: list  # CommandCost per command, END included

    @property
    def cycles(self) -> int:
        return sum(c.cycles for c in self.commands)

    @property
    def lower_bound_cycles(self) -> int:
        return sum(c.lower_bound_cycles for c in self.commands)

    @property
    def macs(self) -> int:
        return sum(c.macs for c in self.commands)

    @property
    def sram_read_bytes(self) -> int:
        return sum(c.sram_read_bytes for c in self.commands)

    @property
    def flash_read_bytes(self) -> int:
        return sum(c.flash_read_bytes for c in self.commands)

    @property
    def write_bytes(self) -> int:
        return sum(c.write_bytes for c in self.commands)

    def seconds(self, clock_hz: float) -> float:
        return self.cycles / clock_hz


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _add_stream(cost: CommandCost, mclass: MemoryClass, nbytes: int, is_write: bool) -> None:
    cost.memory_cycles += -(-nbytes * R.BANDWIDTH_SCALE // mclass.bytes_per_cycle_x256)  # (_ceil_div, inline)
    if is_write:
        cost.write_bytes += nbytes
    elif mclass.kind == R.MEM_KIND_FLASH:
        cost.flash_read_bytes += nbytes
    else:
        cost.sram_read_bytes += nbytes


def _compressed_weight_stream(cost: CommandCost, mclass: MemoryClass, stream_bytes: int, decoded_bytes: int) -> None:
    """Flash moves the compressed bytes; the 16 decoder lanes, pipelined behind the fetch, produce at least
    one weight per lane per cycle (one code per cycle, a code yields >= 1 weight): the slower of the two."""
    fetch = _ceil_div(stream_bytes * R.BANDWIDTH_SCALE, mclass.bytes_per_cycle_x256)
    cost.memory_cycles += max(fetch, weight_decode_cycles(decoded_bytes))
    if mclass.kind == R.MEM_KIND_FLASH:
        cost.flash_read_bytes += stream_bytes
    else:
        cost.sram_read_bytes += stream_bytes


def weight_decode_cycles(decoded_bytes: int) -> int:
    """Worst-case decode time of a compressed weight stream: every code a single literal."""
    return _ceil_div(decoded_bytes, R.WEIGHT_DECODE_LANES)


def _desc_stream(cost: CommandCost, memory: MemoryMap, desc: C.TensorDesc, is_write: bool) -> None:
    """_add_stream of a descriptor's compact bytes (class_of's region lookup inline: the cascade search's pricing
    and the codegen's table cycles ask ~10,000 times a VWW compile)."""
    mclass = memory.region_classes.get(desc.region, DEFAULT_CLASS) if memory.region_bases is None \
        else memory.class_of(desc.region, desc.offset)
    _add_stream(cost, mclass, desc.compact_bytes, is_write)


def _vector_cycles(out: C.TensorDesc, taps: int) -> int:
    n, h, w, c = out.shape
    lanes = R.VEC_CHANNEL_LANES_16 if out.dtype == R.DTYPE_INT16 else R.VEC_CHANNEL_LANES
    return n * h * _ceil_div(w, R.VEC_PIXEL_LANES) * _ceil_div(c, lanes) * taps


def _conv_cost(cmd: C.Conv2D, memory: MemoryMap) -> CommandCost:
    n, oh, ow, oc = cmd.output.shape
    _, kh, kw, wc = cmd.weights.shape
    cost = CommandCost()
    lanes = R.CONV_IC_LANES_16 if cmd.input.dtype == R.DTYPE_INT16 else R.CONV_IC_LANES
    if isinstance(cmd, C.DepthwiseConv2D):
        cost.compute_cycles = _vector_cycles(cmd.output, kh * kw)
        cost.macs = n * oh * ow * oc * kh * kw
    else:
        # TRANSPOSE_CONV2D: every input pixel spreads over every tap; CONV2D: every output pixel gathers them.
        pixels = _prod(cmd.input.shape[:3]) if isinstance(cmd, C.TransposeConv2D) else n * oh * ow
        cost.compute_cycles = pixels * kh * kw * _ceil_div(wc, lanes) * _ceil_div(oc, R.CONV_OC_LANES)
        cost.macs = pixels * oc * kh * kw * wc
    cost.ops = cost.macs
    _desc_stream(cost, memory, cmd.input, False)
    if cmd.weight_stream_bytes:
        _compressed_weight_stream(cost, memory.class_of(cmd.weights.region, cmd.weights.offset),
                                  cmd.weight_stream_bytes, cmd.weights.num_elements)
    else:
        _desc_stream(cost, memory, cmd.weights, False)
    records = 1 if cmd.per_tensor_params else oc
    record_bytes = R.CHANNEL_PARAM_BYTES_WIDE if cmd.input.dtype == R.DTYPE_INT16 else R.CHANNEL_PARAM_BYTES
    _add_stream(cost, memory.class_of(cmd.params.region, cmd.params.offset), records * record_bytes, False)
    _desc_stream(cost, memory, cmd.output, True)
    return cost


def command_cost(cmd: C.Command, memory: MemoryMap) -> CommandCost:
    """Cycles, bytes and operations of one command."""
    if isinstance(cmd, C.Conv2D):
        return _conv_cost(cmd, memory)
    cost = CommandCost()
    if isinstance(cmd, (C.MaxPool2D, C.AvgPool2D)):
        taps = cmd.filter_h * cmd.filter_w
        cost.compute_cycles = _vector_cycles(cmd.output, taps)
        cost.ops = cmd.output.num_elements * taps
        _desc_stream(cost, memory, cmd.input, False)
        _desc_stream(cost, memory, cmd.output, True)
    elif isinstance(cmd, C._Elementwise):
        cost.compute_cycles = _vector_cycles(cmd.output, 1)
        cost.ops = cmd.output.num_elements
        _desc_stream(cost, memory, cmd.input1, False)
        _desc_stream(cost, memory, cmd.input2, False)
        _desc_stream(cost, memory, cmd.output, True)
    elif isinstance(cmd, C.Table):
        cost.compute_cycles = _vector_cycles(cmd.output, 1)
        cost.ops = cmd.output.num_elements
        _desc_stream(cost, memory, cmd.input, False)
        _add_stream(cost, memory.class_of(cmd.table.region, cmd.table.offset), table_bytes(cmd), False)
        _desc_stream(cost, memory, cmd.output, True)
    elif isinstance(cmd, C.GatherHW):
        # the DMA engine fetches one source element per destination element, through the index maps
        _add_stream(cost, memory.class_of(cmd.src.region, cmd.src.offset),
                    cmd.dst.num_elements * cmd.dst.element_bytes, False)
        _add_stream(cost, memory.class_of(cmd.maps.region, cmd.maps.offset), 2 * (cmd.dst.shape[1] + cmd.dst.shape[2]),
                    False)
        _desc_stream(cost, memory, cmd.dst, True)
    elif isinstance(cmd, C.DmaCopy):
        _desc_stream(cost, memory, cmd.src, False)
        _desc_stream(cost, memory, cmd.dst, True)
    return cost


def table_bytes(cmd: C.Table) -> int:
    """Bytes of a TABLE command's tables: 256 int8 or 513 int16 entries each."""
    entries = R.TABLE_ENTRIES_INT16 if cmd.input.dtype == R.DTYPE_INT16 else R.TABLE_ENTRIES_INT8
    return cmd.table_count * entries * cmd.input.element_bytes


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def table_cost(commands, memory: MemoryMap | None = None) -> TableCost:
    """Costs of a whole table (a list of commands, or encoded bytes).

    `memory` defaults to the datasheet's default bandwidth for every operand; pass MemoryMap.for_board(board)."""
    if isinstance(commands, (bytes, bytearray)):
        commands = C.decode(commands)
    memory = memory or _default_memory_map()
    return TableCost([command_cost(c, memory) for c in commands])


def table_cycles(commands, memory: MemoryMap | None = None) -> int:
    """Total NPU cycles of a table: what PERF_CYCLES will read after running it."""
    return table_cost(commands, memory).cycles


def _default_memory_map() -> MemoryMap:
    """No board given: every operand at the datasheet's default bandwidth (a unit-level estimate)."""
    return MemoryMap()


NPU_TYPE = "edgesdk-npu1"


def npu_peripheral(board):
    """The board's NPU-1 peripheral, or None."""
    return next((p for p in board.peripherals.values() if p.type == NPU_TYPE), None)
