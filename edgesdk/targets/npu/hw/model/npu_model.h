/*
 * npu_model.h - C model of the edgesdk NPU-1 layer engine (docs/npu-datasheet.md).
 *
 * A register-level device: the emulator maps npu_reg_read/npu_reg_write onto the peripheral window and
 * binds the bus callbacks to guest memory. Writing CTRL.START executes the whole command table
 * synchronously, then STATUS, ERROR_COMMAND, IRQ_STATUS and the PERF counters hold the outcome.
 * npu_execute_table() runs a table without the register file (unit tests).
 *
 * Every number below equals the constant of the same name (without NPU_) in edgesdk/targets/npu/hw/registers.py;
 * a test compares them.
 */
#ifndef NPU_MODEL_H
#define NPU_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* identification */
#define NPU_ID_VALUE 0x3155504Eu /* "NPU1" */
#define NPU_VERSION_MAJOR 1
#define NPU_VERSION_MINOR 2
#define NPU_VERSION_VALUE 0x00010002u

/* register offsets */
#define NPU_REG_ID 0x000
#define NPU_REG_VERSION 0x004
#define NPU_REG_CTRL 0x008
#define NPU_REG_STATUS 0x00C
#define NPU_REG_ERROR_COMMAND 0x010
#define NPU_REG_IRQ_STATUS 0x014
#define NPU_REG_IRQ_CLEAR 0x018
#define NPU_REG_IRQ_ENABLE 0x01C
#define NPU_REG_CMD_BASE 0x020
#define NPU_REG_CMD_SIZE 0x024
#define NPU_REG_REGION_BASE0 0x040
#define NPU_REG_PERF_CYCLES_LO 0x080
#define NPU_REG_PERF_CYCLES_HI 0x084
#define NPU_REG_PERF_MACS_LO 0x088
#define NPU_REG_PERF_MACS_HI 0x08C
#define NPU_REG_PERF_COMMANDS 0x090
#define NPU_REG_PERF_SRAM_READ_BYTES 0x094
#define NPU_REG_PERF_FLASH_READ_BYTES 0x098
#define NPU_REG_PERF_WRITE_BYTES 0x09C
#define NPU_REG_WINDOW_BYTES 0x100
#define NPU_NUM_REGIONS 8

/* bit fields */
#define NPU_CTRL_START 0x1u
#define NPU_CTRL_RESET 0x2u
#define NPU_STATUS_BUSY 0x1u
#define NPU_STATUS_DONE 0x2u
#define NPU_STATUS_ERROR 0x4u
#define NPU_STATUS_ERROR_CODE_SHIFT 8
#define NPU_STATUS_ERROR_CODE_MASK 0xFF00u
#define NPU_IRQ_DONE 0x1u
#define NPU_IRQ_ERROR 0x2u
#define NPU_NO_COMMAND 0xFFFFFFFFu

/* error codes (STATUS bits 15:8) */
#define NPU_ERR_NONE 0x00
#define NPU_ERR_TABLE_MAGIC 0x01
#define NPU_ERR_TABLE_VERSION 0x02
#define NPU_ERR_TABLE_SIZE 0x03
#define NPU_ERR_BAD_OPCODE 0x04
#define NPU_ERR_CMD_SIZE 0x05
#define NPU_ERR_BAD_REGION 0x06
#define NPU_ERR_BAD_SHAPE 0x07
#define NPU_ERR_BAD_PARAM 0x08
#define NPU_ERR_ADDRESS_RANGE 0x09
#define NPU_ERR_TOO_LARGE 0x0A
#define NPU_ERR_BUS 0x0B
#define NPU_ERR_BAD_QUANT 0x0C
#define NPU_ERR_NO_END 0x0D
#define NPU_ERR_ABORTED 0x0E
#define NPU_ERR_NO_BUS 0x0F
#define NPU_ERR_NO_MEMORY 0x10
#define NPU_ERR_BAD_WEIGHTS 0x11
#define NPU_ERR_BAD_INDEX 0x12

