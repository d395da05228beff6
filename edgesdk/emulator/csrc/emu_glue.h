/* Native half of the edgesdk emulator (see emu_glue.c): board devices, native peripheral models and
 * instruction counting.
 *
 * Python (edgesdk/emulator/machine.py) creates an emu_state_t, describes the memory windows, and registers
 * the callbacks below with Unicorn's C API. Nothing on the hot path (the block hook) goes through Python.
 */
#ifndef EDGESDK_EMU_GLUE_H
#define EDGESDK_EMU_GLUE_H

#include <stdint.h>

#include <unicorn/unicorn.h>

typedef struct emu_state emu_state_t;
typedef struct emu_device emu_device_t;
typedef uc_err (*emu_stop_fn)(uc_engine *uc);

/* A native peripheral model, as the glue drives it (PeripheralModel.native; docs/porting-a-new-accelerator.md):
 * its 32-bit registers, and whether its interrupt line is raised. */
typedef uint32_t (*emu_reg_read_fn)(void *model, uint32_t offset);
typedef void (*emu_reg_write_fn)(void *model, uint32_t offset, uint32_t value);
typedef int (*emu_irq_pending_fn)(void *model);

/* Why the emulation stopped (emu_stop_reason). */
enum {
    EMU_RUNNING = 0,
    EMU_STOP_EXIT = 1,          /* the firmware wrote the exit device */
    EMU_STOP_LIMIT = 2,         /* instruction budget used up */
    EMU_STOP_DEVICE_ERROR = 3,  /* unsupported peripheral access; see emu_device_error */
};

/* Device errors (emu_device_error). */
enum {
    EMU_DEV_OK = 0,
    EMU_DEV_ACCESS_SIZE = 1,  /* native model registers are 32-bit: other sizes/alignments are refused */
    EMU_DEV_EXIT_RESET = 2,   /* sifive_test "reset" request: not supported */
};

emu_state_t *emu_create(emu_stop_fn stop);
void emu_destroy(emu_state_t *state);

/* Memory windows backed by host buffers; index 0 = flash (read-only), 1 = SRAM (read/write). */
void emu_set_window(emu_state_t *state, int index, uint32_t base, uint32_t size, uint8_t *host, int writable);
void emu_set_mark_address(emu_state_t *state, uint64_t address);
void emu_set_instruction_limit(emu_state_t *state, uint64_t limit); /* 0 = no limit */
void emu_set_uart_reg_shift(emu_state_t *state, uint32_t shift);

/* A native peripheral model instance (created by its own <prefix>_create in this library) on the bus: map
 * its register window with emu_device_read/emu_device_write and the returned device as user data; bind the
 * model's bus to emu_bus_read/emu_bus_write with the state as context. NULL when EMU_MAX_DEVICES are in use. */
emu_device_t *emu_add_device(emu_state_t *state, void *model, emu_reg_read_fn reg_read, emu_reg_write_fn reg_write,
                             emu_irq_pending_fn irq_pending /* may be NULL */);
/* The model's performance registers describe its last run; the glue sums `perf_offsets` (32-bit registers)
 * after every write of `start_mask` to `ctrl_offset`, and counts those starts. */
void emu_set_device_accounting(emu_device_t *dev, uint32_t ctrl_offset, uint32_t start_mask,
                               const uint32_t *perf_offsets, uint32_t count);
uint64_t emu_device_perf_total(const emu_device_t *dev, uint32_t index);
uint64_t emu_device_starts(const emu_device_t *dev);
int emu_device_irq_pending(const emu_device_t *dev);
/* Profiling: pass emu_device_command_observer and the device to a model's command observer hook (e.g.
 * npu_set_command_observer); the trace holds emu_device_trace_length() entries {run index, command index,
 * cycles} (0 if memory ran out). */
void emu_device_command_observer(void *ctx, uint32_t command, uint64_t cycles);
uint64_t emu_device_trace_length(const emu_device_t *dev);
const uint64_t *emu_device_trace(const emu_device_t *dev);

/* Call before restarting a stopped CPU at `pc`: undoes counts for instructions not executed yet. */
void emu_prepare_resume(emu_state_t *state, uint64_t pc);
/* Call after the exit device stopped the CPU at `pc` (the store): makes the total exact. */
void emu_settle_exit(emu_state_t *state, uint64_t pc);
/* An exit found outside the glue (semihosting): exit code `code`, the call at `pc` counted as executed. */
void emu_exit_at(emu_state_t *state, int32_t code, uint64_t pc);

/* Unicorn callbacks (registered by address through ctypes). */
void emu_block_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data);
uint64_t emu_uart_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data);
void emu_uart_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data);
uint64_t emu_sifive_uart_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data);
void emu_sifive_uart_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data);
uint64_t emu_exit_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data);
void emu_exit_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data);
uint64_t emu_device_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data);
void emu_device_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data);

/* The native models' bus (context: the state; also exported for tests). */
int emu_bus_read(void *ctx, uint32_t addr, void *buf, uint32_t len);
int emu_bus_write(void *ctx, uint32_t addr, const void *buf, uint32_t len);

/* Results. */
uint64_t emu_instructions(const emu_state_t *state);
/* From a code hook on the instruction at `pc`: instructions executed before it (exact). */
uint64_t emu_instructions_before(const emu_state_t *state, uint64_t pc);
uint32_t emu_mark_hits(const emu_state_t *state);
uint64_t emu_mark_instructions(const emu_state_t *state, uint32_t hit); /* count before the hit */
int emu_stop_reason(const emu_state_t *state);
int32_t emu_exit_code(const emu_state_t *state);
int emu_device_error(const emu_state_t *state, uint64_t *offset, uint32_t *size);
int emu_device_error_device(const emu_state_t *state); /* index (emu_add_device order) or -1 */
uint32_t emu_uart_length(const emu_state_t *state);
const char *emu_uart_text(const emu_state_t *state);
uint32_t emu_uart_dropped(const emu_state_t *state);
uint32_t emu_bus_errors(const emu_state_t *state);

#endif /* EDGESDK_EMU_GLUE_H */
