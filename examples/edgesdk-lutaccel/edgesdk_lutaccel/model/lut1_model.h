/*
 * lut1_model.h - the VendorX LUT-1's native model for edgesdk's built-in emulator (PeripheralModel.native).
 *
 * The emulator compiles this file into its library next to the other native models a board uses (the NPU's)
 * and drives it through the functions below, all named lut1_* (every other symbol is static, so models link
 * side by side). Registers are those of hal/lutaccel.h and device.py (the Python model of the same device).
 */
#ifndef LUT1_MODEL_H
#define LUT1_MODEL_H

#include <stdint.h>

typedef int (*lut1_bus_read_fn)(void *ctx, uint32_t addr, void *buf, uint32_t len);
typedef int (*lut1_bus_write_fn)(void *ctx, uint32_t addr, const void *buf, uint32_t len);

typedef struct lut1_device lut1_device_t;
/* Called after each completed job with its index in the run (always 0: a run is one job) and its cycles. */
typedef void (*lut1_command_observer_fn)(void *ctx, uint32_t command, uint64_t cycles);

lut1_device_t *lut1_create(void);
void lut1_destroy(lut1_device_t *dev);
/* The DMA's view of the board: reads and writes of guest memory, 0 = done, else a bus error. */
void lut1_set_bus(lut1_device_t *dev, lut1_bus_read_fn read, lut1_bus_write_fn write, void *ctx);
/* The board entry's timing: {lookups_per_cycle, startup_cycles, table_dma_bytes_per_cycle}, each > 0. */
int lut1_configure(lut1_device_t *dev, const uint32_t *words, uint32_t count);
/* Profiling (edgesdk run --profile): report every job's cycles to `observer`, NULL to stop. */
void lut1_set_command_observer(lut1_device_t *dev, lut1_command_observer_fn observer, void *ctx);
uint32_t lut1_reg_read(lut1_device_t *dev, uint32_t offset);
void lut1_reg_write(lut1_device_t *dev, uint32_t offset, uint32_t value);

#endif /* LUT1_MODEL_H */
