/*
 * edgesdk_reduce.h - reductions over any set of axes (up to 6 dims), TFLite reference semantics:
 * SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL (edgesdk_reduce.c) and MEAN (edgesdk_mean.c).
 *
 * Outputs are produced in row-major order of the kept dims (TFLite's order, keep_dims or not). Each output
 * reduces its sub-block in row-major order of the reduced dims, which is the order TFLite's Reduce() visits
 * the input elements that map to it, so float sums add in the same order and round the same way.
 *
 * Quantized MEAN and SUM are TFLite's QuantizedMeanOrSum: an int32 sum (wrapping), minus zp_in * count,
 * requantized (MEAN folds 1/count into the multiplier at build time), plus zp_out, clamped.
 */
#ifndef EDGESDK_REDUCE_H
#define EDGESDK_REDUCE_H

#include <stdint.h>

#include "edgesdk_arith.h"
#include "edgesdk_broadcast.h" /* EDGESDK_MAX_DIMS */

/* Quantized MEAN / SUM (int8, int16). */
typedef struct {
    int32_t in_shape[EDGESDK_MAX_DIMS]; /* leading dims padded with 1 */
    int32_t reduce[EDGESDK_MAX_DIMS];   /* 1 for each reduced dim */
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier, shift; /* input_scale / output_scale (/ count for MEAN) */
    int32_t rounding;          /* EDGESDK_ROUNDING_DOUBLE or _SINGLE */
    /* 1: LiteRT's reference int8 SUM, which reads the int8 bytes as uint8 values and clamps the result to
     * [0, 255] before storing its low byte (reduce.cc's kReference path passes uint8_t pointers). */
    int32_t bytes_as_uint8;
    float scale_f32; /* EDGESDK_ROUNDING_F32 (ONNX Runtime's QLinearGlobalAveragePool): input / (output * count) */
} edgesdk_mean_params;

/* MAX, MIN, ANY, ALL (every dtype) and float32 SUM / MEAN. */
typedef struct {
    int32_t in_shape[EDGESDK_MAX_DIMS];
    int32_t reduce[EDGESDK_MAX_DIMS];
    /* 1: start from the block's first element instead of the reducer's initial value (LiteRT's
     * ReduceAllDims, taken when every dim is reduced; it matters for -0.0 sums and NaN). */
    int32_t init_from_first;
} edgesdk_reduce_params;

/* Kept and reduced dims, each with its element stride in the input; an odometer over the reduced ones. */
typedef struct {
    int kept_count, reduced_count;
    int32_t kept_extent[EDGESDK_MAX_DIMS], kept_stride[EDGESDK_MAX_DIMS];
    int32_t reduced_extent[EDGESDK_MAX_DIMS], reduced_stride[EDGESDK_MAX_DIMS];
    int32_t outputs; /* product of the kept dims */
    int32_t count;   /* product of the reduced dims: elements per output */
    int32_t index[EDGESDK_MAX_DIMS];
} edgesdk_reduce_iter;

static inline void edgesdk_reduce_begin(edgesdk_reduce_iter *it, const int32_t *in_shape, const int32_t *reduce)
{
    int32_t stride = 1;
    int32_t strides[EDGESDK_MAX_DIMS];
    for (int d = EDGESDK_MAX_DIMS - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= in_shape[d];
    }
    it->kept_count = 0;
    it->reduced_count = 0;
    it->outputs = 1;
    it->count = 1;
    for (int d = 0; d < EDGESDK_MAX_DIMS; d++) {
        if (reduce[d]) {
            it->reduced_extent[it->reduced_count] = in_shape[d];
            it->reduced_stride[it->reduced_count] = strides[d];
            it->reduced_count++;
            it->count *= in_shape[d];
        } else {
            it->kept_extent[it->kept_count] = in_shape[d];
            it->kept_stride[it->kept_count] = strides[d];
            it->kept_count++;
            it->outputs *= in_shape[d];
        }
    }
}

/* Input offset of the first element of output o's block; resets the odometer. */
static inline int32_t edgesdk_reduce_block(edgesdk_reduce_iter *it, int32_t o)
{
    int32_t base = 0;
    for (int d = it->kept_count - 1; d >= 0; d--) {
        base += (o % it->kept_extent[d]) * it->kept_stride[d];
        o /= it->kept_extent[d];
    }
    for (int d = 0; d < it->reduced_count; d++) {
        it->index[d] = 0;
    }
    return base;
}

