/*
 * edgesdk_cumsum.h - float32 CUMSUM along one axis, TFLite reference semantics (reference_ops::CumSum and
 * LiteRT's Eigen scan, which agree): per line an accumulator from 0.0f, elements added in order (from the end
 * when reversed); an exclusive sum writes the accumulator before adding.
 */
#ifndef EDGESDK_CUMSUM_H
#define EDGESDK_CUMSUM_H

#include <stdint.h>

typedef struct {
    int32_t outer; /* product of the dims before the axis */
    int32_t depth; /* the axis, >= 1 */
    int32_t inner; /* product of the dims after the axis */
    int32_t exclusive;
    int32_t reverse;
} edgesdk_cumsum_params;

void edgesdk_cumsum_f32(const edgesdk_cumsum_params *p, const float *input, float *output);

#endif /* EDGESDK_CUMSUM_H */
