/*
 * edgesdk_gather.c - GATHER and GATHER_ND as slice copies (TFLite's reference loops).
 */
#include "edgesdk_gather.h"

#include <string.h>

void edgesdk_gather(const edgesdk_gather_params *p, const void *input, const void *indices, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t inner = (size_t)p->inner_bytes;
    for (int32_t b = 0; b < p->batches; b++) {
        for (int32_t o = 0; o < p->outer; o++) {
            const uint8_t *src = in + ((size_t)b * (size_t)p->outer + (size_t)o) * (size_t)p->axis_size * inner;
            for (int32_t i = 0; i < p->coords; i++) {
                const int64_t index = edgesdk_read_index(indices, p->index_bytes, b * p->coords + i);
                if (index >= 0 && index < p->axis_size) {
                    edgesdk_copy_bytes(out, src + (size_t)index * inner, inner);
                } else {
                    memset(out, 0, inner);
                }
                out += inner;
            }
        }
    }
}

void edgesdk_gather_nd(const edgesdk_gather_nd_params *p, const void *input, const void *indices, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t slice = (size_t)p->slice_bytes;
    for (int32_t s = 0; s < p->slices; s++) {
        int64_t from = 0;
        int valid = 1;
        for (int32_t k = 0; k < p->depth; k++) {
            const int64_t index = edgesdk_read_index(indices, p->index_bytes, s * p->depth + k);
            if (index < -(int64_t)p->input_slices || index > (int64_t)p->input_slices) {
                valid = 0; /* no sum of such terms is a position the references would read */
            } else {
                from += index * p->strides[k];
            }
        }
        if (valid && from >= 0 && from < p->input_slices) {
            edgesdk_copy_bytes(out, in + (size_t)from * slice, slice);
        } else {
            memset(out, 0, slice);
        }
        out += slice;
    }
}
