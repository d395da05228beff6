"""Build-time proof that the generated firmware stays inside its memory plan, whatever the model says.

The compiler passes check the model as they go; this pass re-checks their *output*, independently, right
before anything is written. It reads what the firmware will contain -- the memory plan, the C statements
and parameter structs of every host layer, the bytes of every NPU command table -- and proves:

1. the memory plan: every buffer lies inside the arena, and no two buffers that are live at the same step
   share a byte;
2. sizes: every size that becomes a C array bound or a memcpy length is positive and fits the 32-bit
   target (no integer overflow), and every integer literal in the executor fits an int32;
3. host layers: every pointer into the arena is inside the arena, and every byte a kernel reads or writes
   through it (computed from the parameter struct the kernel will receive, with a footprint rule per
   kernel) lies inside one planned buffer that is live at that layer; every constant array a kernel
   indexes is long enough (weights in the fast kernels' layouts, ADD's input tables, LUTs, and for a
   TVM-lowered function each parameter's extent as its Relax function types it); requantization shifts
   are in [-31, 30];
4. NPU command tables: each table passes every check the NPU makes before it runs one (edgesdk.npu.validate,
   the mirror of the C model's static pass, at the highest region bases the board allows), decodes
   (edgesdk.npu.cmdtable.decode) and ends with END; every tensor
   descriptor and parameter reference lies inside its region (region 0 = the weights blob of its length,
   region 1 = the arena of arena_bytes), arena operands inside one planned buffer, outputs in the arena;
   a compressed weight stream lies in the weights blob and decodes to exactly its dense tensor; the
   quantization fields and channel records are in the NPU's accepted ranges.

A failure raises VerificationError: no output is written. Every rule here is also documented in
docs/reliability.md.
"""

from __future__ import annotations

import bisect
import math
import re
import struct
from dataclasses import dataclass, field

from .errors import ModelError

INT32_MAX = (1 << 31) - 1
INT32_MIN = -(1 << 31)
# A C object on the 32-bit target must be smaller than PTRDIFF_MAX.
MAX_OBJECT_BYTES = INT32_MAX
SHIFT_RANGE = (-31, 30)  # the requantization shifts the C kernels and the NPU define behaviour for
REQUANT_SHIFT_FIELDS = ("shift", "output_shift", "input1_shift", "input2_shift")
C_TYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "int32_t": 4, "uint32_t": 4, "float": 4, "double": 8}
WEIGHTS_REGION, ARENA_REGION = 0, 1
NPU_RECORD_BYTES = 12  # one channel record: int32 bias + int32 multiplier + int32 shift, or int32 + f64


class VerificationError(ModelError):
    """The build-time safety proof failed: the firmware would access memory outside its plan."""


@dataclass
class _Proof:
    """What was proven, for report.json."""

    buffers: int = 0
    host_layers: int = 0
    arena_pointers: int = 0
    const_arrays: int = 0
    npu_tables: int = 0
    npu_commands: int = 0
    npu_descriptors: int = 0
    npu_param_refs: int = 0
    target_checks: int = 0  # targets whose own proof ran (Target.verify)
    failures: list = field(default_factory=list)

    def fail(self, text: str) -> None:
        """For Target.verify: record a violation."""
        self.failures.append(text)


def verify_build(compiled) -> dict:
    """Prove the compiled model safe (see the module docstring); return counts for the report.

    `compiled` is edgesdk.compiler.Compiled. Raises VerificationError listing every failed check."""
    proof = _Proof()
    plan, executor = compiled.plan, compiled.executor
    _check_plan(plan, compiled.graph, proof)
    _check_sizes(executor, proof)
    if not proof.failures:  # later checks rely on a sound plan and sizes
        _check_host_layers(compiled, proof)
        _check_npu_tables(compiled, proof)
        _check_targets(compiled, proof)
    if proof.failures:
        shown = "; ".join(proof.failures[:8]) + (f"; and {len(proof.failures) - 8} more" if len(proof.failures) > 8 else "")
        raise VerificationError(
            f"edgesdk refused to write firmware for {compiled.graph.name}: the build-time safety proof failed "
            f"({shown}), so nothing was written: firmware built from it could access memory outside its plan or "
            "compute with undefined C arithmetic. The model's shapes, sizes or quantization parameters are "
            "inconsistent or out of range in a way the earlier checks did not catch; if the model runs in "
            "TFLite, this is an edgesdk bug: please report it with the model.")
    return {key: value for key, value in vars(proof).items() if key != "failures"}


