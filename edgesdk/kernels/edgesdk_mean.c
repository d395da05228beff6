/*
 * edgesdk_mean.c - int8 MEAN, bit-exact with TFLite's reference kernel.
 *
 * Outputs are produced in row-major order of the kept dims (TFLite's order, keep_dims or not); each
 * one sums its reduced sub-block with an odometer over the reduced dims (no division per element).
 */
#include "edgesdk_mean.h"

#include "edgesdk_arith.h"

typedef struct {
    int count;
    int32_t extent[EDGESDK_MAX_DIMS];
    int32_t stride[EDGESDK_MAX_DIMS];
} dim_list;

/* Splits the dims into kept and reduced ones, each with its element stride in the input. */
static void split_dims(const edgesdk_mean_params *p, dim_list *kept, dim_list *reduced)
{
    int32_t stride = 1;
    int32_t strides[EDGESDK_MAX_DIMS];
    for (int d = EDGESDK_MAX_DIMS - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= p->in_shape[d];
    }
    kept->count = 0;
    reduced->count = 0;
    for (int d = 0; d < EDGESDK_MAX_DIMS; d++) {
        dim_list *l = p->reduce[d] ? reduced : kept;
        l->extent[l->count] = p->in_shape[d];
        l->stride[l->count] = strides[d];
        l->count++;
    }
}

static int32_t block_sum(const int8_t *base, const dim_list *reduced)
{
    int32_t index[EDGESDK_MAX_DIMS] = {0};
    int32_t sum = 0;
    int32_t offset = 0;
    for (int d = 0; d < reduced->count; d++) {
        if (reduced->extent[d] == 0) {
            return 0;
        }
    }
    for (;;) {
        sum += base[offset];
        int d = reduced->count - 1;
        for (; d >= 0; d--) { /* odometer increment, innermost dim first */
            index[d]++;
            offset += reduced->stride[d];
            if (index[d] < reduced->extent[d]) {
                break;
            }
            offset -= index[d] * reduced->stride[d];
            index[d] = 0;
        }
        if (d < 0) {
            return sum;
        }
    }
}

void edgesdk_mean_s8(const edgesdk_mean_params *p, const int8_t *input, int8_t *output)
{
    dim_list kept, reduced;
    split_dims(p, &kept, &reduced);
    int32_t outputs = 1;
    int32_t count = 1;
    for (int d = 0; d < kept.count; d++) {
        outputs *= kept.extent[d];
    }
    for (int d = 0; d < reduced.count; d++) {
        count *= reduced.extent[d];
    }
    for (int32_t o = 0; o < outputs; o++) {
        int32_t rest = o;
        int32_t base = 0;
        for (int d = kept.count - 1; d >= 0; d--) {
            base += (rest % kept.extent[d]) * kept.stride[d];
            rest /= kept.extent[d];
        }
        const int32_t sum = block_sum(input + base, &reduced) - p->input_zero_point * count;
        const int32_t out = edgesdk_requantize(sum, p->multiplier, p->shift, p->rounding) + p->output_zero_point;
        output[o] = (int8_t)edgesdk_clamp_i32(out, INT8_MIN, INT8_MAX);
    }
}
