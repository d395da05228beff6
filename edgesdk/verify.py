"""Build-time proof that the generated firmware stays inside its memory plan, whatever the model says.

The compiler passes check the model as they go; this pass re-checks their *output*, independently, right
before anything is written. It reads what the firmware will contain -- the memory plan, the C statements
and parameter structs of every host layer, the bytes of every NPU command table -- and proves:

1. the memory plan: every buffer lies inside the arena, and no two buffers that are live at the same step
   share a byte;
2. sizes: every size that becomes a C array bound or a memcpy length is positive and fits the 32-bit
   target (no integer overflow), and every integer literal in the executor fits an int32;
3. each target's own output (Target.verify): the C target proves its host layers from their structured
   calls (edgesdk/targets/c/proof.py: every arena access inside one live planned buffer, every constant
   array long enough, shifts in range); the DSP its serialized graphs; a plugin whatever it generates;
4. NPU command tables: each table decodes (edgesdk.npu.cmdtable.decode) and ends with END; every tensor
   descriptor and parameter reference lies inside its region (region 0 = the weights blob of its length,
   region 1 = the arena of arena_bytes), arena operands inside one planned buffer, outputs in the arena;
   a compressed weight stream lies in the weights blob and decodes to exactly its dense tensor; the
   quantization fields and channel records are in the NPU's accepted ranges.

A failure raises VerificationError: no output is written. Every rule here is also documented in
docs/reliability.md.
"""

from __future__ import annotations

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
    for tensor in graph.activation_tensors():
        offset = plan.offsets.get(tensor)
        need = 1 if id(tensor) in striped else tensor.nbytes
        if offset is None:
            fail(f"tensor '{tensor.name}' has no place in the memory plan")
        elif not any(b.offset <= offset and offset + need <= b.offset + b.size and tensor in b.tensors
                     for b in plan.buffers):
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
    # Sweep by offset: only buffers that start before another ends can overlap in space.
    ordered = sorted((b for b in plan.buffers if b.size > 0 and b.offset is not None), key=lambda b: b.offset)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b.offset >= a.offset + a.size:
                break
            if a.first <= b.last and b.first <= a.last and frozenset((id(a), id(b))) not in permitted:
                fail(f"buffers '{a.name}' and '{b.name}' are live together (steps {max(a.first, b.first)}.."
                     f"{min(a.last, b.last)}) and share bytes {b.offset}..{min(a.offset + a.size, b.offset + b.size) - 1}")


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


# -- 3. targets: each proves its own output (the C target its host layers, edgesdk/targets/c/proof.py) ----------
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

    executor, plan = compiled.executor, compiled.plan
    regions = {WEIGHTS_REGION: len(executor.npu_weights), ARENA_REGION: plan.arena_bytes}
    step_of = {op: i for i, op in enumerate(compiled.graph.ops)}
    for index, table in enumerate(executor.npu_tables):
        proof.npu_tables += 1
        where = f"NPU table {index}"
        if len(table.data) > R.MAX_TABLE_BYTES:
            proof.failures.append(f"{where} has {len(table.data)} bytes, more than the NPU's {R.MAX_TABLE_BYTES}")
            continue
        try:
            commands = C.decode(table.data)
        except (C.CommandTableError, struct.error) as exc:
            proof.failures.append(f"{where} does not decode: {exc}")
            continue
        if not commands or not isinstance(commands[-1], C.End) or any(isinstance(c, C.End) for c in commands[:-1]):
            proof.failures.append(f"{where} does not end with exactly one END command")
        steps = [step_of[op] for op in table.ops if op in step_of]
        live = [b for b in plan.buffers if steps and b.first <= max(steps) and min(steps) <= b.last]
        for number, command in enumerate(commands):
            proof.npu_commands += 1
            _check_command(f"{where} command {number} ({type(command).__name__})", command, regions, live,
                           executor.npu_weights, proof)


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
    elif desc.region == ARENA_REGION and not any(b.offset <= desc.offset and last < b.offset + b.size for b in live):
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
    dense = math.prod(int(d) for d in desc.shape)
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
