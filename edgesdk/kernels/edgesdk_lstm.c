/*
 * edgesdk_lstm.c - the integer LSTM (see edgesdk_lstm.h). Per cell j of one step:
 *
 *   gate g = act(sat16(MBQM(bias_x + x . Wx[j])) (+) MBQM(bias_h + h . Wh[j]))   act: sigmoid, tanh for g = cell
 *   c[j]   = sat16(forget * c[j] + input * cell), clipped                       (products per reference)
 *   h[j]   = sat8(MBQM(output * tanh(c[j])) + hidden zero point)
 *
 * (+) is LiteRT's sat16(recurrent + saturated input sum) or TFLite Micro's sat16(sat16(input) + sat16(recurrent)).
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off") /* the float LSTM rounds every product and sum, as the reference */
#endif

#include <float.h>
#include <string.h>

#include "edgesdk_layer16.h"
#include "edgesdk_mathf.h"
#include "edgesdk_lstm.h"
#include "edgesdk_recurrent.h"

/* bias + a . b over n int8 values, wrapping like TFLite's int32 accumulator. */
static int32_t dot_s8(int32_t bias, const int8_t *a, const int8_t *b, int32_t n)
{
    uint32_t acc = (uint32_t)bias;
    for (int32_t k = 0; k < n; k++) {
        acc += (uint32_t)((int32_t)a[k] * (int32_t)b[k]);
    }
    return edgesdk_from_u32(acc);
}

static int16_t gate_sum(const edgesdk_lstm_s8_params *p, const edgesdk_lstm_gate_s8 *g, int32_t j, const int8_t *x,
                        const int8_t *h)
{
    const int32_t n_cell = p->n_cell;
    const int32_t from_input = edgesdk_mbqm_double(dot_s8(g->input_bias[j], x, g->input_weights + j * p->n_input,
                                                          p->n_input), g->input_multiplier, g->input_shift);
    const int32_t from_state = edgesdk_mbqm_double(dot_s8(g->recurrent_bias[j], h, g->recurrent_weights + j * n_cell,
                                                          n_cell), g->recurrent_multiplier, g->recurrent_shift);
    if (p->tflm) {
        return edgesdk_sat16((int32_t)edgesdk_sat16(from_input) + (int32_t)edgesdk_sat16(from_state));
    }
    return edgesdk_sat16(edgesdk_wrap_add32(from_state, edgesdk_sat16(from_input)));
}

static int16_t sigmoid(const edgesdk_lstm_s8_params *p, int16_t x)
{
    return p->tflm ? edgesdk_lut16_logistic(x) : edgesdk_q16_logistic(x, 3);
}

static void lstm_step(const edgesdk_lstm_s8_params *p, const int8_t *x, int8_t *h, int16_t *c, int8_t *y)
{
    for (int32_t j = 0; j < p->n_cell; j++) {
        const int16_t input_gate = sigmoid(p, gate_sum(p, &p->gate[0], j, x, h));
        const int16_t forget_gate = sigmoid(p, gate_sum(p, &p->gate[1], j, x, h));
        const int16_t cell_in = gate_sum(p, &p->gate[2], j, x, h);
        const int16_t cell_gate = p->tflm ? edgesdk_lut16_tanh(cell_in, 3, 0) : edgesdk_q16_tanh(cell_in, 3);
        const int16_t output_gate = sigmoid(p, gate_sum(p, &p->gate[3], j, x, h));
        int32_t kept, added;
        int16_t cell_tanh;
        int32_t hidden;
        if (p->tflm) {
            kept = edgesdk_sat16(edgesdk_mbqm_double((int32_t)forget_gate * c[j], p->forget_multiplier,
                                                     p->forget_shift));
            added = edgesdk_sat16(edgesdk_mbqm_double((int32_t)input_gate * cell_gate, p->input_cell_multiplier,
                                                      p->input_cell_shift_tflm));
        } else {
            kept = (int16_t)edgesdk_rounding_divide_by_pot((int32_t)forget_gate * c[j], 15);
            added = (int16_t)edgesdk_rounding_divide_by_pot((int32_t)input_gate * cell_gate, p->input_cell_shift);
        }
        int16_t cell = edgesdk_sat16(kept + added);
        if (p->clip_cell) {
            cell = (int16_t)(cell > p->cell_clip ? p->cell_clip : (cell < -p->cell_clip ? -p->cell_clip : cell));
        }
        c[j] = cell;
        if (p->tflm) {
            cell_tanh = edgesdk_lut16_tanh(cell, p->tanh_multiplier, p->tanh_shift);
        } else {
            cell_tanh = edgesdk_q16_tanh(cell, p->tanh_integer_bits);
        }
        hidden = edgesdk_mbqm_double((int32_t)output_gate * cell_tanh, p->hidden_multiplier, p->hidden_shift);
        y[j] = edgesdk_sat8(edgesdk_wrap_add32(hidden, p->hidden_zero_point));
    }
    memcpy(h, y, (size_t)p->n_cell);
}

