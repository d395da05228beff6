/*
 * edgesdk_ort.c - ONNX Runtime's quantized kernels (--rounding ort), see edgesdk_ort.h.
 *
 * Every float operation is one IEEE single (or, inside edgesdk_ort_fmaf, double) operation in the order ONNX
 * Runtime performs it; nothing may be fused or reassociated.
 */
#pragma GCC optimize("fp-contract=off")

#include "edgesdk_ort.h"

#include <string.h>

#include "edgesdk_arith.h"

/* Round half to even for |v| <= 2^22: at 1.5 * 2^23 the float spacing is 1 (cvtps2dq, nearbyintf). */
static inline int32_t rne_f32(float v)
{
    if (v > 4194304.0f) {
        v = 4194304.0f;
    } else if (v < -4194304.0f) {
        v = -4194304.0f;
    }
    return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

/* An int8 result computed on uint8 values: saturate to [0, 255] (packus), back to int8, then the activation. */
static inline int8_t from_u8(int32_t u8, int32_t act_min, int32_t act_max)
{
    const int32_t v = edgesdk_clamp_i32(u8, 0, 255) - 128;
    return (int8_t)edgesdk_clamp_i32(v, act_min, act_max);
}

float edgesdk_ort_fmaf(float a, float b, float c)
{
    const double product = (double)a * (double)b; /* 48 significant bits: exact */
    double sum = product + (double)c;
    /* TwoSum: sum + error is exactly product + c. */
    const double back = sum - product;
    const double error = (product - (sum - back)) + ((double)c - back);
    if (error != 0.0) {
        uint64_t bits;
        memcpy(&bits, &sum, sizeof bits);
        if ((bits & 1u) == 0) { /* round to odd: the bracketing double toward the exact value */
            bits = ((error > 0.0) == (sum > 0.0)) ? bits + 1u : bits - 1u;
            memcpy(&sum, &bits, sizeof sum);
        }
    }
    return (float)sum;
}

void edgesdk_ort_add_s8(const edgesdk_ort_add_params *p, const int8_t *a, const int8_t *b, int8_t *output)
{
    const int8_t *inner = p->inner ? b : a;
    const int8_t *outer = p->inner ? a : b;
    const int32_t inner_step = p->inner ? p->b_step : p->a_step;
    const int32_t outer_step = p->inner ? p->a_step : p->b_step;
    for (int32_t i = 0; i < p->size; i++) {
        const float base = p->inner_table[inner[i * inner_step] + 128];
        const float value = edgesdk_ort_fmaf((float)(outer[i * outer_step] + 128), p->outer_ratio, base);
        output[i] = from_u8(rne_f32(value), p->act_min, p->act_max);
    }
}

void edgesdk_ort_mul_s8(const edgesdk_ort_mul_params *p, const int8_t *a, const int8_t *b, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const int32_t product = ((int32_t)a[i * p->a_step] - p->a_zero_point) * ((int32_t)b[i * p->b_step] - p->b_zero_point);
        const float scaled = (float)product * p->ratio;
        output[i] = from_u8(rne_f32(scaled + p->output_zero_point_u8), p->act_min, p->act_max);
    }
}

/* MlasQuantizeLinear of one value, clamped to [lo, hi] (int8): x / scale, clamp, round half to even. */
static inline int8_t quantize_linear(float x, float scale, int32_t zero_point, int32_t lo, int32_t hi)
{
    float v = x / scale;
    const float low = (float)(lo - zero_point);
    const float high = (float)(hi - zero_point);
    if (!(v >= low)) { /* also NaN: MAXPS returns its second operand */
        v = low;
    }
    if (v > high) {
        v = high;
    }
    return (int8_t)(rne_f32(v) + zero_point);
}

void edgesdk_ort_float_binary_s8(const edgesdk_ort_float_binary_params *p, const int8_t *a, const int8_t *b,
                                 int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        const float x = p->a_table[a[i * p->a_step] + 128];
        const float y = p->b_table[b[i * p->b_step] + 128];
        const float v = p->operation == EDGESDK_ORT_FLOAT_MUL ? x * y : x + y;
        output[i] = quantize_linear(v, p->output_scale, p->output_zero_point, p->act_min, p->act_max);
    }
}

void edgesdk_ort_quantize_f32_s8(const edgesdk_ort_quantize_params *p, const float *input, int8_t *output)
{
    for (int32_t i = 0; i < p->size; i++) {
        output[i] = quantize_linear(input[i], p->scale, p->zero_point, INT8_MIN, INT8_MAX);
    }
}

