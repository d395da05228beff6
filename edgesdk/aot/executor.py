"""Step 5b: the ahead-of-time executor: one C function that runs every layer in order.

Inputs: the partitioned graph (regions), the memory plan, the rounding mode. For each region it asks the
region's target (edgesdk/targets/api.py) for code through one `CodegenContext`: the host C target returns
kernel calls, the NPU target a call that runs the region's command table (the table itself goes into the
model as data), the DSP target a call into its runtime with the region's serialized subgraph. Nothing is
rendered here: the result (`ExecutorModel`) is data that the templates in edgesdk/templates/ turn into C.
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass, field
from ..importer.names import UniqueIdentifiers, c_identifier, sanitize_name
from ..ir.graph import Graph, Tensor
from ..ir.rounding import requant_rounding
from ..ops.stripes import group_runs
from ..partition.partitioner import Region
from ..targets.api import CodegenOptions
from .memory_plan import MemoryPlan

C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "float32": "float", "bool": "uint8_t"}  # bool tensors: one byte, 0 or 1
WEIGHTS_REGION, ARENA_REGION = 0, 1




@dataclass
class ConstArray:
    """A constant array the generated C defines (a table, weights of a host kernel)."""

    symbol: str
    ctype: str
    values: np.ndarray
    comment: str = ""


@dataclass
class Step:
    """One block of the run function: the code one target generated for (part of) a region."""

    comment: str
    code: str = ""
    target: str = ""  # the target that generated it (Executor sets it for every step)
    layers: list = field(default_factory=list)  # op indices it runs (profiles)
    commands: list | None = None  # op index of each command of the unit it starts (RegionCode.add)
    # Nesting in the run function's control flow (WHILE loops, IF branches): the block's own level and the level
    # after it (a block that opens a brace nests what follows; nest_steps), for the indentation only.
    depth: int = 0
    depth_after: int = 0


@dataclass
class Blob:
    """Constant bytes in flash that a target's generated data addresses by offset (the NPU's weights and channel
    records): the core renders it into model_data.c as `const uint8_t <symbol>[]` and counts it as flash."""

    name: str
    symbol: str
    data: bytearray = field(default_factory=bytearray)
    labels: list = field(default_factory=list)  # (offset, size, label): what each part holds (comments)
    align: int = 16  # of the whole array
    charge: object = field(default=None, repr=False, compare=False)  # counts added bytes (flash budget)

    def add(self, data: bytes, align: int = 16, label: str = "") -> int:
        """Append `data` at the next multiple of `align`; return its offset."""
        if self.charge is not None:
            self.charge(-len(self.data) % align + len(data), label)
        self.data.extend(b"\0" * (-len(self.data) % align))
        offset = len(self.data)
        self.data.extend(bytes(data))
        self.labels.append((offset, len(data), sanitize_name(label)))
        self.align = max(self.align, align)
        return offset


class DryBlob(Blob):
    """A dry context's blob (dry_context): the offsets and the flash charge Blob.add gives, without the bytes and
    labels, which nothing reads (the cascade search's pricing lowers every layer's weights into one)."""

    size = 0  # bytes Blob.add would hold by now

    def add(self, data: bytes, align: int = 16, label: str = "") -> int:
        offset = self.size + (-self.size % align)
        if self.charge is not None:
            self.charge(offset - self.size + len(data), label)
        self.size = offset + len(data)
        self.align = max(self.align, align)
        return offset


@dataclass
class IoTensor:
    """A model input or output as the generated API exposes it."""

    name: str  # C identifier
    model_name: str
    dtype: str
    shape: tuple
    nbytes: int
    arena_offset: int | None  # None: a streamed input (never whole in the arena)
    quant: dict | None
    # A streamed input (edgesdk build --stream-input): the caller gives its rows through
    # edgesdk_default_read_input_rows(); `stream_offset` is where it starts among all streamed inputs' bytes
    # (the test harness keeps them one after another), `row_bytes` the bytes of one row.
    streamed: bool = False
    stream_offset: int = 0
    row_bytes: int = 0


@dataclass
class StateTensor:
    """A persistent tensor and how edgesdk_default_reset sets it: copied from `initial` (a const array of its
    bytes in flash) or filled with `fill` (TFLite's reset value: the zero point of an int8 tensor, else 0)."""

    name: str  # model name (comment text)
    arena_offset: int
    nbytes: int
    initial: str | None  # symbol of the initial bytes, or None
    fill: int


@dataclass
class ExecutorModel:
    """Everything the templates render into the model's C: the run function's steps and the data they use."""

    model_name: str
    arena_bytes: int
    steps: list = field(default_factory=list)
    declarations: list = field(default_factory=list)  # file-scope constant data (params structs, tables)
    functions: list = field(default_factory=list)  # file-scope helper functions a target's code calls
    includes: list = field(default_factory=list)  # headers model.c includes for the targets' code
    consts: list = field(default_factory=list)
    blobs: dict = field(default_factory=dict)  # name -> Blob (ctx.blob)
    target_data: dict = field(default_factory=dict)  # target name -> whatever its codegen keeps per build
    region_estimates: list = field(default_factory=list)  # per region: RegionEstimate or None
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    state: list = field(default_factory=list)  # StateTensor: what edgesdk_default_reset sets


class CodegenContext:
    """What a target's codegen may ask of the executor (edgesdk/targets/api.py, Target.generate).

    Placement:   tensor_ptr(t) -> C pointer expression; arena_offset(t) -> int; scratch_offset(op) -> int
    Constants:   const_array(hint, array, ctype, comment) -> symbol in flash; blob(name) -> a named blob of
                 constant bytes in flash that the target addresses by offset (Blob.add(bytes) -> offset)
    File scope:  declare(data text), define_function(key, text), include(header), symbol(hint) -> identifier
    Arithmetic:  rounding_for(op) -> "double" | "single" | "fp64" | "lut"; rounding_mode -> "ref" | "tflm"
    Per target:  data(name, default) -> a per-build object the target keeps (e.g. its list of tables)
    `plan` is None during the scratch-sizing dry run (offsets read as 0 then).
    """

    blob_type = Blob  # DryBlob in a dry context

    def __init__(self, model: ExecutorModel, plan: MemoryPlan | None, symbols: UniqueIdentifiers,
                 options: CodegenOptions):
        self.model = model
        self.plan = plan
        self.symbols = symbols
        self.options = options
        self._declared: set = set()
        self._flash_bytes = 0  # constants made so far (const arrays and the NPU weights blob)

    @property
    def rounding_mode(self) -> str:
        return self.options.rounding_mode

    @property
    def board(self):
        return self.options.board

    def layer_choice(self, op, name: str, default: bool) -> bool:
        """A tuning schedule's per-layer switch for `op` (CodegenOptions.layer_choice), else `default`."""
        return self.options.layer_choice(op, name, default)

    @property
    def flash_bytes(self) -> int:
        """Bytes of constants made so far in this context."""
        return self._flash_bytes

    def _charge_flash(self, nbytes: int, what: str = "") -> None:
        """Count constants against options.flash_limit: past it the model cannot fit, so stop before making
        every weight layout of a model that cannot fit (in dry contexts too)."""
        self._flash_bytes += nbytes
        limit = self.options.flash_limit
        if limit is not None and self._flash_bytes > limit:
            from ..errors import MemoryFitError

            board = self.board.name if self.board is not None else "the board"
            where = f", at {what}" if what else ""
            raise MemoryFitError(
                f"The model does not fit board '{board}': its weights take more than {self._flash_bytes} bytes "
                f"of flash (found while generating its code{where}) but the board has {limit}: over by more "
                f"than {self._flash_bytes - limit} bytes. Use a smaller model or a board with more flash.")

    def tensor_ptr(self, tensor: Tensor) -> str:
        return f"(({C_TYPES[tensor.dtype]} *)(edgesdk_arena + {self.arena_offset(tensor)}))"

    def arena_offset(self, tensor: Tensor) -> int:
        return self.plan.offset(tensor) if self.plan is not None else 0

    def const_array(self, name_hint: str, array: np.ndarray, ctype: str, comment: str = "") -> str:
        """A constant array in flash (model_data.c); `comment` says which layer it belongs to."""
        symbol = self.symbols.unique(name_hint)
        values = np.asarray(array).reshape(-1)
        self._charge_flash(values.nbytes, comment)
        self.model.consts.append(ConstArray(symbol, ctype, values, comment))
        return symbol

    def blob(self, name: str) -> Blob:
        """The named constant blob of this build (created on first use; its C symbol is edgesdk_<name>). A
        target puts the bytes its generated data addresses by offset there (e.g. the NPU's weights)."""
        if name not in self.model.blobs:
            self.model.blobs[name] = self.blob_type(name, "edgesdk_" + c_identifier(name, "blob"))
        blob = self.model.blobs[name]
        blob.charge = self._charge_flash  # constants count against the flash budget as they are added
        return blob

    def declare(self, c_text: str) -> None:
        self.model.declarations.append(c_text)

    def define_function(self, key: str, c_text: str) -> None:
        """A static helper function for the run function's blocks, emitted once per build under `key`."""
        if key not in self._declared:
            self._declared.add(key)
            self.model.functions.append(c_text)

    def include(self, header: str) -> None:
        if header not in self.model.includes:
            self.model.includes.append(header)

    def symbol(self, name_hint: str) -> str:
        return self.symbols.unique(name_hint)

    def rounding_for(self, op) -> str:
        return requant_rounding(op, self.rounding_mode)

    def scratch_offset(self, op) -> int:
        """The arena offset of `op`'s scratch (its target answered scratch_bytes for it before planning)."""
        return self.plan.scratch[op][0] if self.plan is not None and op in self.plan.scratch else 0

    def data(self, target_name: str, default_factory):
        return self.model.target_data.setdefault(target_name, default_factory())


def dry_context(name: str, options: CodegenOptions) -> CodegenContext:
    """A codegen context whose output goes nowhere (a throwaway ExecutorModel, no memory plan: offsets read as
    0; blobs keep no bytes): for the questions asked before the real code is generated (scratch sizes, cascade
    costs)."""
    ctx = CodegenContext(ExecutorModel(name, 0), None, UniqueIdentifiers(), options)
    ctx.blob_type = DryBlob
    return ctx


def collect_scratch_sizes(graph: Graph, regions: list, options: CodegenOptions) -> dict:
    """Dry-run every region's codegen question "how much scratch?" before planning: {op: bytes}."""
    from ..targets import get_target

    ctx = dry_context(graph.name, options)
    scratch: dict = {}
    for region in regions:
        scratch.update(get_target(region.target).scratch_bytes(region, ctx))
    return scratch


def build_executor(graph: Graph, regions: list, plan: MemoryPlan, options: CodegenOptions) -> ExecutorModel:
    """Ask each region's target for its code, in execution order; collect it as data for the templates. The
    one real codegen run of a build (the dry runs before it use dry_context)."""
    from ..targets import get_target

    board = options.board
    model = ExecutorModel(c_identifier(graph.name, "model"), plan.arena_bytes)
    ctx = CodegenContext(model, plan, UniqueIdentifiers(), options)
    target_of = {op: region.target for region in regions for op in region.ops}
    for region in regions:
        for unit in region_units(region, crossing_groups(plan.cascades, target_of)):
            if isinstance(unit, Region):
                _add_code(model, get_target(unit.target).generate(unit, ctx), unit.target, unit.ops)
                continue
            for run in group_runs(unit, target_of.get):  # a group that crosses targets: each run by its own
                _add_code(model, get_target(run.key).generate_stripes(run.part, ctx), run.key, run.part.ops)
    # each region's estimate once all its code exists (a group crossing targets makes its later regions' code)
    model.region_estimates = [get_target(region.target).estimate(region, board, model) for region in regions]
    nest_steps(model.steps)
    model.inputs = [_io_tensor(t, plan, ctx.symbols) for t in graph.inputs]
    _mark_streamed(model.inputs, graph.inputs, plan)
    model.outputs = [_io_tensor(t, plan, ctx.symbols) for t in graph.outputs]
    model.state = [_state_tensor(t, plan, ctx) for t in graph.state]
    return model


def _add_code(model: ExecutorModel, code, target: str, ops) -> None:
    """The blocks one target generated for `ops`, as steps of the run function."""
    for k, (comment, text) in enumerate(code.blocks):
        layers = code.block_layers[k] if k < len(code.block_layers) else None
        commands = code.block_commands[k] if k < len(code.block_commands) else None
        model.steps.append(Step(comment, text, target, [op.index for op in ops] if layers is None else layers,
                                commands))


def crossing_groups(cascades, target_of: dict) -> dict:
    """op -> its cascade group, for the groups whose ops run on more than one target."""
    return {op: g for g in cascades or () if len({target_of[op] for op in g.ops}) > 1 for op in g.ops}


def region_units(region, crossing: dict) -> list:
    """A region's code in order: Regions of its ops (the region itself when no group that crosses targets
    touches it) and, at its first op, each group that crosses targets (its code runs all its ops, this
    region's and the next regions')."""
    from dataclasses import replace

    if not any(op in crossing for op in region.ops):
        return [region]
    units, pending = [], []
    for op in region.ops:
        group = crossing.get(op)
        if group is None:
            pending.append(op)
            continue
        if pending:
            units.append(replace(region, ops=pending))
            pending = []
        if op is group.ops[0]:
            units.append(group)
    if pending:
        units.append(replace(region, ops=pending))
    return units


def nest_steps(steps: list) -> None:
    """Each step's nesting level: a block whose code ends with an opening brace (`for (;;) {`, `} else {`) nests
    the blocks after it, one that starts with a closing brace ends a level (its own code is on the outer one).
    Every other block is balanced."""
    depth = 0
    for step in steps:
        code = step.code.strip()
        step.depth = max(depth - code.startswith("}"), 0)
        depth = step.depth_after = step.depth + code.endswith("{")


def _mark_streamed(io: list, tensors: list, plan: MemoryPlan) -> None:
    """The inputs a cascade group streams have no slot: the caller gives their rows (IoTensor.streamed)."""
    from ..ops.stripes import row_bytes

    source = {t: (g.sources[k] if g.sources else t) for g in plan.cascades for k, t in enumerate(g.streamed)}
    offset = 0
    for entry, t in zip(io, tensors):
        if t in source:
            entry.streamed, entry.arena_offset, entry.stream_offset, entry.row_bytes = True, None, offset, row_bytes(t)
            s = source[t]  # as the caller gives it: a uint8 model edge keeps its name, type and zero point
            entry.model_name, entry.dtype = s.name, s.dtype
            if s.quant is not None:
                entry.quant = {"scale": [float(v) for v in s.quant.scale],
                               "zero_point": [int(z) for z in s.quant.zero_point]}
            offset += t.nbytes


def _state_tensor(t: Tensor, plan: MemoryPlan, ctx: CodegenContext) -> StateTensor:
    initial = None
    if t.initial is not None:
        raw = np.frombuffer(np.ascontiguousarray(t.initial, dtype=t.initial.dtype).tobytes(), np.uint8)
        initial = ctx.const_array(f"state_{t.name}_initial", raw, "uint8_t", sanitize_name(f"initial value of '{t.name}'"))
    fill = int(t.quant.zero_point[0]) & 0xFF if t.dtype == "int8" and t.quant is not None else 0
    return StateTensor(t.name, plan.offset(t), t.nbytes, initial, fill)


def _io_tensor(t: Tensor, plan: MemoryPlan, symbols: UniqueIdentifiers) -> IoTensor:
    quant = None
    if t.quant is not None:
        quant = {"scale": [float(s) for s in t.quant.scale], "zero_point": [int(z) for z in t.quant.zero_point]}
    return IoTensor(symbols.unique(t.name), t.name, t.dtype, tuple(int(d) for d in t.shape), t.nbytes,
                    plan.offset(t), quant)
