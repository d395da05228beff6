"""NPU-1 register map, bit fields, error codes, opcodes and limits: the one Python source of these numbers.

docs/npu-datasheet.md describes each of them. The C model header (edgesdk/targets/npu/hw/model/npu_model.h, names
prefixed `NPU_`) and the firmware driver header (edgesdk/targets/npu/hal/npu_driver.h, names prefixed `EDGESDK_NPU_`)
carry the same numbers; tests/test_npu_cmdtable.py parses both headers and compares them with this module.
"""

from __future__ import annotations

# -- identification ------------------------------------------------------------------------------
ID_VALUE = 0x3155504E  # bytes "NPU1" in little endian
VERSION_MAJOR = 1  # command-table format major version the hardware executes
VERSION_MINOR = 2  # 1.1: compressed weight streams; 1.2: int16 operands, signed strides, TRANSPOSE_CONV2D,
#                     SUB/MIN/MAX, TABLE, GATHER_HW
VERSION_VALUE = (VERSION_MAJOR << 16) | VERSION_MINOR

# -- register offsets (bytes from the peripheral base; all registers are 32-bit) -----------------
REG_ID = 0x000
REG_VERSION = 0x004
REG_CTRL = 0x008
REG_STATUS = 0x00C
REG_ERROR_COMMAND = 0x010
REG_IRQ_STATUS = 0x014
REG_IRQ_CLEAR = 0x018
REG_IRQ_ENABLE = 0x01C
REG_CMD_BASE = 0x020
REG_CMD_SIZE = 0x024
REG_REGION_BASE0 = 0x040  # REGION_BASE[i] at REG_REGION_BASE0 + 4 * i
REG_PERF_CYCLES_LO = 0x080
REG_PERF_CYCLES_HI = 0x084
REG_PERF_MACS_LO = 0x088
REG_PERF_MACS_HI = 0x08C
REG_PERF_COMMANDS = 0x090
REG_PERF_SRAM_READ_BYTES = 0x094
REG_PERF_FLASH_READ_BYTES = 0x098
REG_PERF_WRITE_BYTES = 0x09C
REG_WINDOW_BYTES = 0x100  # registers occupy [0, 0x100); the rest of the 4 KiB window reads 0

NUM_REGIONS = 8


def reg_region_base(index: int) -> int:
    return REG_REGION_BASE0 + 4 * index


# -- bit fields -------------------------------------------------------------------------------------
CTRL_START = 1 << 0
CTRL_RESET = 1 << 1

STATUS_BUSY = 1 << 0
STATUS_DONE = 1 << 1
STATUS_ERROR = 1 << 2
STATUS_ERROR_CODE_SHIFT = 8
STATUS_ERROR_CODE_MASK = 0xFF << STATUS_ERROR_CODE_SHIFT

IRQ_DONE = 1 << 0
IRQ_ERROR = 1 << 1

NO_COMMAND = 0xFFFFFFFF  # ERROR_COMMAND value for errors not tied to one command (table header)

# -- error codes (STATUS bits 15:8) ---------------------------------------------------------------------
ERR_NONE = 0x00
ERR_TABLE_MAGIC = 0x01
ERR_TABLE_VERSION = 0x02
ERR_TABLE_SIZE = 0x03
ERR_BAD_OPCODE = 0x04
ERR_CMD_SIZE = 0x05
ERR_BAD_REGION = 0x06
ERR_BAD_SHAPE = 0x07
ERR_BAD_PARAM = 0x08
ERR_ADDRESS_RANGE = 0x09
ERR_TOO_LARGE = 0x0A
ERR_BUS = 0x0B
ERR_BAD_QUANT = 0x0C
ERR_NO_END = 0x0D
ERR_ABORTED = 0x0E
ERR_NO_BUS = 0x0F
ERR_NO_MEMORY = 0x10
ERR_BAD_WEIGHTS = 0x11
ERR_BAD_INDEX = 0x12

