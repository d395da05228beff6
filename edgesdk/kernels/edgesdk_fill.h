/*
 * edgesdk_fill.h - FILL with a runtime value (constant dims; a constant value is folded at build time).
 */
#ifndef EDGESDK_FILL_H
#define EDGESDK_FILL_H

#include <stdint.h>

typedef struct {
    int32_t element_bytes;
    int32_t count;
} edgesdk_fill_params;

void edgesdk_fill(const edgesdk_fill_params *p, const void *value, void *output);

#endif /* EDGESDK_FILL_H */