/* command table format */
#define NPU_TABLE_MAGIC 0x4C42544Eu /* "NTBL" */
#define NPU_TABLE_HEADER_BYTES 16
#define NPU_CMD_HEADER_BYTES 8
#define NPU_DESC_BYTES 32
#define NPU_PARAM_REF_BYTES 8
#define NPU_CHANNEL_PARAM_BYTES 12
#define NPU_CHANNEL_PARAM_BYTES_WIDE 16
#define NPU_OP_END 0x01
#define NPU_OP_DMA_COPY 0x02
#define NPU_OP_GATHER_HW 0x03
#define NPU_OP_CONV2D 0x10
#define NPU_OP_DEPTHWISE_CONV2D 0x11
#define NPU_OP_TRANSPOSE_CONV2D 0x12
#define NPU_OP_MAX_POOL 0x20
#define NPU_OP_AVG_POOL 0x21
#define NPU_OP_ADD 0x30
#define NPU_OP_MUL 0x31
#define NPU_OP_SUB 0x32
#define NPU_OP_MIN 0x33
#define NPU_OP_MAX 0x34
#define NPU_OP_TABLE 0x40
#define NPU_CMD_BYTES_END 8
#define NPU_CMD_BYTES_DMA_COPY 72
#define NPU_CMD_BYTES_CONV 136
#define NPU_CMD_BYTES_POOL 88
#define NPU_CMD_BYTES_ELEMENTWISE 144
#define NPU_CMD_BYTES_GATHER_HW 80
#define NPU_CMD_BYTES_TABLE 88
#define NPU_ROUNDING_DOUBLE 0
#define NPU_ROUNDING_SINGLE 1
#define NPU_ROUNDING_FP64 2
#define NPU_FLAG_PER_TENSOR_PARAMS 0x1u
#define NPU_FLAG_AVG_FLOOR 0x2u
#define NPU_FLAG_COMPRESSED_WEIGHTS 0x4u

/* compressed weight streams */
#define NPU_WEIGHT_STREAM_FORMAT 1
#define NPU_WEIGHT_STREAM_HEADER_BYTES 72
#define NPU_WEIGHT_DECODE_LANES 16
#define NPU_WEIGHT_MAX_CODE_LENGTH 15
#define NPU_WEIGHT_RUN_SYMBOLS 16
#define NPU_DTYPE_INT8 0
#define NPU_DTYPE_INT16 1
#define NPU_TABLE_ENTRIES_INT8 256
#define NPU_TABLE_ENTRIES_INT16 513

/* limits */
#define NPU_MAX_TABLE_BYTES 0x100000u
#define NPU_MAX_COMMANDS 65535
#define NPU_MAX_OPERAND_BYTES 0x400000u
#define NPU_MAX_DIM 65535
#define NPU_MAX_KERNEL 64
#define NPU_MAX_POOL_FILTER 256
#define NPU_MAX_STRIDE 64
#define NPU_MAX_DILATION 32
#define NPU_MAX_LEFT_SHIFT 24
#define NPU_MIN_SHIFT (-31)
#define NPU_MAX_SHIFT 30
#define NPU_MAX_SHIFT_WIDE 14
#define NPU_MAX_OPS_PER_COMMAND 0x10000000u

/* timing model */
#define NPU_MACS_PER_CYCLE 128
#define NPU_CONV_OC_LANES 8
#define NPU_CONV_IC_LANES 16
#define NPU_CONV_IC_LANES_16 8
#define NPU_VEC_CHANNEL_LANES 16
#define NPU_VEC_CHANNEL_LANES_16 8
#define NPU_VEC_PIXEL_LANES 8
#define NPU_CMD_OVERHEAD_CYCLES 32
#define NPU_BANDWIDTH_SCALE 256
#define NPU_DEFAULT_BYTES_PER_CYCLE_X256 2048
#define NPU_MEM_KIND_SRAM 0
#define NPU_MEM_KIND_FLASH 1
#define NPU_MAX_MEMORY_CLASSES 8

/* Bus callbacks: 0 = ok, nonzero = bus error (the command fails with NPU_ERR_BUS). */
typedef int (*npu_bus_read_fn)(void *ctx, uint32_t addr, void *buf, uint32_t len);
typedef int (*npu_bus_write_fn)(void *ctx, uint32_t addr, const void *buf, uint32_t len);

