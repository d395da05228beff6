/* Polled output on the board's console UART (board.h BOARD_CONSOLE_*, chosen from board.json by its type):
 *
 *   ns16550      (riscv-npu, QEMU virt): left at its reset/bootloader configuration; QEMU and the edgesdk
 *                emulator need no setup, and on a real board the boot ROM or debugger sets the baud rate.
 *   sifive_uart  (HiFive1 Rev B, QEMU sifive_e): edgesdk_console_init() routes the TX/RX pins to the UART
 *                (GPIO hardware I/O function 0) and sets the divisor when board.json gives them, and enables
 *                the transmitter, which is off after reset (Renode's model, like the chip, drops bytes then).
 */
#include <stdio.h>

#include "board.h"
#include "edgesdk_console.h"

#if defined(BOARD_CONSOLE_NS16550)

#define UART_THR 0u         /* transmit holding register (write) */
#define UART_LSR 5u         /* line status register */
#define UART_LSR_THRE 0x20u /* THR empty: a new byte may be written */

static volatile uint8_t *uart_reg(unsigned index)
{
    return (volatile uint8_t *)(uintptr_t)(BOARD_CONSOLE_BASE + (index << BOARD_CONSOLE_REG_SHIFT));
}

void edgesdk_console_putc(char c)
{
    while ((*uart_reg(UART_LSR) & UART_LSR_THRE) == 0) {
    }
    *uart_reg(UART_THR) = (uint8_t)c;
}

#elif defined(BOARD_CONSOLE_SIFIVE_UART)

#define SIFIVE_UART_TXDATA 0x00u      /* write: the byte to send; read: bit 31 = FIFO full */
#define SIFIVE_UART_TXCTRL 0x08u      /* bit 0 = TXEN */
#define SIFIVE_UART_DIV 0x18u         /* baud = input clock / (div + 1) */
#define SIFIVE_UART_TXDATA_FULL 0x80000000u
#define SIFIVE_UART_TXCTRL_TXEN 0x1u
#define SIFIVE_GPIO_IOF_EN 0x38u      /* 1: the pin is driven by its hardware I/O function */
#define SIFIVE_GPIO_IOF_SEL 0x3cu     /* 0: function 0 (UART0 on the FE310) */

static volatile uint32_t *uart_reg(uint32_t offset)
{
    return (volatile uint32_t *)(uintptr_t)(BOARD_CONSOLE_BASE + offset);
}

void edgesdk_console_init(void)
{
#ifdef BOARD_CONSOLE_IOF_GPIO_BASE
    volatile uint32_t *iof_sel = (volatile uint32_t *)(uintptr_t)(BOARD_CONSOLE_IOF_GPIO_BASE + SIFIVE_GPIO_IOF_SEL);
    volatile uint32_t *iof_en = (volatile uint32_t *)(uintptr_t)(BOARD_CONSOLE_IOF_GPIO_BASE + SIFIVE_GPIO_IOF_EN);
    *iof_sel &= ~BOARD_CONSOLE_IOF_MASK;
    *iof_en |= BOARD_CONSOLE_IOF_MASK;
#endif
#if defined(BOARD_CONSOLE_BAUD) && defined(BOARD_CONSOLE_CLOCK_HZ)
    /* Nearest divisor: baud = clock / (div + 1). */
    *uart_reg(SIFIVE_UART_DIV) = (BOARD_CONSOLE_CLOCK_HZ + BOARD_CONSOLE_BAUD / 2u) / BOARD_CONSOLE_BAUD - 1u;
#endif
    *uart_reg(SIFIVE_UART_TXCTRL) = SIFIVE_UART_TXCTRL_TXEN; /* one stop bit, no TX watermark interrupt */
}

void edgesdk_console_putc(char c)
{
    while ((*uart_reg(SIFIVE_UART_TXDATA) & SIFIVE_UART_TXDATA_FULL) != 0u) {
    }
    *uart_reg(SIFIVE_UART_TXDATA) = (uint8_t)c;
}

#else
#error "board.h names no console UART driver (BOARD_CONSOLE_NS16550 or BOARD_CONSOLE_SIFIVE_UART); regenerate it with edgesdk"
#endif

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
