"""ADD on the host: edgesdk_add_s8 (edgesdk_add.c) with the op layer's rescaling constants, each input's rescaled
value precomputed per int8 value (two 256-entry tables), and an output fast path when the sums cannot
overflow; edgesdk_add_s16 (the general int16 path), edgesdk_add_pot_s16 (LiteRT's power-of-two int16 path) and
the float32 / int32 kernels of edgesdk_elementwise.c."""

from __future__ import annotations

import numpy as np

from ....errors import UnsupportedOpError
from ....ir import quant
from ....ops.add import AddPotData
from ....ops.binary import PlainData
from ....ops.broadcast import broadcast_geometry
from .. import supported as rules
from ..calls import Null
from ..emit import Emit, c_op, footprint
from ..layouts import FAST_ACC_LIMIT
from ..proof import prod, require, shift_checks
from .binary import (ELEMENTWISE_C, ELEMENTWISE_H, SUFFIX, arithmetic_types, binary_footprint, int16_zero_points_zero,
                     output_rescale_below_one, plain_params)

ADD_TABLE_ENTRIES = 256  # edgesdk_add.c: one int32 per int8 input value, indexed by value + 128
OUTPUT_TABLE_BYTES = 256 * 256  # edgesdk_add.c: the int8 output for every pair of int8 inputs
# An output table saves about 19 instructions per element (27 -> 8) for 64 KiB of flash: only ADDs of at least
# this many elements get one (ResNet-8's three: 16,384, 8,192 and 4,096), and only while the flash holds it.
OUTPUT_TABLE_MIN_ELEMENTS = 4096
OUTPUT_TABLE_ADDS = "c.add-output-tables"  # ctx.data key: the ADDs output_table_adds chose (CTarget.generate)


def add_input_table(input_offset: int, left_shift: int, multiplier: int, shift: int, rounding: str) -> np.ndarray:
    """ADD's rescaled input for each int8 value x (index x + 128), exactly as the kernel would compute it."""
    return np.array([quant.multiply_by_quantized_multiplier((x + input_offset) << left_shift, multiplier, shift,
                                                            rounding) for x in range(-128, 128)], np.int64)


def add_output_table(tables, d) -> np.ndarray:
    """The int8 output of every input pair (a, b), index (a + 128) * 256 + b + 128: edgesdk_add_s8's output
    requantization and clamp of tables[0][a + 128] + tables[1][b + 128], value for value."""
    sums = (tables[0][:, None] + tables[1][None, :]).reshape(-1)
    distinct, where = np.unique(sums, return_inverse=True)
    out = np.array([quant.multiply_by_quantized_multiplier(int(v), d.output_multiplier, d.output_shift, d.rounding)
                    for v in distinct], np.int64) + d.output_offset
    return np.clip(out, d.act_min, d.act_max)[where.reshape(-1)].astype(np.int8)


def output_table_eligible(op) -> bool:
    """An int8 ADD of two same-shaped activations, large enough for its table to pay (OUTPUT_TABLE_MIN_ELEMENTS)."""
    if op.type != "ADD" or len(op.inputs) != 2 or None in op.inputs:
        return False
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    return (y.dtype == "int8" and a.dtype == b.dtype == "int8"
            and tuple(a.shape) == tuple(b.shape) == tuple(y.shape) and y.num_elements >= OUTPUT_TABLE_MIN_ELEMENTS)


def output_table_adds(ops, flash_room: int | None) -> set:
    """The ADDs of `ops` that get an output table: the largest first, while `flash_room` bytes (None: no
    limit) hold another 64 KiB table."""
    chosen = set()
    for op in sorted((op for op in ops if output_table_eligible(op)), key=lambda op: -op.outputs[0].num_elements):
        if flash_room is not None and flash_room < OUTPUT_TABLE_BYTES:
            break
        chosen.add(op)
        if flash_room is not None:
            flash_room -= OUTPUT_TABLE_BYTES
    return chosen


