/*
 * Startup, console and exit for the riscv-npu board (its board.json: ns16550 UART "uart0" at 0x10000000, register
 * shift 0; sifive_test exit device "exit" at 0x00100000; the same addresses as QEMU's virt machine).
 *
 * _start (first in flash, see riscv-npu.ld) sets gp, sp and tp, copies .data/.tdata from flash, clears
 * .tbss/.bss, calls main() and stops the board with its return value. .noinit (the model's arena) is left alone.
 */
#include <stdint.h>
#include <string.h>

#include "platform.h"

#ifndef APP_UART_BASE
#define APP_UART_BASE 0x10000000u
#endif
#ifndef APP_EXIT_BASE
#define APP_EXIT_BASE 0x00100000u
#endif

#define UART_THR 0u         /* transmit holding register */
#define UART_LSR 5u         /* line status register */
#define UART_LSR_THRE 0x20u /* THR empty */

/* riscv-npu.ld */
extern uint8_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[];

int main(void);
__attribute__((noreturn)) void app_reset(void);

__attribute__((naked, noreturn, section(".text.start"))) void _start(void)
{
    __asm__ volatile(
        ".option push\n"
        ".option norelax\n"
        "la gp, __global_pointer$\n"
        ".option pop\n"
        "la sp, __stack\n"
        "la tp, __tls_base\n"
        "j app_reset\n");
}

void app_reset(void)
{
    memcpy(__data_start, __data_load, (size_t)(__data_end - __data_start));
    memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));
    platform_exit(main());
}

void platform_exit(int code)
{
    volatile uint32_t *exit_device = (volatile uint32_t *)(uintptr_t)APP_EXIT_BASE;
    uint32_t code16 = (uint32_t)code & 0xffffu;
    if (code != 0 && code16 == 0u) {
        code16 = 1u;
    }
    *exit_device = code == 0 ? 0x5555u : (code16 << 16) | 0x3333u; /* sifive_test: pass, or fail with a code */
    for (;;) {
        __asm__ volatile("wfi");
    }
}

/* picolibc's exit() and abort() end here. */
__attribute__((noreturn)) void _exit(int code)
{
    platform_exit(code);
}

void platform_putc(char c)
{
    volatile uint8_t *uart = (volatile uint8_t *)(uintptr_t)APP_UART_BASE;
    while ((uart[UART_LSR] & UART_LSR_THRE) == 0u) {
    }
    uart[UART_THR] = (uint8_t)c;
}

void platform_puts(const char *text)
{
    while (*text != '\0') {
        platform_putc(*text++);
    }
}

void platform_put_uint(uint32_t value)
{
    char digits[10];
    unsigned count = 0;
    do {
        digits[count++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (count > 0u) {
        platform_putc(digits[--count]);
    }
}