/* One output value of the float32 path: the window [y0, y1) x [x0, x1) of channel c. */
static int8_t average_window(const edgesdk_ort_average_pool_params *p, const int8_t *image, int32_t c, int32_t y0,
                             int32_t y1, int32_t x0, int32_t x1)
{
    float sum = 0.0f;
    for (int32_t y = y0; y < y1; y++) {
        for (int32_t x = x0; x < x1; x++) {
            sum += p->dequantized[image[(y * p->in_w + x) * p->channels + c] + 128];
        }
    }
    sum /= (float)((y1 - y0) * (x1 - x0));
    const int32_t rounded = rne_f32(sum / p->output_scale + p->output_zero_point_u8);
    return from_u8(rounded, INT8_MIN, INT8_MAX);
}

/* The global path: integer sum of the whole image per channel, requantized in float32. */
static int8_t average_global(const edgesdk_ort_average_pool_params *p, const int8_t *image, int32_t c)
{
    const int32_t count = p->in_h * p->in_w;
    uint32_t sum = 0;
    for (int32_t k = 0; k < count; k++) {
        sum += (uint32_t)(int32_t)image[k * p->channels + c];
    }
    const int32_t acc = (int32_t)(sum - (uint32_t)p->input_zero_point * (uint32_t)count);
    const int32_t v = edgesdk_requantize_f32(acc, p->global_scale) + p->output_zero_point;
    return (int8_t)edgesdk_clamp_i32(v, INT8_MIN, INT8_MAX);
}

void edgesdk_ort_average_pool_s8(const edgesdk_ort_average_pool_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t n = 0; n < p->batches; n++) {
        const int8_t *image = input + n * p->in_h * p->in_w * p->channels;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            int32_t y0 = oy * p->stride_h - p->pad_top;
            int32_t y1 = y0 + p->filter_h < p->in_h ? y0 + p->filter_h : p->in_h;
            y0 = y0 > 0 ? y0 : 0;
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                int32_t x0 = ox * p->stride_w - p->pad_left;
                int32_t x1 = x0 + p->filter_w < p->in_w ? x0 + p->filter_w : p->in_w;
                x0 = x0 > 0 ? x0 : 0;
                for (int32_t c = 0; c < p->channels; c++) {
                    *output++ = p->is_global ? average_global(p, image, c)
                                             : average_window(p, image, c, y0, y1, x0, x1);
                }
            }
        }
    }
}

void edgesdk_ort_concatenation(const edgesdk_ort_concatenation_params *p, const void *const *inputs, void *output)
{
    uint8_t *out = (uint8_t *)output;
    for (int32_t o = 0; o < p->outer; o++) {
        for (int32_t k = 0; k < p->num_inputs; k++) {
            const int32_t n = p->slice_bytes[k];
            const uint8_t *in = (const uint8_t *)inputs[k] + o * n;
            if (p->table_index[k] < 0) {
                memcpy(out, in, (size_t)n);
            } else {
                const int8_t *table = p->tables + 256 * p->table_index[k];
                for (int32_t i = 0; i < n; i++) {
                    out[i] = (uint8_t)table[in[i]];
                }
            }
            out += n;
        }
    }
}

/* The dequantized input value at (y, x, c) of one image, 0 in the padding. */
static inline float conv_tap(const edgesdk_ort_float_conv_params *p, const int8_t *image, int32_t y, int32_t x,
                             int32_t c, int32_t *inside)
{
    *inside = y >= 0 && y < p->in_h && x >= 0 && x < p->in_w;
    return *inside ? p->dequantized[image[(y * p->in_w + x) * p->in_c + c] + 128] : 0.0f;
}

/* MLAS's M=1 SGEMM kernel (SgemmKernelM1Avx) for one output: products added in runs of four,
 * ((p0 + p1) + p2) + p3, while four remain, then a pair, then one; each run is added to the running sum. */
typedef struct {
    float sum;
    float run;
    int32_t run_len, run_size, left;
} m1_sum;

static inline int32_t m1_run_size(int32_t left, int32_t previous)
{
    return left >= 4 && previous == 4 ? 4 : (left >= 2 ? 2 : 1);
}

static inline void m1_start(m1_sum *s, int32_t count, float initial)
{
    s->sum = initial;
    s->run = 0.0f;
    s->run_len = 0;
    s->left = count;
    s->run_size = m1_run_size(count, 4);
}

static inline void m1_add(m1_sum *s, float product)
{
    s->run = s->run_len == 0 ? product : s->run + product;
    s->left--;
    if (++s->run_len == s->run_size) {
        s->sum = s->run + s->sum;
        s->run_len = 0;
        s->run_size = m1_run_size(s->left, s->run_size);
    }
}