ERROR_NAMES = {
    ERR_NONE: ("NONE", "no error"),
    ERR_TABLE_MAGIC: ("TABLE_MAGIC", "the table does not start with the magic 'NTBL'"),
    ERR_TABLE_VERSION: ("TABLE_VERSION", "the table's major format version is not the one this NPU executes"),
    ERR_TABLE_SIZE: ("TABLE_SIZE", "CMD_SIZE is too small or too large, differs from the table header, "
                                   "or the commands do not fill the table exactly"),
    ERR_BAD_OPCODE: ("BAD_OPCODE", "unknown opcode"),
    ERR_CMD_SIZE: ("CMD_SIZE", "a command's size field is not the size of its opcode or runs past the table"),
    ERR_BAD_REGION: ("BAD_REGION", "a descriptor names a region index >= 8"),
    ERR_BAD_SHAPE: ("BAD_SHAPE", "a zero dimension, or operand shapes that do not fit together"),
    ERR_BAD_PARAM: ("BAD_PARAM", "an out-of-range field (kernel, stride, dilation, padding, rounding, "
                                 "activation range, flags, reserved bits, output stride)"),
    ERR_ADDRESS_RANGE: ("ADDRESS_RANGE", "an operand extends beyond the 32-bit address space"),
    ERR_TOO_LARGE: ("TOO_LARGE", "an operand or the work of one command exceeds the NPU limits"),
    ERR_BUS: ("BUS", "a bus read or write failed (address not mapped or not writable)"),
    ERR_BAD_QUANT: ("BAD_QUANT", "a multiplier is negative, a shift is outside [-31, 30], or an FP64 scale is "
                                 "negative or not finite"),
    ERR_NO_END: ("NO_END", "the last command is not END, or END appears before the last command"),
    ERR_ABORTED: ("ABORTED", "a soft reset arrived while the table was running"),
    ERR_NO_BUS: ("NO_BUS", "START with no bus attached (model only)"),
    ERR_NO_MEMORY: ("NO_MEMORY", "the model could not allocate an internal buffer (host only)"),
    ERR_BAD_WEIGHTS: ("BAD_WEIGHTS", "a compressed weight stream is malformed (header, code lengths, a code, "
                                     "a run or a lane that does not fit its size)"),
    ERR_BAD_INDEX: ("BAD_INDEX", "an index map entry of a GATHER_HW command lies outside its source tensor"),
}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, (f"UNKNOWN_{code:#x}", "unknown error code"))[0]


def error_description(code: int) -> str:
    return ERROR_NAMES.get(code, ("", f"unknown error code {code:#x}"))[1]


# -- command table ----------------------------------------------------------------------------------------
TABLE_MAGIC = 0x4C42544E  # bytes "NTBL" in little endian
TABLE_HEADER_BYTES = 16
CMD_HEADER_BYTES = 8
DESC_BYTES = 32
PARAM_REF_BYTES = 8
CHANNEL_PARAM_BYTES = 12  # per output channel: int32 bias, then int32 multiplier + int32 shift, or a float64 scale
CHANNEL_PARAM_BYTES_WIDE = 16  # 16x8 layers (int16 input): int64 bias, then multiplier + shift, or a float64 scale

OP_END = 0x01
OP_DMA_COPY = 0x02
OP_GATHER_HW = 0x03
OP_CONV2D = 0x10
OP_DEPTHWISE_CONV2D = 0x11
OP_TRANSPOSE_CONV2D = 0x12
OP_MAX_POOL = 0x20
OP_AVG_POOL = 0x21
OP_ADD = 0x30
OP_MUL = 0x31
OP_SUB = 0x32
OP_MIN = 0x33
OP_MAX = 0x34
OP_TABLE = 0x40

