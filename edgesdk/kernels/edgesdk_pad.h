/*
 * edgesdk_pad.h - int8 PAD with a constant (the output zero point, as TFLite's PAD), up to 6 dims.
 */
#ifndef EDGESDK_PAD_H
#define EDGESDK_PAD_H

#include <stdint.h>

#include "edgesdk_broadcast.h" /* EDGESDK_MAX_DIMS */

typedef struct {
    int32_t in_shape[EDGESDK_MAX_DIMS];   /* leading dims padded with 1 */
    int32_t out_shape[EDGESDK_MAX_DIMS];
    int32_t pad_before[EDGESDK_MAX_DIMS];
    int32_t pad_value;
} edgesdk_pad_params;

void edgesdk_pad_s8(const edgesdk_pad_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_PAD_H */