/* One output's sum of products in MLAS's order (see edgesdk_ort.h). */
static float float_conv_sum(const edgesdk_ort_float_conv_params *p, const int8_t *image, int32_t oy, int32_t ox,
                            int32_t o)
{
    const int32_t per_group = p->in_c / p->groups;
    const int32_t first_c = (o / (p->out_c / p->groups)) * per_group;
    const int32_t taps = p->filter_h * p->filter_w;
    const int32_t k_count = per_group * taps;
    const float *w = p->filter + o * k_count;
    float acc = 0.0f;
    m1_sum m1;
    m1_start(&m1, k_count, 0.0f);
    for (int32_t k = 0; k < k_count; k++) {
        const int32_t c = first_c + k / taps;
        const int32_t ky = (k % taps) / p->filter_w;
        const int32_t kx = k % p->filter_w;
        int32_t inside;
        const float x = conv_tap(p, image, oy * p->stride_h - p->pad_top + ky * p->dilation_h,
                                 ox * p->stride_w - p->pad_left + kx * p->dilation_w, c, &inside);
        if (!p->fma_chain) {
            m1_add(&m1, w[k] * x);
        } else if (inside) {
            acc = edgesdk_ort_fmaf(w[k], x, acc);
        }
    }
    return p->fma_chain ? acc : m1.sum;
}

float edgesdk_ort_float_conv_value(const edgesdk_ort_float_conv_params *p, const int8_t *image, int32_t oy, int32_t ox,
                                   int32_t o)
{
    return float_conv_sum(p, image, oy, ox, o) + p->bias[o];
}

void edgesdk_ort_float_conv_s8(const edgesdk_ort_float_conv_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t n = 0; n < p->batches; n++) {
        const int8_t *image = input + n * p->in_h * p->in_w * p->in_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                for (int32_t o = 0; o < p->out_c; o++) {
                    const float v = edgesdk_ort_float_conv_value(p, image, oy, ox, o);
                    *output++ = quantize_linear(v, p->output_scale, p->output_zero_point, p->act_min, p->act_max);
                }
            }
        }
    }
}

/* MLAS's M=1 kernel for a transposed B (SgemmKernelM1TransposeBAvx): eight lanes, lane l sums the products of
 * k = l, l + 8, ... (multiply, then add); the lanes are then reduced by a tree that depends on whether the
 * output is in a block of four, of two, or alone (the outputs are taken in blocks of four, then two, then one). */
static float m1_transposed_sum(const edgesdk_ort_float_fc_params *p, const float *w, const int8_t *row, int32_t n)
{
    float l[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int32_t k = 0; k < p->depth; k++) {
        l[k % 8] = l[k % 8] + w[k] * p->dequantized[row[k] + 128];
    }
    const int32_t units = p->units;
    const int32_t blocks_of_four = units / 4 * 4;
    if (n < blocks_of_four) {
        return (((l[0] + l[1]) + l[2]) + l[3]) + (((l[4] + l[5]) + l[6]) + l[7]);
    }
    if (units % 4 >= 2 && n < blocks_of_four + 2) {
        return ((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]));
    }
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

float edgesdk_ort_float_fc_value(const edgesdk_ort_float_fc_params *p, const int8_t *row, int32_t n)
{
    const float *w = p->weights + n * p->depth;
    if (p->order == EDGESDK_ORT_SUM_M1_TRANSPOSED) {
        return m1_transposed_sum(p, w, row, n) + p->bias[n];
    }
    if (p->order == EDGESDK_ORT_SUM_M1) {
        m1_sum m1;
        m1_start(&m1, p->depth, p->bias_first ? p->bias[n] : 0.0f);
        for (int32_t k = 0; k < p->depth; k++) {
            m1_add(&m1, p->dequantized[row[k] + 128] * w[k]);
        }
        return p->bias_first ? m1.sum : m1.sum + p->bias[n];
    }
    float acc = 0.0f;
    for (int32_t k = 0; k < p->depth; k++) {
        acc = edgesdk_ort_fmaf(p->dequantized[row[k] + 128], w[k], acc);
    }
    return acc + p->bias[n];
}

void edgesdk_ort_float_fc_s8(const edgesdk_ort_float_fc_params *p, const int8_t *input, int8_t *output)
{
    for (int32_t m = 0; m < p->rows; m++) {
        for (int32_t n = 0; n < p->units; n++) {
            const float v = edgesdk_ort_float_fc_value(p, input + m * p->depth, n);
            *output++ = quantize_linear(v, p->output_scale, p->output_zero_point, p->act_min, p->act_max);
        }
    }
}
