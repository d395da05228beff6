/*
 * edgesdk_mathf.h - float32 EXP, LOG, SIN, COS, ELU (expm1), TANH and LOGISTIC, bit-exact with TFLite's
 * reference kernels as LiteRT and TFLite Micro run them on x86-64: they call the host's glibc (2.36) expf,
 * logf, sinf, cosf, expm1f and tanhf.
 *
 * picolibc's float functions are other algorithms (fdlibm, float arithmetic) and differ in many last bits,
 * so the firmware does not call them. edgesdk_mathf.c evaluates glibc's own algorithms instead -- expf,
 * logf, sinf and cosf from Arm's optimized routines (double arithmetic, small tables), expm1f and tanhf
 * from fdlibm (float arithmetic) -- with IEEE operations only, which round the same on the soft-float
 * RISC-V core as on x86. glibc selects variants of expf/logf/sinf/cosf compiled with fused multiply-adds
 * on CPUs that have them (every x86-64 since 2013); the few inputs where fusing changes the float result
 * were found by comparing every one of the 2^32 inputs on the host (tests/glibc_mathf_scan.py) and are
 * listed in per-function exception tables. docs/rounding.md ("Single-input ops") has the details.
 */
#ifndef EDGESDK_MATHF_H
#define EDGESDK_MATHF_H

#include <stdint.h>

#include "edgesdk_unary.h"

float edgesdk_expf(float x);
float edgesdk_logf(float x);
float edgesdk_sinf(float x);
float edgesdk_cosf(float x);
float edgesdk_expm1f(float x);
float edgesdk_tanhf(float x);

/* the same functions without the exception tables: the plain (unfused) algorithms, for the scan */
float edgesdk_expf_unfused(float x);
float edgesdk_logf_unfused(float x);
float edgesdk_sinf_unfused(float x);
float edgesdk_cosf_unfused(float x);

void edgesdk_exp_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_log_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_sin_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_cos_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_elu_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_tanh_f32(const edgesdk_unary_params *p, const float *input, float *output);
void edgesdk_logistic_f32(const edgesdk_unary_params *p, const float *input, float *output);

#endif /* EDGESDK_MATHF_H */
