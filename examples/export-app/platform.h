/* The board support export-app needs: console output and a way to stop (platform.c). */
#ifndef APP_PLATFORM_H
#define APP_PLATFORM_H

#include <stdint.h>

void platform_putc(char c);
void platform_puts(const char *text);
void platform_put_uint(uint32_t value);

/* Stop the board with `code` (0 = success). */
__attribute__((noreturn)) void platform_exit(int code);

#endif /* APP_PLATFORM_H */
