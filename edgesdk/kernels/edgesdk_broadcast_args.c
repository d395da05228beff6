/*
 * edgesdk_broadcast_args.c - BROADCAST_ARGS.
 */
#include "edgesdk_broadcast_args.h"

#include <string.h>

#include "edgesdk_shape.h"

void edgesdk_broadcast_args(const edgesdk_broadcast_args_params *p, const void *shape1, const void *shape2,
                            void *output)
{
    for (int32_t i = 0; i < p->out_size; i++) {
        const int32_t k1 = i - (p->out_size - p->size1);
        const int32_t k2 = i - (p->out_size - p->size2);
        /* TFLite's reference holds each dimension in an int: int64 values are truncated to 32 bits */
        const int32_t d1 = k1 >= 0 ? (int32_t)(uint32_t)edgesdk_read_index(shape1, p->index_bytes, k1) : 1;
        const int32_t d2 = k2 >= 0 ? (int32_t)(uint32_t)edgesdk_read_index(shape2, p->index_bytes, k2) : 1;
        const int64_t d = d1 == 1 ? d2 : d1;
        if (p->index_bytes == 8) {
            memcpy((uint8_t *)output + 8 * (size_t)i, &d, 8);
        } else {
            ((int32_t *)output)[i] = (int32_t)d;
        }
    }
}
