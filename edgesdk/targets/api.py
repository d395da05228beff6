"""The target plugin API: what an accelerator (or the host core) declares to edgesdk.

A target is one object, a subclass of `Target`, that a package exposes under the Python entry-point group
`edgesdk.targets` (see docs/porting-a-new-accelerator.md):

    [project.entry-points."edgesdk.targets"]
    mytarget = "my_package:TARGET"

The built-in targets ("npu", "c", "dsp") are declared the same way in edgesdk's own pyproject.toml. What a
target provides, and which step of the flow uses it:

    support            partitioner, `edgesdk inspect`   ops it takes and the named constraints on them
    check_board        target list parsing              refuse a board without the hardware
    scratch_bytes      memory planner                   per-op scratch the generated code needs
    in_place           memory planner                   the in-place rule its code honours for an op and input
                                                        ("exact", "raster" or None: edgesdk/aot/memory_plan.py)
    can_stripe /       cascade search (aot/cascade.py)  ops it can run in row stripes, and what a group of them
    stripe_cost /                                       costs in stripes and whole (its cycles), and how much
    default_model_increase                              more a default build's groups may cost the model on it
    stripe_cost_floor  cascade search                   a cheap lower bound on that cost: no price where it is
                                                        already over the budget (optional)
    generate_stripes   executor (aot/executor.py)       one run of a group that crosses targets
    generate           AOT executor                     code for one region: C statements in the run
                                                        function, plus constants / command tables /
                                                        serialized graphs through the context
    render_sources     templates                        extra generated files (e.g. the NPU's tables)
    flash_bytes        memory fit check, report         flash its own rendered data takes
    flash_data         export README                    what that data is, in words
    flash_lower_bound  early fit check                  flash a region takes at least (before codegen)
    firmware_sources   firmware build                   its HAL driver / runtime / kernel sources, copied
                                                        into OUT/src/targets/<name>/ and compiled
    peripherals        emulator, Renode platform        the model of its hardware for the built-in
                                                        emulator, its Renode type, C# sources, native
                                                        library and .repl attributes
    estimate           report, tuning                   cost model: cycles of one region
    estimate_layers    report.json `layers`, build -v   cost model per layer: cycles (or instructions),
                                                        lower bound, bytes moved
    verify             build-time safety proof          prove its own outputs stay inside their regions
    report / summary   report.json, `edgesdk build`     its own figures (report["target_reports"][name]) and
                                                        the summary lines the CLI prints for them
    harness_failure    test harness (main.c)            C statements printing its unit's error details
                                                        when a run fails (the runner parses them)
    error_codes        model.h, export metadata.json    the nonzero statuses its code makes
                                                        edgesdk_default_run() return, and what each means
    boards_dirs        board lookup                     extra boards (board.json + .repl) it ships

What the context gives `generate` (edgesdk.aot.executor.CodegenContext): arena offsets, constant arrays, named
blobs of constant bytes (`ctx.blob(name).add(bytes) -> offset`, e.g. weights a command stream addresses by
offset), file-scope declarations and helper functions, includes, unique symbols, the rounding mode, and
`ctx.data(name, factory)`: the target's own per-build data (its tables, graphs, layers), which its other hooks
read back from `model.target_data[name]`. Templates of its own it renders with `render_template`. Results its
hooks work out more than once in one compile (an op lowered for its support check, the cascade search and
`generate`) it may keep in `compile_memo(name)`, which lives for that compile only.

Everything except `name`, `support` and `generate` has a default.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable

from ..dataclass_cache import dataclass, field, replace
from ..errors import UsageError

# Inside compile_scope(): memo name -> that memo (a dict) for the compile under way.
_COMPILE_MEMOS: ContextVar = ContextVar("edgesdk_compile_memos", default=None)


@contextmanager
def compile_scope():
    """Open for the duration of one compile (edgesdk.compiler.compile_model): the memos `compile_memo` hands out
    live until it closes, so nothing a target remembers outlives the compile (the next compile of the same model
    works everything out again)."""
    token = _COMPILE_MEMOS.set({})
    try:
        yield
    finally:
        _COMPILE_MEMOS.reset(token)


def compile_memo(name: str) -> dict:
    """A target's memo named `name` for the compile under way: for results its hooks work out more than once in
    one compile (an op lowered for the partitioner's check, the cascade search's pricing and the codegen), keyed
    on what each result depends on. Outside compile_scope() a new empty dict on every call: nothing is kept."""
    memos = _COMPILE_MEMOS.get()
    if memos is None:
        return {}
    return memos.setdefault(name, {})


@dataclass(frozen=True)
class CodegenOptions:
    """The build settings every code generator of one build sees, handed to each codegen context explicitly
    (the real one and the dry ones that size scratch or cost stripes), so no setting travels by a hidden
    channel.

    rounding_mode:  "ref" | "tflm" | ... (BuildOptions.rounding)
    board:          the edgesdk.board.Board being built for (None in unit tests of a lowering)
    schedule:       the tuning schedule applied (edgesdk.tune.Schedule), None for a default build
    flash_limit:    bytes of flash the constants may fill before the build stops as "does not fit" (None: no
                    limit; the tuner compares candidates that may not fit)
    """

    rounding_mode: str = "ref"
    board: object = None
    schedule: object = None
    flash_limit: int | None = None

    def layer_choice(self, op, name: str, default: bool) -> bool:
        """The schedule's per-layer switch `name` (one the op's target declares in Target.layer_switches) for
        `op`, else `default`: a default build always gets `default`."""
        if self.schedule is None or not op.file_operator:  # ops inlined from WHILE / IF subgraphs keep the defaults
            return default
        value = self.schedule.switch(op.index, name)
        return default if value is None else value


@dataclass
class RegionCode:
    """What `Target.generate` returns for one region: blocks of the run function, in order.

    Each block is (comment, C statements). The statements run inside
    `int32_t edgesdk_default_run(...)`, where `int32_t status;` is declared; they may `return status;` with a
    nonzero EDGESDK_ERR_* / driver code to stop the inference. The comment names the model layers the block
    implements (it is sanitized again before it reaches C).
    """

    blocks: list = field(default_factory=list)  # [(comment, code)]
    # Per block, for profiles (edgesdk run --profile): the op indices it runs (None: the region's ops) and,
    # when it starts a peripheral whose native model reports its commands (P_set_command_observer), the op
    # index of each command the block issues, in order over the block's runs (one table of N commands, or N
    # runs of one command each).
    block_layers: list = field(default_factory=list)
    block_commands: list = field(default_factory=list)

    def add(self, comment: str, code: str, layers: list | None = None, commands: list | None = None) -> "RegionCode":
        self.blocks.append((comment, code))
        self.block_layers.append(None if layers is None else list(layers))
        self.block_commands.append(None if commands is None else list(commands))
        return self


CPU_UNIT = "cpu"  # RegionEstimate.unit of the host core: its counts are instructions


@dataclass(frozen=True)
class RegionEstimate:
    """A cost model's answer for one region: cycles of the unit that runs it, at its clock."""

    cycles: int
    clock_hz: int
    unit: str  # "cpu" (CPU_UNIT: the host core's instructions) or the peripheral instance counted: "npu0", ...

    @property
    def microseconds(self) -> float:
        return self.cycles * 1e6 / self.clock_hz if self.clock_hz else 0.0


