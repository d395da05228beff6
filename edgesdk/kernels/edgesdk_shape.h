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

/* GCC turns copy loops into memcpy calls at -O2; the RISC-V picolibc's memcpy copies a byte at a time. */
#if defined(__GNUC__) && !defined(__clang__)
#define EDGESDK_NO_MEMCPY_IDIOM __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define EDGESDK_NO_MEMCPY_IDIOM
#endif

/* `n` bytes from `src` to `dst` (not overlapping), a word at a time when both are 4-byte aligned (tensor
 * slots and constant arrays are; the copies of data movement start at whole elements). */
static inline EDGESDK_NO_MEMCPY_IDIOM void edgesdk_copy_bytes(uint8_t *dst, const uint8_t *src, size_t n)
{
    if ((((uintptr_t)dst | (uintptr_t)src) & 3u) == 0) {
        for (; n >= 16; n -= 16, dst += 16, src += 16) {
            const uint32_t a = ((const uint32_t *)(const void *)src)[0];
            const uint32_t b = ((const uint32_t *)(const void *)src)[1];
            const uint32_t c = ((const uint32_t *)(const void *)src)[2];
            const uint32_t d = ((const uint32_t *)(const void *)src)[3];
            ((uint32_t *)(void *)dst)[0] = a;
            ((uint32_t *)(void *)dst)[1] = b;
            ((uint32_t *)(void *)dst)[2] = c;
            ((uint32_t *)(void *)dst)[3] = d;
        }
        for (; n >= 4; n -= 4, dst += 4, src += 4) {
            *(uint32_t *)(void *)dst = *(const uint32_t *)(const void *)src;
        }
    }
    for (; n > 0; n--) {
        *dst++ = *src++;
    }
}

/* One element of `element_bytes` bytes (1, 2, 4 or 8) from `src` to `dst` (aligned: tensors start at multiples
 * of their element size, at least 4 for 8-byte elements, and every offset here is a whole number of elements). */
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
    default: /* 8: two words (8-byte elements lie at least 4-byte aligned) */
        ((uint32_t *)(void *)dst)[0] = ((const uint32_t *)(const void *)src)[0];
        ((uint32_t *)(void *)dst)[1] = ((const uint32_t *)(const void *)src)[1];
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