void edgesdk_lstm_s8(const edgesdk_lstm_s8_params *p, const int8_t *input, int8_t *output_state, int16_t *cell_state,
                     int8_t *output)
{
    for (int32_t b = 0; b < p->batches; b++) {
        for (int32_t t = 0; t < p->steps; t++) {
            const int32_t row = p->time_major ? t * p->batches + b : b * p->steps + t;
            lstm_step(p, input + row * p->n_input, output_state + b * p->n_cell, cell_state + b * p->n_cell,
                      output + row * p->n_cell);
        }
    }
}

/* -- 16x8 (TFLite Micro) ------------------------------------------------------------------------------------ */

/* One of a gate's fully connected sums as TFLite Micro's int16 FullyConnected: int64 accumulator (products of
 * int16 and int8 in int32, exact), the 64-bit requantization, clamped to int16. */
static int16_t fc_s16(int64_t bias, const int16_t *a, const int8_t *w, int32_t n, int32_t multiplier, int32_t shift)
{
    int64_t acc = bias;
    for (int32_t k = 0; k < n; k++) {
        acc += (int32_t)a[k] * (int32_t)w[k];
    }
    return edgesdk_sat16(edgesdk_mbqm64(acc, multiplier, shift));
}

/* AddElementWise of the input and recurrent sums: saturated int16 addition. */
static int16_t gate_sum_s16(const edgesdk_lstm_s16_params *p, const edgesdk_lstm_gate_s16 *g, int32_t j,
                            const int16_t *x, const int16_t *h)
{
    const int16_t from_input = fc_s16(g->bias[j], x, g->input_weights + j * p->n_input, p->n_input,
                                      g->input_multiplier, g->input_shift);
    const int16_t from_state = fc_s16(0, h, g->recurrent_weights + j * p->n_cell, p->n_cell,
                                      g->recurrent_multiplier, g->recurrent_shift);
    return edgesdk_sat16((int32_t)from_input + (int32_t)from_state);
}

static void lstm_step_s16(const edgesdk_lstm_s16_params *p, const int16_t *x, int16_t *h, int16_t *c, int16_t *y)
{
    for (int32_t j = 0; j < p->n_cell; j++) {
        const int16_t forget_gate = edgesdk_lut16_logistic(gate_sum_s16(p, &p->gate[1], j, x, h));
        const int16_t input_gate = edgesdk_lut16_logistic(gate_sum_s16(p, &p->gate[0], j, x, h));
        const int16_t cell_gate = edgesdk_lut16_tanh(gate_sum_s16(p, &p->gate[2], j, x, h), 3, 0);
        const int32_t kept = edgesdk_sat16(edgesdk_mbqm_double((int32_t)forget_gate * c[j], p->forget_multiplier,
                                                               p->forget_shift));
        const int32_t added = edgesdk_sat16(edgesdk_mbqm_double((int32_t)input_gate * cell_gate,
                                                                p->input_cell_multiplier, p->input_cell_shift));
        int16_t cell = edgesdk_sat16(kept + added);
        if (p->clip_cell) {
            cell = (int16_t)(cell > p->cell_clip ? p->cell_clip : (cell < -p->cell_clip ? -p->cell_clip : cell));
        }
        c[j] = cell;
        const int16_t output_gate = edgesdk_lut16_logistic(gate_sum_s16(p, &p->gate[3], j, x, h));
        const int16_t cell_tanh = edgesdk_lut16_tanh(cell, p->tanh_multiplier, p->tanh_shift);
        y[j] = edgesdk_sat16(edgesdk_mbqm_double((int32_t)output_gate * cell_tanh, p->hidden_multiplier,
                                                 p->hidden_shift));
    }
    memcpy(h, y, (size_t)p->n_cell * sizeof(int16_t));
}

