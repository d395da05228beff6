/*
 * edgesdk_ort.h - ONNX Runtime's arithmetic for QDQ models (--rounding ort), bit for bit on int8 tensors.
 *
 * ONNX Runtime's fused kernels on x86-64 work on uint8 data: the IR's int8 value x is uint8 x + 128, and the
 * kernels below add 128 where ONNX Runtime's arithmetic sees the uint8 value (a zero point added in float32).
 * The constants (ratios, tables) come from edgesdk/ir/ort.py, computed as ONNX Runtime computes them.
 * docs/rounding.md ("ONNX Runtime") gives each formula and how it was measured.
 */
#ifndef EDGESDK_ORT_H
#define EDGESDK_ORT_H

#include <stdint.h>

/* QLinearAdd (MlasQLinearAddKernelAvx2Helper): out = rne(fma(outer, outer_ratio, inner_table[inner])) with
 * uint8 values, saturated; inner = input 1 (input 0 when it is the single-element operand). An input of
 * one element is broadcast (its step is 0). */
typedef struct {
    int32_t size;
    int32_t a_step, b_step;     /* 1, or 0 for a single-element input */
    int32_t inner;              /* 0: input 0 is the inner fma's operand, 1: input 1 */
    const float *inner_table;   /* [256], indexed by int8 value + 128 */
    float outer_ratio;
    int32_t act_min, act_max;
} edgesdk_ort_add_params;

/* QLinearMul (SSE2): out = rne(float(prod) * ratio + float(zp_out + 128)), prod = (a - zp_a) * (b - zp_b). */
typedef struct {
    int32_t size;
    int32_t a_step, b_step;
    int32_t a_zero_point, b_zero_point;
    float ratio;
    float output_zero_point_u8;
    int32_t act_min, act_max;
} edgesdk_ort_mul_params;

/* Add or Mul in float32 between DequantizeLinear and QuantizeLinear (an unfused group). */
#define EDGESDK_ORT_FLOAT_ADD 0
#define EDGESDK_ORT_FLOAT_MUL 1
typedef struct {
    int32_t size;
    int32_t a_step, b_step;
    int32_t operation;          /* EDGESDK_ORT_FLOAT_ADD / _MUL */
    const float *a_table;       /* [256] DequantizeLinear of each int8 value, indexed by value + 128 */
    const float *b_table;
    float output_scale;
    int32_t output_zero_point;
    int32_t act_min, act_max;   /* QuantizeLinear of the fused activation's limits */
} edgesdk_ort_float_binary_params;

/* QLinearAveragePool, NHWC. is_global: ONNX Runtime's global average pool path (a window over the whole
 * input, no padding): integer sum, float32 requantization by global_scale. Otherwise the dequantized taps are
 * summed in float32 row by row from 0.0f, divided by float(count of taps inside the input), and quantized as
 * nearbyintf(sum / output_scale + float(zp_out + 128)), clamped. */
typedef struct {
    int32_t batches, in_h, in_w, channels, out_h, out_w;
    int32_t filter_h, filter_w, stride_h, stride_w, pad_top, pad_left;
    int32_t is_global;
    const float *dequantized;   /* [256], indexed by int8 value + 128 */
    float output_scale;
    float output_zero_point_u8;
    int32_t input_zero_point;
    int32_t output_zero_point;
    float global_scale;
} edgesdk_ort_average_pool_params;

/* QuantizeLinear of float32 input: rne(x / scale) clamped, + zero point; a NaN gives -128. */
typedef struct {
    int32_t size;
    float scale;
    int32_t zero_point;
} edgesdk_ort_quantize_params;

/* QLinearConcat: each input's slice copied, or mapped through its requantization table. */
typedef struct {
    int32_t outer;
    int32_t num_inputs;
    const int32_t *slice_bytes;  /* per input */
    const int32_t *table_index;  /* per input: -1 copy, else the index of its table in `tables` */
    const int8_t *tables;        /* 256 entries per table, indexed by the input byte (as edgesdk_lut_s8) */
} edgesdk_ort_concatenation_params;

/* DequantizeLinear -> float32 Conv -> QuantizeLinear, as ONNX Runtime runs a Conv group it does not fuse (MLAS's
 * im2col + SGEMM). NHWC int8 input and output; the filter in ONNX's layout [out_c][in_c / groups][h][w]. Each
 * output sums k = (channel of its group, filter row, filter column) in that order:
 *   fma_chain 1: acc = fmaf(w, x, acc) from 0 (MLAS's SGEMM kernels, several filters per group);
 *   fma_chain 0: MLAS's M=1 kernel: products rounded, each run of four summed ((p0 + p1) + p2) + p3 and added
 *                to the running sum (then a pair, then a single product for the last k % 4).
 * Taps in the padding are zero products (they leave a nonzero sum unchanged). Then + bias, QuantizeLinear. */