# -- 1. memory plan ------------------------------------------------------------------------------------------
def _check_plan(plan, graph, proof: _Proof) -> None:
    fail = proof.failures.append
    arena = plan.arena_bytes
    if not 0 < arena <= MAX_OBJECT_BYTES:
        fail(f"arena of {arena} bytes is not a valid C array size")
    for buf in plan.buffers:
        proof.buffers += 1
        if buf.offset is None or buf.size < 0 or buf.offset < 0 or buf.offset + buf.size > arena:
            fail(f"buffer '{buf.name}' at {buf.offset}+{buf.size} is outside the arena of {arena} bytes")
    # An intermediate of an NPU cascade group only ever has a few rows in its stripe buffer: the NPU
    # descriptors that address it are each proven inside a live buffer (part 4), and verify_plan recomputes
    # the stripe buffer's size from the group's schedule.
    striped = {id(t) for b in plan.buffers if b.kind == "stripe" for t in b.tensors}
    holders = {}  # tensor -> the buffers that hold it (one, normally)
    for b in plan.buffers:
        if b.kind != "scratch":
            for t in b.tensors:
                holders.setdefault(id(t), []).append(b)
    for tensor in graph.activation_tensors():
        offset = plan.offsets.get(tensor)
        need = 1 if id(tensor) in striped else tensor.nbytes
        if offset is None:
            fail(f"tensor '{tensor.name}' has no place in the memory plan")
        elif not any(b.offset is not None and b.offset <= offset and offset + need <= b.offset + b.size
                     for b in holders.get(id(tensor), [])):
            fail(f"tensor '{tensor.name}' ({tensor.nbytes} bytes at {offset}) does not fit its planned buffer")
    # In-place execution: an op's output may overlap the input that dies at that op, where the op's rule
    # allows it (or a cascade group's output the input that dies in the group). memory_plan.verify_plan
    # recomputes each such permission from the op or the group's schedule, and each cascade group's stripe
    # buffers; every other pair of co-live buffers must be disjoint.
    permitted = {frozenset((id(o.output), id(o.input))) for o in getattr(plan, "overlaps", [])}
    if permitted or striped or getattr(plan, "cascades", None):
        from .aot.memory_plan import verify_plan
        try:
            verify_plan(plan)
        except AssertionError as exc:
            fail(str(exc))
    # Every pair of buffers live at a common step that share a byte (a sweep over the steps, not a test per
    # pair: memory_plan.co_live_overlaps) must be a permitted in-place overlap.
    from .aot.memory_plan import co_live_overlaps

    placed = [b for b in plan.buffers if b.offset is not None and b.size >= 0]
    for i, j in co_live_overlaps(placed):
        a, b = placed[i], placed[j]
        if frozenset((id(a), id(b))) not in permitted:
            fail(f"buffers '{a.name}' and '{b.name}' are live together (steps {max(a.first, b.first)}.."
                 f"{min(a.last, b.last)}) and share bytes {max(a.offset, b.offset)}..{min(a.offset + a.size, b.offset + b.size) - 1}")


# -- 2. sizes --------------------------------------------------------------------------------------------------
def _check_sizes(executor, proof: _Proof) -> None:
    fail = proof.failures.append
    for const in executor.consts:
        proof.const_arrays += 1
        nbytes = len(const.values) * C_TYPE_BYTES.get(const.ctype, 8)
        if not 0 < len(const.values) or nbytes > MAX_OBJECT_BYTES:
            fail(f"constant array {const.symbol} of {len(const.values)} elements is not a valid C array")
    if len(executor.npu_weights) > MAX_OBJECT_BYTES:
        fail(f"NPU weights blob of {len(executor.npu_weights)} bytes is too large for the 32-bit target")
    for io in list(executor.inputs) + list(executor.outputs):
        if not 0 < io.nbytes <= MAX_OBJECT_BYTES or io.arena_offset < 0 or io.arena_offset + io.nbytes > executor.arena_bytes:
            fail(f"model input/output '{io.model_name}' ({io.nbytes} bytes at arena offset {io.arena_offset}) "
                 f"is outside the arena of {executor.arena_bytes} bytes")
    texts = list(executor.declarations) + [step.code for step in executor.steps]
    for text in texts:
        for literal in _integer_literals(text):
            if not INT32_MIN <= literal <= INT32_MAX:
                fail(f"integer {literal} in the generated executor does not fit an int32")


_HEX_FLOAT = re.compile(r"0x[0-9a-fA-F]*\.?[0-9a-fA-F]*p[-+]?\d+f?")
_INTEGER = re.compile(r"(?<![\w.])(-?\d+)u?(?![\w.])")


def _integer_literals(text: str) -> list:
    return [int(m.group(1)) for m in _INTEGER.finditer(_HEX_FLOAT.sub(" ", text))]


# -- 3. host layers --------------------------------------------------------------------------------------------
@dataclass
class _Arg:
    kind: str  # "params" | "arena" | "const" | "null" | "int" | "local"
    value: object = None  # params: dict; arena: offset; const: symbol; int: value; local: symbol


class _Step:
    """One host layer: its op, its plan step, the C calls it makes and the data they can see."""

    def __init__(self, op, step: int, code: str, structs: dict, consts: dict, offsets: dict):
        self.op, self.step, self.code, self.offsets = op, step, code, offsets
        self.structs, self.consts = structs, consts
        self.locals = _local_arrays(code)


def _check_host_layers(compiled, proof: _Proof) -> None:
    executor, plan = compiled.executor, compiled.plan
    structs = _parse_declarations(executor.declarations, proof)
    consts = {c.symbol: (c.ctype, len(c.values), c.values) for c in executor.consts}
    consts.update({sym: info for sym, info in structs.pop("__arrays__", {}).items()})
    step_of = {op: i for i, op in enumerate(compiled.graph.ops)}
    host_ops = [op for region in compiled.regions if region.target == "c" for op in region.ops]
    host_steps = [s for s in executor.steps if s.target == "c"]
    if len(host_ops) != len(host_steps):
        proof.failures.append(f"{len(host_steps)} host steps for {len(host_ops)} host layers")
        return
    for op, step in zip(host_ops, host_steps):
        proof.host_layers += 1
        layer = _Step(op, step_of[op], step.code, structs, consts, plan.offsets)
        for match in re.finditer(r"edgesdk_arena \+ (-?\d+)", step.code):
            proof.arena_pointers += 1
            if not 0 <= int(match.group(1)) < plan.arena_bytes:
                proof.failures.append(f"{op.location}: pointer edgesdk_arena + {match.group(1)} is outside the arena")
        leftover = _unread_code(step.code)
        if leftover:
            proof.failures.append(f"{op.location}: the proof cannot read the statement {leftover[:60]!r}")
        for name, args in _calls(step.code):
            _check_call(layer, name, [_classify(a, layer) for a in args], plan, proof)


