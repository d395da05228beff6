/*
 * edgesdk_batch_matmul.c - BATCH_MATMUL (int8, int16, float32), bit-exact with TFLite's reference_ops::BatchMatMul.
 */
#include "edgesdk_batch_matmul.h"

#include "edgesdk_layer16.h"

/* The element offset of batch index `b` (row-major over batch_shape) in an operand with these strides. */
static int32_t batch_offset(const edgesdk_batch_matmul_params *p, int32_t b, const int32_t *strides)
{
    int32_t offset = 0;
    for (int32_t d = EDGESDK_BATCH_MATMUL_DIMS - 1; d >= 0; d--) {
        const int32_t n = p->batch_shape[d];
        offset += (b % n) * strides[d];
        b /= n;
    }
    return offset;
}

static int32_t batch_count(const edgesdk_batch_matmul_params *p)
{
    int32_t n = 1;
    for (int32_t d = 0; d < EDGESDK_BATCH_MATMUL_DIMS; d++) {
        n *= p->batch_shape[d];
    }
    return n;
}

void edgesdk_batch_matmul_s8(const edgesdk_batch_matmul_params *p, const int8_t *lhs, const int8_t *rhs,
                             int8_t *output)
{
    const edgesdk_batch_matmul_params params = *p;
    p = &params;
    const int32_t batches = batch_count(p);
    for (int32_t b = 0; b < batches; b++) {
        const int8_t *l_batch = lhs + batch_offset(p, b, p->lhs_batch_stride);
        const int8_t *r_batch = rhs + batch_offset(p, b, p->rhs_batch_stride);
        for (int32_t r = 0; r < p->rows; r++) {
            const int8_t *l_row = l_batch + r * p->lhs_row_stride;
            for (int32_t c = 0; c < p->cols; c++) {
                const int8_t *x = l_row;
                const int8_t *y = r_batch + c * p->rhs_col_stride;
                uint32_t acc = 0; /* TFLite's int32 accumulator wraps */
                for (int32_t k = 0; k < p->depth; k++) {
                    acc += (uint32_t)(((int32_t)*x + p->lhs_offset) * ((int32_t)*y + p->rhs_offset));
                    x += p->lhs_depth_stride;
                    y += p->rhs_depth_stride;
                }
                int32_t scaled = edgesdk_requantize((int32_t)acc, p->multiplier, p->shift, p->rounding);
                scaled += p->output_offset;
                *output++ = (int8_t)edgesdk_clamp_i32(scaled, p->act_min, p->act_max);
            }
        }
    }
}

void edgesdk_batch_matmul_s16(const edgesdk_batch_matmul_params *p, const int16_t *lhs, const int16_t *rhs,
                              int16_t *output)
{
    const edgesdk_batch_matmul_params params = *p;
    p = &params;
    const int32_t batches = batch_count(p);
    for (int32_t b = 0; b < batches; b++) {
        const int16_t *l_batch = lhs + batch_offset(p, b, p->lhs_batch_stride);
        const int16_t *r_batch = rhs + batch_offset(p, b, p->rhs_batch_stride);
        for (int32_t r = 0; r < p->rows; r++) {
            const int16_t *l_row = l_batch + r * p->lhs_row_stride;
            for (int32_t c = 0; c < p->cols; c++) {
                const int16_t *x = l_row;
                const int16_t *y = r_batch + c * p->rhs_col_stride;
                int64_t acc = 0; /* each int16 x int16 product fits int32, their sum may not */
                for (int32_t k = 0; k < p->depth; k++) {
                    acc += (int32_t)*x * (int32_t)*y;
                    x += p->lhs_depth_stride;
                    y += p->rhs_depth_stride;
                }
                const int32_t scaled = edgesdk_requantize16(acc, p->accumulator, p->rounding, p->multiplier,
                                                            p->shift, 0.0);
                *output++ = edgesdk_clamp_s16(scaled, p->act_min, p->act_max);
            }
        }
    }
}

void edgesdk_batch_matmul_f32(const edgesdk_batch_matmul_params *p, const float *lhs, const float *rhs, float *output)
{
    const edgesdk_batch_matmul_params params = *p;
    p = &params;
    const int32_t batches = batch_count(p);
    for (int32_t b = 0; b < batches; b++) {
        const float *l_batch = lhs + batch_offset(p, b, p->lhs_batch_stride);
        const float *r_batch = rhs + batch_offset(p, b, p->rhs_batch_stride);
        for (int32_t r = 0; r < p->rows; r++) {
            const float *l_row = l_batch + r * p->lhs_row_stride;
            for (int32_t c = 0; c < p->cols; c++) {
                const float *x = l_row;
                const float *y = r_batch + c * p->rhs_col_stride;
                float total = 0.0f;
                for (int32_t k = 0; k < p->depth; k++) {
                    const float product = *y * *x;
                    total += product;
                    x += p->lhs_depth_stride;
                    y += p->rhs_depth_stride;
                }
                *output++ = total;
            }
        }
    }
}
