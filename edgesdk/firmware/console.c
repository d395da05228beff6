/* Polled output on the ns16550 UART described by board.json (uart0).
 *
 * The UART is left at its reset/bootloader configuration: QEMU and the edgesdk emulator need no setup,
 * and on a real board the boot ROM or debugger normally configures the baud rate.
 */
#include <stdio.h>

#include "board.h"
#include "edgesdk_console.h"

#define UART_THR 0u         /* transmit holding register (write) */
#define UART_LSR 5u         /* line status register */
#define UART_LSR_THRE 0x20u /* THR empty: a new byte may be written */

static volatile uint8_t *uart_reg(unsigned index)
{
    return (volatile uint8_t *)(uintptr_t)(BOARD_UART0_BASE + (index << BOARD_UART0_REG_SHIFT));
}

void edgesdk_console_putc(char c)
{
    while ((*uart_reg(UART_LSR) & UART_LSR_THRE) == 0) {
    }
    *uart_reg(UART_THR) = (uint8_t)c;
}

void edgesdk_console_puts(const char *text)
{
    while (*text != '\0') {
        edgesdk_console_putc(*text++);
    }
}

void edgesdk_console_put_int(int32_t value)
{
    char digits[11];
    unsigned count = 0;
    /* Work on the magnitude as unsigned so INT32_MIN does not overflow. */
    uint32_t magnitude = value < 0 ? 0u - (uint32_t)value : (uint32_t)value;

    do {
        digits[count++] = (char)('0' + magnitude % 10u);
        magnitude /= 10u;
    } while (magnitude != 0u);
    if (value < 0) {
        edgesdk_console_putc('-');
    }
    while (count > 0u) {
        edgesdk_console_putc(digits[--count]);
    }
}

void edgesdk_console_put_hex(uint32_t value)
{
    edgesdk_console_puts("0x");
    for (int shift = 28; shift >= 0; shift -= 4) {
        edgesdk_console_putc("0123456789abcdef"[(value >> shift) & 0xfu]);
    }
}

/* picolibc stdio: printf() and friends write to the same UART. Only linked in if something uses them. */
static int console_stream_put(char c, FILE *stream)
{
    (void)stream;
    edgesdk_console_putc(c);
    return (unsigned char)c;
}

static FILE console_stream = FDEV_SETUP_STREAM(console_stream_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdout = &console_stream;
FILE *const stderr = &console_stream;
