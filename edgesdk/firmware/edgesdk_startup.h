/* Reset, exit and trap handling for edgesdk firmware (see startup.c). */
#ifndef EDGESDK_STARTUP_H
#define EDGESDK_STARTUP_H

/* Exit code after an unexpected trap (illegal instruction, bus fault, ...) on a core that takes traps
 * (QEMU, real silicon). The edgesdk emulator reports such faults itself, with the faulting PC. */
#define EDGESDK_EXIT_TRAP 254

/* Exit code when the stack guard was found overwritten after main() returned: the stack overflowed. */
#define EDGESDK_EXIT_STACK_OVERFLOW 253

/* Stack guard: the lowest EDGESDK_STACK_GUARD_BYTES of the stack (at __stack_bottom, see link.ld) hold
 * EDGESDK_STACK_GUARD_PATTERN from reset on. The stack grows down, so an overflow overwrites them first.
 * The firmware checks them when main() returns; the emulator reads edgesdk_stack_guard (pattern, bytes)
 * from the ELF and checks them too, and it also faults any write into free SRAM below the stack. */
#define EDGESDK_STACK_GUARD_BYTES 64u
#define EDGESDK_STACK_GUARD_PATTERN 0x57AC6A2Du

/* 1 if every guard word still holds the pattern. */
int edgesdk_stack_guard_intact(void);

/* Stop the board with `code` (0 = success) through the sifive_test exit device:
 * 0x5555 for success, (code << 16) | 0x3333 otherwise. On a board without such a device the write is
 * harmless and the core then sleeps forever. */
__attribute__((noreturn)) void edgesdk_exit(int code);

#endif /* EDGESDK_STARTUP_H */
