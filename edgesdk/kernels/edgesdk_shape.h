/*
 * edgesdk_shape.h - helpers shared by the data movement kernels (TRANSPOSE, SLICE, GATHER, FILL, ...).
 *
 * Data movement is dtype-agnostic: the kernels copy elements of `element_bytes` bytes (1, 2, 4 or 8; bool is
 * one byte) and never look at their values, so one kernel serves int8, int16, int32, int64, float32 and bool
 * and is bit-exact by construction. Index tensors (GATHER's positions, DYNAMIC_UPDATE_SLICE's start, SLICE's
 * runtime begin) are int16, int32 or int64 and read with edgesdk_read_index.
 */
#ifndef EDGESDK_SHAPE_H
#define EDGESDK_SHAPE_H

#include <stdint.h>
#include <string.h>

#define EDGESDK_SHAPE_MAX_DIMS 6

/* One element of `element_bytes` bytes from `src` to `dst` (aligned: tensors start at multiples of their
 * element size and every offset here is a whole number of elements). */
static inline void edgesdk_copy_element(uint8_t *dst, const uint8_t *src, int32_t element_bytes)
{
    switch (element_bytes) {
    case 1:
        *dst = *src;
        break;
    case 2:
        *(uint16_t *)(void *)dst = *(const uint16_t *)(const void *)src;
        break;
    case 4:
        *(uint32_t *)(void *)dst = *(const uint32_t *)(const void *)src;
        break;
    default:
        memcpy(dst, src, (size_t)element_bytes);
        break;
    }
}

/* `count` copies of the element at `value` (element_bytes bytes) at `dst`. */
static inline void edgesdk_fill_elements(uint8_t *dst, const uint8_t *value, int32_t element_bytes, int32_t count)
{
    if (element_bytes == 1) {
        memset(dst, *value, (size_t)count);
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        edgesdk_copy_element(dst + (size_t)i * (size_t)element_bytes, value, element_bytes);
    }
}

/* Element `i` of an index tensor of int16 (2), int32 (4) or int64 (8) values, as int64. */
static inline int64_t edgesdk_read_index(const void *indices, int32_t index_bytes, int32_t i)
{
    switch (index_bytes) {
    case 2:
        return ((const int16_t *)indices)[i];
    case 8: {
        int64_t v;
        memcpy(&v, (const uint8_t *)indices + 8 * (size_t)i, 8);
        return v;
    }
    default:
        return ((const int32_t *)indices)[i];
    }
}

#endif /* EDGESDK_SHAPE_H */
