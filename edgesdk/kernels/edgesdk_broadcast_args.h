/*
 * edgesdk_broadcast_args.h - BROADCAST_ARGS on runtime shape vectors (int32 or int64): the broadcast shape of
 * two shapes aligned to the right. Where both dimensions differ and neither is 1 (TFLite's references abort)
 * the output holds the first shape's dimension.
 */
#ifndef EDGESDK_BROADCAST_ARGS_H
#define EDGESDK_BROADCAST_ARGS_H

#include <stdint.h>

typedef struct {
    int32_t size1, size2, out_size;  /* out_size = max(size1, size2) */
    int32_t index_bytes;             /* 4: int32, 8: int64 (inputs and output share the type) */
} edgesdk_broadcast_args_params;

void edgesdk_broadcast_args(const edgesdk_broadcast_args_params *p, const void *shape1, const void *shape2,
                            void *output);

#endif /* EDGESDK_BROADCAST_ARGS_H */
