/*
 * edgesdk_logical.c - LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT.
 */
#include "edgesdk_logical.h"

static inline uint8_t and_b(const edgesdk_binary_params *p, uint8_t a, uint8_t b)
{
    (void)p;
    return (uint8_t)(a != 0 && b != 0);
}

static inline uint8_t or_b(const edgesdk_binary_params *p, uint8_t a, uint8_t b)
{
    (void)p;
    return (uint8_t)(a != 0 || b != 0);
}

EDGESDK_BINARY_KERNEL(edgesdk_logical_and_b, edgesdk_binary_params, uint8_t, uint8_t, uint8_t, and_b)
EDGESDK_BINARY_KERNEL(edgesdk_logical_or_b, edgesdk_binary_params, uint8_t, uint8_t, uint8_t, or_b)

void edgesdk_logical_not_b(const edgesdk_logical_not_params *p, const uint8_t *input, uint8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = (uint8_t)(input[i] == 0);
    }
}
