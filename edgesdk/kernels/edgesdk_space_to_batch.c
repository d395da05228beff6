/*
 * edgesdk_space_to_batch.c - SPACE_TO_BATCH_ND (TFLite's reference loop, one pixel copy or fill at a time).
 */
#include "edgesdk_space_to_batch.h"

#include <string.h>

#include "edgesdk_shape.h"

void edgesdk_space_to_batch(const edgesdk_space_to_batch_params *p, const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    const size_t pixel = (size_t)p->pixel_bytes;
    for (int32_t b = 0; b < p->out_batch; b++) {
        const int32_t n = b % p->batch;
        const int32_t shift_w = (b / p->batch) % p->block_w;
        const int32_t shift_h = (b / p->batch) / p->block_w;
        for (int32_t oh = 0; oh < p->out_height; oh++) {
            const int32_t h = oh * p->block_h + shift_h - p->pad_top;
            for (int32_t ow = 0; ow < p->out_width; ow++) {
                const int32_t w = ow * p->block_w + shift_w - p->pad_left;
                if (h < 0 || h >= p->height || w < 0 || w >= p->width) {
                    memset(out, p->pad_byte, pixel);
                } else {
                    edgesdk_copy_bytes(out, in + (((size_t)n * (size_t)p->height + (size_t)h) * (size_t)p->width + (size_t)w) * pixel,
                                       pixel);
                }
                out += pixel;
            }
        }
    }
}
