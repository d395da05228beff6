/*
 * edgesdk_lstm.h - UNIDIRECTIONAL_SEQUENCE_LSTM: the standard (Keras) LSTM over a sequence, its hidden and cell
 * state in persistent buffers that the caller keeps between runs.
 *
 * edgesdk_lstm_s8: int8 input, weights and hidden state, int32 biases, int16 cell state (TFLite's 8x8->16
 * integer LSTM). `tflm` selects TFLite Micro's arithmetic (table-interpolated sigmoid/tanh, multiplier-based
 * cell products, input and recurrent sums saturated separately) instead of LiteRT's (gemmlowp int16 fixed-point
 * sigmoid/tanh, rounding shifts); every constant comes from the compiler (edgesdk/ops/lstm.py).
 * edgesdk_lstm_s16: the 16x8 LSTM of TFLite Micro (int16 activations, int64 biases).
 *
 * Both kernels process one batch and time step at a time, cell by cell: the new hidden state goes to the
 * output row of the step first (the old one is still needed by the other cells) and is copied to the state at
 * the end of the step, so they need no scratch memory.
 */
#ifndef EDGESDK_LSTM_H
#define EDGESDK_LSTM_H

#include <stdint.h>

#define EDGESDK_LSTM_GATES 4 /* input, forget, cell, output */

typedef struct {
    const int8_t *input_weights;     /* [n_cell][n_input] */
    const int8_t *recurrent_weights; /* [n_cell][n_output] */
    const int32_t *input_bias;       /* [n_cell]: gate bias - input zero point * row sums */
    const int32_t *recurrent_bias;   /* [n_cell]: -output state zero point * row sums */
    int32_t input_multiplier;
    int32_t input_shift;
    int32_t recurrent_multiplier;
    int32_t recurrent_shift;
} edgesdk_lstm_gate_s8;

typedef struct {
    int32_t batches;
    int32_t steps;
    int32_t n_input;
    int32_t n_cell; /* = n_output (no projection) */
    int32_t time_major;
    int32_t tflm; /* 1: TFLite Micro's arithmetic, 0: LiteRT's */
    edgesdk_lstm_gate_s8 gate[EDGESDK_LSTM_GATES];
    int32_t clip_cell;
    int32_t cell_clip; /* quantized cell clip */
    int32_t hidden_multiplier;
    int32_t hidden_shift;
    int32_t hidden_zero_point;
    int32_t tanh_integer_bits; /* LiteRT: the cell's gemmlowp tanh input format Q(bits) */
    int32_t input_cell_shift;  /* LiteRT: input gate * cell gate >> this */
    int32_t tanh_multiplier;   /* TFLite Micro: the cell tanh's table input rescale */
    int32_t tanh_shift;
    int32_t forget_multiplier; /* TFLite Micro: forget gate * cell state */
    int32_t forget_shift;
    int32_t input_cell_multiplier; /* TFLite Micro: input gate * cell gate */
    int32_t input_cell_shift_tflm;
} edgesdk_lstm_s8_params;

void edgesdk_lstm_s8(const edgesdk_lstm_s8_params *p, const int8_t *input, int8_t *output_state, int16_t *cell_state,
                     int8_t *output);

typedef struct {
    const int8_t *input_weights;     /* [n_cell][n_input] */
    const int8_t *recurrent_weights; /* [n_cell][n_cell] */
    const int64_t *bias;             /* [n_cell] */
    int32_t input_multiplier;
    int32_t input_shift;
    int32_t recurrent_multiplier;
    int32_t recurrent_shift;
} edgesdk_lstm_gate_s16;

typedef struct {
    int32_t batches;
    int32_t steps;
    int32_t n_input;
    int32_t n_cell;
    int32_t time_major;
    edgesdk_lstm_gate_s16 gate[EDGESDK_LSTM_GATES];
    int32_t clip_cell;
    int32_t cell_clip; /* quantized cell clip */
    int32_t hidden_multiplier;
    int32_t hidden_shift;
    int32_t tanh_multiplier; /* the cell tanh's table input rescale */
    int32_t tanh_shift;
    int32_t forget_multiplier; /* forget gate * cell state */
    int32_t forget_shift;
    int32_t input_cell_multiplier; /* input gate * cell gate */
    int32_t input_cell_shift;
} edgesdk_lstm_s16_params;

/* TFLite Micro's 16x8 LSTM (EvalLstm<int16_t, int8_t, int16_t, int64_t>): int16 input and hidden state (zero
 * point 0), int8 weights, int64 biases, int16 cell state. The gate sums accumulate in int64 and requantize with the
 * 64-bit MultiplyByQuantizedMultiplier; the rest is the int8 kernel's TFLite Micro arithmetic. LiteRT has none. */
void edgesdk_lstm_s16(const edgesdk_lstm_s16_params *p, const int16_t *input, int16_t *output_state,
                      int16_t *cell_state, int16_t *output);

typedef struct {
    const float *input_weights;     /* [n_cell][n_input] */
    const float *recurrent_weights; /* [n_cell][n_cell] */
    const float *bias;              /* [n_cell] */
} edgesdk_lstm_gate_f32;

typedef struct {
    int32_t batches;
    int32_t steps;
    int32_t n_input;
    int32_t n_cell;
    int32_t time_major;
    float cell_clip; /* 0: none */
    edgesdk_lstm_gate_f32 gate[EDGESDK_LSTM_GATES];
} edgesdk_lstm_f32_params;

/* TFLite Micro's float LSTM: sequential float sums, its reference sigmoid (1 / (1 + expf(-x)) with cut-offs) and
 * tanhf, where expf and tanhf are glibc's (edgesdk_libm.h), as TFLite Micro gets them on an x86-64 host. */
void edgesdk_lstm_f32(const edgesdk_lstm_f32_params *p, const float *input, float *output_state, float *cell_state,
                      float *output);

#endif /* EDGESDK_LSTM_H */