def _parse_declarations(declarations: list, proof: _Proof) -> dict:
    """`static const T sym = {...};` -> {sym: fields}; `static const T sym[N] = {...};` -> __arrays__."""
    structs, arrays = {}, {}
    for text in declarations:
        m = re.match(r"\s*static const (\w+) (\w+)(?:\[(\d+)\])? = (\{.*\});\s*$", text, re.S)
        if m is None:
            proof.failures.append(f"cannot read the declaration {text[:60]!r}")
            continue
        ctype, symbol, count, body = m.groups()
        try:
            value = _Initializer(body).parse()
        except ValueError as exc:
            proof.failures.append(f"cannot read the initializer of {symbol}: {exc}")
            continue
        if count is not None:
            arrays[symbol] = (ctype, int(count), value if isinstance(value, list) else [])
        else:
            structs[symbol] = value
    structs["__arrays__"] = arrays
    return structs


class _Initializer:
    """Parser of the C initializers the codegen writes: {.a = 1, .b = {1, 2}, .c = sym, ...} or {1, 2}."""

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def parse(self):
        value = self._value()
        self._skip()
        if self.pos != len(self.text):
            raise ValueError(f"trailing text at {self.pos}")
        return value

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _value(self):
        self._skip()
        if self.text.startswith("{", self.pos):
            return self._braced()
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0 and ch in ",}":
                break
            self.pos += 1
        return _atom(self.text[start:self.pos].strip())

    def _braced(self):
        self.pos += 1
        fields, items = {}, []
        while True:
            self._skip()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return fields if fields else items
            m = re.compile(r"\.(\w+)\s*=").match(self.text, self.pos)
            if m:
                self.pos = m.end()
                fields[m.group(1)] = self._value()
            else:
                items.append(self._value())
            self._skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                raise ValueError(f"unexpected {self.text[self.pos:self.pos + 10]!r}")


def _atom(text: str):
    """An int, a float, or the text itself (symbols, casts, macro names)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text == "(-2147483647 - 1)":
        return INT32_MIN
    if re.fullmatch(r"-?0x[0-9a-fA-F.]+p[-+]?\d+f?", text):
        return float.fromhex(text.rstrip("f"))
    return text


def _local_arrays(code: str) -> dict:
    """`const void *const sym[N] = {a, b};` inside a step -> {sym: [a, b]} (concatenation's input list)."""
    result = {}
    for m in re.finditer(r"const void \*const (\w+)\[(\d+)\] = \{(.*?)\};", code, re.S):
        result[m.group(1)] = _split_args(m.group(3))
    return result


_CALL = re.compile(r"\b((?:edgesdk|tvmgen)_\w+)\(")


def _calls(code: str) -> list:
    """[(function, [argument texts])] of every kernel call (edgesdk_* kernels, tvmgen_* TVM functions)."""
    return [(name, _split_args(code[start:end - 1])) for name, start, end in _call_spans(code)]


def _call_spans(code: str) -> list:
    spans = []
    for m in _CALL.finditer(code):
        depth, pos = 1, m.end()
        while pos < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[pos], 0)
            pos += 1
        spans.append((m.group(1), m.end(), pos))
    return spans


def _unread_code(code: str) -> str:
    """What is left of a step after its kernel calls, its local pointer arrays, comments and braces: any
    other statement could write memory the proof does not see, so it must be empty."""
    text = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    text = re.sub(r"const void \*const \w+\[\d+\] = \{.*?\};", " ", text, flags=re.S)
    for _name, start, end in reversed(_call_spans(text)):
        stop = text.index(";", end) + 1 if ";" in text[end:] else end
        text = text[:start - len(_name) - 1] + " " + text[stop:]
    return re.sub(r"[\s{}]", "", text)


def _split_args(text: str) -> list:
    args, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return args + ([tail] if tail else [])


def _classify(text: str, layer: _Step) -> _Arg:
    cast = re.fullmatch(r"\([\w\s]+\*\)(\w+)", text)
    if cast and cast.group(1) in layer.consts:  # a constant array passed with a cast (TVM-lowered calls)
        return _Arg("const", cast.group(1))
    m = re.fullmatch(r"(?:\([\w\s]+\*\))?\(?\(\w+ \*\)\(edgesdk_arena \+ (-?\d+)\)\)?", text)
    if m:
        return _Arg("arena", int(m.group(1)))
    if text.startswith("&") and text[1:] in layer.structs:
        return _Arg("params", layer.structs[text[1:]])
    if re.fullmatch(r"\(const \w+ \*\)0", text):
        return _Arg("null")
    if re.fullmatch(r"-?\d+", text):
        return _Arg("int", int(text))
    if text in layer.consts:
        return _Arg("const", text)
    if text in layer.locals:
        return _Arg("local", text)
    return _Arg("unknown", text)


def _prod(values) -> int:
    return math.prod(int(v) for v in values)


def _check_call(layer: _Step, name: str, args: list, plan, proof: _Proof) -> None:
    rule = _tvm_lowered if name.startswith("tvmgen_") else FOOTPRINTS.get(name)
    where = f"{layer.op.location}: {name}"
    if rule is None:
        proof.failures.append(f"{where} has no footprint rule, so its memory accesses cannot be proven")
        return
    try:
        accesses = rule(args, layer)
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError) as exc:
        proof.failures.append(f"{where}: unexpected arguments ({type(exc).__name__}: {exc})")
        return
    for arg, nbytes, what in accesses:
        if isinstance(arg, str):  # a precondition that failed
            proof.failures.append(f"{where}: {arg}")
        elif arg.kind == "arena":
            _check_arena_access(layer, where, arg.value, nbytes, what, plan, proof)
        elif arg.kind == "const":
            ctype, count, _values = layer.consts[arg.value]
            if nbytes > count * C_TYPE_BYTES.get(ctype, 1):
                proof.failures.append(f"{where} reads {nbytes} bytes of {what} from {arg.value}, which holds "
                                      f"{count * C_TYPE_BYTES.get(ctype, 1)}")
        elif nbytes:  # a null pointer, or something that is neither an arena slot nor a constant array
            proof.failures.append(f"{where}: {what} ({nbytes} bytes) is not an arena pointer or a constant "
                                  f"array ({arg.kind} {arg.value})")


