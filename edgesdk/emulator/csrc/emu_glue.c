/* Native half of the edgesdk emulator: everything that runs while the guest runs.
 *
 * - emu_block_hook: exact, deterministic instruction counting (Unicorn's instret/cycle CSRs return host
 *   time). Called once per executed translation block; decodes instruction lengths from the block's bytes
 *   (RVC: 16-bit unless the low two bits are 11). It also snapshots the count whenever a block starts at
 *   edgesdk_harness_mark, which brackets the inference in the firmware harness.
 * - ns16550 UART (output only) and sifive_test exit device as Unicorn MMIO callbacks.
 * - Native peripheral models (PeripheralModel.native: the NPU, a plugin's accelerator...), any number of them
 *   side by side: each board peripheral gets a device with its register window (MMIO callbacks into the
 *   model's reg_read/reg_write), its bus (copies between guest addresses and the host buffers behind flash
 *   and SRAM), its interrupt line (irq_pending) and its counters (performance registers summed per run,
 *   runs counted, and optionally every command's cycles). The glue knows no model: Python hands it each
 *   model's functions.
 */
#include "emu_glue.h"

#include <stdlib.h>
#include <string.h>

#define EMU_MAX_MARKS 2048 /* two per inference: edgesdk run --steps runs up to 1000 in one boot */
#define EMU_UART_CAPACITY 65536
#define EMU_WINDOWS 2
#define EMU_MAX_PERF_REGS 32
#define EMU_MAX_DEVICES 8

#define UART_THR 0u
#define UART_LSR 5u
#define UART_LSR_IDLE 0x60u /* THR empty + transmitter empty: the guest never waits */

#define SIFIVE_TEST_FAIL 0x3333u
#define SIFIVE_TEST_PASS 0x5555u
#define SIFIVE_TEST_RESET 0x7777u

typedef struct {
    uint64_t base;
    uint64_t size;
    uint8_t *host;
    int writable;
} emu_window_t;

struct emu_device {
    emu_state_t *state;
    int index;
    void *model;
    emu_reg_read_fn reg_read;
    emu_reg_write_fn reg_write;
    emu_irq_pending_fn irq_pending;

    /* Performance registers hold the last run only: sum them after every start. */
    uint32_t ctrl_offset;
    uint32_t start_mask;
    uint32_t perf_count;
    uint32_t perf_offsets[EMU_MAX_PERF_REGS];
    uint64_t perf_totals[EMU_MAX_PERF_REGS];
    uint64_t starts;

    /* Profiling (edgesdk run --profile): every command's cycles, as {run, command, cycles}. */
    uint64_t *trace;
    uint64_t trace_length; /* entries */
    uint64_t trace_capacity;
    int trace_full;
};

struct emu_state {
    emu_stop_fn stop;
    emu_window_t windows[EMU_WINDOWS];
    uint64_t mark_address;
    uint64_t instruction_limit;
    uint32_t uart_reg_shift;

    uint64_t instructions;
    uint64_t last_block_address; /* the most recently counted block, for emu_prepare_resume */
    uint32_t last_block_size;
    int last_block_was_mark;
    uint64_t marks[EMU_MAX_MARKS];
    uint32_t mark_hits;
    int stop_reason;
    int32_t exit_code;
    int device_error;
    uint64_t device_error_offset;
    uint32_t device_error_size;
    uint32_t bus_errors;
    uint32_t uart_length;
    uint32_t uart_dropped;
    char uart[EMU_UART_CAPACITY + 1];
    int device_error_device; /* the native device of an EMU_DEV_ACCESS_SIZE error */
    emu_device_t devices[EMU_MAX_DEVICES];
    uint32_t device_count;
};

emu_state_t *emu_create(emu_stop_fn stop)
{
    emu_state_t *state = calloc(1, sizeof(*state));
    if (state != NULL) {
        state->stop = stop;
        state->mark_address = UINT64_MAX;
    }
    return state;
}

void emu_destroy(emu_state_t *state)
{
    if (state != NULL) {
        for (uint32_t i = 0; i < state->device_count; ++i) {
            free(state->devices[i].trace);
        }
    }
    free(state);
}

void emu_set_window(emu_state_t *state, int index, uint32_t base, uint32_t size, uint8_t *host, int writable)
{
    if (index >= 0 && index < EMU_WINDOWS) {
        state->windows[index] = (emu_window_t){base, size, host, writable};
    }
}

void emu_set_mark_address(emu_state_t *state, uint64_t address)
{
    state->mark_address = address;
}

void emu_set_instruction_limit(emu_state_t *state, uint64_t limit)
{
    state->instruction_limit = limit;
}

void emu_set_uart_reg_shift(emu_state_t *state, uint32_t shift)
{
    state->uart_reg_shift = shift;
}