def pot_call(e: Emit, d: AddPotData, kernel: str):
    """LiteRT's power-of-two int16 ADD/SUB (--rounding ref only; TFLite Micro takes the general path)."""
    op = e.op
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if d.problem:
        raise UnsupportedOpError(f"{op.location}: LiteRT's power-of-two int16 {op.type} (pot_scale_int16) refuses "
                                 f"this model: {d.problem}. Re-export it without pot_scale_int16, or build with "
                                 "--rounding tflm (TFLite Micro's general int16 path).")
    if op.type == "ADD" and tuple(a.shape) != tuple(b.shape):
        raise UnsupportedOpError(f"{op.location}: LiteRT's power-of-two int16 ADD (pot_scale_int16) does not broadcast "
                                 f"{list(a.shape)} with {list(b.shape)} (its kernel reads past the smaller input). "
                                 "Re-export the model without pot_scale_int16, or build with --rounding tflm.")
    if not -31 <= min(d.input1_shift, d.input2_shift):
        raise UnsupportedOpError(f"{op.location}: power-of-two int16 {op.type} shifts an input right by "
                                 f"{-min(d.input1_shift, d.input2_shift)} bits (at most 31).")
    fields = {"shape": broadcast_geometry(a, b, y), "input1_shift": d.input1_shift, "input2_shift": d.input2_shift,
              "act_min": d.act_min, "act_max": d.act_max}
    e.call(kernel, e.params("edgesdk_add_pot_params", fields), e.tensor(a), e.tensor(b), e.arena(y))
    e.layer.note = "LiteRT's power-of-two int16 path"
    return e.layer


def general_quantized_fields(e: Emit, d) -> dict:
    a, b, y = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0]
    return {"shape": broadcast_geometry(a, b, y),
            "input1_offset": d.input1_offset, "input2_offset": d.input2_offset, "output_offset": d.output_offset,
            "left_shift": d.left_shift,
            "input1_multiplier": d.input1_multiplier, "input1_shift": d.input1_shift,
            "input2_multiplier": d.input2_multiplier, "input2_shift": d.input2_shift,
            "output_multiplier": d.output_multiplier, "output_shift": d.output_shift,
            "act_min": d.act_min, "act_max": d.act_max,
            "rounding": e.rounding(d.rounding)}


@c_op("ADD", constraints=[arithmetic_types, int16_zero_points_zero, rules.supported_fused_activation,
                          output_rescale_below_one],
      headers=("edgesdk_add.h", ELEMENTWISE_H), sources=("edgesdk_add.c", ELEMENTWISE_C))
def emit_add(e: Emit):
    op, d = e.op, e.data
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if isinstance(d, PlainData):
        return e.call(f"edgesdk_add_{SUFFIX[y.dtype]}", plain_params(e, d, a, b, y), e.tensor(a), e.tensor(b),
                      e.arena(y))
    if isinstance(d, AddPotData):
        return pot_call(e, d, "edgesdk_add_pot_s16")
    if y.dtype == "int16":
        fields = general_quantized_fields(e, d)
        fields.update({"input1_table": e.null("int32_t"), "input2_table": e.null("int32_t"), "fast_output": 0,
                       "output_table": e.null("int8_t")})
        params = e.params("edgesdk_add_params", fields)
        return e.call("edgesdk_add_s16", params, e.tensor(a), e.tensor(b), e.arena(y))
    return add_s8_call(e, d)


