/*
 * edgesdk_reduce.c - SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL, bit-exact with TFLite's reference
 * kernels (iteration and the quantized sum in edgesdk_reduce.h).
 *
 * MAX/MIN keep TFLite's reducers: `in > current ? in : current` from the type's lowest value (MIN: `in <
 * current` from its largest), so a NaN never replaces a number; with init_from_first (LiteRT reducing every
 * dim) the first element starts the reduction, so a leading NaN stays.
 */
#include "edgesdk_reduce.h"

#include <float.h>

void edgesdk_sum_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output)
{
    edgesdk_reduce_mean_or_sum_s8(p, input, output);
}

void edgesdk_sum_s16(const edgesdk_mean_params *p, const int16_t *input, int16_t *output)
{
    edgesdk_reduce_mean_or_sum_s16(p, input, output);
}

void edgesdk_sum_f32(const edgesdk_reduce_params *p, const float *input, float *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        output[o] = edgesdk_reduce_sum_f32(&it, input, o, p->init_from_first);
    }
}

void edgesdk_reduce_max_s8(const edgesdk_reduce_params *p, const int8_t *input, int8_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        int8_t m = INT8_MIN;
        do {
            m = input[offset] > m ? input[offset] : m;
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = m;
    }
}

void edgesdk_reduce_max_s16(const edgesdk_reduce_params *p, const int16_t *input, int16_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        int16_t m = INT16_MIN;
        do {
            m = input[offset] > m ? input[offset] : m;
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = m;
    }
}

void edgesdk_reduce_max_f32(const edgesdk_reduce_params *p, const float *input, float *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        float m = p->init_from_first ? input[offset] : -FLT_MAX; /* numeric_limits<float>::lowest() */
        do {
            m = input[offset] > m ? input[offset] : m;
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = m;
    }
}

void edgesdk_reduce_min_s8(const edgesdk_reduce_params *p, const int8_t *input, int8_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        int8_t m = INT8_MAX;
        do {
            m = input[offset] < m ? input[offset] : m;
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = m;
    }
}

void edgesdk_reduce_min_s16(const edgesdk_reduce_params *p, const int16_t *input, int16_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        int16_t m = INT16_MAX;
        do {
            m = input[offset] < m ? input[offset] : m;
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = m;
    }
}

void edgesdk_reduce_min_f32(const edgesdk_reduce_params *p, const float *input, float *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        float m = p->init_from_first ? input[offset] : FLT_MAX; /* numeric_limits<float>::max() */
        do {
            m = input[offset] < m ? input[offset] : m;
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = m;
    }
}

void edgesdk_reduce_any_b(const edgesdk_reduce_params *p, const uint8_t *input, uint8_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        uint8_t any = 0;
        do {
            any = (uint8_t)(input[offset] != 0 || any);
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = any;
    }
}

void edgesdk_reduce_all_b(const edgesdk_reduce_params *p, const uint8_t *input, uint8_t *output)
{
    edgesdk_reduce_iter it;
    edgesdk_reduce_begin(&it, p->in_shape, p->reduce);
    for (int32_t o = 0; o < it.outputs; o++) {
        int32_t offset = edgesdk_reduce_block(&it, o);
        uint8_t all = 1;
        do {
            all = (uint8_t)(input[offset] != 0 && all);
        } while (edgesdk_reduce_next(&it, &offset));
        output[o] = all;
    }
}
