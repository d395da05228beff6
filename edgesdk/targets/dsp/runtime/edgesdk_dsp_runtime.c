/*
 * edgesdk_dsp_runtime.c - walk a DSP subgraph blob and run each node on DSP-1 (edgesdk_dsp_runtime.h).
 *
 * Layout (docs/dsp-datasheet.md, "Blob"; little-endian, read byte by byte so alignment never matters):
 *   header 32 B: magic u32, version u16, header_bytes u16, tensor_count u16, node_count u16,
 *                tensor_entry_bytes u16, node_entry_bytes u16, tensors_offset u32, nodes_offset u32,
 *                data_offset u32, blob_bytes u32
 *   tensor 36 B: location u8, dtype u8, rank u8, reserved u8, offset u32, bytes u32, dims i32[4],
 *                scale f32, zero_point i32
 *   node   20 B: opcode u16, input_count u16, input0 u16, input1 u16, output u16, reserved u16,
 *                param_offset u32, param_bytes u32
 */
#include "edgesdk_dsp_runtime.h"

#include "board.h"

#define HEADER_BYTES 32u
#define TENSOR_ENTRY_BYTES 36u
#define NODE_ENTRY_BYTES 20u
#define LOCATION_ARENA 0u
#define LOCATION_BLOB 1u
#define MAX_INPUTS 2u

static uint32_t last_status;
static uint32_t last_node;
static int id_checked;

typedef struct {
    uint32_t address;
    uint32_t bytes;
} dsp_operand;

static volatile uint32_t *dsp_reg(uint32_t offset)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_DSP0_BASE + offset);
}

