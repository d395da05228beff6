/* Minimal polled console on the board's ns16550 UART (no interrupts, no buffering). */
#ifndef EDGESDK_CONSOLE_H
#define EDGESDK_CONSOLE_H

#include <stdint.h>

void edgesdk_console_putc(char c);
void edgesdk_console_puts(const char *text);
void edgesdk_console_put_int(int32_t value);      /* decimal, with '-' if negative */
void edgesdk_console_put_hex(uint32_t value);     /* "0x" + 8 hex digits */

#endif /* EDGESDK_CONSOLE_H */
