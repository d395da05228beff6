"""Structured host calls: what the C target generates for a layer, as data.

An emitter (edgesdk/targets/c/ops/) returns a `HostLayer`: the kernel calls of one model layer, each a
`KernelCall(kernel, args)` whose arguments say what they are -- an arena slot (`Arena`), a constant array in
flash (`Const`), a parameter struct (`Params`, whose fields may refer to constant arrays), a null pointer, an
integer, or a list of arena pointers. The C text of the run function is rendered from that data
(`render_layer`), and the build-time safety proof (edgesdk/targets/c/proof.py) reads the same data through
each kernel's footprint rule: it never parses C.
"""

from __future__ import annotations

import numpy as np

from ...ctext import float_literal
from ...dataclass_cache import dataclass, field

# The kernel a cascade group's row shifts call (edgesdk/targets/c/stripes.py): a memmove (edgesdk_reshape.c).
SHIFT_KERNEL = "edgesdk_reshape"
# The caller's function a group that streams a graph input calls for its next rows (model.h,
# docs/streaming-input.md): (input number, first row, rows, destination in the input's stripe buffer).
READ_INPUT_ROWS = "edgesdk_default_read_input_rows"

# bool tensors are one byte holding 0 or 1 (TFLite's layout): uint8_t in C, so no header needs stdbool.h.
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "float32": "float", "bool": "uint8_t"}
C_TYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
                "int64_t": 8, "float": 4, "double": 8, "bool": 1}


@dataclass(frozen=True)
class Arena:
    """A pointer into the activation arena: the slot of `tensor` (offset fixed by the memory plan)."""

    tensor: object
    offset: int
    ctype: str

    def c(self) -> str:
        return f"(({self.ctype} *)(edgesdk_arena + {self.offset}))"


@dataclass(frozen=True, eq=False)
class Const:
    """A constant array in flash (declared once at file scope)."""

    symbol: str
    ctype: str
    values: np.ndarray

    @property
    def count(self) -> int:
        return int(self.values.size)

    @property
    def nbytes(self) -> int:
        return self.count * C_TYPE_BYTES[self.ctype]

    def c(self) -> str:
        return self.symbol


@dataclass(frozen=True)
class Null:
    """A null pointer of type `const ctype *` (an absent bias, a table the kernel computes itself)."""

    ctype: str

    def c(self) -> str:
        return f"(const {self.ctype} *)0"


@dataclass(frozen=True)
class Int:
    """An integer argument of a kernel call."""

    value: int

    def c(self) -> str:
        return str(int(self.value))


@dataclass(frozen=True)
class Macro:
    """A macro of the kernel library (EDGESDK_ROUNDING_DOUBLE, ...), with the value the proof reasons about."""

    name: str

    def c(self) -> str:
        return self.name


@dataclass(frozen=True)
class Cast:
    """An argument passed with a pointer cast (a constant array to a function that takes a non-const pointer)."""

    arg: object
    ctype: str

    def c(self) -> str:
        return f"({self.ctype} *){self.arg.c()}"


@dataclass(frozen=True, eq=False)
class PointerList:
    """A local array of arena pointers (the inputs of CONCATENATION), declared in the layer's block."""

    symbol: str
    items: tuple  # of Arena

    def c(self) -> str:
        return self.symbol


@dataclass(frozen=True, eq=False)
class Params:
    """`static const <ctype> <symbol> = {...};`, passed as `&symbol`. Field values: int, float (exact float32),
    Const (its symbol), Null, Macro, nested dict (a struct member), list (an array member)."""

    ctype: str
    symbol: str
    fields: dict

    def c(self) -> str:
        return f"&{self.symbol}"

    def __getitem__(self, key):
        return self.fields[key]

    def get(self, key, default=None):
        return self.fields.get(key, default)


@dataclass(frozen=True, eq=False)
class KernelCall:
    """A call of a C kernel with its arguments."""

    kernel: str
    args: tuple
    op: object = None  # the layer the call computes, when a layer's calls run several (a cascade group)

    def c(self) -> str:
        return f"{self.kernel}({', '.join(a.c() for a in self.args)});"


@dataclass(frozen=True, eq=False)
class Statement:
    """A control-flow statement of the run function (the loop of a WHILE, the branches of an IF): C text, not a
    call. `text` is a format string whose {0}, {1}, ... are the arguments' C expressions; `kernel` names the
    footprint rule that says what the statement reads (a condition byte), as for a call."""

    kernel: str
    args: tuple
    text: str

    def c(self) -> str:
        return self.text.format(*(a.c() for a in self.args))


@dataclass(eq=False)
class HostLayer:
    """The C code of one model layer: its calls (and control-flow statements), in order, and a short note for
    the block's comment."""

    op: object
    calls: list = field(default_factory=list)
    note: str = ""
    aliased: bool = False  # RESHAPE whose output shares the input's slot: no code at all
    ops: tuple = ()  # a cascade group run in stripes (edgesdk/targets/c/stripes.py): all its layers; else `op`

    @property
    def layers(self) -> tuple:
        """The model layers this block computes."""
        return self.ops or (self.op,)

    def add(self, kernel: str, *args) -> "HostLayer":
        self.calls.append(KernelCall(kernel, tuple(args)))
        return self

    def statement(self, kernel: str, text: str, *args) -> "HostLayer":
        self.calls.append(Statement(kernel, tuple(args), text))
        return self


# -- rendering ----------------------------------------------------------------------------------------------

def c_value(value) -> str:
    """A C initializer for a params field."""
    if isinstance(value, (Const, Null, Macro, Arena)):
        return value.c()
    if isinstance(value, dict):
        return "{" + ", ".join(f".{k} = {c_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(c_value(v) for v in value) + "}"
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return float_literal(value)
    value = int(value)
    return "(-2147483647 - 1)" if value == -(1 << 31) else str(value)


def render_params(params: Params) -> str:
    body = ",\n".join(f"    .{k} = {c_value(v)}" for k, v in params.fields.items())
    return f"static const {params.ctype} {params.symbol} = {{\n{body}\n}};"


def render_layer(layer: HostLayer) -> str:
    """The C statements of a layer (its params structs and constants are declared at file scope)."""
    lines = []
    for call in layer.calls:
        lists = [a for a in call.args if isinstance(a, PointerList)]
        if lists:
            body = [f"    const void *const {p.symbol}[{len(p.items)}] = {{"
                    + ", ".join(f"(const void *){item.c()}" for item in p.items) + "};" for p in lists]
            lines.append("{\n" + "\n".join(body) + f"\n    {call.c()}\n}}")
        else:
            lines.append(call.c())
    return "\n".join(lines)


def params_of(layer: HostLayer) -> list:
    """Every Params struct the layer's calls pass."""
    return [a for call in layer.calls for a in call.args if isinstance(a, Params)]


def consts_of(value) -> list:
    """Every Const reachable from a call argument or a params field."""
    if isinstance(value, Const):
        return [value]
    if isinstance(value, Cast):
        return consts_of(value.arg)
    if isinstance(value, Params):
        return consts_of(value.fields)
    if isinstance(value, dict):
        return [c for v in value.values() for c in consts_of(v)]
    if isinstance(value, (list, tuple)):
        return [c for v in value for c in consts_of(v)]
    return []