@dataclass(frozen=True)
class LayerEstimate:
    """A cost model's answer for one layer (op) of a region, in the unit of the region's RegionEstimate
    (cycles of an accelerator, instructions of the host core): `count` what it spends on the layer,
    `lower_bound` what no implementation on that unit can go below (None: the target claims none).

    The byte figures are what the unit moves for the layer; None lets the core take them from the graph
    (activation inputs read, outputs written, constant inputs read once). `losses` says why count exceeds
    lower_bound: {cause: amount in the count's unit}, the target's own cause names (None: no breakdown)."""

    op_index: int
    count: int | None
    lower_bound: int | None = None
    activation_read_bytes: int | None = None
    activation_write_bytes: int | None = None
    weight_read_bytes: int | None = None
    losses: dict | None = None


class EmulatedDevice:
    """A peripheral model for the built-in emulator, written in Python.

    The emulator maps `size` bytes of MMIO at the peripheral's base; guest loads and stores in that window
    call `read`/`write` (offset from the base, access size 1/2/4). `attach` hands over the guest's memory
    (`GuestBus`: bounds-checked numpy views of flash and SRAM) before the CPU starts. `stats` returns counters
    summed over the run (shown by `edgesdk run`, e.g. {"cycles": ...}). Raise `DeviceFault` from a callback
    for an access the hardware would not accept (a bus error): the emulator stops and names it.
    """

    def attach(self, bus) -> None:
        self.bus = bus

    def read(self, offset: int, size: int) -> int:
        raise NotImplementedError

    def write(self, offset: int, size: int, value: int) -> None:
        raise NotImplementedError

    def stats(self) -> dict:
        return {}


