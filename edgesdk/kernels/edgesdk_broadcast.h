/*
 * edgesdk_broadcast.h - iteration over a broadcast binary op (ADD, MUL), as TFLite's BroadcastAdd6DSlow.
 *
 * The compiler pads shapes to EDGESDK_MAX_DIMS and gives per-input element strides that are 0 along
 * broadcast dimensions. The innermost dimension is walked with a plain loop; the outer index
 * decomposition happens once per row, never per element.
 */
#ifndef EDGESDK_BROADCAST_H
#define EDGESDK_BROADCAST_H

#include <stdint.h>

#define EDGESDK_MAX_DIMS 6

typedef struct {
    int32_t broadcast;                      /* 0: shapes equal, a flat loop over `size` elements */
    int32_t size;                           /* output element count */
    int32_t out_shape[EDGESDK_MAX_DIMS];    /* leading dims padded with 1 */
    int32_t in1_strides[EDGESDK_MAX_DIMS];  /* 0 where input 1 is broadcast */
    int32_t in2_strides[EDGESDK_MAX_DIMS];  /* 0 where input 2 is broadcast */
} edgesdk_broadcast_shape;

/* Element offsets of row `row` (all dims but the last) into input 1 and input 2. */
static inline void edgesdk_broadcast_row(const edgesdk_broadcast_shape *s, int32_t row, int32_t *off1, int32_t *off2)
{
    int32_t o1 = 0;
    int32_t o2 = 0;
    for (int d = EDGESDK_MAX_DIMS - 2; d >= 0; d--) {
        const int32_t i = row % s->out_shape[d];
        row /= s->out_shape[d];
        o1 += i * s->in1_strides[d];
        o2 += i * s->in2_strides[d];
    }
    *off1 = o1;
    *off2 = o2;
}

#endif /* EDGESDK_BROADCAST_H */
