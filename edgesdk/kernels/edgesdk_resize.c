/*
 * edgesdk_resize.c - RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR, bit-exact with TFLite's reference kernels
 * (the per-row and per-column geometry comes from the compiler: edgesdk_resize.h).
 */
#include "edgesdk_resize.h"

void edgesdk_resize_nearest_neighbor(const edgesdk_resize_params *p, const void *input, void *output)
{
    const edgesdk_resize_params params = *p;
    p = &params;
    const int32_t pixel = p->channels * p->element_bytes;
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    for (int32_t b = 0; b < p->batches; b++) {
        const uint8_t *in_batch = in + b * p->in_h * p->in_w * pixel;
        for (int32_t y = 0; y < p->out_h; y++) {
            const uint8_t *in_row = in_batch + p->rows[y] * p->in_w * pixel;
            for (int32_t x = 0; x < p->out_w; x++) {
                const uint8_t *src = in_row + p->cols[x] * pixel;
                for (int32_t i = 0; i < pixel; i++) {
                    *out++ = src[i];
                }
            }
        }
    }
}

/* (v + (v > 0 ? 2^19 : -2^19)) / 2^20 with C's truncating division: round half away from zero. */
static inline int32_t round_20_i32(int32_t v)
{
    return (v + (v > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
}

static inline int64_t round_20_i64(int64_t v)
{
    return (v + (v > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
}

void edgesdk_resize_bilinear_s8(const edgesdk_resize_params *p, const int8_t *input, int8_t *output)
{
    const edgesdk_resize_params params = *p;
    p = &params;
    const int32_t c_n = p->channels;
    const int32_t row = p->in_w * c_n;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *in_batch = input + b * p->in_h * row;
        for (int32_t y = 0; y < p->out_h; y++) {
            const int32_t *ry = p->rows + 3 * y;
            const int8_t *r0 = in_batch + ry[0] * row;
            const int8_t *r1 = in_batch + ry[1] * row;
            const int32_t wy1 = ry[2], wy0 = (1 << 10) - ry[2];
            for (int32_t x = 0; x < p->out_w; x++) {
                const int32_t *cx = p->cols + 3 * x;
                const int32_t x0 = cx[0] * c_n, x1 = cx[1] * c_n;
                const int32_t wx1 = cx[2], wx0 = (1 << 10) - cx[2];
                for (int32_t c = 0; c < c_n; c++) {
                    /* |in| <= 128 and |w0| + |w1| <= 3072 per axis (|dy| <= 1024): below 2^31 */
                    const int32_t top = r0[x0 + c] * wx0 + r0[x1 + c] * wx1;
                    const int32_t bottom = r1[x0 + c] * wx0 + r1[x1 + c] * wx1;
                    *output++ = (int8_t)round_20_i32(top * wy0 + bottom * wy1);
                }
            }
        }
    }
}

void edgesdk_resize_bilinear_s16(const edgesdk_resize_params *p, const int16_t *input, int16_t *output)
{
    const edgesdk_resize_params params = *p;
    p = &params;
    const int32_t c_n = p->channels;
    const int32_t row = p->in_w * c_n;
    for (int32_t b = 0; b < p->batches; b++) {
        const int16_t *in_batch = input + b * p->in_h * row;
        for (int32_t y = 0; y < p->out_h; y++) {
            const int32_t *ry = p->rows + 3 * y;
            const int16_t *r0 = in_batch + ry[0] * row;
            const int16_t *r1 = in_batch + ry[1] * row;
            const int32_t wy1 = ry[2], wy0 = (1 << 10) - ry[2];
            for (int32_t x = 0; x < p->out_w; x++) {
                const int32_t *cx = p->cols + 3 * x;
                const int32_t x0 = cx[0] * c_n, x1 = cx[1] * c_n;
                const int32_t wx1 = cx[2], wx0 = (1 << 10) - cx[2];
                for (int32_t c = 0; c < c_n; c++) {
                    /* one axis fits int32 (2^15 * 3072), both need int64 */
                    const int32_t top = r0[x0 + c] * wx0 + r0[x1 + c] * wx1;
                    const int32_t bottom = r1[x0 + c] * wx0 + r1[x1 + c] * wx1;
                    *output++ = (int16_t)round_20_i64((int64_t)top * wy0 + (int64_t)bottom * wy1);
                }
            }
        }
    }
}

void edgesdk_resize_bilinear_f32(const edgesdk_resize_params *p, const float *input, float *output)
{
    const edgesdk_resize_params params = *p;
    p = &params;
    const int32_t c_n = p->channels;
    const int32_t row = p->in_w * c_n;
    for (int32_t b = 0; b < p->batches; b++) {
        const float *in_batch = input + b * p->in_h * row;
        for (int32_t y = 0; y < p->out_h; y++) {
            const float *r0 = in_batch + p->rows[2 * y] * row;
            const float *r1 = in_batch + p->rows[2 * y + 1] * row;
            const float fy = p->row_weights[2 * y], gy = p->row_weights[2 * y + 1]; /* input_y - y0, 1 - that */
            for (int32_t x = 0; x < p->out_w; x++) {
                const int32_t x0 = p->cols[2 * x] * c_n, x1 = p->cols[2 * x + 1] * c_n;
                const float fx = p->col_weights[2 * x], gx = p->col_weights[2 * x + 1];
                for (int32_t c = 0; c < c_n; c++) {
                    const float t00 = r0[x0 + c] * gy * gx;
                    const float t10 = r1[x0 + c] * fy * gx;
                    const float t01 = r0[x1 + c] * gy * fx;
                    const float t11 = r1[x1 + c] * fy * fx;
                    float sum = t00 + t10;
                    sum = sum + t01;
                    sum = sum + t11;
                    *output++ = sum + 0.0f;
                }
            }
        }
    }
}