/* Order the CPU's memory accesses against the DSP's (see npu_driver.c). */
static void memory_barrier(void)
{
#if defined(__riscv)
    __asm__ volatile("fence rw, rw" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static uint32_t get_u16(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* [offset, offset + bytes) inside [0, limit), without overflow. */
static int span_inside(uint32_t offset, uint32_t bytes, uint32_t limit)
{
    return bytes <= limit && offset <= limit - bytes;
}

static int32_t check_id(void)
{
    if (id_checked) {
        return EDGESDK_DSP_OK;
    }
    if (*dsp_reg(EDGESDK_DSP_REG_ID) != EDGESDK_DSP_ID_VALUE ||
        (*dsp_reg(EDGESDK_DSP_REG_VERSION) >> 16) != EDGESDK_DSP_VERSION_MAJOR) {
        return EDGESDK_DSP_ERR_ID;
    }
    id_checked = 1;
    return EDGESDK_DSP_OK;
}

static int32_t check_header(const uint8_t *blob, uint32_t blob_bytes)
{
    if (blob_bytes < HEADER_BYTES || get_u32(blob) != EDGESDK_DSP_BLOB_MAGIC ||
        get_u16(blob + 4) != EDGESDK_DSP_BLOB_VERSION || get_u16(blob + 6) != HEADER_BYTES ||
        get_u16(blob + 12) != TENSOR_ENTRY_BYTES || get_u16(blob + 14) != NODE_ENTRY_BYTES ||
        get_u32(blob + 28) != blob_bytes) {
        return EDGESDK_DSP_ERR_BLOB;
    }
    const uint32_t tensors = get_u16(blob + 8), nodes = get_u16(blob + 10);
    if (!span_inside(get_u32(blob + 16), tensors * TENSOR_ENTRY_BYTES, blob_bytes) ||
        !span_inside(get_u32(blob + 20), nodes * NODE_ENTRY_BYTES, blob_bytes)) {
        return EDGESDK_DSP_ERR_TABLE;
    }
    return EDGESDK_DSP_OK;
}

static const uint8_t *tensor_entry(const uint8_t *blob, uint32_t index)
{
    return blob + get_u32(blob + 16) + index * TENSOR_ENTRY_BYTES;
}

static const uint8_t *node_entry(const uint8_t *blob, uint32_t index)
{
    return blob + get_u32(blob + 20) + index * NODE_ENTRY_BYTES;
}

/* Where tensor `index` lives: in the arena, or (a constant operand) in the blob. */
static int32_t locate_tensor(const uint8_t *blob, uint32_t blob_bytes, const uint8_t *arena, uint32_t arena_bytes,
                             uint32_t index, dsp_operand *out)
{
    if (index >= get_u16(blob + 8)) {
        return EDGESDK_DSP_ERR_TABLE;
    }
    const uint8_t *t = tensor_entry(blob, index);
    const uint32_t offset = get_u32(t + 4), bytes = get_u32(t + 8);
    if (t[0] == LOCATION_ARENA) {
        if (bytes == 0 || !span_inside(offset, bytes, arena_bytes)) {
            return EDGESDK_DSP_ERR_TENSOR;
        }
        out->address = (uint32_t)(uintptr_t)(arena + offset);
    } else if (t[0] == LOCATION_BLOB) {
        if (bytes == 0 || !span_inside(offset, bytes, blob_bytes)) {
            return EDGESDK_DSP_ERR_TENSOR;
        }
        out->address = (uint32_t)(uintptr_t)(blob + offset);
    } else {
        return EDGESDK_DSP_ERR_TABLE;
    }
    out->bytes = bytes;
    return EDGESDK_DSP_OK;
}

/* The operands of node `index`: inputs, then the output (which must be an arena tensor). */
static int32_t node_operands(const uint8_t *blob, uint32_t blob_bytes, const uint8_t *arena, uint32_t arena_bytes,
                             uint32_t index, dsp_operand ops[MAX_INPUTS + 1], uint32_t *inputs)
{
    const uint8_t *n = node_entry(blob, index);
    *inputs = get_u16(n + 2);
    if (*inputs == 0 || *inputs > MAX_INPUTS || !span_inside(get_u32(n + 12), get_u32(n + 16), blob_bytes)) {
        return EDGESDK_DSP_ERR_TABLE;
    }
    int32_t status = EDGESDK_DSP_OK;
    for (uint32_t k = 0; k < *inputs && status == EDGESDK_DSP_OK; k++) {
        status = locate_tensor(blob, blob_bytes, arena, arena_bytes, get_u16(n + 4 + 2 * k), &ops[k]);
    }
    const uint32_t output = get_u16(n + 8);
    if (status == EDGESDK_DSP_OK) {
        status = locate_tensor(blob, blob_bytes, arena, arena_bytes, output, &ops[MAX_INPUTS]);
    }
    if (status == EDGESDK_DSP_OK && tensor_entry(blob, output)[0] != LOCATION_ARENA) {
        status = EDGESDK_DSP_ERR_TABLE;
    }
    return status;
}

/* Everything the runtime can check before the DSP starts: a bad blob never reaches the hardware. */
static int32_t check_blob(const uint8_t *blob, uint32_t blob_bytes, const uint8_t *arena, uint32_t arena_bytes)
{
    int32_t status = check_header(blob, blob_bytes);
    const uint32_t nodes = status == EDGESDK_DSP_OK ? get_u16(blob + 10) : 0u;
    for (uint32_t i = 0; i < nodes && status == EDGESDK_DSP_OK; i++) {
        dsp_operand ops[MAX_INPUTS + 1];
        uint32_t inputs = 0;
        status = node_operands(blob, blob_bytes, arena, arena_bytes, i, ops, &inputs);
        last_node = i;
    }
    return status;
}

static int32_t wait_done(void)
{
    for (uint32_t poll = 0; poll < EDGESDK_DSP_POLL_LIMIT; poll++) {
        const uint32_t status = *dsp_reg(EDGESDK_DSP_REG_STATUS);
        if (status & (EDGESDK_DSP_STATUS_DONE | EDGESDK_DSP_STATUS_ERROR)) {
            last_status = status;
            return (status & EDGESDK_DSP_STATUS_ERROR) ? EDGESDK_DSP_ERR_DEVICE : EDGESDK_DSP_OK;
        }
    }
    *dsp_reg(EDGESDK_DSP_REG_CTRL) = EDGESDK_DSP_CTRL_RESET;
    return EDGESDK_DSP_ERR_TIMEOUT;
}

/* Program one node's registers and start it. */
static int32_t run_node(const uint8_t *blob, uint32_t blob_bytes, uint8_t *arena, uint32_t arena_bytes, uint32_t index)
{
    dsp_operand ops[MAX_INPUTS + 1] = {{0u, 0u}, {0u, 0u}, {0u, 0u}};
    uint32_t inputs = 0;
    const int32_t status = node_operands(blob, blob_bytes, arena, arena_bytes, index, ops, &inputs);
    if (status != EDGESDK_DSP_OK) {
        return status;
    }
    const uint8_t *n = node_entry(blob, index);
    *dsp_reg(EDGESDK_DSP_REG_OPCODE) = get_u16(n);
    *dsp_reg(EDGESDK_DSP_REG_SRC0_ADDR) = ops[0].address;
    *dsp_reg(EDGESDK_DSP_REG_SRC0_BYTES) = ops[0].bytes;
    *dsp_reg(EDGESDK_DSP_REG_SRC1_ADDR) = ops[1].address;
    *dsp_reg(EDGESDK_DSP_REG_SRC1_BYTES) = ops[1].bytes;
    *dsp_reg(EDGESDK_DSP_REG_DST_ADDR) = ops[MAX_INPUTS].address;
    *dsp_reg(EDGESDK_DSP_REG_DST_BYTES) = ops[MAX_INPUTS].bytes;
    *dsp_reg(EDGESDK_DSP_REG_PARAM_ADDR) = (uint32_t)(uintptr_t)(blob + get_u32(n + 12));
    *dsp_reg(EDGESDK_DSP_REG_PARAM_BYTES) = get_u32(n + 16);
    memory_barrier();
    *dsp_reg(EDGESDK_DSP_REG_CTRL) = EDGESDK_DSP_CTRL_START;
    const int32_t done = wait_done();
    memory_barrier();
    return done;
}

int32_t edgesdk_dsp_run(const uint8_t *blob, uint32_t blob_bytes, uint8_t *arena, uint32_t arena_bytes)
{
    last_status = 0;
    last_node = 0;
    int32_t status = check_id();
    if (status == EDGESDK_DSP_OK) {
        status = check_blob(blob, blob_bytes, arena, arena_bytes);
    }
    if (status != EDGESDK_DSP_OK) {
        return status;
    }
    /* Constants (LUT tables, filters, multipliers) are referenced relative to the blob. */
    *dsp_reg(EDGESDK_DSP_REG_CONST_BASE) = (uint32_t)(uintptr_t)blob;
    *dsp_reg(EDGESDK_DSP_REG_CONST_BYTES) = blob_bytes;
    const uint32_t nodes = get_u16(blob + 10);
    for (uint32_t i = 0; i < nodes && status == EDGESDK_DSP_OK; i++) {
        last_node = i;
        status = run_node(blob, blob_bytes, arena, arena_bytes, i);
    }
    return status;
}

uint32_t edgesdk_dsp_last_status(void)
{
    return last_status;
}

uint32_t edgesdk_dsp_last_node(void)
{
    return last_node;
}
