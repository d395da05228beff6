/*
 * edgesdk_fill.c - FILL: `count` copies of the scalar at `value`.
 */
#include "edgesdk_fill.h"

#include "edgesdk_shape.h"

void edgesdk_fill(const edgesdk_fill_params *p, const void *value, void *output)
{
    uint8_t element[8];
    memcpy(element, value, (size_t)p->element_bytes); /* the output may not alias the value, but be safe */
    edgesdk_fill_elements((uint8_t *)output, element, p->element_bytes, p->count);
}
