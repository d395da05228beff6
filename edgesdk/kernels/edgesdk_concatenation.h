/*
 * edgesdk_concatenation.h - CONCATENATION of tensors sharing one quantization (TFLite requires it for
 * int8): a copy of each input's slice for every index of the dimensions before the axis.
 */
#ifndef EDGESDK_CONCATENATION_H
#define EDGESDK_CONCATENATION_H

#include <stdint.h>

typedef struct {
    int32_t outer;            /* product of the dims before the axis */
    int32_t num_inputs;
    const int32_t *slice_bytes; /* per input: axis dim * product of the dims after the axis * element size */
} edgesdk_concatenation_params;

void edgesdk_concatenation(const edgesdk_concatenation_params *p, const void *const *inputs, void *output);

#endif /* EDGESDK_CONCATENATION_H */
