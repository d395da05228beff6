/*
 * edgesdk_dynamic_update_slice.c - copy the operand, then each innermost row of the update into place.
 */
#include "edgesdk_dynamic_update_slice.h"

#include <string.h>

enum { D = EDGESDK_SHAPE_MAX_DIMS };

void edgesdk_dynamic_update_slice(const edgesdk_dynamic_update_slice_params *p, const void *operand,
                                  const void *update, const void *start, void *output)
{
    uint8_t *out = (uint8_t *)output;
    const uint8_t *up = (const uint8_t *)update;
    if ((const void *)out != operand) {
        memmove(out, operand, (size_t)p->operand_bytes);
    }
    int32_t begin[D];
    int32_t strides[D]; /* operand element strides */
    int32_t stride = 1;
    for (int d = D - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= p->operand_shape[d];
        begin[d] = 0;
        const int k = d - (D - p->rank); /* the start tensor has one index per operand dimension */
        if (k >= 0) {
            const int64_t limit = (int64_t)p->operand_shape[d] - p->update_shape[d];
            int64_t b = edgesdk_read_index(start, p->index_bytes, k);
            begin[d] = (int32_t)(b < 0 ? 0 : (b > limit ? limit : b));
        }
    }
    const size_t row = (size_t)p->update_shape[D - 1] * (size_t)p->element_bytes;
    int32_t rows = 1;
    for (int d = 0; d < D - 1; d++) {
        rows *= p->update_shape[d];
    }
    for (int32_t r = 0; r < rows; r++) {
        int32_t rest = r;
        int32_t at = begin[D - 1];
        for (int d = D - 2; d >= 0; d--) {
            const int32_t i = rest % p->update_shape[d];
            rest /= p->update_shape[d];
            at += (begin[d] + i) * strides[d];
        }
        edgesdk_copy_bytes(out + (size_t)at * (size_t)p->element_bytes, up + (size_t)r * row, row);
    }
}