class DeviceFault(Exception):
    """Raised by an EmulatedDevice for an access the hardware rejects (stops the emulator with this text)."""


class ReplAttributes:
    """What a peripheral's entry in a board's Renode platform (.repl) says beyond its type, base, size and
    IRQ line (which the core reads for every target peripheral): the constructor attributes of its Renode
    class that carry board.json facts. `python3 -m edgesdk.renode check` compares them with board.json,
    `scaffold` writes them, and the built-in emulator's machine, built from the .repl, gets the board.json
    properties they give. The default carries none."""

    def expected(self, peripheral, board) -> dict:
        """The attributes ({name: int | str | bool}) the entry must have for board.json's `peripheral` on `board`."""
        return {}

    def props(self, attributes: dict) -> dict:
        """The board.json properties (Peripheral.props) the entry's attributes give."""
        return {}

    def memory_kinds(self, attributes: dict) -> dict:
        """{(base, size): "rom" | "ram"} of the memories the attributes declare (a .repl read without board.json
        takes its memory kinds from these)."""
        return {}


class MemoryWindows(ReplAttributes):
    """A bus master's windows as constructor attributes <memory>Base and <memory>Size (edgesdk's C#
    peripherals take flashBase/flashSize, read only, and sramBase/sramSize, read and write): the board's
    flash and SRAM."""

    KINDS = (("flash", "rom"), ("sram", "ram"))

    def expected(self, peripheral, board) -> dict:
        regions = {"flash": board.flash, "sram": board.sram}
        out = {}
        for prefix, _ in self.KINDS:
            out[f"{prefix}Base"] = regions[prefix].base
            out[f"{prefix}Size"] = regions[prefix].size
        return out

    def memory_kinds(self, attributes: dict) -> dict:
        return {(attributes[f"{prefix}Base"], attributes[f"{prefix}Size"]): kind for prefix, kind in self.KINDS
                if f"{prefix}Base" in attributes and f"{prefix}Size" in attributes}


@dataclass(frozen=True)
class PeripheralModel:
    """The hardware a target drives, as the board, the emulator and Renode name it.

    `type` is the board.json peripheral type ("edgesdk-npu1"), `renode_type` the .repl type
    ("Edgesdk.Npu1"), `create(peripheral, board)` builds the built-in emulator's model: an `EmulatedDevice`
    (Python), or a `NativeModelSpec` (a C model compiled into the emulator's library).
    `renode_sources` are the files Renode loads for it (`include @file`). `native`: `create` returns a native
    model spec that the emulator compiles into its C library (no Python on the hot path), else an
    EmulatedDevice. `renode_library(out_dir) -> Path` builds, into out_dir, the host library its Renode
    peripheral P/Invokes (named as its DllImport resolves it, lib<name>.so); None when it loads none. A build's
    Renode platform includes the peripheral only when the build uses the target (edgesdk/renode/build_platform.py).
    `repl_attributes` relates the .repl entry's attributes to board.json (ReplAttributes: none by default).
    """

    type: str
    renode_type: str
    create: Callable
    renode_sources: tuple = ()
    native: bool = False
    renode_library: Callable | None = None
    repl_attributes: ReplAttributes = field(default_factory=ReplAttributes)