typedef struct {
    int32_t batches, in_h, in_w, in_c, out_h, out_w, out_c;
    int32_t filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
    int32_t groups;             /* 1, or in_c (depthwise): out_c / groups filters read in_c / groups channels */
    int32_t fma_chain;
    const float *dequantized;   /* [256] DequantizeLinear of each int8 input value, indexed by value + 128 */
    const float *filter;        /* [out_c * (in_c / groups) * filter_h * filter_w] */
    const float *bias;          /* [out_c] */
    float output_scale;
    int32_t output_zero_point;
    int32_t act_min, act_max;   /* QuantizeLinear of the fused activation's limits */
} edgesdk_ort_float_conv_params;

/* DequantizeLinear -> float32 Gemm / MatMul -> QuantizeLinear (a group ONNX Runtime does not fuse): rows x depth
 * int8 input, weights [units][depth]. The order of the sums (MLAS's SGEMM kernels):
 *   EDGESDK_ORT_SUM_FMA_CHAIN: several rows: acc = fmaf(x, w, acc) from 0, k ascending, then + bias;
 *   EDGESDK_ORT_SUM_M1: one row, B not transposed (MatMul, Gemm transB 0): runs of four products as in the Conv
 *       kernel, starting from the bias when bias_first (Gemm's C, beta 1), else + bias at the end;
 *   EDGESDK_ORT_SUM_M1_TRANSPOSED: one row, Gemm transB 1: eight lanes and a reduction tree, then + bias. */
#define EDGESDK_ORT_SUM_FMA_CHAIN 0
#define EDGESDK_ORT_SUM_M1 1
#define EDGESDK_ORT_SUM_M1_TRANSPOSED 2
typedef struct {
    int32_t rows, depth, units;
    int32_t order;              /* EDGESDK_ORT_SUM_* */
    int32_t bias_first;
    const float *dequantized;   /* [256] DequantizeLinear of each int8 input value, indexed by value + 128 */
    const float *weights;       /* [units * depth] */
    const float *bias;          /* [units] */
    float output_scale;
    int32_t output_zero_point;
    int32_t act_min, act_max;
} edgesdk_ort_float_fc_params;

/* fmaf(a, b, c): a * b + c rounded once to float32 (the product is exact in double, the sum is rounded to odd
 * in double, then to float: no double rounding), without an FMA instruction or libm. */
float edgesdk_ort_fmaf(float a, float b, float c);

void edgesdk_ort_add_s8(const edgesdk_ort_add_params *p, const int8_t *a, const int8_t *b, int8_t *output);
void edgesdk_ort_mul_s8(const edgesdk_ort_mul_params *p, const int8_t *a, const int8_t *b, int8_t *output);
void edgesdk_ort_float_binary_s8(const edgesdk_ort_float_binary_params *p, const int8_t *a, const int8_t *b,
                                 int8_t *output);
void edgesdk_ort_average_pool_s8(const edgesdk_ort_average_pool_params *p, const int8_t *input, int8_t *output);
void edgesdk_ort_quantize_f32_s8(const edgesdk_ort_quantize_params *p, const float *input, int8_t *output);
/* The float32 value QuantizeLinear reads for output (oy, ox, o) of one NHWC image: the sum in MLAS's order + bias. */
float edgesdk_ort_float_conv_value(const edgesdk_ort_float_conv_params *p, const int8_t *image, int32_t oy, int32_t ox,
                                   int32_t o);
void edgesdk_ort_float_conv_s8(const edgesdk_ort_float_conv_params *p, const int8_t *input, int8_t *output);
/* The float32 value QuantizeLinear reads for output n of one int8 input row[depth]. */
float edgesdk_ort_float_fc_value(const edgesdk_ort_float_fc_params *p, const int8_t *row, int32_t n);
void edgesdk_ort_float_fc_s8(const edgesdk_ort_float_fc_params *p, const int8_t *input, int8_t *output);
void edgesdk_ort_concatenation(const edgesdk_ort_concatenation_params *p, const void *const *inputs, void *output);

#endif /* EDGESDK_ORT_H */