/* Advances *offset to the block's next element (innermost reduced dim first); 0 when the block is done. */
static inline int edgesdk_reduce_next(edgesdk_reduce_iter *it, int32_t *offset)
{
    for (int d = it->reduced_count - 1; d >= 0; d--) {
        it->index[d]++;
        *offset += it->reduced_stride[d];
        if (it->index[d] < it->reduced_extent[d]) {
            return 1;
        }
        *offset -= it->index[d] * it->reduced_stride[d];
        it->index[d] = 0;
    }
    return 0;
}

/* The requantized QuantizedMeanOrSum output of a block sum (int32, wrapping like TFLite's). */
static inline int32_t edgesdk_reduce_requantize(const edgesdk_mean_params *p, uint32_t sum, int32_t count,
                                                int32_t lo, int32_t hi)
{
    const int32_t shifted = (int32_t)(sum - (uint32_t)p->input_zero_point * (uint32_t)count);
    const int32_t scaled = p->rounding == EDGESDK_ROUNDING_F32 ? edgesdk_requantize_f32(shifted, p->scale_f32)
                                                              : edgesdk_requantize(shifted, p->multiplier, p->shift,
                                                                                   p->rounding);
    const int32_t out = scaled + p->output_zero_point;
    return edgesdk_clamp_i32(out, lo, hi);
}

static inline void edgesdk_reduce_mean_or_sum_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        uint32_t sum = 0;
        if (p->bytes_as_uint8) {
            do {
                sum += (uint8_t)input[offset];
            } while (edgesdk_reduce_next(&it, &offset));
            output[o] = (int8_t)(uint8_t)edgesdk_reduce_requantize(p, sum, it.count, 0, UINT8_MAX);
            continue;
        }
        do {
            sum += (uint32_t)(int32_t)input[offset];
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = (int8_t)edgesdk_reduce_requantize(p, sum, it.count, INT8_MIN, INT8_MAX);
    }
}

static inline void edgesdk_reduce_mean_or_sum_s16(const edgesdk_mean_params *p, const int16_t *input, int16_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        uint32_t sum = 0;
        do {
            sum += (uint32_t)(int32_t)input[offset];
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = (int16_t)edgesdk_reduce_requantize(p, sum, it.count, INT16_MIN, INT16_MAX);
    }
}

/* Float32 block sum: 0.0f plus every element in order, or the first element plus the rest. */
static inline float edgesdk_reduce_sum_f32(edgesdk_reduce_iter *it, const float *input, int32_t o, int init_from_first)
{
    int32_t offset = edgesdk_reduce_block(it, o);
    float sum;
    if (init_from_first) {
        sum = input[offset];
        if (!edgesdk_reduce_next(it, &offset)) {
            return sum;
        }
    } else {
        sum = 0.0f;
    }
    do {
        sum += input[offset];
    } while (edgesdk_reduce_next(it, &offset));
    return sum;
}

void edgesdk_sum_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output);
void edgesdk_sum_s16(const edgesdk_mean_params *p, const int16_t *input, int16_t *output);
void edgesdk_sum_f32(const edgesdk_reduce_params *p, const float *input, float *output);

void edgesdk_reduce_max_s8(const edgesdk_reduce_params *p, const int8_t *input, int8_t *output);
void edgesdk_reduce_max_s16(const edgesdk_reduce_params *p, const int16_t *input, int16_t *output);
void edgesdk_reduce_max_f32(const edgesdk_reduce_params *p, const float *input, float *output);
void edgesdk_reduce_min_s8(const edgesdk_reduce_params *p, const int8_t *input, int8_t *output);
void edgesdk_reduce_min_s16(const edgesdk_reduce_params *p, const int16_t *input, int16_t *output);
void edgesdk_reduce_min_f32(const edgesdk_reduce_params *p, const float *input, float *output);

/* bool tensors: one byte, 0 or 1 */
void edgesdk_reduce_any_b(const edgesdk_reduce_params *p, const uint8_t *input, uint8_t *output);
void edgesdk_reduce_all_b(const edgesdk_reduce_params *p, const uint8_t *input, uint8_t *output);

#endif /* EDGESDK_REDUCE_H */
