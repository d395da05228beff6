/* Minimal polled console on the board's console UART (no interrupts, no buffering); console.c has the drivers. */
#ifndef EDGESDK_CONSOLE_H
#define EDGESDK_CONSOLE_H

#include <stdint.h>

#include "board.h"

/* Set the UART up before the first output (startup.c calls it first thing). An ns16550 needs nothing. */
#if defined(BOARD_CONSOLE_NS16550)
static inline void edgesdk_console_init(void)
{
}
#else
void edgesdk_console_init(void);
#endif

void edgesdk_console_putc(char c);
void edgesdk_console_puts(const char *text);
void edgesdk_console_put_int(int32_t value);      /* decimal, with '-' if negative */
void edgesdk_console_put_hex(uint32_t value);     /* "0x" + 8 hex digits */

#endif /* EDGESDK_CONSOLE_H */