def _check_arena_access(layer: _Step, where: str, offset: int, nbytes: int, what: str, plan, proof: _Proof) -> None:
    if nbytes < 0 or offset < 0 or offset + nbytes > plan.arena_bytes:
        proof.failures.append(f"{where} accesses {nbytes} bytes of {what} at arena offset {offset}, outside the "
                              f"arena of {plan.arena_bytes} bytes")
        return
    live = [b for b in plan.buffers if b.first <= layer.step <= b.last]
    if nbytes and not any(b.offset <= offset and offset + nbytes <= b.offset + b.size for b in live):
        proof.failures.append(f"{where} accesses {nbytes} bytes of {what} at arena offset {offset}, which is not "
                              "inside one buffer live at this layer (it would overwrite or read another tensor)")


# Footprint rules: (args, layer) -> [(arg or failure text, bytes accessed, what)]. Each mirrors the loops of
# the kernel in edgesdk/kernels/ exactly: the bytes it can touch through each pointer, given its params.
def _require(condition: bool, text: str) -> list:
    return [] if condition else [(text, 0, "")]


def _positive(p: dict, *keys) -> list:
    bad = [k for k in keys if not isinstance(p[k], int) or p[k] < 1]
    return _require(not bad, f"fields {', '.join(bad)} must be >= 1")


def _non_negative(p: dict, *keys) -> list:
    bad = [k for k in keys if not isinstance(p[k], int) or p[k] < 0]
    return _require(not bad, f"fields {', '.join(bad)} must be >= 0")


def _shift_checks(p: dict, layer: _Step, channels: int | None = None) -> list:
    """Requantization shifts in [-31, 30]: a larger shift is undefined behaviour in C (and refused by the NPU)."""
    result = []
    for key in REQUANT_SHIFT_FIELDS:
        if key not in p:
            continue
        value = p[key]
        values = layer.consts[value][2] if isinstance(value, str) and value in layer.consts else [value]
        bad = [int(v) for v in values[:channels] if not SHIFT_RANGE[0] <= int(v) <= SHIFT_RANGE[1]]
        if bad:
            result.append((f"requantization {key} {bad[0]} is outside [{SHIFT_RANGE[0]}, {SHIFT_RANGE[1]}] "
                           "(quantization scales out of range)", 0, ""))
    return result


def _per_channel(p: dict, layer: _Step, channels: int, *keys) -> list:
    return [(_Arg("const", p[k]) if p[k] in layer.consts else _Arg("unknown", p[k]), 4 * channels, f"{k}[{channels}]")
            for k in keys if isinstance(p[k], str) and not p[k].startswith("(")]


def _kernel_constant(header: str, name: str) -> int:
    """A #define of the kernel library (one source for the kernel and its footprint rule)."""
    from .board import SDK_ROOT

    text = (SDK_ROOT / "edgesdk" / "kernels" / header).read_text()
    return int(re.search(rf"#define {name} (\d+)", text).group(1))


