/* Reset, exit and trap handling for edgesdk firmware (see startup.c). */
#ifndef EDGESDK_STARTUP_H
#define EDGESDK_STARTUP_H

/* Exit code after an unexpected trap (illegal instruction, bus fault, ...) on a core that takes traps
 * (QEMU, real silicon). The edgesdk emulator reports such faults itself, with the faulting PC. */
#define EDGESDK_EXIT_TRAP 254

/* Stop the board with `code` (0 = success) through the sifive_test exit device:
 * 0x5555 for success, (code << 16) | 0x3333 otherwise. On a board without such a device the write is
 * harmless and the core then sleeps forever. */
__attribute__((noreturn)) void edgesdk_exit(int code);

#endif /* EDGESDK_STARTUP_H */
