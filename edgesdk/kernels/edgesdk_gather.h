/*
 * edgesdk_gather.h - GATHER (axis, batch_dims), EMBEDDING_LOOKUP and GATHER_ND with runtime indices.
 *
 * Indices are int16, int32 or int64 (index_bytes 2, 4, 8). An index outside [0, size) -- which both TFLite
 * references reject at run time ("gather index out of bounds") -- gives a slice of zero bytes here, never a
 * read outside the input. GATHER_ND checks, as both references do, only that the tuple's flat position
 * sum_k index[k] * strides[k] lies inside the input (an index past its own dimension that stays inside is
 * read like they read it).
 */
#ifndef EDGESDK_GATHER_H
#define EDGESDK_GATHER_H

#include <stdint.h>

#include "edgesdk_shape.h"

typedef struct {
    int32_t batches;      /* product of the first batch_dims dimensions */
    int32_t outer;        /* product of the input dimensions from batch_dims to axis */
    int32_t coords;       /* indices per batch */
    int32_t axis_size;    /* input dimension `axis` */
    int32_t inner_bytes;  /* product of the input dimensions after axis * element size */
    int32_t index_bytes;
} edgesdk_gather_params;

void edgesdk_gather(const edgesdk_gather_params *p, const void *input, const void *indices, void *output);

typedef struct {
    int32_t slices;                              /* index tuples */
    int32_t depth;                               /* index tuple length, 1..6 */
    int32_t input_slices;                        /* slices in the input */
    int32_t strides[EDGESDK_SHAPE_MAX_DIMS];     /* in slices */
    int32_t slice_bytes;                         /* product of the remaining input dimensions * element size */
    int32_t index_bytes;
} edgesdk_gather_nd_params;

void edgesdk_gather_nd(const edgesdk_gather_nd_params *p, const void *input, const void *indices, void *output);

#endif /* EDGESDK_GATHER_H */
