/* VendorX LUT-1 driver: applies a 256-entry int8 table to a buffer (edgesdk example target "lut").
 *
 * Registers (offsets from BOARD_LUT0_BASE, 32-bit):
 *   0x00 ID      reads 0x4C555431 ("LUT1")
 *   0x04 CTRL    write 1: start
 *   0x08 STATUS  bit 1 DONE; bits 15..8 error (1 = bus error on SRC/DST, 2 = LENGTH 0 or > 2^24)
 *   0x0C SRC     0x10 DST     0x14 LENGTH (bytes)     0x18 CYCLES (of the last run)
 *   0x100-0x1FF  TABLE: entry (uint8_t)x is the output for input byte x
 */
#ifndef LUTACCEL_H
#define LUTACCEL_H

#include <stdint.h>

#define LUTACCEL_OK 0
#define LUTACCEL_ERR_ID (-20)      /* no LUT-1 at BOARD_LUT0_BASE */
#define LUTACCEL_ERR_TIMEOUT (-21) /* it never reported DONE */
#define LUTACCEL_ERR_BUS (-22)     /* it could not read SRC or write DST */
#define LUTACCEL_ERR_LENGTH (-23)  /* LENGTH out of range */

/* out[i] = table[(uint8_t)in[i]] for i < length; in and out may be the same buffer. */
int32_t lutaccel_apply(const int8_t table[256], const int8_t *in, int8_t *out, uint32_t length);

#endif /* LUTACCEL_H */
