/*
 * two_models.c: two models in one application, each an exported library built with its own name:
 *
 *     edgesdk build kws_ref_model.tflite --target c --name kws --export -o KWS      -> libkws.a, kws_model.h
 *     edgesdk build ad01_int8.tflite --target c --name anomaly --export -o AD      -> libanomaly.a, anomaly_model.h
 *
 * Every symbol of a model carries its name (edgesdk_kws_run, edgesdk_kws_arena, its weights), so both link into
 * one firmware; the kernels both libraries hold (here the fully connected layer's) are linked once. Each model
 * has its own arena, so one model's outputs survive the other's run.
 *
 * The inputs are in each model's arena slots when main() starts (a debugger, or the test's emulator, writes
 * them before boot: the arenas are .noinit) and the outputs are left in theirs. Build (README.md, "Two models"):
 *
 *     make -C KWS/export/kws && make -C AD/export/anomaly
 *     riscv64-unknown-elf-gcc -march=rv32imac_zicsr -mabi=ilp32 --specs=picolibc.specs -std=c11 -O2 \
 *         -IKWS/export/kws/include -IAD/export/anomaly/include -c two_models.c ...
 */
#include <stdint.h>

#include "anomaly_model.h"
#include "kws_model.h"
#include "platform.h"

int main(void)
{
    struct edgesdk_kws_inputs kws_in;
    struct edgesdk_kws_outputs kws_out;
    struct edgesdk_anomaly_inputs anomaly_in;
    struct edgesdk_anomaly_outputs anomaly_out;

    edgesdk_kws_reset(); /* once at boot: each model's state, if it has any */
    edgesdk_anomaly_reset();
    edgesdk_kws_arena_io(&kws_in, &kws_out); /* zero copy: the fields point into each model's own arena */
    edgesdk_anomaly_arena_io(&anomaly_in, &anomaly_out);

    int32_t status = edgesdk_kws_run(&kws_in, &kws_out);
    if (status == EDGESDK_OK) {
        status = edgesdk_anomaly_run(&anomaly_in, &anomaly_out);
    }
    platform_puts(status == EDGESDK_OK ? "app: both models ran\n" : "app: a model failed\n");
    return status == EDGESDK_OK ? 0 : 1;
}