@dataclass(frozen=True)
class NativeModelSpec:
    """A native peripheral model (PeripheralModel.native): C sources the emulator compiles into its library,
    next to every other native model the board uses (the NPU's, a plugin's...), one instance per board
    peripheral. The model exports, named `<symbol_prefix>_<function>` (every other symbol static, so models
    link side by side):

        void *P_create(void);                 void P_destroy(void *dev);
        void P_set_bus(void *dev, int (*read)(void *ctx, uint32_t addr, void *buf, uint32_t len),
                       int (*write)(void *ctx, uint32_t addr, const void *buf, uint32_t len), void *ctx);
        uint32_t P_reg_read(void *dev, uint32_t offset);
        void P_reg_write(void *dev, uint32_t offset, uint32_t value);
      optional:
        int P_irq_pending(void *dev);         /* its interrupt line */
        int P_configure(void *dev, const uint32_t *words, uint32_t count);      /* `settings`, 0 = accepted */
        int P_set_memory_class(void *dev, uint32_t base, uint32_t size, uint32_t kind, uint32_t bpc_x256);
        void P_set_command_observer(void *dev, void (*fn)(void *ctx, uint32_t command, uint64_t cycles), void *ctx);

    Registers are 32-bit words (other accesses stop the emulator naming the peripheral). A write with
    `start_mask` to `ctrl_offset` runs the model synchronously; the performance counters (`perf_counters`)
    describe that run and are summed over the run of the firmware, with the starts counted as `starts_name`:
    `edgesdk run` shows them per peripheral (`npu0: cycles ..., starts ...`)."""

    sources: tuple
    include_dirs: tuple
    ctrl_offset: int
    start_mask: int
    perf_counters: dict  # stat name -> (low word offset, high word offset or None)
    memory_classes: tuple = ()  # (base, size, kind, bytes_per_cycle_x256) the model is told about the board
    symbol_prefix: str = ""  # required: the model's exported functions are <symbol_prefix>_create, ...
    settings: tuple = ()  # 32-bit words for P_configure (e.g. the board entry's timing figures)
    starts_name: str = "starts"

    @classmethod
    def from_registers(cls, sources, include_dirs, registers, memory_classes=(), **options) -> "NativeModelSpec":
        """`registers`: module (or dict) with REG_CTRL, CTRL_START and REG_PERF_* offsets; `options`: the
        other fields (symbol_prefix, settings, starts_name)."""
        values = registers if isinstance(registers, dict) else vars(registers)
        return cls(tuple(sources), tuple(include_dirs), values["REG_CTRL"], values["CTRL_START"],
                   perf_counters_from_registers(values), tuple(tuple(c) for c in memory_classes), **options)


def perf_counters_from_registers(registers) -> dict:
    """[REG_]PERF_<NAME> or [REG_]PERF_<NAME>_LO/_HI register offsets (module or dict) -> {name: (lo, hi)}."""
    values = registers if isinstance(registers, dict) else vars(registers)
    counters = {}
    for key, offset in values.items():
        name = key.removeprefix("REG_")
        if not name.startswith("PERF_") or not isinstance(offset, int) or name.endswith("_HI"):
            continue
        base = name[len("PERF_"):].removesuffix("_LO")
        high = values.get(key.removesuffix("_LO") + "_HI") if name.endswith("_LO") else None
        counters[base.lower()] = (offset, high)
    return counters


def render_template(directory, name: str, **context) -> str:
    """Render a target's own Jinja template from `directory` with edgesdk's settings (strict undefined,
    trimmed blocks): a target keeps its templates beside its code."""
    import jinja2

    from ..resources import template_bytecode_cache

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(directory)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
                             bytecode_cache=template_bytecode_cache())
    return env.get_template(name).render(**context)


