/*
 * edgesdk_logical.h - LOGICAL_AND, LOGICAL_OR (with broadcasting) and LOGICAL_NOT on bool tensors (one byte,
 * 0 or 1), TFLite reference semantics.
 */
#ifndef EDGESDK_LOGICAL_H
#define EDGESDK_LOGICAL_H

#include <stdint.h>

#include "edgesdk_elementwise.h"

typedef struct {
    int32_t size;
} edgesdk_logical_not_params;

void edgesdk_logical_and_b(const edgesdk_binary_params *p, const uint8_t *input1, const uint8_t *input2,
                           uint8_t *output);
void edgesdk_logical_or_b(const edgesdk_binary_params *p, const uint8_t *input1, const uint8_t *input2,
                          uint8_t *output);
void edgesdk_logical_not_b(const edgesdk_logical_not_params *p, const uint8_t *input, uint8_t *output);

#endif /* EDGESDK_LOGICAL_H */
