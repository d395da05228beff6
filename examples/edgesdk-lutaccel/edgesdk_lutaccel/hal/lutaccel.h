/* VendorX LUT-1 driver: applies a 256-entry int8 table to a buffer (edgesdk example target "lut").
 *
 * Registers (offsets from BOARD_LUT0_BASE, 32-bit):
 *   0x00 ID      reads 0x4C555431 ("LUT1")
 *   0x04 CTRL    write 1: start; 3: fetch the table from TABLE_SRC (256 bytes, a DMA), then start
 *   0x08 STATUS  bit 1 DONE; bits 15..8 error (1 = bus error on SRC/DST/TABLE_SRC, 2 = LENGTH 0 or > 2^24)
 *   0x0C SRC     0x10 DST     0x14 LENGTH (bytes)     0x18 CYCLES (of the last run)     0x1C TABLE_SRC
 *   0x100-0x1FF  TABLE: entry (uint8_t)x is the output for input byte x
 */
#ifndef LUTACCEL_H
#define LUTACCEL_H

#include <stdint.h>

#define LUTACCEL_OK 0
#define LUTACCEL_ERR_ID (-20)      /* no LUT-1 at BOARD_LUT0_BASE */
#define LUTACCEL_ERR_TIMEOUT (-21) /* it never reported DONE */
#define LUTACCEL_ERR_BUS (-22)     /* it could not read SRC or TABLE_SRC, or write DST */
#define LUTACCEL_ERR_LENGTH (-23)  /* LENGTH out of range */

#define LUTACCEL_JOB_DMA_TABLE 1u /* lutaccel_job.flags: the LUT-1 fetches the table itself */

/* One run of the LUT-1 over one layer (edgesdk generates lists of these in model_lut.c). */
struct lutaccel_job {
    uint32_t table_offset; /* of the 256-byte table in the tables blob */
    uint32_t src_offset;   /* in the arena */
    uint32_t dst_offset;   /* in the arena; may equal src_offset */
    uint32_t length;       /* bytes */
    uint32_t flags;        /* LUTACCEL_JOB_* */
    uint32_t layer;        /* the model layer (error reports) */
};

/* out[i] = table[(uint8_t)in[i]] for i < length; in and out may be the same buffer. */
int32_t lutaccel_apply(const int8_t table[256], const int8_t *in, int8_t *out, uint32_t length);

/* Run `count` jobs in order; stop at the first that fails and return its LUTACCEL_ERR_*. */
int32_t lutaccel_run_jobs(const uint8_t *tables, uint8_t *arena, const struct lutaccel_job *jobs, uint32_t count);

/* After a failed lutaccel_run_jobs: the layer of the job that failed (-1: none failed). */
int32_t lutaccel_last_failed_layer(void);

#endif /* LUTACCEL_H */