class Target:
    """Base class of every target; subclass it and set `name`, `description`, `support`."""

    name: str = ""
    description: str = ""
    support = None  # edgesdk.partition.target.TargetSupport
    # Board peripheral types this target needs one of (empty: runs on the host core).
    peripheral_types: tuple = ()

    # -- partitioning --
    def check_board(self, board) -> None:
        """Raise UsageError if `board` lacks the hardware this target drives."""
        if self.peripheral_types and self.peripheral_of(board) is None:
            raise UsageError(
                f"Board '{board.name}' has no peripheral of type {' or '.join(self.peripheral_types)}, which "
                f"target '{self.name}' drives. Choose another --target list (e.g. leave '{self.name}' out) or a "
                "board that has it.")

    def peripheral_of(self, board):
        """The board's peripheral this target drives (the first of its types), or None."""
        return next((p for p in board.peripherals.values() if p.type in self.peripheral_types), None)

    # -- memory planning and codegen --
    def scratch_bytes(self, region, ctx) -> dict:
        """{op: bytes of scratch} that the region's code needs in the arena while that op runs."""
        return {}

    def in_place(self, op, x) -> str | None:
        """The rule under which the code this target generates for `op` may write op's output over its input
        `x` when x dies at op (edgesdk/aot/memory_plan.py's module docstring): "exact" (elementwise, element i
        read before written), "raster" (window ops and FULLY_CONNECTED produce output pixels in raster order)
        or None (never overlap: the default, safe for any code)."""
        return None

    def layer_switches(self, op) -> dict:
        """The per-layer code choices a tuning schedule may switch for `op` on this target, {name: default}
        (e.g. {"dense_weights": False}); codegen reads them with ctx.layer_choice(op, name, default), `edgesdk
        tune` flips each one, and a schedule stores them under this target's name. Empty by default: nothing
        to tune."""
        return {}

    def can_stripe(self, op) -> bool:
        """Can this target run `op` on a row range of its output, reading only the input rows that range needs
        (edgesdk/ops/stripes.py: input_rows), so that a chain of such ops runs in stripes? False by default."""
        return False

    def stripe_cost(self, group, ctx) -> tuple | None:
        """(cycles of the cascade group run in stripes, cycles of its ops run whole), for the cascade search,
        or None when the target cannot lower this group (e.g. a row range a kernel cannot take); `ctx` is a
        dry codegen context (edgesdk/aot/executor.py: dry_context) that nothing reaches the build from. Needed
        when can_stripe answers True for some op."""
        raise NotImplementedError(f"target '{self.name}' can stripe ops but has no stripe_cost")

    def stripe_cost_floor(self, group, ctx) -> int | None:
        """A lower bound on stripe_cost(group, ctx)[0], cheaper to work out than the price, or None (the
        default: no bound). The rule: when it returns a number, stripe_cost returns a cost (not None) whose
        cycles in stripes are at least that number. The cascade search skips pricing a group this bound
        already puts over its cycle budget (edgesdk/aot/cascade.py, Striping.floor_costs): the same decisions,
        fewer prices."""
        return None

    def stripes_use_scratch(self, op) -> bool:
        """Does `op`'s code in a cascade group use the scratch scratch_bytes asked for? The planner leaves it
        out of the arena when not. True (keep it) by default."""
        return True

    def whole_cost(self, ops, ctx) -> int | None:
        """Cycles of `ops` run whole as an op-by-op build runs them, where that differs from stripe_cost's
        `whole` (which prices each op in the form its stripes take): the fit search's budget is over the
        model's op-by-op cycles (edgesdk/aot/cascade.py, fit_cascades). None: stripe_cost's figure."""
        return None

    # The extra cost (a fraction of the model's op-by-op cost on this target) that the cascade groups of a default
    # build, together, may add on this target (edgesdk/aot/cascade.py, Striping.default_budget); None: the
    # core's DEFAULT_MODEL_INCREASE. A model that does not fit gets groups up to FIT_MAX_INCREASE of the model.
    default_model_increase: float | None = None

    # May a cascade group join this target's ops with other targets' (an NPU convolution feeding a host
    # layer, edgesdk/aot/cascade.py)? Such a target lowers each run of its stripe events with generate_stripes.
    stripes_with_other_targets: bool = False

    def generate_stripes(self, part, ctx) -> RegionCode:
        """Code for one run of consecutive stripe events of a cascade group that crosses targets (a GroupPart,
        edgesdk/ops/stripes.py: its ops, its events, the group's stripe buffers), which the run function runs
        between the other targets' runs: its work is done when the code's blocks return. Needed when
        stripes_with_other_targets is True. A layer's constants are made once per build, not once per run."""
        raise NotImplementedError(f"target '{self.name}' cannot run a cascade group with other targets")

    def host_library(self, ops, mode: str):
        """`ops` compiled on the host as this target's code computes them in rounding `mode`, for another target
        that tabulates an op's value over every input code (NPU-1's TABLE): an object whose `run(op, {tensor:
        array})` returns the op's outputs. None by default: this target computes nothing on the host."""
        return None

    def generate(self, region, ctx) -> RegionCode:
        raise NotImplementedError

    def render_sources(self, model, env, common: dict) -> dict:
        """Extra generated files {file name: text} for OUT/src (after all regions are generated)."""
        return {}

    def firmware_sources(self, model=None) -> list:
        """C sources and headers the firmware needs for this target (its driver/runtime/kernels): for the
        ExecutorModel `model`, only what its code uses; with None, everything the target may need."""
        return []

    def flash_bytes(self, model) -> int:
        """Bytes of flash the target's own generated data takes (what it renders itself, e.g. serialized
        graphs); data placed through ctx.const_array / ctx.blob is counted already."""
        return 0

    def flash_lower_bound(self, region) -> int:
        """Bytes of flash the region's code will take at least (e.g. weights it stores at least densely),
        computed from the graph alone, before any weight layout is made: the compiler refuses a model whose
        bounds exceed the board's flash before it spends memory on layouts. 0 (the default) claims nothing."""
        return 0

    # What its generated constants in flash hold besides the model's weights, in a few words (e.g. "command
    # tables"): an export's README tells the integrator what its .rodata holds. Empty: nothing else.
    flash_data: str = ""

    # -- hardware model, cost model, proof --
    def peripherals(self) -> list:
        """PeripheralModel for each peripheral type this target brings a model of."""
        return []

    def estimate(self, region, board, model=None) -> RegionEstimate | None:
        """Cost model: cycles to run the region (None: no estimate). `model` is the ExecutorModel once the
        region's code is generated (a target may read what it generated), None when asked beforehand."""
        return None

    def cycles_on(self, board, cycles: int) -> RegionEstimate:
        """`cycles` of the unit this target runs on, for `estimate` to return: the board peripheral it drives,
        named by its instance ("npu0") at its clock_hz, or the host core ("cpu", cpu.clock_hz) for a target
        that drives none."""
        if not self.peripheral_types:
            return RegionEstimate(cycles, int(board.cpu.get("clock_hz", 0)), CPU_UNIT)
        peripheral = self.peripheral_of(board)
        if peripheral is None:  # check_board refuses such a build; an estimate asked anyway has no clock
            return RegionEstimate(cycles, 0, self.name)
        return RegionEstimate(cycles, int(peripheral.props.get("clock_hz", 0)), peripheral.name)

    def estimate_layers(self, region, board, model=None) -> list:
        """Cost model per layer: one LayerEstimate per op of the region, in op order, in the unit of
        `estimate` (report.json `layers`, `edgesdk build --verbose`). The counts should add up to the
        region's estimate. The default asks `estimate` about each op as a region of its own (`model` None:
        before its code), and the region's own estimate for a region of one op; no lower bound."""
        if len(region.ops) == 1:
            whole = self.estimate(region, board, model)
            return [LayerEstimate(region.ops[0].index, whole.cycles if whole is not None else None)]
        result = []
        for op in region.ops:
            alone = self.estimate(replace(region, ops=[op]), board, None)
            result.append(LayerEstimate(op.index, alone.cycles if alone is not None else None))
        return result

    def verify(self, compiled, proof) -> None:
        """Prove the target's generated data (tables, serialized graphs, host calls) stays inside its memory
        regions; call proof.fail(text) on a violation and proof.count(kind) for what it proved."""

    # -- reports --
    def report(self, model) -> dict:
        """Its figures for report.json (`target_reports[name]`), from the ExecutorModel: e.g. cycles, tables."""
        return {}

    def summary(self, section: dict) -> list:
        """Lines for `edgesdk build`'s summary, from its report.json section (nothing by default)."""
        return []

    def harness_failure(self) -> str:
        """C statements for the test harness, run after a failed inference with `int32_t status`: print this
        target's error details (edgesdk_console_puts / _put_int) when the status is its unit's. The headers it
        needs come from `harness_includes`."""
        return ""

    harness_includes: tuple = ()

    # The statuses its generated code can make edgesdk_default_run() return, as (name, value, meaning): model.h
    # defines EDGESDK_ERR_<name> for each (so a caller can test for it by name) and the export's metadata.json
    # lists them. Values are negative and should not collide with another target's or the core's (-5, arena
    # corrupt). A target that returns its driver's codes without listing them here is documented in model.h
    # only as "a negative code from target <name>'s driver".
    error_codes: tuple = ()

    def describe_failure(self, uart: str) -> str | None:
        """A sentence explaining what harness_failure printed in `uart` (None when it printed nothing)."""
        return None

    def hil_variables(self, section: dict, symbols: dict) -> dict:
        """Robot variables for the HIL suites (edgesdk hil) from its report.json section ({} when the build does
        not use the target) and the firmware's symbols {name: address}; give every variable a value either way."""
        return {}

    def boards_dirs(self) -> list:
        """Directories holding boards (<dir>/<name>/board.json) that this package ships."""
        return []

