/*
 * edgesdk_fully_connected.h - int8 FULLY_CONNECTED, TFLite reference semantics.
 *
 * LiteRT's reference kernel requantizes in double precision (rounding EDGESDK_ROUNDING_FP64, uses
 * `scale`); TFLite Micro uses the integer multiplier (EDGESDK_ROUNDING_DOUBLE/SINGLE, uses
 * `multiplier`/`shift`). The compiler fills the fields the chosen rounding needs.
 */
#ifndef EDGESDK_FULLY_CONNECTED_H
#define EDGESDK_FULLY_CONNECTED_H

#include <stdint.h>

typedef struct {
    int32_t batches;
    int32_t in_depth;  /* accumulation depth */
    int32_t out_depth; /* output units */
    int32_t input_offset;  /* -input zero point */
    int32_t filter_offset; /* -filter zero point (per-tensor only; 0 for per-channel) */
    int32_t output_offset;
    int32_t act_min, act_max;
    const int32_t *multiplier; /* per output unit (with FP64: of the same scale, for the integer fast path) */
    const int32_t *shift;      /* per output unit */
    const double *scale;       /* per output unit; EDGESDK_ROUNDING_FP64 only */
    int32_t rounding;          /* EDGESDK_ROUNDING_* */
} edgesdk_fully_connected_params;

/* input [batches, in_depth], filter [out_depth, in_depth], bias[out_depth] or NULL, output [batches, out_depth]. */
void edgesdk_fully_connected_s8(const edgesdk_fully_connected_params *p, const int8_t *input, const int8_t *filter,
                                const int32_t *bias, int8_t *output);

#endif /* EDGESDK_FULLY_CONNECTED_H */