def _conv2d(args, layer):
    p, x, w, b, y = args[0].value, args[1], args[2], args[3], args[4]
    checks = _positive(p, "batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "filter_h", "filter_w",
                       "filter_in_c", "stride_h", "stride_w", "dilation_h", "dilation_w")
    checks += _non_negative(p, "pad_top", "pad_left")
    if checks:
        return checks
    groups = p["in_c"] // p["filter_in_c"]
    checks += _require(p["in_c"] % p["filter_in_c"] == 0 and p["out_c"] % groups == 0,
                       f"{p['in_c']} input channels do not split into groups of {p['filter_in_c']} for {p['out_c']} outputs")
    if p.get("blocked", 0):
        checks += _conv2d_blocked(p, b)
    out_c = p["out_c"]
    return checks + _shift_checks(p, layer, out_c) + _per_channel(p, layer, out_c, "multiplier", "shift") + [
        (x, p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
        (w, out_c * p["filter_h"] * p["filter_w"] * p["filter_in_c"], "filter"),
        (b, 4 * out_c if b.kind != "null" else 0, "bias"),
        (y, p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]


def _conv2d_blocked(p: dict, bias: _Arg) -> list:
    """edgesdk_conv2d_s8_blocked (edgesdk_conv2d_blocked.c): no groups or dilation, a folded bias, and any
    window it cannot read in place -- one reaching into padding, or the odd last pixel of a row when the
    filter has more than one row -- is copied into a stack buffer of EDGESDK_CONV_PATCH_MAX bytes."""
    checks = _require(p["blocked"] == 1, f"unknown conv layout {p['blocked']}")
    checks += _require(p["filter_in_c"] == p["in_c"] and p["dilation_h"] == p["dilation_w"] == 1,
                       "the blocked conv kernel needs no groups and no dilation")
    checks += _require(bias.kind != "null", "the blocked conv kernel needs its folded bias")
    patch_max = _kernel_constant("edgesdk_conv2d.h", "EDGESDK_CONV_PATCH_MAX")
    taps = p["filter_h"] * p["filter_w"] * p["in_c"]
    inside = (p["pad_top"] == 0 and p["pad_left"] == 0 and (p["out_h"] - 1) * p["stride_h"] + p["filter_h"] <= p["in_h"]
              and (p["out_w"] - 1) * p["stride_w"] + p["filter_w"] <= p["in_w"])
    copies = not inside or (p["filter_h"] > 1 and p["out_w"] % 2 == 1)
    return checks + _require(not copies or taps <= patch_max,
                             f"the blocked conv kernel would copy a {taps}-byte filter window into its "
                             f"{patch_max}-byte stack buffer (windows {'in padding' if not inside else 'of the odd last column'})")


def _depthwise(args, layer):
    p, x, w, b, y = args[0].value, args[1], args[2], args[3], args[4]
    checks = _positive(p, "batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "depth_multiplier",
                       "filter_h", "filter_w", "stride_h", "stride_w", "dilation_h", "dilation_w")
    checks += _non_negative(p, "pad_top", "pad_left")
    if checks:
        return checks
    if p.get("sliding", 0):  # edgesdk_depthwise_conv2d_s8_sliding: a fixed 3x3 window and its preconditions
        checks += _require(p["sliding"] == 1 and p["filter_h"] == p["filter_w"] == 3 and p["stride_h"] == p["stride_w"]
                           and p["stride_h"] in (1, 2) and p["dilation_h"] == p["dilation_w"] == 1
                           and p["depth_multiplier"] == 1 and b.kind != "null",
                           "the sliding depthwise kernel needs 3x3, equal strides 1 or 2, no dilation, depth "
                           "multiplier 1 and its folded bias")
    out_c = p["in_c"] * p["depth_multiplier"]
    checks += _require(out_c == p["out_c"], f"out_c {p['out_c']} != in_c {p['in_c']} x depth multiplier")
    return checks + _shift_checks(p, layer, out_c) + _per_channel(p, layer, out_c, "multiplier", "shift") + [
        (x, p["batches"] * p["in_h"] * p["in_w"] * p["in_c"], "input"),
        (w, p["filter_h"] * p["filter_w"] * p["out_c"], "filter"),
        (b, 4 * out_c if b.kind != "null" else 0, "bias"),
        (y, p["batches"] * p["out_h"] * p["out_w"] * out_c, "output")]


def _fully_connected(args, layer):
    p, x, w, b, y = args[0].value, args[1], args[2], args[3], args[4]
    checks = _positive(p, "batches", "in_depth", "out_depth")
    if checks:
        return checks
    n = p["out_depth"]
    layout = {0: "plain", 1: "blocked", 2: "paired", "EDGESDK_FC_BLOCKED": "blocked",
              "EDGESDK_FC_PAIRED": "paired"}.get(p.get("blocked", 0))
    if layout is None:
        return [(f"unknown fully connected layout {p['blocked']}", 0, "")]
    # EDGESDK_FC_PAIRED stores units in pairs as 32-bit words: 4 bytes per pair and tap.
    filter_bytes = 4 * ((n + 1) // 2) * p["in_depth"] if layout == "paired" else n * p["in_depth"]
    checks = _require(layout == "plain" or b.kind != "null", "the blocked fully connected kernel needs its folded bias")
    scale = [] if not isinstance(p.get("scale"), str) or p["scale"].startswith("(") else [
        (_Arg("const", p["scale"]) if p["scale"] in layer.consts else _Arg("unknown", p["scale"]), 8 * n, f"scale[{n}]")]
    return checks + _shift_checks(p, layer, n) + _per_channel(p, layer, n, "multiplier", "shift") + scale + [
        (x, p["batches"] * p["in_depth"], "input"),
        (w, filter_bytes, "filter"),
        (b, 4 * n if b.kind != "null" else 0, "bias"),
        (y, p["batches"] * n, "output")]


def _broadcast_binary(args, layer):
    p, a, b, y = args[0].value, args[1], args[2], args[3]
    s = p["shape"]
    shape = [int(v) for v in s["out_shape"]]
    checks = _require(all(d >= 1 for d in shape) and s["size"] == _prod(shape) and s["size"] >= 1,
                      f"output shape {shape} does not hold {s['size']} elements")
    checks += _shift_checks(p, layer)
    if checks:
        return checks

    def extent(strides):
        if not s["broadcast"]:
            return s["size"]
        if any(int(v) < 0 for v in strides):
            return -1
        return sum((d - 1) * int(st) for d, st in zip(shape, strides)) + 1

    return checks + [(a, extent(s["in1_strides"]), "input 1"), (b, extent(s["in2_strides"]), "input 2"),
                     (y, s["size"], "output")]


ADD_TABLE_ENTRIES = 256  # edgesdk_add.c: one int32 per int8 input value, indexed by value + 128


def _add(args, layer):
    """edgesdk_add_s8: the broadcast walk, plus its optional input tables (1 KiB each: 256 int32 read at
    value + 128) and the preconditions of its fast output path (edgesdk_requant_right)."""
    p = args[0].value
    checks = _broadcast_binary(args, layer)
    for key in ("input1_table", "input2_table"):
        table = p[key]
        if isinstance(table, str) and table.startswith("("):  # a null pointer cast: computed per element
            checks += _require(re.fullmatch(r"\(const int32_t \*\)0", table) is not None, f"{key} is {table}")
        else:
            arg = _Arg("const", table) if table in layer.consts else _Arg("unknown", table)
            checks.append((arg, 4 * ADD_TABLE_ENTRIES, f"{key}[{ADD_TABLE_ENTRIES}]"))
    if p["fast_output"]:
        checks += _require(p["fast_output"] == 1 and p["rounding"] == "EDGESDK_ROUNDING_DOUBLE"
                           and isinstance(p["output_shift"], int) and -31 <= p["output_shift"] <= -1,
                           "the fast ADD output path needs double rounding and an output shift in [-31, -1]")
        reach = [max((abs(int(v)) for v in layer.consts[p[k]][2]), default=0)
                 for k in ("input1_table", "input2_table") if p[k] in layer.consts]
        checks += _require(len(reach) == 2 and sum(reach) < 1 << 31,
                           "the fast ADD output path needs both tables and |input1| + |input2| < 2^31 "
                           f"(the tables reach {sum(reach)})")
    return checks


def _pool(args, layer):
    p, x, y = args[0].value, args[1], args[2]
    checks = _positive(p, "batches", "in_h", "in_w", "channels", "out_h", "out_w", "filter_h", "filter_w",
                       "stride_h", "stride_w")
    checks += _non_negative(p, "pad_top", "pad_left")
    if checks:
        return checks
    return [(x, p["batches"] * p["in_h"] * p["in_w"] * p["channels"], "input"),
            (y, p["batches"] * p["out_h"] * p["out_w"] * p["channels"], "output")]


def _sized(in_bytes: int, out_bytes: int):
    """Kernels that walk `size` elements of the input and of the output (element sizes in bytes)."""
    def rule(args, layer):
        p, x, y = args[0].value, args[1], args[2]
        checks = _positive(p, "size") + _shift_checks(p, layer)
        table = [(_Arg("const", p["table"]), 256, "table[256]")] if "table" in p else []
        return checks or table + [(x, in_bytes * p["size"], "input"), (y, out_bytes * p["size"], "output")]
    return rule


def _counted(args, layer):
    """edgesdk_reshape(nbytes, in, out) and the uint8 <-> int8 conversions (size, in, out)."""
    n, x, y = args[0], args[1], args[2]
    if n.kind != "int" or n.value < 1:
        return [("the byte count is not a positive integer", 0, "")]
    return [(x, n.value, "input"), (y, n.value, "output")]


def _softmax(args, layer):
    p, x, y = args[0].value, args[1], args[2]
    return _positive(p, "rows", "depth") or [(x, p["rows"] * p["depth"], "input"), (y, p["rows"] * p["depth"], "output")]


def _pad(args, layer):
    p, x, y = args[0].value, args[1], args[2]
    ins, outs, before = ([int(v) for v in p[k]] for k in ("in_shape", "out_shape", "pad_before"))
    ok = all(i >= 1 and o >= 1 and b >= 0 and i + b <= o for i, o, b in zip(ins, outs, before))
    return _require(ok, f"input {ins} padded by {before} does not fit output {outs}") or [
        (x, _prod(ins), "input"), (y, _prod(outs), "output")]


def _mean(args, layer):
    p, x, y = args[0].value, args[1], args[2]
    shape, reduce = [int(v) for v in p["in_shape"]], [int(v) for v in p["reduce"]]
    ok = all(d >= 1 for d in shape) and all(r in (0, 1) for r in reduce)
    checks = _require(ok, f"input shape {shape} / reduced axes {reduce} invalid") + _shift_checks(p, layer)
    kept = _prod(d for d, r in zip(shape, reduce) if not r)
    return checks or [(x, _prod(shape), "input"), (y, kept, "output")]


def _concatenation(args, layer):
    p, arr, y = args[0].value, args[1], args[2]
    if arr.kind != "local":
        return [("the input list is not a local pointer array", 0, "")]
    inputs = [_classify(text, layer) for text in layer.locals[arr.value]]
    slices = layer.consts.get(p["slice_bytes"], (None, 0, []))[2]
    checks = _require(p["outer"] >= 1 and p["num_inputs"] == len(inputs) == len(slices) and all(int(s) >= 0 for s in slices),
                      f"{p['num_inputs']} inputs, {len(inputs)} pointers and {len(slices)} slice sizes disagree")
    return checks or [(x, p["outer"] * int(s), f"input {i}") for i, (x, s) in enumerate(zip(inputs, slices))] + [
        (y, p["outer"] * sum(int(s) for s in slices), "output")]


def _tvm_lowered(args, layer):
    """A TVM-lowered function (edgesdk/targets/c/tvm_lowered.py). TVM derives its loops from the types of
    the op's Relax function (LegalizeOps/TOPI -> TIR), so it touches at most each parameter's whole tensor
    as that function types it -- the byte extent prod(shape) x element size, the result type for the
    output pointer -- and nothing else. Each argument must have room for its parameter's extent: an arena
    pointer is the slot of one of the op's tensors and the extent lies inside one live buffer, a constant
    array holds at least the extent."""
    extents = _tvm_extents(layer.op)
    if isinstance(extents, str):
        return [(extents, 0, "")]
    if len(args) != len(extents):
        return [(f"{len(args)} arguments for the {len(extents)} parameters of the lowered function", 0, "")]
    slots = {layer.offsets.get(t) for t in layer.op.inputs + layer.op.outputs if t is not None and not t.is_const}
    accesses = []
    for arg, (nbytes, what) in zip(args, extents):
        if arg.kind == "arena" and arg.value not in slots:
            accesses.append((f"pointer edgesdk_arena + {arg.value} is not one of the op's tensors", 0, ""))
        elif arg.kind in ("arena", "const"):
            accesses.append((arg, nbytes, what))
        else:
            accesses.append((f"argument {arg.value!r} is neither an arena slot nor a constant", 0, ""))
    return accesses


TVM_DTYPE_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "float32": 4,
                   "float64": 8, "bool": 1}


def _tvm_extents(op):
    """[(bytes, what)] per C parameter of the op's lowered function (inputs in call order, then the output),
    from its Relax function's types; or why they cannot be known (a failure text)."""
    lowered, func = op.attrs.get("tvm_lowered"), op.attrs.get("relax_function")
    if lowered is None or func is None:
        return "no lowered TVM function and Relax signature recorded for this op"
    types = [(f"parameter {k} ({func.params[k].name})", func.params[k].ty) for k in lowered.arg_order]
    types.append(("output", func.ret_ty))
    if len(types) != len(lowered.params):
        return f"the lowered function has {len(lowered.params)} parameters for {len(types)} tensors"
    extents = []
    for (what, ty), ctype in zip(types, lowered.params):
        dtype = str(getattr(ty, "dtype", ""))
        try:
            shape = [int(d) for d in ty.shape.values]
        except (AttributeError, TypeError, ValueError):
            return f"{what} has no static tensor shape ({ty})"
        if dtype not in TVM_DTYPE_BYTES or C_TYPE_BYTES.get(ctype) != TVM_DTYPE_BYTES[dtype]:
            return f"{what} is {dtype}, passed as {ctype} *"
        if any(d < 0 for d in shape):
            return f"{what} has a negative dimension {shape}"
        extents.append((_prod(shape) * TVM_DTYPE_BYTES[dtype], f"{what} {dtype}{shape}"))
    return extents


FOOTPRINTS = {
    "edgesdk_conv2d_s8": _conv2d,
    "edgesdk_depthwise_conv2d_s8": _depthwise,
    "edgesdk_fully_connected_s8": _fully_connected,
    "edgesdk_add_s8": _add,
    "edgesdk_mul_s8": _broadcast_binary,
    "edgesdk_average_pool2d_s8": _pool,
    "edgesdk_max_pool2d_s8": _pool,
    "edgesdk_reshape": _counted,
    "edgesdk_convert_u8_s8": _counted,
    "edgesdk_convert_s8_u8": _counted,
    "edgesdk_softmax_s8": _softmax,
    "edgesdk_quantize_f32_s8": _sized(4, 1),
    "edgesdk_requantize_s8": _sized(1, 1),
    "edgesdk_dequantize_s8_f32": _sized(1, 4),
    "edgesdk_lut_s8": _sized(1, 1),
    "edgesdk_logistic_s8": _sized(1, 1),
    "edgesdk_tanh_s8": _sized(1, 1),
    "edgesdk_hard_swish_s8": _sized(1, 1),
    "edgesdk_relu_s8": _sized(1, 1),
    "edgesdk_pad_s8": _pad,
    "edgesdk_mean_s8": _mean,
    "edgesdk_concatenation": _concatenation,
}


def _check_targets(compiled, proof: _Proof) -> None:
    """Each target of the build proves its own generated data (Target.verify: the DSP's blobs, a plugin's)."""
    from .targets import get_target

    for name in dict.fromkeys(region.target for region in compiled.regions):
        get_target(name).verify(compiled, proof)
        proof.target_checks += 1


# -- 4. NPU command tables -------------------------------------------------------------------------------------
def _check_npu_tables(compiled, proof: _Proof) -> None:
    from .npu import cmdtable as C
    from .npu import registers as R

    from .npu import validate

    executor, plan = compiled.executor, compiled.plan
    regions = {WEIGHTS_REGION: len(executor.npu_weights), ARENA_REGION: plan.arena_bytes}
    bases = _worst_region_bases(compiled.board, regions)
    step_of = {op: i for i, op in enumerate(compiled.graph.ops)}
    for index, table in enumerate(executor.npu_tables):
        proof.npu_tables += 1
        where = f"NPU table {index}"
        if len(table.data) > R.MAX_TABLE_BYTES:
            proof.failures.append(f"{where} has {len(table.data)} bytes, more than the NPU's {R.MAX_TABLE_BYTES}")
            continue
        # Everything the NPU checks before it runs a table (edgesdk.npu.validate mirrors the C model's static
        # pass): framing, fields, shapes, address ranges and limits -- so no compiled table can stop the NPU
        # with TABLE_*, BAD_OPCODE, CMD_SIZE, BAD_REGION, BAD_SHAPE, BAD_PARAM, ADDRESS_RANGE, TOO_LARGE,
        # NO_END or a BAD_QUANT field. What it can only find while running (BUS, the records' BAD_QUANT,
        # BAD_WEIGHTS) is excluded by the region, record and stream checks below.
        code, number = validate.check_table(table.data, bases)
        if code != R.ERR_NONE:
            at = "the table itself" if number is None else f"command {number}"
            proof.failures.append(f"{where}: the NPU would refuse it with {R.error_name(code)} at {at} "
                                  f"({R.error_description(code)})")
        try:
            commands = C.decode(table.data)
        except (C.CommandTableError, struct.error) as exc:
            proof.failures.append(f"{where} does not decode: {exc}")
            continue
        if not commands or not isinstance(commands[-1], C.End) or any(isinstance(c, C.End) for c in commands[:-1]):
            proof.failures.append(f"{where} does not end with exactly one END command")
        steps = [step_of[op] for op in table.ops if op in step_of]
        live = _LiveBuffers([b for b in plan.buffers if steps and b.first <= max(steps) and min(steps) <= b.last])
        for number, command in enumerate(commands):
            proof.npu_commands += 1
            _check_command(f"{where} command {number} ({type(command).__name__})", command, regions, live,
                           executor.npu_weights, proof)


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
    from .npu import cmdtable as C

    if isinstance(command, C.DmaCopy):
        return [command.src], [command.dst]
    if isinstance(command, C.Conv2D):  # compressed weights are a byte stream instead: _check_weight_stream
        return [command.input] + ([] if command.weight_stream_bytes else [command.weights]), [command.output]
    if isinstance(command, (C.MaxPool2D, C.AvgPool2D)):
        return [command.input], [command.output]
    if isinstance(command, (C.Add, C.Mul)):
        return [command.input1, command.input2], [command.output]
    return [], []


def _check_command(where: str, command, regions: dict, live: list, weights: bytes, proof: _Proof) -> None:
    from .npu import cmdtable as C

    inputs, outputs = _descriptors(command)
    for role, desc in [("input", d) for d in inputs] + [("output", d) for d in outputs]:
        proof.npu_descriptors += 1
        _check_descriptor(f"{where} {role}", desc, role == "output", regions, live, proof)
    if isinstance(command, C.Conv2D) and command.weight_stream_bytes:
        proof.npu_descriptors += 1
        _check_weight_stream(f"{where} weights", command, regions, weights, proof)
    if isinstance(command, C.Conv2D):
        proof.npu_param_refs += 1
        records = 1 if command.per_tensor_params else command.output.shape[3]
        ref = command.params
        size = regions.get(ref.region)
        if size is None or ref.offset + NPU_RECORD_BYTES * records > size:
            proof.failures.append(f"{where} channel records r{ref.region}+{ref.offset} ({records} x "
                                  f"{NPU_RECORD_BYTES} bytes) are outside region {ref.region}")
        elif ref.region == WEIGHTS_REGION:
            _check_records(where, command, bytes(weights[ref.offset:ref.offset + NPU_RECORD_BYTES * records]), proof)
    if isinstance(command, (C.Add, C.Mul)):
        fields = {"output_shift": command.output_shift}
        if isinstance(command, C.Add):
            fields.update(input1_shift=command.input1_shift, input2_shift=command.input2_shift)
        for key, value in fields.items():
            if not SHIFT_RANGE[0] <= value <= SHIFT_RANGE[1]:
                proof.failures.append(f"{where} {key} {value} is outside [{SHIFT_RANGE[0]}, {SHIFT_RANGE[1]}]")


def _check_descriptor(where: str, desc, is_output: bool, regions: dict, live: list, proof: _Proof) -> None:
    size = regions.get(desc.region)
    if size is None:
        proof.failures.append(f"{where} names region {desc.region}; tables may only use 0 (weights) and 1 (arena)")
        return
    if is_output and desc.region != ARENA_REGION:
        proof.failures.append(f"{where} writes into region {desc.region}; outputs must go to the arena (region 1)")
    if any(d < 1 for d in desc.shape):
        proof.failures.append(f"{where} has a zero dimension {list(desc.shape)}")
        return
    last = desc.offset + sum((d - 1) * s for d, s in zip(desc.shape, desc.strides))
    if desc.offset < 0 or last >= size:
        proof.failures.append(f"{where} r{desc.region}+{desc.offset}{list(desc.shape)} reaches byte {last} of "
                              f"region {desc.region}, which has {size} bytes")
    elif desc.region == ARENA_REGION and not live.holds(desc.offset, last):
        proof.failures.append(f"{where} arena bytes {desc.offset}..{last} are not inside one buffer live during the table")


def _check_weight_stream(where: str, command, regions: dict, weights: bytes, proof: _Proof) -> None:
    """COMPRESSED_WEIGHTS (docs/npu-datasheet.md 3.1): the NPU reads `weight_stream_bytes` bytes at the
    descriptor's offset and decodes them to the dense tensor of its shape. The stream must lie in the
    weights blob and decode (edgesdk.npu.weight_codec, the reference of the NPU's decoder) to exactly that
    many bytes -- so the NPU cannot fail with BAD_WEIGHTS at run time either."""
    from .npu import weight_codec

    desc, nbytes = command.weights, command.weight_stream_bytes
    end = desc.offset + nbytes
    if desc.region != WEIGHTS_REGION or desc.offset < 0 or end > regions[WEIGHTS_REGION]:
        proof.failures.append(f"{where}: a compressed stream r{desc.region}+{desc.offset} of {nbytes} bytes is "
                              f"not inside the weights blob of {regions[WEIGHTS_REGION]} bytes")
        return
    dense = _prod(desc.shape)
    try:
        weight_codec.decode(bytes(weights[desc.offset:end]), expected_bytes=dense)
    except weight_codec.WeightStreamError as exc:
        proof.failures.append(f"{where}: the compressed stream r0+{desc.offset} ({nbytes} bytes) does not decode to "
                              f"the {dense}-byte tensor {list(desc.shape)}: {exc}")


def _check_records(where: str, command, data: bytes, proof: _Proof) -> None:
    """The channel records the NPU will read: accepted multipliers/shifts (or FP64 scales)."""
    from .npu import registers as R

    for i in range(len(data) // NPU_RECORD_BYTES):
        record = data[i * NPU_RECORD_BYTES:(i + 1) * NPU_RECORD_BYTES]
        if command.rounding == R.ROUNDING_FP64:
            (scale,) = struct.unpack_from("<d", record, 4)
            if not (math.isfinite(scale) and scale >= 0):
                proof.failures.append(f"{where} channel {i} has FP64 scale {scale}")
                return
        else:
            _bias, multiplier, shift = struct.unpack("<iii", record)
            if multiplier < 0 or not SHIFT_RANGE[0] <= shift <= SHIFT_RANGE[1]:
                proof.failures.append(f"{where} channel {i} has multiplier {multiplier}, shift {shift} "
                                      f"(the NPU accepts >= 0 and [{SHIFT_RANGE[0]}, {SHIFT_RANGE[1]}])")
                return