/* Host pointer for guest [addr, addr + len), or NULL if it is not entirely inside one window. */
static uint8_t *host_pointer(emu_state_t *state, uint64_t addr, uint64_t len, int for_write)
{
    for (int i = 0; i < EMU_WINDOWS; ++i) {
        const emu_window_t *w = &state->windows[i];
        if (w->host != NULL && addr >= w->base && len <= w->size && addr - w->base <= w->size - len) {
            return (for_write && !w->writable) ? NULL : w->host + (addr - w->base);
        }
    }
    return NULL;
}

static void stop(emu_state_t *state, uc_engine *uc, int reason)
{
    if (state->stop_reason == EMU_RUNNING) {
        state->stop_reason = reason;
    }
    state->stop(uc);
}

/* ---- Instruction counting --------------------------------------------------------------------------- */

static uint32_t count_instructions(const uint8_t *code, uint32_t size)
{
    uint32_t count = 0;
    uint32_t pos = 0;
    while (pos < size) {
        pos += (code[pos] & 3u) == 3u ? 4u : 2u;
        ++count;
    }
    return count;
}

static uint32_t count_code(emu_state_t *state, uint64_t address, uint32_t size)
{
    const uint8_t *code = host_pointer(state, address, size, 0);
    /* Code always runs from a window (fetching elsewhere faults first); stay safe regardless. */
    return code != NULL ? count_instructions(code, size) : (size + 3u) / 4u;
}

void emu_block_hook(uc_engine *uc, uint64_t address, uint32_t size, void *user_data)
{
    emu_state_t *state = user_data;

    state->last_block_address = address;
    state->last_block_size = size;
    state->last_block_was_mark = address == state->mark_address && state->mark_hits < EMU_MAX_MARKS;
    if (state->last_block_was_mark) {
        state->marks[state->mark_hits++] = state->instructions;
    }
    state->instructions += count_code(state, address, size);
    if (state->instruction_limit != 0 && state->instructions >= state->instruction_limit) {
        stop(state, uc, EMU_STOP_LIMIT);
    }
}

/* Instructions executed before the one at `pc`, from a hook on that instruction: the block hook counted its
 * whole block already, so the instructions from `pc` to the block's end are not executed yet. */
uint64_t emu_instructions_before(const emu_state_t *state, uint64_t pc)
{
    uint64_t start = state->last_block_address;
    uint64_t end = start + state->last_block_size;
    if (pc < start || pc >= end) {
        return state->instructions;
    }
    const uint8_t *code = host_pointer((emu_state_t *)state, pc, end - pc, 0);
    uint64_t ahead = code != NULL ? count_instructions(code, (uint32_t)(end - pc)) : 0u;
    return state->instructions - ahead;
}

/* Unicorn runs a block's hook before it checks for a stop request (wall-clock slice over), so a stopped
 * CPU may have counted instructions it has not executed: the rest of the last block, from `pc` on.
 * Resuming at `pc` counts them again, so take them back (and the mark, if that block was the mark). */
void emu_prepare_resume(emu_state_t *state, uint64_t pc)
{
    uint64_t start = state->last_block_address;
    uint64_t end = start + state->last_block_size;
    if (pc < start || pc >= end) {
        return; /* stopped on a block boundary: nothing was counted ahead */
    }
    state->instructions -= count_code(state, pc, (uint32_t)(end - pc));
    if (pc == start && state->last_block_was_mark) {
        --state->mark_hits;
    }
    state->last_block_size = 0;
}

/* The exit-device store stops the CPU inside its block with pc still at the store, so the instructions
 * after it in that block were counted (by the block hook) but never executed. */
void emu_settle_exit(emu_state_t *state, uint64_t pc)
{
    const uint8_t *store = host_pointer(state, pc, 2, 0);
    if (store != NULL) {
        emu_prepare_resume(state, pc + ((store[0] & 3u) == 3u ? 4u : 2u));
    }
}

/* An exit the emulator detected outside the glue (a semihosting call): the run ends with `code`, and the
 * instruction at `pc`, which made the call and stopped the CPU before executing, counts as executed (as the
 * exit-device store does). Its block may or may not have been counted: Unicorn ends a block before an
 * instruction it cannot translate, so the stop may come on a block boundary. */
void emu_exit_at(emu_state_t *state, int32_t code, uint64_t pc)
{
    uint64_t start = state->last_block_address;
    uint64_t end = start + state->last_block_size;
    state->exit_code = code;
    if (state->stop_reason == EMU_RUNNING || state->stop_reason == EMU_STOP_LIMIT) {
        state->stop_reason = EMU_STOP_EXIT;
    }
    if (state->last_block_size != 0u && pc >= start && pc < end) {
        emu_settle_exit(state, pc);
    } else {
        const uint8_t *insn = host_pointer(state, pc, 2, 0);
        state->instructions += 1u;
        state->last_block_address = pc;
        state->last_block_size = insn != NULL && (insn[0] & 3u) != 3u ? 2u : 4u;
        state->last_block_was_mark = 0;
    }
}

