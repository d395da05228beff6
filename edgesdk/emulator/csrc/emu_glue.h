/* Native half of the edgesdk emulator (see emu_glue.c): board devices, NPU bus and instruction counting.
 *
 * Python (edgesdk/emulator/machine.py) creates an emu_state_t, describes the memory windows, and registers
 * the callbacks below with Unicorn's C API. Nothing on the hot path (the block hook) goes through Python.
 */
#ifndef EDGESDK_EMU_GLUE_H
#define EDGESDK_EMU_GLUE_H

#include <stdint.h>

#include <unicorn/unicorn.h>

typedef struct emu_state emu_state_t;
typedef uc_err (*emu_stop_fn)(uc_engine *uc);

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
    EMU_DEV_NPU_ACCESS_SIZE = 1,  /* NPU registers are 32-bit: other sizes/alignments are refused */
    EMU_DEV_EXIT_RESET = 2,       /* sifive_test "reset" request: not supported */
    EMU_DEV_NPU_MISSING = 3,      /* NPU register access, but no NPU model is attached */
};

emu_state_t *emu_create(emu_stop_fn stop);
void emu_destroy(emu_state_t *state);

/* Memory windows backed by host buffers; index 0 = flash (read-only), 1 = SRAM (read/write). */
void emu_set_window(emu_state_t *state, int index, uint32_t base, uint32_t size, uint8_t *host, int writable);
void emu_set_mark_address(emu_state_t *state, uint64_t address);
void emu_set_instruction_limit(emu_state_t *state, uint64_t limit); /* 0 = no limit */
void emu_set_uart_reg_shift(emu_state_t *state, uint32_t shift);

/* Bind an NPU model (npu_device_t *, from npu_create() in the same library) to the emulated bus:
 * its command execution reads and writes the memory windows. */
void emu_attach_npu(emu_state_t *state, void *npu);
/* The NPU's performance registers describe its last run; the emulator sums `perf_offsets` (32-bit
 * registers) after every write of `start_mask` to `ctrl_offset`, and counts those starts. */
void emu_set_npu_accounting(emu_state_t *state, uint32_t ctrl_offset, uint32_t start_mask,
                            const uint32_t *perf_offsets, uint32_t count);
uint64_t emu_npu_perf_total(const emu_state_t *state, uint32_t index);
uint64_t emu_npu_starts(const emu_state_t *state);
/* Profiling: pass emu_npu_command_observer and the state to the NPU model's npu_set_command_observer; the
 * trace holds emu_npu_trace_length() entries {run index, command index, cycles} (0 if memory ran out). */
void emu_npu_command_observer(void *ctx, uint32_t command, uint64_t cycles);
uint64_t emu_npu_trace_length(const emu_state_t *state);
const uint64_t *emu_npu_trace(const emu_state_t *state);

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
uint64_t emu_npu_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data);
void emu_npu_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data);

/* NPU bus callbacks (also exported for tests). */
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
uint32_t emu_uart_length(const emu_state_t *state);
const char *emu_uart_text(const emu_state_t *state);
uint32_t emu_uart_dropped(const emu_state_t *state);
uint32_t emu_bus_errors(const emu_state_t *state);

#endif /* EDGESDK_EMU_GLUE_H */
