/*
 * npu_driver.c - run NPU-1 command tables from the firmware, by polling (docs/npu-datasheet.md).
 */
#include "npu_driver.h"

#include "board.h"

static uint32_t last_status;
static uint32_t last_error_command;
static uint64_t last_cycles;
static int id_checked;

static volatile uint32_t *npu_reg(uint32_t offset)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_NPU0_BASE + offset);
}

/* Order the CPU's memory accesses against the NPU's: activations written before START must be visible
 * to the NPU, and its results must be read only after it reported completion. */
static void memory_barrier(void)
{
#if defined(__riscv)
    __asm__ volatile("fence rw, rw" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The ID and the table format's major version are checked once per boot. */
static int32_t check_id(void)
{
    if (id_checked) {
        return EDGESDK_NPU_OK;
    }
    if (*npu_reg(EDGESDK_NPU_REG_ID) != EDGESDK_NPU_ID_VALUE ||
        (*npu_reg(EDGESDK_NPU_REG_VERSION) >> 16) != EDGESDK_NPU_VERSION_MAJOR) {
        return EDGESDK_NPU_ERR_ID;
    }
    id_checked = 1;
    return EDGESDK_NPU_OK;
}

static uint32_t wait_for_completion(void)
{
    const uint32_t finished = EDGESDK_NPU_STATUS_DONE | EDGESDK_NPU_STATUS_ERROR;
    uint32_t status = *npu_reg(EDGESDK_NPU_REG_STATUS);
    for (uint32_t polls = 0; (status & finished) == 0 && polls < EDGESDK_NPU_POLL_LIMIT; polls++) {
        status = *npu_reg(EDGESDK_NPU_REG_STATUS);
    }
    return status;
}

int32_t edgesdk_npu_run(const void *table, uint32_t table_bytes, const uint32_t *region_bases, uint32_t num_regions)
{
    if (num_regions > EDGESDK_NPU_NUM_REGIONS) {
        return EDGESDK_NPU_ERR_ARGS;
    }
    int32_t err = check_id();
    if (err != EDGESDK_NPU_OK) {
        return err;
    }
    for (uint32_t i = 0; i < num_regions; i++) {
        *npu_reg(EDGESDK_NPU_REG_REGION_BASE0 + 4u * i) = region_bases[i];
    }
    *npu_reg(EDGESDK_NPU_REG_CMD_BASE) = (uint32_t)(uintptr_t)table;
    *npu_reg(EDGESDK_NPU_REG_CMD_SIZE) = table_bytes;
    memory_barrier();
    *npu_reg(EDGESDK_NPU_REG_CTRL) = EDGESDK_NPU_CTRL_START;

    uint32_t status = wait_for_completion();
    memory_barrier();
    last_status = status;
    last_error_command = *npu_reg(EDGESDK_NPU_REG_ERROR_COMMAND);
    last_cycles = ((uint64_t)*npu_reg(EDGESDK_NPU_REG_PERF_CYCLES_HI) << 32) | *npu_reg(EDGESDK_NPU_REG_PERF_CYCLES_LO);
    *npu_reg(EDGESDK_NPU_REG_IRQ_CLEAR) = EDGESDK_NPU_IRQ_DONE | EDGESDK_NPU_IRQ_ERROR;

    if ((status & (EDGESDK_NPU_STATUS_DONE | EDGESDK_NPU_STATUS_ERROR)) == 0) {
        *npu_reg(EDGESDK_NPU_REG_CTRL) = EDGESDK_NPU_CTRL_RESET; /* leave the NPU idle for the next run */
        return EDGESDK_NPU_ERR_TIMEOUT;
    }
    return (status & EDGESDK_NPU_STATUS_ERROR) ? EDGESDK_NPU_ERR_STATUS : EDGESDK_NPU_OK;
}

uint32_t edgesdk_npu_last_status(void) { return last_status; }

uint32_t edgesdk_npu_last_error_command(void) { return last_error_command; }

uint64_t edgesdk_npu_last_cycles(void) { return last_cycles; }