def add_s8_call(e: Emit, d, subtract: bool = False):
    """edgesdk_add_s8 with the two rescaled-input tables. SUB (subtract=True) uses the same kernel with input 2's
    table negated: requantize(scaled1 + (-scaled2)) is TFLite's requantize(scaled1 - scaled2), value for value."""
    a, b, y = e.op.inputs[0], e.op.inputs[1], e.op.outputs[0]
    fields = general_quantized_fields(e, d)
    tables = [add_input_table(offset, d.left_shift, m, s, d.rounding) for offset, m, s in (
        (d.input1_offset, d.input1_multiplier, d.input1_shift), (d.input2_offset, d.input2_multiplier, d.input2_shift))]
    if subtract:
        tables[1] = -tables[1]
    fields["input1_table"] = e.int32s("input1_table", tables[0])
    fields["input2_table"] = e.int32s("input2_table", tables[1])
    reach = sum(int(np.max(np.abs(t))) for t in tables)
    fields["fast_output"] = int(d.rounding == "double" and -31 <= d.output_shift <= -1 and reach < FAST_ACC_LIMIT)
    use_table = not subtract and e.op in e.ctx.data(OUTPUT_TABLE_ADDS, set)
    fields["output_table"] = e.const("output_table", add_output_table(tables, d), "int8_t") if use_table \
        else e.null("int8_t")
    params = e.params("edgesdk_add_params", fields)
    e.call("edgesdk_add_s8", params, e.tensor(a), e.tensor(b), e.arena(y))
    if subtract:
        e.layer.note = "ADD's kernel, input 2's rescale table negated"
    elif use_table:
        e.layer.note = "output table"
    return e.layer


def broadcast_footprint(call, op) -> list:
    """A two-input elementwise kernel that walks edgesdk_broadcast_shape: each input's extent from its strides."""
    p, a, b, y = call.args
    s = p["shape"]
    shape = [int(v) for v in s["out_shape"]]
    checks = require(all(d >= 1 for d in shape) and s["size"] == prod(shape) and s["size"] >= 1,
                     f"output shape {shape} does not hold {s['size']} elements")
    checks += shift_checks(p)
    if checks:
        return checks

    def extent(strides):
        if not s["broadcast"]:
            return s["size"]
        if any(int(v) < 0 for v in strides):
            return -1
        return sum((d - 1) * int(st) for d, st in zip(shape, strides)) + 1

    size = {"int8_t": 1, "int16_t": 2}.get(y.ctype, 1)
    return [(a, size * extent(s["in1_strides"]), "input 1"), (b, size * extent(s["in2_strides"]), "input 2"),
            (y, size * s["size"], "output")]


@footprint("edgesdk_add_s8")
def add_footprint(call, op) -> list:
    """The broadcast walk, the two input tables (1 KiB each: 256 int32 read at value + 128), the output table
    (64 KiB, same shapes only) and the preconditions of the fast output path (edgesdk_requant_right)."""
    p = call.args[0]
    checks = broadcast_footprint(call, op)
    for key in ("input1_table", "input2_table"):
        checks.append((p[key], 4 * ADD_TABLE_ENTRIES, f"{key}[{ADD_TABLE_ENTRIES}]"))
    if not isinstance(p["output_table"], Null):
        checks += require(not p["shape"]["broadcast"], "the ADD output table serves same-shaped inputs only")
        checks.append((p["output_table"], OUTPUT_TABLE_BYTES, f"output_table[{OUTPUT_TABLE_BYTES}]"))
    if p["fast_output"]:
        tables = [p[k] for k in ("input1_table", "input2_table")]
        reach = [max((abs(int(v)) for v in t.values), default=0) for t in tables if hasattr(t, "values")]
        checks += require(p["fast_output"] == 1 and p["rounding"].name == "EDGESDK_ROUNDING_DOUBLE"
                          and isinstance(p["output_shift"], int) and -31 <= p["output_shift"] <= -1,
                          "the fast ADD output path needs double rounding and an output shift in [-31, -1]")
        checks += require(len(reach) == 2 and sum(reach) < 1 << 31,
                          "the fast ADD output path needs both tables and |input1| + |input2| < 2^31 "
                          f"(the tables reach {sum(reach)})")
    return checks


@footprint("edgesdk_add_s16")
def add_s16_footprint(call, op) -> list:
    """The broadcast walk; no tables (the int16 path computes each rescale) and no fast output path."""
    p = call.args[0]
    checks = require(p["fast_output"] == 0 and isinstance(p["input1_table"], Null)
                     and isinstance(p["input2_table"], Null),
                     "edgesdk_add_s16 takes no tables and no fast output path")
    return checks + binary_footprint(call, op)


footprint("edgesdk_add_pot_s16")(binary_footprint)