/* ---- ns16550 UART: transmit only --------------------------------------------------------------------- */

uint64_t emu_uart_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data)
{
    const emu_state_t *state = user_data;
    (void)uc;
    (void)size;
    return (offset >> state->uart_reg_shift) == UART_LSR ? UART_LSR_IDLE : 0u;
}

void emu_uart_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data)
{
    emu_state_t *state = user_data;
    (void)uc;
    (void)size;
    if ((offset >> state->uart_reg_shift) != UART_THR) {
        return; /* line/FIFO configuration: nothing to model */
    }
    if (state->uart_length < EMU_UART_CAPACITY) {
        state->uart[state->uart_length++] = (char)(value & 0xffu);
    } else {
        ++state->uart_dropped;
    }
}

/* ---- SiFive UART (sifive_uart): transmit only ------------------------------------------------------ */

#define SIFIVE_UART_TXDATA 0x00u

/* txdata reads 0 (FIFO never full), rxdata 0 (no data but not flagged empty: the firmware never reads it). */
uint64_t emu_sifive_uart_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data)
{
    (void)uc;
    (void)offset;
    (void)size;
    (void)user_data;
    return 0u;
}

void emu_sifive_uart_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data)
{
    (void)size;
    if (offset == SIFIVE_UART_TXDATA) {
        emu_uart_write(uc, 0u, 1u, value, user_data); /* the ns16550's THR with reg_shift 0: the same buffer */
    }
    /* txctrl, div, the interrupt and receive registers: nothing to model */
}

/* ---- sifive_test exit device ------------------------------------------------------------------------- */

uint64_t emu_exit_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data)
{
    (void)uc;
    (void)offset;
    (void)size;
    (void)user_data;
    return 0;
}

void emu_exit_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data)
{
    emu_state_t *state = user_data;
    uint32_t command = (uint32_t)value & 0xffffu;
    (void)size;
    if (offset != 0) {
        return;
    }
    if (command == SIFIVE_TEST_PASS) {
        state->exit_code = 0;
        stop(state, uc, EMU_STOP_EXIT);
    } else if (command == SIFIVE_TEST_FAIL) {
        state->exit_code = (int32_t)(((uint32_t)value >> 16) & 0xffffu);
        stop(state, uc, EMU_STOP_EXIT);
    } else if (command == SIFIVE_TEST_RESET) {
        state->device_error = EMU_DEV_EXIT_RESET;
        state->device_error_offset = offset;
        stop(state, uc, EMU_STOP_DEVICE_ERROR);
    }
    /* Other values are ignored, as on QEMU. */
}

/* ---- Native peripheral models: the bus, the register windows, the counters ------------------------- */

int emu_bus_read(void *ctx, uint32_t addr, void *buf, uint32_t len)
{
    emu_state_t *state = ctx;
    const uint8_t *src = host_pointer(state, addr, len, 0);
    if (src == NULL) {
        ++state->bus_errors;
        return 1;
    }
    memcpy(buf, src, len);
    return 0;
}

int emu_bus_write(void *ctx, uint32_t addr, const void *buf, uint32_t len)
{
    emu_state_t *state = ctx;
    uint8_t *dst = host_pointer(state, addr, len, 1);
    if (dst == NULL) {
        ++state->bus_errors; /* outside memory, or into flash */
        return 1;
    }
    memcpy(dst, buf, len);
    return 0;
}

emu_device_t *emu_add_device(emu_state_t *state, void *model, emu_reg_read_fn reg_read, emu_reg_write_fn reg_write,
                             emu_irq_pending_fn irq_pending)
{
    if (state->device_count >= EMU_MAX_DEVICES || model == NULL || reg_read == NULL || reg_write == NULL) {
        return NULL;
    }
    emu_device_t *dev = &state->devices[state->device_count];
    memset(dev, 0, sizeof(*dev));
    dev->state = state;
    dev->index = (int)state->device_count++;
    dev->model = model;
    dev->reg_read = reg_read;
    dev->reg_write = reg_write;
    dev->irq_pending = irq_pending;
    return dev;
}

/* Native model registers are 32-bit and word aligned; anything else is a driver bug worth stopping for. */
static int device_access_ok(emu_device_t *dev, uc_engine *uc, uint64_t offset, unsigned size)
{
    if (size == 4u && (offset & 3u) == 0u) {
        return 1;
    }
    emu_state_t *state = dev->state;
    state->device_error = EMU_DEV_ACCESS_SIZE;
    state->device_error_device = dev->index;
    state->device_error_offset = offset;
    state->device_error_size = size;
    stop(state, uc, EMU_STOP_DEVICE_ERROR);
    return 0;
}

