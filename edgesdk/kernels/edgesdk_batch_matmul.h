/*
 * edgesdk_batch_matmul.h - BATCH_MATMUL in int8, int16 and float32, TFLite reference semantics
 * (reference_ops::BatchMatMul): out[b][r][c] = sum_k (lhs[b][r][k] + lhs_offset) * (rhs[b][k][c] + rhs_offset),
 * requantized (int8: wrapping int32 accumulator and the 32-bit MultiplyByQuantizedMultiplier; int16: int64
 * accumulator and the 64-bit one), plus the output zero point, clamped to the type. float32 sums the products in
 * float over k = 0, 1, ... (no offsets, no requantization).
 *
 * adj_x / adj_y and broadcast batch dimensions are strides: lhs element (r, k) of batch b is at
 * lhs + sum_d index_d(b) * lhs_batch_stride[d] + r * lhs_row_stride + k * lhs_depth_stride (a broadcast batch
 * dimension has stride 0), rhs element (k, c) likewise. The output is [batches][rows][cols], contiguous.
 */
#ifndef EDGESDK_BATCH_MATMUL_H
#define EDGESDK_BATCH_MATMUL_H

#include <stdint.h>

#include "edgesdk_layer16.h" /* the accumulator modes (EDGESDK_ACC64, EDGESDK_ACC32) */

#define EDGESDK_BATCH_MATMUL_DIMS 4 /* batch dimensions (outputs of rank up to 6) */

typedef struct {
    int32_t batch_shape[EDGESDK_BATCH_MATMUL_DIMS]; /* the output's batch dimensions, leading ones padded with 1 */
    int32_t lhs_batch_stride[EDGESDK_BATCH_MATMUL_DIMS];
    int32_t rhs_batch_stride[EDGESDK_BATCH_MATMUL_DIMS];
    int32_t rows, cols, depth;
    int32_t lhs_row_stride, lhs_depth_stride;
    int32_t rhs_depth_stride, rhs_col_stride;
    int32_t lhs_offset; /* -lhs zero point */
    int32_t rhs_offset; /* -rhs zero point */
    int32_t output_offset;
    int32_t act_min, act_max;
    int32_t multiplier, shift;
    int32_t rounding;    /* EDGESDK_ROUNDING_DOUBLE / _SINGLE (int8) */
    int32_t accumulator; /* int8: EDGESDK_ACC32; int16: EDGESDK_ACC64 */
} edgesdk_batch_matmul_params;

void edgesdk_batch_matmul_s8(const edgesdk_batch_matmul_params *p, const int8_t *lhs, const int8_t *rhs,
                             int8_t *output);
void edgesdk_batch_matmul_s16(const edgesdk_batch_matmul_params *p, const int16_t *lhs, const int16_t *rhs,
                              int16_t *output);
/* float32: the quantization fields are unused. */
void edgesdk_batch_matmul_f32(const edgesdk_batch_matmul_params *p, const float *lhs, const float *rhs, float *output);

#endif /* EDGESDK_BATCH_MATMUL_H */