void edgesdk_lstm_s16(const edgesdk_lstm_s16_params *p, const int16_t *input, int16_t *output_state,
                      int16_t *cell_state, int16_t *output)
{
    for (int32_t b = 0; b < p->batches; b++) {
        for (int32_t t = 0; t < p->steps; t++) {
            const int32_t row = p->time_major ? t * p->batches + b : b * p->steps + t;
            lstm_step_s16(p, input + row * p->n_input, output_state + b * p->n_cell, cell_state + b * p->n_cell,
                          output + row * p->n_cell);
        }
    }
}

/* -- float (TFLite Micro) ---------------------------------------------------------------------------------- */

/* ActivationFunctionWithMinMax(x, lowest, max): std::min(std::max(x, lowest), max). */
static float clamp_f32(float x)
{
    const float m = x < -FLT_MAX ? -FLT_MAX : x;
    return FLT_MAX < m ? FLT_MAX : m;
}

static float dot_f32(const float *a, const float *w, int32_t n)
{
    float total = 0.0f;
    for (int32_t k = 0; k < n; k++) {
        total += a[k] * w[k];
    }
    return total;
}

static float sigmoid_f32(float x)
{
    if (x > 16.619047164916992188f) {
        return 1.0f;
    }
    if (x < -9.0f) {
        return edgesdk_expf(x);
    }
    return 1.0f / (1.0f + edgesdk_expf(-x));
}

static float gate_f32(const edgesdk_lstm_f32_params *p, const edgesdk_lstm_gate_f32 *g, int32_t j, const float *x,
                      const float *h)
{
    const float from_input = clamp_f32(dot_f32(x, g->input_weights + j * p->n_input, p->n_input) + g->bias[j]);
    const float from_state = clamp_f32(dot_f32(h, g->recurrent_weights + j * p->n_cell, p->n_cell) + 0.0f);
    return from_input + from_state;
}

static void lstm_step_f32(const edgesdk_lstm_f32_params *p, const float *x, float *h, float *c, float *y)
{
    for (int32_t j = 0; j < p->n_cell; j++) {
        const float forget_gate = sigmoid_f32(gate_f32(p, &p->gate[1], j, x, h));
        const float input_gate = sigmoid_f32(gate_f32(p, &p->gate[0], j, x, h));
        const float cell_gate = edgesdk_tanhf(gate_f32(p, &p->gate[2], j, x, h));
        float cell = clamp_f32(forget_gate * c[j]);
        cell = cell + clamp_f32(input_gate * cell_gate);
        if (p->cell_clip > 0.0f) { /* std::max(std::min(clip, v), -clip) */
            const float m = cell < p->cell_clip ? cell : p->cell_clip;
            cell = m < -p->cell_clip ? -p->cell_clip : m;
        }
        c[j] = cell;
        const float output_gate = sigmoid_f32(gate_f32(p, &p->gate[3], j, x, h));
        y[j] = clamp_f32(edgesdk_tanhf(cell) * output_gate);
    }
    memcpy(h, y, (size_t)p->n_cell * sizeof(float));
}

void edgesdk_lstm_f32(const edgesdk_lstm_f32_params *p, const float *input, float *output_state, float *cell_state,
                      float *output)
{
    for (int32_t b = 0; b < p->batches; b++) {
        for (int32_t t = 0; t < p->steps; t++) {
            const int32_t row = p->time_major ? t * p->batches + b : b * p->steps + t;
            lstm_step_f32(p, input + row * p->n_input, output_state + b * p->n_cell, cell_state + b * p->n_cell,
                          output + row * p->n_cell);
        }
    }
}
