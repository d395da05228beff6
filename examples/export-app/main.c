/*
 * export-app: an application of its own around a model library exported by edgesdk (README.md).
 *
 * It runs the model on every input set embedded in the image (inputs.bin, one inference after another: the
 * bytes of input 0, input 1, ... in model order, then the next inference's) and prints each output on the
 * UART as "app: step S output K <hex bytes>". A stateful model carries its state from one inference to the
 * next; built with APP_RESET_EVERY=N, the app starts a new sequence (edgesdk_default_reset) before steps N,
 * 2N, ... It needs nothing but include/model.h and lib<model>.a: it works with any exported model, through the
 * tensors' arena slots (EDGESDK_DEFAULT_INPUT_OFFSETS, ...), without knowing their names.
 */
#include <stdint.h>
#include <string.h>

#include "model.h"
#include "platform.h"

#ifndef APP_RESET_EVERY
#define APP_RESET_EVERY 0 /* 0: one sequence; N > 0: reset the model's state before steps N, 2N, ... */
#endif

/* inputs.S: the contents of inputs.bin. */
extern const uint8_t app_inputs[];
extern const uint8_t app_inputs_end[];

static const uint32_t input_offsets[EDGESDK_DEFAULT_NUM_INPUTS] = EDGESDK_DEFAULT_INPUT_OFFSETS;
static const uint32_t input_sizes[EDGESDK_DEFAULT_NUM_INPUTS] = EDGESDK_DEFAULT_INPUT_SIZES;
static const uint32_t output_offsets[EDGESDK_DEFAULT_NUM_OUTPUTS] = EDGESDK_DEFAULT_OUTPUT_OFFSETS;
static const uint32_t output_sizes[EDGESDK_DEFAULT_NUM_OUTPUTS] = EDGESDK_DEFAULT_OUTPUT_SIZES;

static void print_output(uint32_t step, uint32_t k, const uint8_t *bytes, uint32_t size)
{
    static const char hex_digits[] = "0123456789abcdef";
    platform_puts("app: step ");
    platform_put_uint(step);
    platform_puts(" output ");
    platform_put_uint(k);
    platform_putc(' ');
    for (uint32_t i = 0; i < size; ++i) {
        platform_putc(hex_digits[bytes[i] >> 4]);
        platform_putc(hex_digits[bytes[i] & 0xfu]);
    }
    platform_putc('\n');
}

int main(void)
{
    uint32_t step_bytes = 0;
    for (uint32_t k = 0; k < EDGESDK_DEFAULT_NUM_INPUTS; ++k) {
        step_bytes += input_sizes[k];
    }
    const uint32_t total = (uint32_t)(app_inputs_end - app_inputs);
    if (total == 0u || total % step_bytes != 0u) {
        platform_puts("app: inputs.bin must hold whole inference inputs (a multiple of the model's input bytes)\n");
        return 2;
    }
    const uint32_t steps = total / step_bytes;

    platform_puts("app: model " EDGESDK_MODEL_NAME "\n");
    struct edgesdk_default_inputs inputs;
    struct edgesdk_default_outputs outputs;
    edgesdk_default_arena_io(&inputs, &outputs); /* zero copy: the structs point at the arena slots */
    edgesdk_default_reset();

    const uint8_t *next = app_inputs;
    for (uint32_t step = 0; step < steps; ++step) {
        if (APP_RESET_EVERY > 0 && step > 0 && step % APP_RESET_EVERY == 0) {
            edgesdk_default_reset(); /* a new, independent sequence */
            platform_puts("app: reset\n");
        }
        for (uint32_t k = 0; k < EDGESDK_DEFAULT_NUM_INPUTS; ++k) {
            memcpy(&edgesdk_arena[input_offsets[k]], next, input_sizes[k]);
            next += input_sizes[k];
        }
        int32_t status = edgesdk_default_run(&inputs, &outputs);
        if (status != EDGESDK_OK) {
            platform_puts("app: step ");
            platform_put_uint(step);
            platform_puts(" failed, status -");
            platform_put_uint((uint32_t)-status);
            platform_putc('\n');
            return status < 0 ? -status : status;
        }
        /* The outputs are valid until the next inputs are written (an output slot may be an input slot). */
        for (uint32_t k = 0; k < EDGESDK_DEFAULT_NUM_OUTPUTS; ++k) {
            print_output(step, k, &edgesdk_arena[output_offsets[k]], output_sizes[k]);
        }
    }
    platform_puts("app: done, ");
    platform_put_uint(steps);
    platform_puts(" steps\n");
    return 0;
}
