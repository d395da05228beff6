/*
 * edgesdk_svdf.c - SVDF kernels (see edgesdk_svdf.h).
 *
 * Integer: state[f][newest] = zp_state + clamp_state(MBQM((x - zp_in) . weights_feature[f]))
 *          output[u] = sat8(MBQM(bias[u] + sum over f of u: weights_time[f] . (state[f] - zp_state)) + zp_out)
 * with int32 sums that wrap like TFLite's accumulators and a state value that wraps to the state type.
 */
#include <string.h>

#include "edgesdk_arith.h"
#include "edgesdk_recurrent.h"
#include "edgesdk_svdf.h"

/* The int8 value a 32-bit value wraps to. */
static inline int8_t wrap8(int32_t v)
{
    const int32_t low = (int32_t)((uint32_t)v & 0xffu);
    return (int8_t)(low >= 128 ? low - 256 : low);
}

/* (x - zp) . w over n values, wrapping like an int32 accumulator. */
static int32_t feature_dot(const int8_t *x, const int8_t *w, int32_t n, int32_t zp)
{
    uint32_t acc = 0;
    for (int32_t k = 0; k < n; k++) {
        acc += (uint32_t)((int32_t)w[k] * ((int32_t)x[k] - zp));
    }
    return edgesdk_from_u32(acc);
}

#define SVDF_INTEGER(NAME, STATE_T, STATE_MIN, STATE_MAX, WRAP)                                                        \
    void NAME(const edgesdk_svdf_s8_params *p, const int8_t *input, const int8_t *weights_feature,                     \
              const STATE_T *weights_time, const int32_t *bias, STATE_T *state, int8_t *output)                       \
    {                                                                                                                  \
        const int32_t memory = p->memory_size, filters = p->num_filters, zp = p->state_zero_point;                     \
        const int32_t total = p->batches * filters * memory;                                                           \
        memmove(state, state + 1, (size_t)(total - 1) * sizeof(STATE_T));                                             \
        for (int32_t b = 0; b < p->batches; b++) {                                                                     \
            const int8_t *x = input + b * p->input_size;                                                               \
            STATE_T *s = state + b * filters * memory;                                                                 \
            for (int32_t f = 0; f < filters; f++) {                                                                    \
                int32_t v = edgesdk_mbqm_double(feature_dot(x, weights_feature + f * p->input_size, p->input_size,    \
                                                            p->input_zero_point),                                      \
                                                p->feature_multiplier, p->feature_shift);                              \
                v = edgesdk_clamp_i32(v, STATE_MIN, STATE_MAX);                                                        \
                s[f * memory + memory - 1] = WRAP(zp + v);                                                             \
            }                                                                                                          \
            for (int32_t u = 0; u < p->num_units; u++) {                                                               \
                uint32_t acc = bias != 0 ? (uint32_t)bias[u] : 0u;                                                     \
                for (int32_t r = 0; r < p->rank; r++) {                                                                \
                    const int32_t f = u * p->rank + r;                                                                 \
                    for (int32_t j = 0; j < memory; j++) {                                                             \
                        acc += (uint32_t)((int32_t)weights_time[f * memory + j] *                                      \
                                          ((int32_t)s[f * memory + j] - zp));                                          \
                    }                                                                                                  \
                }                                                                                                      \
                const int32_t y = edgesdk_mbqm_double(edgesdk_from_u32(acc), p->time_multiplier, p->time_shift);       \
                output[b * p->num_units + u] = edgesdk_sat8(edgesdk_wrap_add32(y, p->output_zero_point));             \
            }                                                                                                          \
        }                                                                                                              \
    }

SVDF_INTEGER(edgesdk_svdf_s8_s16, int16_t, -32768, 32767, edgesdk_wrap16)
SVDF_INTEGER(edgesdk_svdf_s8_s8, int8_t, -128, 127, wrap8)

static float activate(int32_t activation, float x)
{
    float m;
    switch (activation) {
    case EDGESDK_SVDF_ACT_RELU:
        return 0.0f < x ? x : 0.0f; /* std::max(0.0f, x) */
    case EDGESDK_SVDF_ACT_RELU_N1_TO_1:
        m = 1.0f < x ? 1.0f : x; /* std::max(-1.0f, std::min(x, 1.0f)) */
        return -1.0f < m ? m : -1.0f;
    case EDGESDK_SVDF_ACT_RELU6:
        m = 6.0f < x ? 6.0f : x;
        return 0.0f < m ? m : 0.0f;
    case EDGESDK_SVDF_ACT_SIGN_BIT:
        return __builtin_signbit(x) ? 1.0f : 0.0f;
    default:
        return x;
    }
}

/* LiteRT's float tensor_utils on x86 are its NEON routines (translated to SSE): four lanes summed over blocks of
 * four, the lanes added in order, then the remaining elements one by one. */
static float neon_dot(const float *a, const float *b, int32_t n)
{
    float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        for (int32_t l = 0; l < 4; l++) {
            lane[l] += a[k + l] * b[k + l];
        }
    }
    float sum = ((lane[0] + lane[1]) + lane[2]) + lane[3];
    for (; k < n; k++) {
        sum += a[k] * b[k];
    }
    return sum;
}

static float sequential_dot(const float *a, const float *b, int32_t n)
{
    float sum = 0.0f;
    for (int32_t k = 0; k < n; k++) {
        sum += a[k] * b[k];
    }
    return sum;
}

void edgesdk_svdf_f32(const edgesdk_svdf_f32_params *p, const float *input, const float *weights_feature,
                      const float *weights_time, const float *bias, float *state, float *output)
{
    const int32_t memory = p->memory_size, filters = p->num_filters, rank = p->rank;
    const int32_t total = p->batches * filters * memory;
    memmove(state, state + 1, (size_t)(total - 1) * sizeof(float));
    for (int32_t b = 0; b < p->batches; b++) {
        const float *x = input + b * p->input_size;
        float *s = state + b * filters * memory;
        for (int32_t f = 0; f < filters; f++) {
            const float *w = weights_feature + f * p->input_size;
            s[f * memory + memory - 1] = p->tflm ? sequential_dot(w, x, p->input_size) : neon_dot(w, x, p->input_size);
        }
        for (int32_t u = 0; u < p->num_units; u++) {
            const int32_t f0 = u * rank;
            float sum;
            if (p->tflm) { /* bias first, then each filter's time product */
                sum = bias != 0 ? bias[u] : 0.0f;
                for (int32_t r = 0; r < rank; r++) {
                    sum += sequential_dot(weights_time + (f0 + r) * memory, s + (f0 + r) * memory, memory);
                }
            } else { /* the filters' time products in four lanes, then the bias */
                float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                int32_t r = 0;
                for (; r + 4 <= rank; r += 4) {
                    for (int32_t l = 0; l < 4; l++) {
                        lane[l] += neon_dot(weights_time + (f0 + r + l) * memory, s + (f0 + r + l) * memory, memory);
                    }
                }
                sum = ((lane[0] + lane[1]) + lane[2]) + lane[3];
                for (; r < rank; r++) {
                    sum += neon_dot(weights_time + (f0 + r) * memory, s + (f0 + r) * memory, memory);
                }
                if (bias != 0) {
                    sum += bias[u];
                }
            }
            output[b * p->num_units + u] = activate(p->activation, sum);
        }
    }
}
