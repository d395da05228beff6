"""DSP-1 register map, opcodes, error codes and cycle model (docs/dsp-datasheet.md).

The C model (model/dsp_model.h), the firmware runtime (runtime/edgesdk_dsp_runtime.h) and the Renode
peripheral (edgesdk/targets/dsp/renode/EdgesdkDsp1.cs) repeat these numbers; tests/test_dsp.py compares them.
"""

from __future__ import annotations

ID_VALUE = 0x31505344  # bytes "DSP1" in little endian
VERSION_MAJOR = 1
VERSION_MINOR = 0
VERSION_VALUE = (VERSION_MAJOR << 16) | VERSION_MINOR

REG_ID = 0x000
REG_VERSION = 0x004
REG_CTRL = 0x008
REG_STATUS = 0x00C
REG_OPCODE = 0x010
REG_SRC0_ADDR = 0x014
REG_SRC0_BYTES = 0x018
REG_SRC1_ADDR = 0x01C
REG_SRC1_BYTES = 0x020
REG_DST_ADDR = 0x024
REG_DST_BYTES = 0x028
REG_PARAM_ADDR = 0x02C
REG_PARAM_BYTES = 0x030
REG_CONST_BASE = 0x034
REG_CONST_BYTES = 0x038
REG_LAST_CYCLES = 0x040
REG_CYCLES_LO = 0x044
REG_CYCLES_HI = 0x048
REG_KERNELS = 0x04C
REG_ERRORS = 0x050
REG_WINDOW_BYTES = 0x1000

CTRL_START = 0x1
CTRL_RESET = 0x2
STATUS_BUSY = 0x1
STATUS_DONE = 0x2
STATUS_ERROR = 0x4
STATUS_ERROR_CODE_SHIFT = 8
STATUS_ERROR_CODE_MASK = 0xFF00

OP_COPY = 1
OP_LUT = 2
OP_SOFTMAX = 3
OP_MAX_POOL = 4
OP_AVERAGE_POOL = 5
OP_DEPTHWISE_CONV = 6
OP_ADD = 7
OP_MUL = 8
OPCODE_NAMES = {OP_COPY: "COPY", OP_LUT: "LUT", OP_SOFTMAX: "SOFTMAX", OP_MAX_POOL: "MAX_POOL",
                OP_AVERAGE_POOL: "AVERAGE_POOL", OP_DEPTHWISE_CONV: "DEPTHWISE_CONV", OP_ADD: "ADD", OP_MUL: "MUL"}

ERR_NONE = 0
ERR_OPCODE = 1
ERR_PARAM = 2
ERR_CONST_REF = 3
ERR_BUS = 4
ERR_NO_MEMORY = 5
ERROR_NAMES = {ERR_NONE: "NONE", ERR_OPCODE: "OPCODE", ERR_PARAM: "PARAM", ERR_CONST_REF: "CONST_REF",
               ERR_BUS: "BUS", ERR_NO_MEMORY: "NO_MEMORY"}

MAX_WINDOWS = 4
NO_REF = -1

# Cycle model: cycles = NODE_OVERHEAD_CYCLES + ceil(lane operations / LANES).
LANES = 16
NODE_OVERHEAD_CYCLES = 40
SOFTMAX_ROW_OPS = 16

BROADCAST_WORDS = 2 + 3 * 6
# Parameter record layout per opcode: the names of its int32 words, in order (dsp_model.c decodes them).
POOL_FIELDS = ("batches", "in_h", "in_w", "channels", "out_h", "out_w", "filter_h", "filter_w", "stride_h",
               "stride_w", "pad_top", "pad_left", "act_min", "act_max", "uint8_rounding")
BROADCAST_FIELDS = ("broadcast", "size", *(f"out_shape{d}" for d in range(6)),
                    *(f"in1_stride{d}" for d in range(6)), *(f"in2_stride{d}" for d in range(6)))
RECORD_FIELDS = {
    OP_COPY: ("bytes",),
    OP_LUT: ("size", "table_ref"),
    OP_SOFTMAX: ("rows", "depth", "input_multiplier", "input_left_shift", "diff_min", "rounding"),
    OP_MAX_POOL: POOL_FIELDS,
    OP_AVERAGE_POOL: POOL_FIELDS,
    OP_DEPTHWISE_CONV: ("batches", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "depth_multiplier",
                        "filter_h", "filter_w", "stride_h", "stride_w", "dilation_h", "dilation_w", "pad_top",
                        "pad_left", "input_offset", "filter_offset", "output_offset", "act_min", "act_max",
                        "rounding", "filter_ref", "bias_ref", "multiplier_ref", "shift_ref"),
    OP_ADD: (*BROADCAST_FIELDS, "input1_offset", "input2_offset", "output_offset", "left_shift",
             "input1_multiplier", "input1_shift", "input2_multiplier", "input2_shift", "output_multiplier",
             "output_shift", "act_min", "act_max", "rounding"),
    OP_MUL: (*BROADCAST_FIELDS, "input1_offset", "input2_offset", "output_offset", "output_multiplier",
             "output_shift", "act_min", "act_max", "rounding"),
}
# Bytes each constant reference of a record covers, as a function of the record's fields.
LUT_ENTRIES = 256


def const_refs(opcode: int, fields: dict) -> list:
    """[(name, blob offset, bytes)] of the constants a record references (NO_REF ones left out)."""
    if opcode == OP_LUT:
        return [("table", fields["table_ref"], LUT_ENTRIES)]
    if opcode == OP_DEPTHWISE_CONV:
        channels = fields["out_c"]
        refs = [("filter", fields["filter_ref"], fields["filter_h"] * fields["filter_w"] * channels),
                ("multiplier", fields["multiplier_ref"], 4 * channels), ("shift", fields["shift_ref"], 4 * channels)]
        if fields["bias_ref"] != NO_REF:
            refs.append(("bias", fields["bias_ref"], 4 * channels))
        return refs
    return []


def lane_ops(opcode: int, fields: dict) -> int:
    """The work of one kernel in lane operations (dsp_model.c counts the same)."""
    f = fields
    if opcode == OP_COPY:
        return f["bytes"]
    if opcode == OP_LUT:
        return f["size"]
    if opcode == OP_SOFTMAX:
        return 3 * f["rows"] * f["depth"] + f["rows"] * SOFTMAX_ROW_OPS
    if opcode in (OP_MAX_POOL, OP_AVERAGE_POOL):
        return f["batches"] * f["out_h"] * f["out_w"] * f["channels"] * f["filter_h"] * f["filter_w"]
    if opcode == OP_DEPTHWISE_CONV:
        return f["batches"] * f["out_h"] * f["out_w"] * f["out_c"] * f["filter_h"] * f["filter_w"]
    if opcode in (OP_ADD, OP_MUL):
        return f["size"]
    raise ValueError(f"unknown DSP opcode {opcode}")


def kernel_cycles(opcode: int, fields: dict) -> int:
    """Cycles of one START: the per-kernel overhead plus the lane operations spread over the lanes."""
    return NODE_OVERHEAD_CYCLES + -(-lane_ops(opcode, fields) // LANES)


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"UNKNOWN({code})")
