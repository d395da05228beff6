/*
 * edgesdk_dynamic_update_slice.h - DYNAMIC_UPDATE_SLICE: the operand with `update` written at runtime start
 * indices, each clamped to [0, operand dim - update dim] as both TFLite references do.
 */
#ifndef EDGESDK_DYNAMIC_UPDATE_SLICE_H
#define EDGESDK_DYNAMIC_UPDATE_SLICE_H

#include <stdint.h>

#include "edgesdk_shape.h"

typedef struct {
    int32_t rank;                                   /* 1..6 */
    int32_t element_bytes;
    int32_t index_bytes;                            /* start indices: int32 (4) or int64 (8) */
    int32_t operand_bytes;                          /* the whole operand */
    int32_t operand_shape[EDGESDK_SHAPE_MAX_DIMS];  /* leading dims 1 */
    int32_t update_shape[EDGESDK_SHAPE_MAX_DIMS];   /* leading dims 1 */
} edgesdk_dynamic_update_slice_params;

void edgesdk_dynamic_update_slice(const edgesdk_dynamic_update_slice_params *p, const void *operand,
                                  const void *update, const void *start, void *output);

#endif /* EDGESDK_DYNAMIC_UPDATE_SLICE_H */
