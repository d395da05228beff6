/*
 * edgesdk_libm.h - float exp and tanh that equal, bit for bit, what TFLite Micro's float kernels get from the
 * host's C library when the reference runs (glibc 2.36 on x86-64), whatever C library the firmware links.
 *
 *   edgesdk_expf   glibc's expf as its x86-64 ifunc selects it on CPUs with FMA (__expf_fma): the table-driven
 *                  double-precision algorithm of ARM's optimized-routines (2^(k/32) table, cubic polynomial) with
 *                  its multiply-adds fused. edgesdk_fma is an exact double fused multiply-add in integer
 *                  arithmetic, so soft-float targets get the same bits.
 *   edgesdk_tanhf  glibc's tanhf: Sun's fdlibm algorithm in float (via expm1f), which glibc builds without FMA.
 *
 * tests/test_ops_recurrent.py compares them with the host's expf/tanhf on millions of inputs and every special
 * range (docs/rounding.md, "Recurrent ops").
 */
#ifndef EDGESDK_LIBM_H
#define EDGESDK_LIBM_H

double edgesdk_fma(double a, double b, double c);
float edgesdk_expf(float x);
float edgesdk_expm1f(float x);
float edgesdk_tanhf(float x);

#endif /* EDGESDK_LIBM_H */
