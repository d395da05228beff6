/* edgesdk test harness: runs the generated model once on the inputs already in its arena slots.
 *
 * The emulator (or a debugger on a real board) writes the input bytes into the arena before the core
 * starts and reads the outputs back after exit; the arena is in .noinit, so startup leaves it alone.
 * edgesdk_harness_mark(1) and (2) bracket the inference so the emulator can count its instructions.
 */
#include <stdint.h>

#include "board.h"
#include "edgesdk_console.h"
#include "model.h"
/* Generated with the model: each target of the build says what it prints about a failed run (a hand-written
 * model directory may leave it out). */
#if defined(__has_include) && __has_include("edgesdk_harness_targets.h")
#include "edgesdk_harness_targets.h"
#else
static inline void edgesdk_harness_target_failure(int32_t status)
{
    (void)status;
}
#endif

/* A HIL build (edgesdk hil) puts this generated header into its sources to select the options of
 * edgesdk_harness_io.h; a normal build has none, and the harness below is unchanged. */
#if defined(__has_include)
#if __has_include("edgesdk_harness_config.h")
#include "edgesdk_harness_config.h"
#endif
#endif
#if defined(EDGESDK_HARNESS_EMBEDDED_INPUTS) || defined(EDGESDK_HARNESS_PRINT_OUTPUTS)
#include <string.h>

#include "edgesdk_harness_io.h"
#endif

#ifdef EDGESDK_DEFAULT_STREAM_BYTES
#include <string.h>

/* Streamed inputs (edgesdk build --stream-input): the harness stands in for the camera. The emulator writes each
 * streamed input whole into this buffer (report.json io.inputs[k].stream_offset), outside the model's arena; a HIL
 * build reads the embedded bytes instead. The model asks for rows as it needs them. */
#ifndef EDGESDK_HARNESS_EMBEDDED_INPUTS
uint8_t edgesdk_harness_stream[EDGESDK_DEFAULT_STREAM_BYTES] __attribute__((section(".noinit"), aligned(16), used));
#endif

void edgesdk_default_read_input_rows(uint32_t input, uint32_t first_row, uint32_t rows, void *dst)
{
    static const uint32_t row_bytes[] = EDGESDK_DEFAULT_INPUT_ROW_BYTES;
#ifdef EDGESDK_HARNESS_EMBEDDED_INPUTS
    const uint8_t *source = edgesdk_harness_inputs[input].data;
#else
    static const uint32_t offsets[] = EDGESDK_DEFAULT_INPUT_STREAM_OFFSETS;
    const uint8_t *source = &edgesdk_harness_stream[offsets[input]];
#endif
    memcpy(dst, source + first_row * row_bytes[input], rows * row_bytes[input]);
}
#endif

#ifndef EDGESDK_MODEL_NAME
#define EDGESDK_MODEL_NAME "default"
#endif

/* Measurement point: the emulator counts instructions at each entry to this function. noipa keeps
 * GCC from proving it empty and dropping the calls; the asm is a compiler barrier so no model work
 * is moved across a mark. */
__attribute__((noinline, noipa, used)) void edgesdk_harness_mark(int which)
{
    __asm__ volatile("" : : "r"(which) : "memory");
}

/* Inferences per boot after the first: 0 (zeroed at startup), unless the emulator writes another count at the
 * first mark (edgesdk run --steps N writes N - 1). */
volatile uint32_t edgesdk_harness_extra_steps __attribute__((used));

#ifdef EDGESDK_HARNESS_EMBEDDED_INPUTS
/* Copy the inputs embedded in flash into their arena slots (the arena is not initialized at boot). */
static void load_embedded_inputs(void)
{
    for (uint32_t k = 0; k < edgesdk_harness_num_inputs; ++k) {
        const struct edgesdk_harness_tensor *input = &edgesdk_harness_inputs[k];
        memcpy(&edgesdk_arena[input->arena_offset], input->data, input->bytes);
    }
}
#endif

#ifdef EDGESDK_HARNESS_PRINT_OUTPUTS
/* "edgesdk: output K <hex>": every byte of each output, two lowercase hex digits per byte. */
static void print_outputs(void)
{
    static const char hex_digits[] = "0123456789abcdef";
    for (uint32_t k = 0; k < edgesdk_harness_num_outputs; ++k) {
        const struct edgesdk_harness_tensor *output = &edgesdk_harness_outputs[k];
        const uint8_t *bytes = &edgesdk_arena[output->arena_offset];
        edgesdk_console_puts("edgesdk: output ");
        edgesdk_console_put_int((int32_t)k);
        edgesdk_console_putc(' ');
        for (uint32_t i = 0; i < output->bytes; ++i) {
            edgesdk_console_putc(hex_digits[bytes[i] >> 4]);
            edgesdk_console_putc(hex_digits[bytes[i] & 0xfu]);
        }
        edgesdk_console_putc('\n');
    }
}
#endif

int main(void)
{
    struct edgesdk_default_inputs inputs;
    struct edgesdk_default_outputs outputs;

    edgesdk_console_puts("edgesdk harness: model " EDGESDK_MODEL_NAME " on " BOARD_NAME "\n");
    edgesdk_default_arena_io(&inputs, &outputs);
#ifdef EDGESDK_HARNESS_EMBEDDED_INPUTS
    load_embedded_inputs();
#endif

    /* A stateful model runs a sequence of inferences in one boot: the emulator sets the length and, at each
     * mark, writes the next step's inputs (mark 1) and reads its outputs (mark 2). */
    edgesdk_default_reset();
    int32_t status = EDGESDK_OK;
    for (uint32_t step = 0; step <= edgesdk_harness_extra_steps && status == EDGESDK_OK; ++step) {
        edgesdk_harness_mark(1);
        status = edgesdk_default_run(&inputs, &outputs);
        edgesdk_harness_mark(2);
    }

    if (status == 0) {
#ifdef EDGESDK_HARNESS_PRINT_OUTPUTS
        print_outputs();
#endif
        edgesdk_console_puts("edgesdk: run ok\n");
        return 0;
    }
    edgesdk_console_puts("edgesdk: run failed status=");
    edgesdk_console_put_int(status);
    edgesdk_harness_target_failure(status); /* e.g. the NPU's error code and failing command */
#ifdef EDGESDK_ERR_ARENA_CORRUPT
    if (status == EDGESDK_ERR_ARENA_CORRUPT) {
        edgesdk_console_puts(" (arena corrupt: a guard word around the activation arena was overwritten)");
    }
#endif
    edgesdk_console_putc('\n');
    /* Exit code = -status (a target's error code, 5 arena corrupt); startup keeps the low 16 bits. */
    return status < 0 ? (int)-status : (int)status;
}
