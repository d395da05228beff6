/*
 * edgesdk_resize.h - RESIZE_NEAREST_NEIGHBOR (any element type) and RESIZE_BILINEAR (int8, int16, float32),
 * TFLite reference semantics (reference_ops::ResizeNearestNeighbor, ResizeBilinearInteger, ResizeBilinear<float>).
 *
 * Where each output row and column reads is computed by the compiler exactly as TFLite computes it per pixel
 * (edgesdk/ops/resize.py) and passed as tables:
 *   nearest:         rows[out_h] = source row, cols[out_w] = source column;
 *   bilinear, int:   rows[out_h][3] = (y0, y1, dy), dy = input_y - 1024 * y0 in [-1024, 1024]; cols likewise;
 *                    out = round((in(y0,x0) * (1024-dy) * (1024-dx) + in(y1,x0) * dy * (1024-dx)
 *                                 + in(y0,x1) * (1024-dy) * dx + in(y1,x1) * dy * dx) / 2^20), halves away from 0;
 *   bilinear, float: rows[out_h][2] = (y0, y1), row_weights[out_h][2] = (fy, 1 - fy) as float32; cols likewise;
 *                    out = in(y0,x0) * (1-fy) * (1-fx) + in(y1,x0) * fy * (1-fx) + in(y0,x1) * (1-fy) * fx
 *                          + in(y1,x1) * fy * fx + 0.0f, evaluated left to right in float.
 */
#ifndef EDGESDK_RESIZE_H
#define EDGESDK_RESIZE_H

#include <stdint.h>

typedef struct {
    int32_t batches;
    int32_t in_h, in_w, channels;
    int32_t out_h, out_w;
    int32_t element_bytes;      /* nearest: bytes per element (1, 2 or 4) */
    const int32_t *rows;        /* see above */
    const int32_t *cols;
    const float *row_weights;   /* bilinear float32 only */
    const float *col_weights;
} edgesdk_resize_params;

void edgesdk_resize_nearest_neighbor(const edgesdk_resize_params *p, const void *input, void *output);
void edgesdk_resize_bilinear_s8(const edgesdk_resize_params *p, const int8_t *input, int8_t *output);
void edgesdk_resize_bilinear_s16(const edgesdk_resize_params *p, const int16_t *input, int16_t *output);
void edgesdk_resize_bilinear_f32(const edgesdk_resize_params *p, const float *input, float *output);

#endif /* EDGESDK_RESIZE_H */
