/*
 * edgesdk_pad.c - int8 PAD: fill the output with the pad value, then copy each input row (innermost
 * dimension) to its place.
 */
#include "edgesdk_pad.h"

#include <string.h>

void edgesdk_pad_s8(const edgesdk_pad_params *p, const int8_t *input, int8_t *output)
{
    enum { LAST = EDGESDK_MAX_DIMS - 1 };
    int32_t out_size = 1;
    int32_t rows = 1;
    for (int d = 0; d < EDGESDK_MAX_DIMS; d++) {
        out_size *= p->out_shape[d];
        rows *= d < LAST ? p->in_shape[d] : 1;
    }
    memset(output, (int8_t)p->pad_value, (size_t)out_size);
    const int32_t row_len = p->in_shape[LAST];
    if (row_len == 0) {
        return;
    }
    for (int32_t row = 0; row < rows; row++) {
        /* Output offset of input row `row`: decompose it into indices, shift each by its padding. */
        int32_t rest = row;
        int32_t out_offset = 0;
        int32_t out_stride = p->out_shape[LAST];
        for (int d = LAST - 1; d >= 0; d--) {
            const int32_t i = rest % p->in_shape[d];
            rest /= p->in_shape[d];
            out_offset += (i + p->pad_before[d]) * out_stride;
            out_stride *= p->out_shape[d];
        }
        memcpy(output + out_offset + p->pad_before[LAST], input + row * row_len, (size_t)row_len);
    }
}
