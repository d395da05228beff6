/* Bare-metal reset code: replaces picolibc's crt0 (the build links with -nostartfiles).
 *
 * _start (placed first in flash by link.ld) sets gp, sp and tp and jumps to reset(), which copies
 * .data/.tdata from flash, clears .tbss/.bss, fills the stack guard, runs constructors, calls main()
 * and exits with its return value (or EDGESDK_EXIT_STACK_OVERFLOW if the stack guard was overwritten).
 * .noinit (the model arena) is deliberately left alone: the emulator writes the model inputs there before
 * the core starts.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "edgesdk_console.h"
#include "edgesdk_startup.h"

/* Defined by link.ld. */
extern uint8_t __data_start[], __data_end[], __data_source[];
extern uint8_t __bss_start[], __bss_end[];
extern uint32_t __stack_bottom[];
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

#define SIFIVE_TEST_PASS 0x5555u
#define SIFIVE_TEST_FAIL 0x3333u

int main(void);
__attribute__((noreturn)) void edgesdk_reset(void);
void edgesdk_trap(void);

__attribute__((naked, noreturn, section(".text.init.enter"))) void _start(void)
{
    __asm__ volatile(
        ".option push\n"
        ".option norelax\n"          /* gp must not be used to compute its own value */
        "la gp, __global_pointer$\n"
        ".option pop\n"
        "la sp, __stack\n"
        "la tp, __tls_base\n"        /* TLS block of the only thread (picolibc's errno lives there) */
        "la t0, edgesdk_trap\n"
        "csrw mtvec, t0\n"
        "j edgesdk_reset\n");
}

/* Pattern and size of the stack guard, for the emulator (machine.py reads this symbol from the ELF); kept by
 * the linker although the code below uses the macros. */
__attribute__((used, retain)) const uint32_t edgesdk_stack_guard[2] = {EDGESDK_STACK_GUARD_PATTERN,
                                                                      EDGESDK_STACK_GUARD_BYTES};

static void stack_guard_fill(void)
{
    volatile uint32_t *guard = __stack_bottom;
    for (uint32_t i = 0; i < EDGESDK_STACK_GUARD_BYTES / 4u; ++i) {
        guard[i] = EDGESDK_STACK_GUARD_PATTERN;
    }
}

int edgesdk_stack_guard_intact(void)
{
    const volatile uint32_t *guard = __stack_bottom;
    uint32_t damage = 0;
    for (uint32_t i = 0; i < EDGESDK_STACK_GUARD_BYTES / 4u; ++i) {
        damage |= guard[i] ^ EDGESDK_STACK_GUARD_PATTERN;
    }
    return damage == 0u;
}

void edgesdk_reset(void)
{
    memcpy(__data_start, __data_source, (size_t)(__data_end - __data_start));
    memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));
    stack_guard_fill(); /* reset() itself runs at the top of the stack, far above the guard */
    for (void (**ctor)(void) = __init_array_start; ctor < __init_array_end; ++ctor) {
        (*ctor)();
    }
    int code = main();
    if (!edgesdk_stack_guard_intact()) {
        edgesdk_console_puts("edgesdk: stack overflow: the guard at the bottom of the stack was overwritten\n");
        code = EDGESDK_EXIT_STACK_OVERFLOW;
    }
    edgesdk_exit(code);
}

void edgesdk_exit(int code)
{
    volatile uint32_t *finisher = (volatile uint32_t *)(uintptr_t)BOARD_EXIT_BASE;
    uint32_t code16 = (uint32_t)code & 0xffffu;

    if (code != 0 && code16 == 0) {
        code16 = 1; /* keep failures visible when the low 16 bits happen to be zero */
    }
    *finisher = code == 0 ? SIFIVE_TEST_PASS : (code16 << 16) | SIFIVE_TEST_FAIL;
    for (;;) {
        __asm__ volatile("wfi");
    }
}

/* picolibc's exit() and abort() end here. */
__attribute__((noreturn)) void _exit(int code)
{
    edgesdk_exit(code);
}

static uint32_t read_mcause(void)
{
    uint32_t value;
    __asm__ volatile("csrr %0, mcause" : "=r"(value));
    return value;
}

static uint32_t read_mepc(void)
{
    uint32_t value;
    __asm__ volatile("csrr %0, mepc" : "=r"(value));
    return value;
}

static uint32_t read_mtval(void)
{
    uint32_t value;
    __asm__ volatile("csrr %0, mtval" : "=r"(value));
    return value;
}

/* Any trap is fatal: no interrupts are enabled, so it is an exception. Report it and stop. */
__attribute__((aligned(4), noreturn)) void edgesdk_trap(void)
{
    edgesdk_console_puts("edgesdk: trap mcause=");
    edgesdk_console_put_hex(read_mcause());
    edgesdk_console_puts(" mepc=");
    edgesdk_console_put_hex(read_mepc());
    edgesdk_console_puts(" mtval=");
    edgesdk_console_put_hex(read_mtval());
    edgesdk_console_putc('\n');
    edgesdk_exit(EDGESDK_EXIT_TRAP);
}
