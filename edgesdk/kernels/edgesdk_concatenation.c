/*
 * edgesdk_concatenation.c - CONCATENATION (and PACK), a sequence of block copies (bit-exact by construction).
 */
#include "edgesdk_concatenation.h"

#include "edgesdk_shape.h"

void edgesdk_concatenation(const edgesdk_concatenation_params *p, const void *const *inputs, void *output)
{
    uint8_t *out = (uint8_t *)output;
    for (int32_t o = 0; o < p->outer; o++) {
        for (int32_t i = 0; i < p->num_inputs; i++) {
            const int32_t n = p->slice_bytes[i];
            edgesdk_copy_bytes(out, (const uint8_t *)inputs[i] + o * n, (size_t)n);
            out += n;
        }
    }
}
