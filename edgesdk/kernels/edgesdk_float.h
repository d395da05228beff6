/*
 * edgesdk_float.h - float32 helpers of the layer ops' float kernels (TFLite's reference_ops float arithmetic).
 *
 * Every float kernel performs TFLite's float operations one by one in TFLite's order: no fused multiply-add
 * (the firmware's soft-float has none; the host build gets none without -mfma) and no reassociation.
 */
#ifndef EDGESDK_FLOAT_H
#define EDGESDK_FLOAT_H

/* ActivationFunctionWithMinMax: std::min(std::max(v, lo), hi) (a NaN passes through). */
static inline float edgesdk_clamp_f32(float v, float lo, float hi)
{
    v = v < lo ? lo : v;
    return hi < v ? hi : v;
}

#endif /* EDGESDK_FLOAT_H */
