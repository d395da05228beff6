/*
 * edgesdk_gather_axes.h - separable data movement: TRANSPOSE, SLICE, STRIDED_SLICE, REVERSE_V2, SPLIT,
 * SPLIT_V, UNPACK, BROADCAST_TO, MIRROR_PAD, PAD/PADV2 (other than int8), EXPAND_DIMS, SQUEEZE,
 * DEPTH_TO_SPACE, SPACE_TO_DEPTH and BATCH_TO_SPACE_ND.
 *
 * Output element (i0..i5) is the input element at byte offset base + sum_d off_d(i_d), where off_d(i) is
 * table[d][i] when the dimension has a table (a negative entry: the element is padding, written as
 * pad_value) and i * step[d] otherwise. The compiler builds the description from the op's constant
 * parameters (edgesdk/ops/axis_map.py), so the kernel does no index arithmetic of TFLite's own.
 */
#ifndef EDGESDK_GATHER_AXES_H
#define EDGESDK_GATHER_AXES_H

#include <stdint.h>

#include "edgesdk_shape.h"

typedef struct {
    int32_t element_bytes;                          /* 1, 2, 4 or 8 */
    int32_t base;                                   /* byte offset of the walk's origin in the input */
    int32_t out_shape[EDGESDK_SHAPE_MAX_DIMS];      /* leading dims 1 */
    int32_t step[EDGESDK_SHAPE_MAX_DIMS];           /* byte step of a dimension without a table */
    const int32_t *table[EDGESDK_SHAPE_MAX_DIMS];   /* per index byte offsets (< 0: padding), or null */
    uint8_t pad_value[8];                           /* the pad element's bytes */
} edgesdk_gather_axes_params;

void edgesdk_gather_axes(const edgesdk_gather_axes_params *p, const void *input, void *output);

/* SLICE whose begin is a runtime tensor: begin[d] is clamped to [0, in_shape[d] - size[d]] (the sizes are the
 * output's dimensions) and the walk of `axes` (built for begin 0) starts at sum_d begin[d] * in_strides[d]. */
typedef struct {
    edgesdk_gather_axes_params axes;
    int32_t rank;
    int32_t index_bytes;                            /* begin is int32 (4) or int64 (8) */
    int32_t in_shape[EDGESDK_SHAPE_MAX_DIMS];
    int32_t size[EDGESDK_SHAPE_MAX_DIMS];
    int32_t in_strides[EDGESDK_SHAPE_MAX_DIMS];     /* in bytes */
} edgesdk_slice_dynamic_params;

void edgesdk_slice_dynamic(const edgesdk_slice_dynamic_params *p, const void *input, const void *begin, void *output);

#endif /* EDGESDK_GATHER_AXES_H */