/* An address range with its kind (SRAM/flash, for the PERF byte counters) and bandwidth. */
typedef struct {
    uint32_t base;
    uint32_t size;
    uint32_t kind;                 /* NPU_MEM_KIND_SRAM or NPU_MEM_KIND_FLASH */
    uint32_t bytes_per_cycle_x256; /* bandwidth in bytes per NPU cycle, times 256 */
} npu_memory_class_t;

/* Called after every completed command of a run, END included (profilers: edgesdk run --profile): the
 * command's index in its table and the cycles the timing model gave it (they sum to PERF_CYCLES). */
typedef void (*npu_command_observer_fn)(void *ctx, uint32_t command, uint64_t cycles);

/* Everything a table run needs besides the table itself. */
typedef struct {
    npu_bus_read_fn read;
    npu_bus_write_fn write;
    void *ctx;
    const npu_memory_class_t *memory_classes;
    uint32_t num_memory_classes;
    const volatile uint32_t *abort_request; /* nonzero stops the run with NPU_ERR_ABORTED; may be NULL */
    npu_command_observer_fn observer;       /* may be NULL */
    void *observer_ctx;
} npu_env_t;

/* Outcome of a run (the PERF registers show these values, byte counters saturated to 32 bits). */
typedef struct {
    uint32_t error_code;    /* NPU_ERR_* */
    uint32_t error_command; /* index of the failing command, NPU_NO_COMMAND for table-level errors */
    uint64_t cycles;        /* timing model, completed commands only */
    uint64_t macs;
    uint32_t commands;      /* completed commands, END included */
    uint64_t sram_read_bytes;
    uint64_t flash_read_bytes;
    uint64_t write_bytes;
} npu_result_t;

typedef struct npu_device npu_device_t;

npu_device_t *npu_create(void);
void npu_destroy(npu_device_t *dev);
void npu_set_bus(npu_device_t *dev, npu_bus_read_fn read, npu_bus_write_fn write, void *ctx);
/* Declare [base, base + size) as SRAM or flash with its bandwidth; returns 0, or -1 when the table of
 * NPU_MAX_MEMORY_CLASSES is full or the arguments are invalid. Unlisted addresses count as SRAM at
 * NPU_DEFAULT_BYTES_PER_CYCLE_X256. */
int npu_set_memory_class(npu_device_t *dev, uint32_t base, uint32_t size, uint32_t kind,
                         uint32_t bytes_per_cycle_x256);
void npu_clear_memory_classes(npu_device_t *dev);
/* Call `observer` after every command the device's runs complete (NULL: stop). Not a register: wiring. */
void npu_set_command_observer(npu_device_t *dev, npu_command_observer_fn observer, void *ctx);
uint32_t npu_reg_read(npu_device_t *dev, uint32_t offset);
void npu_reg_write(npu_device_t *dev, uint32_t offset, uint32_t value);
int npu_irq_pending(npu_device_t *dev);

/* Snapshots: the register file as npu_state_words() words (bus binding and memory classes excluded: the
 * owner declares them again). npu_restore_state returns 0, or -1 when `count` is not npu_state_words() or
 * a run is in progress. */
uint32_t npu_state_words(void);
void npu_save_state(const npu_device_t *dev, uint32_t *words);
int npu_restore_state(npu_device_t *dev, const uint32_t *words, uint32_t count);

/* Run a table without registers; returns result->error_code. */
uint32_t npu_execute_table(const npu_env_t *env, uint32_t table_addr, uint32_t table_bytes,
                           const uint32_t region_bases[NPU_NUM_REGIONS], npu_result_t *result);

/* Only the static pass of a run over the table bytes at `table` (host memory), as if read from
 * `table_addr`: the error a run would report before executing anything (NPU_ERR_NONE if the table passes
 * it) and the failing command in result->error_command. edgesdk/targets/npu/hw/validate.py mirrors it in Python. */
uint32_t npu_validate_table(const uint8_t *table, uint32_t table_addr, uint32_t table_bytes,
                            const uint32_t region_bases[NPU_NUM_REGIONS], npu_result_t *result);

#ifdef __cplusplus
}
#endif

#endif /* NPU_MODEL_H */
