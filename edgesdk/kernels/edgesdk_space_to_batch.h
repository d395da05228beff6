/*
 * edgesdk_space_to_batch.h - SPACE_TO_BATCH_ND on 4-D NHWC tensors (3-D NHC as width 1), any element type.
 *
 * Output batch b = (shift_h * block_w + shift_w) * batch + n holds the input rows and columns
 * out_h * block_h + shift_h - pad_top and out_w * block_w + shift_w - pad_left; a position in the padding
 * gets `pad_byte` in every byte of its pixel (TFLite's memset: the output zero point for 8-bit tensors,
 * 0 otherwise).
 */
#ifndef EDGESDK_SPACE_TO_BATCH_H
#define EDGESDK_SPACE_TO_BATCH_H

#include <stdint.h>

typedef struct {
    int32_t batch, height, width;            /* input */
    int32_t out_batch, out_height, out_width;
    int32_t block_h, block_w, pad_top, pad_left;
    int32_t pixel_bytes;                     /* depth * element size */
    int32_t pad_byte;
} edgesdk_space_to_batch_params;

void edgesdk_space_to_batch(const edgesdk_space_to_batch_params *p, const void *input, void *output);

#endif /* EDGESDK_SPACE_TO_BATCH_H */
