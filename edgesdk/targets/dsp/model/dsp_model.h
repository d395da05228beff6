/*
 * dsp_model.h - C model of the edgesdk DSP-1 vector DSP (docs/dsp-datasheet.md).
 *
 * A register-level device that executes ONE vector kernel per CTRL.START: the opcode, the operand
 * addresses and byte counts, and the address of a parameter record are programmed into registers first.
 * The kernel runs synchronously inside the register write; then STATUS holds DONE or ERROR with a code,
 * and the cycle counters hold the cost model's cycles (docs/dsp-datasheet.md, "Cycle model").
 *
 * Guest memory is reached two ways:
 *   * direct windows (dsp_set_window): host pointers to guest memory, used in place (zero copy). The
 *     built-in emulator hands over its flash and SRAM numpy buffers this way;
 *   * bus callbacks (dsp_set_bus): every operand outside the windows is copied in, and outputs copied
 *     back, through the callbacks. The Renode peripheral (edgesdk/renode/EdgesdkDsp1.cs) uses these.
 * An operand that neither reaches is a bus error (STATUS.ERROR_CODE = DSP_ERR_BUS).
 *
 * Every number below equals the constant of the same name in edgesdk/targets/dsp/registers.py; a test
 * compares them.
 */
#ifndef DSP_MODEL_H
#define DSP_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* identification */
#define DSP_ID_VALUE 0x31505344u /* "DSP1" */
#define DSP_VERSION_MAJOR 1
#define DSP_VERSION_MINOR 0
#define DSP_VERSION_VALUE 0x00010000u

/* register offsets */
#define DSP_REG_ID 0x000
#define DSP_REG_VERSION 0x004
#define DSP_REG_CTRL 0x008
#define DSP_REG_STATUS 0x00C
#define DSP_REG_OPCODE 0x010
#define DSP_REG_SRC0_ADDR 0x014
#define DSP_REG_SRC0_BYTES 0x018
#define DSP_REG_SRC1_ADDR 0x01C
#define DSP_REG_SRC1_BYTES 0x020
#define DSP_REG_DST_ADDR 0x024
#define DSP_REG_DST_BYTES 0x028
#define DSP_REG_PARAM_ADDR 0x02C
#define DSP_REG_PARAM_BYTES 0x030
#define DSP_REG_CONST_BASE 0x034
#define DSP_REG_CONST_BYTES 0x038
#define DSP_REG_LAST_CYCLES 0x040
#define DSP_REG_CYCLES_LO 0x044
#define DSP_REG_CYCLES_HI 0x048
#define DSP_REG_KERNELS 0x04C
#define DSP_REG_ERRORS 0x050
#define DSP_REG_WINDOW_BYTES 0x1000

/* bit fields */
#define DSP_CTRL_START 0x1u
#define DSP_CTRL_RESET 0x2u
#define DSP_STATUS_BUSY 0x1u
#define DSP_STATUS_DONE 0x2u
#define DSP_STATUS_ERROR 0x4u
#define DSP_STATUS_ERROR_CODE_SHIFT 8
#define DSP_STATUS_ERROR_CODE_MASK 0xFF00u

/* opcodes (the kernel a START runs) */
#define DSP_OP_COPY 1
#define DSP_OP_LUT 2
#define DSP_OP_SOFTMAX 3
#define DSP_OP_MAX_POOL 4
#define DSP_OP_AVERAGE_POOL 5
#define DSP_OP_DEPTHWISE_CONV 6
#define DSP_OP_ADD 7
#define DSP_OP_MUL 8

/* STATUS.ERROR_CODE */
#define DSP_ERR_NONE 0
#define DSP_ERR_OPCODE 1    /* OPCODE names no kernel */
#define DSP_ERR_PARAM 2     /* PARAM_BYTES wrong for the opcode, or a field out of range or not matching *_BYTES */
#define DSP_ERR_CONST_REF 3 /* a constant reference in the record lies outside [0, CONST_BYTES) */
#define DSP_ERR_BUS 4       /* a transfer outside every memory, a write to read-only memory, or a bus error */
#define DSP_ERR_NO_MEMORY 5 /* the model could not allocate a staging buffer (bus-callback mode only) */

/* cycle model: cycles = DSP_NODE_OVERHEAD_CYCLES + ceil(lane operations / DSP_LANES) */
#define DSP_LANES 16
#define DSP_NODE_OVERHEAD_CYCLES 40
#define DSP_SOFTMAX_ROW_OPS 16 /* per row: the reciprocal of the sum of exponentials */

#define DSP_MAX_WINDOWS 4
#define DSP_NO_REF (-1) /* an absent optional constant (a depthwise convolution without bias) */

typedef struct dsp_device dsp_device;

/* 0: transfer done; nonzero: bus error. */
typedef int (*dsp_bus_read_fn)(void *context, uint32_t address, void *buffer, uint32_t length);
typedef int (*dsp_bus_write_fn)(void *context, uint32_t address, void *buffer, uint32_t length);

dsp_device *dsp_create(void);
void dsp_destroy(dsp_device *dev);

/* Direct window `index` (< DSP_MAX_WINDOWS): guest [base, base + size) is host memory at `host`. A size of
 * 0 removes it. Returns 0, or -1 for a bad index. */
int dsp_set_window(dsp_device *dev, uint32_t index, uint32_t base, uint32_t size, void *host, int writable);
void dsp_set_bus(dsp_device *dev, dsp_bus_read_fn read, dsp_bus_write_fn write, void *context);

uint32_t dsp_reg_read(dsp_device *dev, uint32_t offset);
void dsp_reg_write(dsp_device *dev, uint32_t offset, uint32_t value);

/* Snapshots: the programmable registers, status and counters as dsp_state_words() words (windows and the bus
 * binding excluded: the owner declares them again). dsp_restore_state returns 0, or -1 when `count` is not
 * dsp_state_words(). */
uint32_t dsp_state_words(void);
void dsp_save_state(const dsp_device *dev, uint32_t *words);
int dsp_restore_state(dsp_device *dev, const uint32_t *words, uint32_t count);

#ifdef __cplusplus
}
#endif

#endif /* DSP_MODEL_H */
