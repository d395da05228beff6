/*
 * edgesdk_concatenation.c - CONCATENATION, a sequence of memcpy (bit-exact by construction).
 */
#include "edgesdk_concatenation.h"

#include <string.h>

void edgesdk_concatenation(const edgesdk_concatenation_params *p, const void *const *inputs, void *output)
{
    uint8_t *out = (uint8_t *)output;
    for (int32_t o = 0; o < p->outer; o++) {
        for (int32_t i = 0; i < p->num_inputs; i++) {
            const int32_t n = p->slice_bytes[i];
            memcpy(out, (const uint8_t *)inputs[i] + o * n, (size_t)n);
            out += n;
        }
    }
}