CMD_BYTES_END = 8
CMD_BYTES_DMA_COPY = 72
CMD_BYTES_CONV = 136
CMD_BYTES_POOL = 88
CMD_BYTES_ELEMENTWISE = 144
CMD_BYTES_GATHER_HW = 80
CMD_BYTES_TABLE = 88

ROUNDING_DOUBLE = 0  # = EDGESDK_ROUNDING_DOUBLE in edgesdk/kernels/edgesdk_arith.h
ROUNDING_SINGLE = 1  # = EDGESDK_ROUNDING_SINGLE
ROUNDING_FP64 = 2  # = EDGESDK_ROUNDING_FP64: round(acc * f64 scale); conv commands only (LiteRT's reference FC)

FLAG_PER_TENSOR_PARAMS = 1 << 0  # CONV/DWCONV: one channel-parameter record serves every output channel
FLAG_AVG_FLOOR = 1 << 1  # AVG_POOL: floor((sum + n/2) / n), TFLite's uint8 rule, instead of half away from 0
FLAG_COMPRESSED_WEIGHTS = 1 << 2  # CONV/DWCONV: the weights are a compressed stream (edgesdk/targets/npu/hw/weight_codec.py)

# -- compressed weight streams (datasheet section "Compressed weight streams") ------------------------------
WEIGHT_STREAM_FORMAT = 1
WEIGHT_STREAM_HEADER_BYTES = 72  # format, run value, literal count, decoded bytes, 16 lane sizes
WEIGHT_DECODE_LANES = 16  # independent lanes, each decoded at one code per NPU cycle
WEIGHT_MAX_CODE_LENGTH = 15
WEIGHT_RUN_SYMBOLS = 16  # run symbol k: 2^(k+1) + (k+1 extra bits) repeats of the run value

DTYPE_INT8 = 0
DTYPE_INT16 = 1
DTYPE_BYTES = {DTYPE_INT8: 1, DTYPE_INT16: 2}
TABLE_ENTRIES_INT8 = 256  # TABLE: one int8 result per int8 input
TABLE_ENTRIES_INT16 = 513  # TABLE: 512 int16 base values + 1, interpolated (TFLite's LUTLookup)

# -- limits ---------------------------------------------------------------------------------------------
MAX_TABLE_BYTES = 1 << 20
MAX_COMMANDS = 65535
MAX_OPERAND_BYTES = 1 << 22  # any operand (compact) or output, and the channel-parameter array
MAX_DIM = 65535
MAX_KERNEL = 64  # conv / depthwise kernel height and width
MAX_POOL_FILTER = 256
MAX_STRIDE = 64
MAX_DILATION = 32
MAX_LEFT_SHIFT = 24
MIN_SHIFT = -31
MAX_SHIFT = 30
MAX_SHIFT_WIDE = 14  # 16x8 requantization (64-bit): shifts right by 15 - shift
MAX_OPS_PER_COMMAND = 1 << 28  # MACs (conv) or element operations (pool, elementwise) per command

# -- timing model ------------------------------------------------------------------------------------------
MACS_PER_CYCLE = 128
CONV_OC_LANES = 8  # conv / FC: 8 output channels x 16 input channels per cycle
CONV_IC_LANES = 16
CONV_IC_LANES_16 = 8  # int16 inputs: 16x8 products take two 8x8 lanes
VEC_CHANNEL_LANES = 16  # depthwise, pooling, elementwise: 16 channels x 8 output columns per cycle
VEC_PIXEL_LANES = 8
VEC_CHANNEL_LANES_16 = 8  # int16 operands: half the channels per cycle
CMD_OVERHEAD_CYCLES = 32
BANDWIDTH_SCALE = 256  # bandwidths are given as bytes per NPU cycle x 256
DEFAULT_BYTES_PER_CYCLE_X256 = 8 * 256  # addresses in no configured memory class

MEM_KIND_SRAM = 0
MEM_KIND_FLASH = 1
MAX_MEMORY_CLASSES = 8