uint64_t emu_device_read(uc_engine *uc, uint64_t offset, unsigned size, void *user_data)
{
    emu_device_t *dev = user_data;
    if (!device_access_ok(dev, uc, offset, size)) {
        return 0;
    }
    return dev->reg_read(dev->model, (uint32_t)offset);
}

/* A start runs the model synchronously (a whole command table, a whole job), so its performance registers
 * describe that run right after the write: add them to the totals. */
static void account_run(emu_device_t *dev)
{
    ++dev->starts;
    for (uint32_t i = 0; i < dev->perf_count; ++i) {
        dev->perf_totals[i] += dev->reg_read(dev->model, dev->perf_offsets[i]);
    }
}

void emu_device_write(uc_engine *uc, uint64_t offset, unsigned size, uint64_t value, void *user_data)
{
    emu_device_t *dev = user_data;
    if (!device_access_ok(dev, uc, offset, size)) {
        return;
    }
    dev->reg_write(dev->model, (uint32_t)offset, (uint32_t)value);
    if (dev->start_mask != 0u && offset == dev->ctrl_offset && (value & dev->start_mask) != 0u) {
        account_run(dev);
    }
}

void emu_set_device_accounting(emu_device_t *dev, uint32_t ctrl_offset, uint32_t start_mask,
                               const uint32_t *perf_offsets, uint32_t count)
{
    dev->ctrl_offset = ctrl_offset;
    dev->start_mask = start_mask;
    dev->perf_count = count < EMU_MAX_PERF_REGS ? count : EMU_MAX_PERF_REGS;
    for (uint32_t i = 0; i < dev->perf_count; ++i) {
        dev->perf_offsets[i] = perf_offsets[i];
        dev->perf_totals[i] = 0;
    }
    dev->starts = 0;
}

uint64_t emu_device_perf_total(const emu_device_t *dev, uint32_t index)
{
    return index < dev->perf_count ? dev->perf_totals[index] : 0u;
}

uint64_t emu_device_starts(const emu_device_t *dev)
{
    return dev->starts;
}

int emu_device_irq_pending(const emu_device_t *dev)
{
    return dev->irq_pending != NULL ? dev->irq_pending(dev->model) : 0;
}

/* A model's command observer (e.g. npu_set_command_observer), `ctx` the device: one entry per completed
 * command. During a run, `starts` still counts the runs before it, so it is this run's index. */
void emu_device_command_observer(void *ctx, uint32_t command, uint64_t cycles)
{
    emu_device_t *dev = ctx;
    if (dev->trace_length == dev->trace_capacity) {
        uint64_t capacity = dev->trace_capacity ? 2u * dev->trace_capacity : 1024u;
        uint64_t *grown = realloc(dev->trace, capacity * 3u * sizeof(uint64_t));
        if (grown == NULL) {
            dev->trace_full = 1;
            return;
        }
        dev->trace = grown;
        dev->trace_capacity = capacity;
    }
    uint64_t *entry = &dev->trace[3u * dev->trace_length++];
    entry[0] = dev->starts;
    entry[1] = command;
    entry[2] = cycles;
}

uint64_t emu_device_trace_length(const emu_device_t *dev)
{
    return dev->trace_full ? 0u : dev->trace_length;
}

const uint64_t *emu_device_trace(const emu_device_t *dev)
{
    return dev->trace;
}

/* ---- Results ----------------------------------------------------------------------------------------- */

uint64_t emu_instructions(const emu_state_t *state)
{
    return state->instructions;
}

uint32_t emu_mark_hits(const emu_state_t *state)
{
    return state->mark_hits;
}

uint64_t emu_mark_instructions(const emu_state_t *state, uint32_t hit)
{
    return hit < state->mark_hits ? state->marks[hit] : 0u;
}

int emu_stop_reason(const emu_state_t *state)
{
    return state->stop_reason;
}

int32_t emu_exit_code(const emu_state_t *state)
{
    return state->exit_code;
}

int emu_device_error(const emu_state_t *state, uint64_t *offset, uint32_t *size)
{
    *offset = state->device_error_offset;
    *size = state->device_error_size;
    return state->device_error;
}

int emu_device_error_device(const emu_state_t *state)
{
    return state->device_error == EMU_DEV_ACCESS_SIZE ? state->device_error_device : -1;
}

uint32_t emu_uart_length(const emu_state_t *state)
{
    return state->uart_length;
}

const char *emu_uart_text(const emu_state_t *state)
{
    return state->uart;
}

uint32_t emu_uart_dropped(const emu_state_t *state)
{
    return state->uart_dropped;
}

uint32_t emu_bus_errors(const emu_state_t *state)
{
    return state->bus_errors;
}
