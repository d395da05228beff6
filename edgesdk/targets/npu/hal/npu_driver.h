/*
 * npu_driver.h - firmware driver of the NPU-1 layer engine (docs/npu-datasheet.md, "Programming sequence").
 *
 * The register numbers below equal edgesdk/targets/npu/hw/registers.py (names without EDGESDK_NPU_); a test compares
 * them. The peripheral base comes from the generated board.h (BOARD_NPU0_BASE).
 */
#ifndef EDGESDK_NPU_DRIVER_H
#define EDGESDK_NPU_DRIVER_H

#include <stdint.h>

/* identification */
#define EDGESDK_NPU_ID_VALUE 0x3155504Eu /* "NPU1" */
#define EDGESDK_NPU_VERSION_MAJOR 1

/* register offsets */
#define EDGESDK_NPU_REG_ID 0x000
#define EDGESDK_NPU_REG_VERSION 0x004
#define EDGESDK_NPU_REG_CTRL 0x008
#define EDGESDK_NPU_REG_STATUS 0x00C
#define EDGESDK_NPU_REG_ERROR_COMMAND 0x010
#define EDGESDK_NPU_REG_IRQ_STATUS 0x014
#define EDGESDK_NPU_REG_IRQ_CLEAR 0x018
#define EDGESDK_NPU_REG_IRQ_ENABLE 0x01C
#define EDGESDK_NPU_REG_CMD_BASE 0x020
#define EDGESDK_NPU_REG_CMD_SIZE 0x024
#define EDGESDK_NPU_REG_REGION_BASE0 0x040
#define EDGESDK_NPU_REG_PERF_CYCLES_LO 0x080
#define EDGESDK_NPU_REG_PERF_CYCLES_HI 0x084
#define EDGESDK_NPU_NUM_REGIONS 8

/* bit fields */
#define EDGESDK_NPU_CTRL_START 0x1u
#define EDGESDK_NPU_CTRL_RESET 0x2u
#define EDGESDK_NPU_STATUS_BUSY 0x1u
#define EDGESDK_NPU_STATUS_DONE 0x2u
#define EDGESDK_NPU_STATUS_ERROR 0x4u
#define EDGESDK_NPU_STATUS_ERROR_CODE_SHIFT 8
#define EDGESDK_NPU_STATUS_ERROR_CODE_MASK 0xFF00u
#define EDGESDK_NPU_IRQ_DONE 0x1u
#define EDGESDK_NPU_IRQ_ERROR 0x2u

/* edgesdk_npu_run() results */
#define EDGESDK_NPU_OK 0
#define EDGESDK_NPU_ERR_STATUS (-1)  /* the NPU reported an error: see edgesdk_npu_last_status() */
#define EDGESDK_NPU_ERR_TIMEOUT (-2) /* no DONE/ERROR within EDGESDK_NPU_POLL_LIMIT polls; NPU reset */
#define EDGESDK_NPU_ERR_ID (-3)      /* no NPU-1 with a supported table format at BOARD_NPU0_BASE */
#define EDGESDK_NPU_ERR_ARGS (-4)    /* more than EDGESDK_NPU_NUM_REGIONS region bases */

#ifndef EDGESDK_NPU_POLL_LIMIT
#define EDGESDK_NPU_POLL_LIMIT 100000000u
#endif

/* Run one command table; region_bases[i] goes to REGION_BASE[i] (region 0: weights, 1: arena). */
int32_t edgesdk_npu_run(const void *table, uint32_t table_bytes, const uint32_t *region_bases, uint32_t num_regions);

/* STATUS, ERROR_COMMAND and PERF_CYCLES as the last edgesdk_npu_run() left them. */
uint32_t edgesdk_npu_last_status(void);
uint32_t edgesdk_npu_last_error_command(void);
uint64_t edgesdk_npu_last_cycles(void);

#endif /* EDGESDK_NPU_DRIVER_H */
