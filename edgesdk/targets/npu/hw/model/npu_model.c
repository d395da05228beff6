/*
 * npu_model.c - the NPU-1 layer engine: register file, command-table validation, execution, timing.
 *
 * This file is the single source of truth for NPU semantics (docs/npu-datasheet.md describes it).
 * A run has two passes so that a bad table never writes memory:
 *   1. read the table, decode and statically check every command (fields, shapes, address ranges, limits);
 *   2. execute the commands in order: read the operands in bulk into host buffers, check the
 *      per-channel parameters read from memory, compute, write the output back.
 * Any failure stops the run with an NPU_ERR_* code and the failing command's index; nothing here may
 * crash on a random table, and every allocation is bounded by the limits (an operand of NPU_MAX_OPERAND_BYTES
 * is held as int32 values: four times that).
 * The arithmetic is TFLite's reference arithmetic for int8 and 16x8 layers (edgesdk_arith.h, edgesdk_fp64.h
 * and edgesdk_layer16.h are shared with the CPU kernels).
 */
#include "npu_model.h"

#include <stdlib.h>
#include <string.h>

#include "edgesdk_arith.h"
#include "edgesdk_fp64.h"
#include "edgesdk_layer16.h"

/* ------------------------------------------------------------------------------------------------ */
/* Little-endian field access                                                                        */
/* ------------------------------------------------------------------------------------------------ */

static uint32_t get_u8(const uint8_t *p) { return p[0]; }
static uint32_t get_u16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Sign extension written out, so no implementation-defined conversion is involved. */
static int32_t get_i8(const uint8_t *p) { return (int32_t)get_u8(p) - ((p[0] & 0x80u) ? 256 : 0); }
static int32_t get_i16(const uint8_t *p) { return (int32_t)get_u16(p) - ((p[1] & 0x80u) ? 65536 : 0); }

static int32_t get_i32(const uint8_t *p)
{
    uint32_t u = get_u32(p);
    return (u & 0x80000000u) ? -(int32_t)(~u) - 1 : (int32_t)u;
}

/* An IEEE binary64 stored little endian. */
static double get_f64(const uint8_t *p)
{
    uint64_t bits = (uint64_t)get_u32(p) | ((uint64_t)get_u32(p + 4) << 32);
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* ------------------------------------------------------------------------------------------------ */
/* Decoded commands                                                                                  */
/* ------------------------------------------------------------------------------------------------ */

enum { DIM_N = 0, DIM_H = 1, DIM_W = 2, DIM_C = 3 };

typedef struct {
    uint32_t region;
    uint32_t dtype;
    uint32_t reserved;
    uint32_t offset;
    uint32_t shape[4];  /* N, H, W, C */
    int32_t stride[4];  /* bytes, signed; 0 repeats one element along that dimension (broadcast) */
    uint32_t stride_word[4]; /* the same words unsigned (a compressed weight stream's size) */
} npu_desc_t;

typedef struct {
    uint32_t region;
    uint32_t reserved;
    uint32_t offset;
} npu_param_ref_t;

typedef struct {
    npu_desc_t input, output, weights;
    npu_param_ref_t params;
    int32_t input_offset, weight_offset, output_offset;
    int32_t act_min, act_max; /* int16 outputs: with the high bytes at 134/135 */
    uint32_t stride_h, stride_w, dilation_h, dilation_w;
    uint32_t pad_top, pad_left, depth_multiplier, reserved; /* reserved: bytes 134/135, the clamp's high bytes */
    /* NPU_FLAG_COMPRESSED_WEIGHTS: the weights descriptor's stride words are (stream bytes, 0, 0, 0) */
    uint32_t weight_stream_bytes;
    uint32_t weight_stride_rest; /* OR of the three other stride words (must be 0) */
} conv_args_t;

typedef struct {
    npu_desc_t input, output;
    uint32_t filter_h, filter_w, stride_h, stride_w, pad_top, pad_left;
    int32_t act_min, act_max;
    uint32_t reserved; /* bytes 86/87: the clamp's high bytes (int16 outputs), else 0 */
} pool_args_t;

typedef struct {
    npu_desc_t input1, input2, output;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t act_min, act_max;
    int32_t input1_multiplier, input1_shift, input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
    uint32_t left_shift;
    uint32_t act_high;  /* bytes 137/138: the clamp's high bytes (int16 outputs), else 0 */
    uint32_t reserved;  /* bytes 139..143 */
} eltwise_args_t;

typedef struct {
    npu_desc_t src, dst;
} dma_args_t;

typedef struct {
    npu_desc_t input, output;
    npu_param_ref_t table;
    uint32_t table_count, reserved;
} table_args_t;

typedef struct {
    npu_desc_t src, dst;
    npu_param_ref_t maps; /* u16 row map [dst H], then u16 column map [dst W] */
} gather_args_t;

typedef struct {
    uint32_t opcode, rounding, size, flags, reserved;
    union {
        conv_args_t conv;
        pool_args_t pool;
        eltwise_args_t elt;
        dma_args_t dma;
        table_args_t table;
        gather_args_t gather;
    } u;
} npu_cmd_t;

static void decode_desc(const uint8_t *p, npu_desc_t *d)
{
    d->region = get_u8(p + 0);
    d->dtype = get_u8(p + 1);
    d->reserved = get_u16(p + 2);
    d->offset = get_u32(p + 4);
    for (int i = 0; i < 4; i++) {
        d->shape[i] = get_u16(p + 8 + 2 * i);
        d->stride_word[i] = get_u32(p + 16 + 4 * i);
        d->stride[i] = get_i32(p + 16 + 4 * i);
    }
}

/* A clamp bound: the i8 field at `low`, or for an int16 output the i16 value whose high byte is at `high`. */
static int32_t act_value(const uint8_t *low, const uint8_t *high, uint32_t out_dtype)
{
    if (out_dtype == NPU_DTYPE_INT16) {
        uint32_t u = get_u8(low) | (get_u8(high) << 8);
        return (int32_t)u - ((u & 0x8000u) ? 65536 : 0);
    }
    return get_i8(low);
}

static void decode_param_ref(const uint8_t *p, npu_param_ref_t *r)
{
    r->region = get_u8(p + 0);
    r->reserved = get_u8(p + 1) | (get_u16(p + 2) << 8);
    r->offset = get_u32(p + 4);
}

static void decode_conv(const uint8_t *p, conv_args_t *a)
{
    decode_desc(p + 8, &a->input);
    decode_desc(p + 40, &a->output);
    decode_desc(p + 72, &a->weights);
    decode_param_ref(p + 104, &a->params);
    a->input_offset = get_i16(p + 112);
    a->weight_offset = get_i16(p + 114);
    a->output_offset = get_i16(p + 116);
    a->act_min = act_value(p + 118, p + 134, a->output.dtype);
    a->act_max = act_value(p + 119, p + 135, a->output.dtype);
    a->stride_h = get_u16(p + 120);
    a->stride_w = get_u16(p + 122);
    a->dilation_h = get_u16(p + 124);
    a->dilation_w = get_u16(p + 126);
    a->pad_top = get_u16(p + 128);
    a->pad_left = get_u16(p + 130);
    a->depth_multiplier = get_u16(p + 132);
    a->reserved = get_u16(p + 134);
}

static void decode_pool(const uint8_t *p, pool_args_t *a)
{
    decode_desc(p + 8, &a->input);
    decode_desc(p + 40, &a->output);
    a->filter_h = get_u16(p + 72);
    a->filter_w = get_u16(p + 74);
    a->stride_h = get_u16(p + 76);
    a->stride_w = get_u16(p + 78);
    a->pad_top = get_u16(p + 80);
    a->pad_left = get_u16(p + 82);
    a->act_min = act_value(p + 84, p + 86, a->output.dtype);
    a->act_max = act_value(p + 85, p + 87, a->output.dtype);
    a->reserved = get_u16(p + 86);
}

static void decode_eltwise(const uint8_t *p, eltwise_args_t *a)
{
    decode_desc(p + 8, &a->input1);
    decode_desc(p + 40, &a->input2);
    decode_desc(p + 72, &a->output);
    a->input1_offset = get_i16(p + 104);
    a->input2_offset = get_i16(p + 106);
    a->output_offset = get_i16(p + 108);
    a->act_min = act_value(p + 110, p + 137, a->output.dtype);
    a->act_max = act_value(p + 111, p + 138, a->output.dtype);
    a->input1_multiplier = get_i32(p + 112);
    a->input1_shift = get_i32(p + 116);
    a->input2_multiplier = get_i32(p + 120);
    a->input2_shift = get_i32(p + 124);
    a->output_multiplier = get_i32(p + 128);
    a->output_shift = get_i32(p + 132);
    a->left_shift = get_u8(p + 136);
    a->act_high = get_u16(p + 137);
    a->reserved = 0;
    for (int i = 139; i < NPU_CMD_BYTES_ELEMENTWISE; i++) {
        a->reserved |= p[i];
    }
}

static void decode_table(const uint8_t *p, table_args_t *a)
{
    decode_desc(p + 8, &a->input);
    decode_desc(p + 40, &a->output);
    decode_param_ref(p + 72, &a->table);
    a->table_count = get_u16(p + 80);
    a->reserved = get_u16(p + 82) | get_u32(p + 84);
}

static void decode_gather(const uint8_t *p, gather_args_t *a)
{
    decode_desc(p + 8, &a->src);
    decode_desc(p + 40, &a->dst);
    decode_param_ref(p + 72, &a->maps);
}

static uint32_t expected_size(uint32_t opcode)
{
    switch (opcode) {
    case NPU_OP_END: return NPU_CMD_BYTES_END;
    case NPU_OP_DMA_COPY: return NPU_CMD_BYTES_DMA_COPY;
    case NPU_OP_GATHER_HW: return NPU_CMD_BYTES_GATHER_HW;
    case NPU_OP_CONV2D:
    case NPU_OP_DEPTHWISE_CONV2D:
    case NPU_OP_TRANSPOSE_CONV2D: return NPU_CMD_BYTES_CONV;
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVG_POOL: return NPU_CMD_BYTES_POOL;
    case NPU_OP_ADD:
    case NPU_OP_MUL:
    case NPU_OP_SUB:
    case NPU_OP_MIN:
    case NPU_OP_MAX: return NPU_CMD_BYTES_ELEMENTWISE;
    case NPU_OP_TABLE: return NPU_CMD_BYTES_TABLE;
    default: return 0;
    }
}

/* Decode the command at p (remaining bytes of the table from p); checks the framing only. */
static uint32_t decode_command(const uint8_t *p, uint32_t remaining, npu_cmd_t *cmd)
{
    if (remaining < NPU_CMD_HEADER_BYTES) {
        return NPU_ERR_TABLE_SIZE;
    }
    memset(cmd, 0, sizeof(*cmd));
    cmd->opcode = get_u8(p + 0);
    cmd->rounding = get_u8(p + 1);
    cmd->size = get_u16(p + 2);
    cmd->flags = get_u16(p + 4);
    cmd->reserved = get_u16(p + 6);
    uint32_t size = expected_size(cmd->opcode);
    if (size == 0) {
        return NPU_ERR_BAD_OPCODE;
    }
    if (cmd->size != size || size > remaining) {
        return NPU_ERR_CMD_SIZE;
    }
    switch (cmd->opcode) {
    case NPU_OP_DMA_COPY:
        decode_desc(p + 8, &cmd->u.dma.src);
        decode_desc(p + 40, &cmd->u.dma.dst);
        break;
    case NPU_OP_GATHER_HW: decode_gather(p, &cmd->u.gather); break;
    case NPU_OP_CONV2D:
    case NPU_OP_DEPTHWISE_CONV2D:
    case NPU_OP_TRANSPOSE_CONV2D:
        decode_conv(p, &cmd->u.conv);
        if (cmd->flags & NPU_FLAG_COMPRESSED_WEIGHTS) {
            npu_desc_t *w = &cmd->u.conv.weights;
            cmd->u.conv.weight_stream_bytes = w->stride_word[0];
            cmd->u.conv.weight_stride_rest = w->stride_word[1] | w->stride_word[2] | w->stride_word[3];
        }
        break;
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVG_POOL: decode_pool(p, &cmd->u.pool); break;
    case NPU_OP_ADD:
    case NPU_OP_MUL:
    case NPU_OP_SUB:
    case NPU_OP_MIN:
    case NPU_OP_MAX: decode_eltwise(p, &cmd->u.elt); break;
    case NPU_OP_TABLE: decode_table(p, &cmd->u.table); break;
    default: break;
    }
    return NPU_ERR_NONE;
}

/* ------------------------------------------------------------------------------------------------ */
/* Static validation                                                                                 */
/* ------------------------------------------------------------------------------------------------ */

/* a * b, saturating at UINT64_MAX: work estimates of random tables must not wrap around. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a) {
        return UINT64_MAX;
    }
    return a * b;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static uint64_t shape_elements(const uint32_t shape[4])
{
    return mul_sat(mul_sat(shape[0], shape[1]), mul_sat(shape[2], shape[3]));
}

/* Bytes of one element of a (checked) descriptor's type. */
static uint32_t dtype_bytes(uint32_t dtype) { return dtype == NPU_DTYPE_INT16 ? 2u : 1u; }

/* The shape of the data an operand really reads: a broadcast (stride 0) dimension is read once. */
static void compact_shape(const npu_desc_t *d, uint32_t out[4])
{
    for (int i = 0; i < 4; i++) {
        out[i] = d->stride[i] == 0 ? 1 : d->shape[i];
    }
}

static uint64_t compact_bytes(const npu_desc_t *d)
{
    uint32_t c[4];
    compact_shape(d, c);
    return mul_sat(shape_elements(c), dtype_bytes(d->dtype));
}

static int same_shape(const npu_desc_t *a, const npu_desc_t *b)
{
    return memcmp(a->shape, b->shape, sizeof(a->shape)) == 0;
}

/*
 * Region, format, shape and address-range checks of one tensor descriptor. Strides are signed: a negative
 * stride walks backwards, so the lowest and the highest byte an operand touches are both checked.
 */
static uint32_t check_desc(const npu_desc_t *d, const uint32_t *region_bases, int is_output)
{
    if (d->region >= NPU_NUM_REGIONS) {
        return NPU_ERR_BAD_REGION;
    }
    if (d->dtype > NPU_DTYPE_INT16 || d->reserved != 0) {
        return NPU_ERR_BAD_PARAM;
    }
    int64_t low = (int64_t)region_bases[d->region] + d->offset;
    int64_t high = low + dtype_bytes(d->dtype) - 1;
    for (int i = 0; i < 4; i++) {
        if (d->shape[i] == 0) {
            return NPU_ERR_BAD_SHAPE;
        }
        /* Two output elements at one address would make the result depend on write order. */
        if (is_output && d->shape[i] > 1 && d->stride[i] == 0) {
            return NPU_ERR_BAD_PARAM;
        }
        int64_t extent = (int64_t)(d->shape[i] - 1) * d->stride[i];
        if (extent < 0) {
            low += extent;
        } else {
            high += extent;
        }
    }
    if (low < 0 || high > (int64_t)UINT32_MAX) {
        return NPU_ERR_ADDRESS_RANGE;
    }
    if (compact_bytes(d) > NPU_MAX_OPERAND_BYTES) {
        return NPU_ERR_TOO_LARGE;
    }
    return NPU_ERR_NONE;
}

static uint32_t check_act_range(int32_t act_min, int32_t act_max)
{
    return act_min <= act_max ? NPU_ERR_NONE : NPU_ERR_BAD_PARAM;
}

/* The high bytes of the clamp fields carry an int16 output's clamp; for an int8 output they are 0. */
static uint32_t check_act_high(const npu_desc_t *out, uint32_t high_bytes)
{
    return (out->dtype == NPU_DTYPE_INT8 && high_bytes != 0) ? NPU_ERR_BAD_PARAM : NPU_ERR_NONE;
}

static int shift_ok(int32_t shift) { return shift >= NPU_MIN_SHIFT && shift <= NPU_MAX_SHIFT; }

/*
 * Window rule of conv and pooling along one axis: the first window may start at most pad taps before
 * the input and the last window must start inside it. This bounds the output size by the input size,
 * and (without dilation) guarantees every window covers at least one input element.
 */
static uint32_t check_window(uint32_t in_size, uint32_t out_size, uint32_t kernel, uint32_t stride,
                             uint32_t dilation, uint32_t pad)
{
    uint64_t extent = (uint64_t)(kernel - 1) * dilation;
    if (pad > extent) {
        return NPU_ERR_BAD_PARAM;
    }
    if ((uint64_t)(out_size - 1) * stride > (uint64_t)in_size - 1 + pad) {
        return NPU_ERR_BAD_SHAPE;
    }
    return NPU_ERR_NONE;
}

/*
 * The transposed window rule along one axis: input i spreads over outputs i * stride - pad + k, k < kernel.
 * The leading pad cuts at most kernel - 1 of the first input's taps, and fewer than `stride` outputs lie past
 * the last input's taps (they get the bias alone, as in TFLite's VALID padding): out + pad <= in * stride +
 * kernel - 1.
 */
static uint32_t check_transposed_window(uint32_t in_size, uint32_t out_size, uint32_t kernel, uint32_t stride,
                                        uint32_t pad)
{
    if (pad > kernel - 1) {
        return NPU_ERR_BAD_PARAM;
    }
    if ((uint64_t)out_size + pad > (uint64_t)in_size * stride + kernel - 1) {
        return NPU_ERR_BAD_SHAPE;
    }
    return NPU_ERR_NONE;
}

/* MACs of a conv command (the transposed convolution: every input pixel times every tap). */
static uint64_t conv_ops(const conv_args_t *a, uint32_t opcode)
{
    const uint32_t *i = a->input.shape, *o = a->output.shape, *w = a->weights.shape;
    uint64_t taps = mul_sat(w[1], w[2]);
    if (opcode == NPU_OP_DEPTHWISE_CONV2D) {
        return mul_sat(shape_elements(o), taps);
    }
    if (opcode == NPU_OP_TRANSPOSE_CONV2D) {
        uint64_t pixels = mul_sat(mul_sat(i[DIM_N], i[DIM_H]), i[DIM_W]);
        return mul_sat(mul_sat(pixels, taps), mul_sat(w[3], o[DIM_C]));
    }
    return mul_sat(shape_elements(o), mul_sat(taps, w[3]));
}

/* A channel record: int32 bias (int8 input) or int64 bias (int16 input: 16x8), then the requantization. */
static uint32_t record_bytes(const conv_args_t *a)
{
    return a->input.dtype == NPU_DTYPE_INT16 ? NPU_CHANNEL_PARAM_BYTES_WIDE : NPU_CHANNEL_PARAM_BYTES;
}

static uint64_t param_bytes(const conv_args_t *a, uint32_t flags)
{
    uint32_t channels = (flags & NPU_FLAG_PER_TENSOR_PARAMS) ? 1 : a->output.shape[DIM_C];
    return (uint64_t)channels * record_bytes(a);
}

static uint32_t check_param_ref(const npu_param_ref_t *r, uint64_t bytes, const uint32_t *region_bases)
{
    if (r->region >= NPU_NUM_REGIONS) {
        return NPU_ERR_BAD_REGION;
    }
    if (r->reserved != 0) {
        return NPU_ERR_BAD_PARAM;
    }
    if ((uint64_t)region_bases[r->region] + r->offset + bytes - 1 > UINT32_MAX) {
        return NPU_ERR_ADDRESS_RANGE;
    }
    return NPU_ERR_NONE;
}

static uint32_t check_conv_shapes(const conv_args_t *a, int depthwise)
{
    const uint32_t *in = a->input.shape, *out = a->output.shape, *w = a->weights.shape;
    if (in[DIM_N] != out[DIM_N]) {
        return NPU_ERR_BAD_SHAPE;
    }
    if (depthwise) {
        if (a->depth_multiplier < 1 || w[DIM_N] != 1 || w[DIM_C] != out[DIM_C] ||
            (uint64_t)in[DIM_C] * a->depth_multiplier != out[DIM_C]) {
            return NPU_ERR_BAD_SHAPE;
        }
    } else {
        if (a->depth_multiplier != 1) {
            return NPU_ERR_BAD_PARAM;
        }
        if (w[DIM_N] != out[DIM_C] || w[DIM_C] != in[DIM_C]) {
            return NPU_ERR_BAD_SHAPE;
        }
    }
    return NPU_ERR_NONE;
}

/*
 * The weights of a command with NPU_FLAG_COMPRESSED_WEIGHTS: a stream of weight_stream_bytes bytes at the
 * descriptor's address that decodes to the dense [shape] tensor. The stream's content is data, checked
 * when it is decoded (NPU_ERR_BAD_WEIGHTS); here only what the command itself says.
 */
static uint32_t check_compressed_weights(const conv_args_t *a, const uint32_t *region_bases)
{
    const npu_desc_t *d = &a->weights;
    if (d->region >= NPU_NUM_REGIONS) {
        return NPU_ERR_BAD_REGION;
    }
    if (d->dtype != NPU_DTYPE_INT8 || d->reserved != 0 || a->weight_stride_rest != 0 ||
        a->weight_stream_bytes < NPU_WEIGHT_STREAM_HEADER_BYTES) {
        return NPU_ERR_BAD_PARAM;
    }
    for (int i = 0; i < 4; i++) {
        if (d->shape[i] == 0) {
            return NPU_ERR_BAD_SHAPE;
        }
    }
    if ((uint64_t)region_bases[d->region] + d->offset + a->weight_stream_bytes - 1 > UINT32_MAX) {
        return NPU_ERR_ADDRESS_RANGE;
    }
    if (shape_elements(d->shape) > NPU_MAX_OPERAND_BYTES || a->weight_stream_bytes > NPU_MAX_OPERAND_BYTES) {
        return NPU_ERR_TOO_LARGE;
    }
    return NPU_ERR_NONE;
}

/* Kernel, stride and dilation limits; a transposed convolution has no dilation. */
static uint32_t check_conv_fields(const conv_args_t *a, uint32_t opcode)
{
    uint32_t kh = a->weights.shape[DIM_H], kw = a->weights.shape[DIM_W];
    if (kh > NPU_MAX_KERNEL || kw > NPU_MAX_KERNEL || a->stride_h < 1 || a->stride_h > NPU_MAX_STRIDE ||
        a->stride_w < 1 || a->stride_w > NPU_MAX_STRIDE || a->dilation_h < 1 ||
        a->dilation_h > NPU_MAX_DILATION || a->dilation_w < 1 || a->dilation_w > NPU_MAX_DILATION) {
        return NPU_ERR_BAD_PARAM;
    }
    if (opcode == NPU_OP_TRANSPOSE_CONV2D && (a->dilation_h != 1 || a->dilation_w != 1)) {
        return NPU_ERR_BAD_PARAM;
    }
    return NPU_ERR_NONE;
}

static uint32_t check_conv_windows(const conv_args_t *a, uint32_t opcode)
{
    const uint32_t *i = a->input.shape, *o = a->output.shape;
    uint32_t kh = a->weights.shape[DIM_H], kw = a->weights.shape[DIM_W];
    uint32_t err;
    if (opcode == NPU_OP_TRANSPOSE_CONV2D) {
        if ((err = check_transposed_window(i[DIM_H], o[DIM_H], kh, a->stride_h, a->pad_top))) {
            return err;
        }
        return check_transposed_window(i[DIM_W], o[DIM_W], kw, a->stride_w, a->pad_left);
    }
    if ((err = check_window(i[DIM_H], o[DIM_H], kh, a->stride_h, a->dilation_h, a->pad_top))) {
        return err;
    }
    return check_window(i[DIM_W], o[DIM_W], kw, a->stride_w, a->dilation_w, a->pad_left);
}

static uint32_t check_conv(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    const conv_args_t *a = &cmd->u.conv;
    int depthwise = cmd->opcode == NPU_OP_DEPTHWISE_CONV2D;
    uint32_t err;
    int compressed = (cmd->flags & NPU_FLAG_COMPRESSED_WEIGHTS) != 0;
    if ((err = check_desc(&a->input, region_bases, 0)) || (err = check_desc(&a->output, region_bases, 1)) ||
        (err = compressed ? check_compressed_weights(a, region_bases) : check_desc(&a->weights, region_bases, 0))) {
        return err;
    }
    if (cmd->flags & ~(NPU_FLAG_PER_TENSOR_PARAMS | NPU_FLAG_COMPRESSED_WEIGHTS) ||
        check_act_high(&a->output, a->reserved) || a->input.dtype != a->output.dtype ||
        a->weights.dtype != NPU_DTYPE_INT8) {
        return NPU_ERR_BAD_PARAM;
    }
    if ((err = check_param_ref(&a->params, param_bytes(a, cmd->flags), region_bases))) {
        return err;
    }
    if ((err = check_conv_shapes(a, depthwise))) {
        return err;
    }
    if ((err = check_conv_fields(a, cmd->opcode)) || (err = check_conv_windows(a, cmd->opcode))) {
        return err;
    }
    if ((err = check_act_range(a->act_min, a->act_max))) {
        return err;
    }
    return conv_ops(a, cmd->opcode) > NPU_MAX_OPS_PER_COMMAND ? NPU_ERR_TOO_LARGE : NPU_ERR_NONE;
}

static uint64_t pool_ops(const pool_args_t *a)
{
    return mul_sat(shape_elements(a->output.shape), (uint64_t)a->filter_h * a->filter_w);
}

static uint32_t check_pool(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    const pool_args_t *a = &cmd->u.pool;
    uint32_t allowed_flags = cmd->opcode == NPU_OP_AVG_POOL ? NPU_FLAG_AVG_FLOOR : 0;
    uint32_t err;
    if ((err = check_desc(&a->input, region_bases, 0)) || (err = check_desc(&a->output, region_bases, 1))) {
        return err;
    }
    if ((cmd->flags & ~allowed_flags) || check_act_high(&a->output, a->reserved) ||
        a->input.dtype != a->output.dtype) {
        return NPU_ERR_BAD_PARAM;
    }
    if (a->input.shape[DIM_N] != a->output.shape[DIM_N] || a->input.shape[DIM_C] != a->output.shape[DIM_C]) {
        return NPU_ERR_BAD_SHAPE;
    }
    if (a->filter_h < 1 || a->filter_h > NPU_MAX_POOL_FILTER || a->filter_w < 1 ||
        a->filter_w > NPU_MAX_POOL_FILTER || a->stride_h < 1 || a->stride_h > NPU_MAX_STRIDE ||
        a->stride_w < 1 || a->stride_w > NPU_MAX_STRIDE) {
        return NPU_ERR_BAD_PARAM;
    }
    if ((err = check_window(a->input.shape[DIM_H], a->output.shape[DIM_H], a->filter_h, a->stride_h, 1,
                            a->pad_top)) ||
        (err = check_window(a->input.shape[DIM_W], a->output.shape[DIM_W], a->filter_w, a->stride_w, 1,
                            a->pad_left))) {
        return err;
    }
    if ((err = check_act_range(a->act_min, a->act_max))) {
        return err;
    }
    return pool_ops(a) > NPU_MAX_OPS_PER_COMMAND ? NPU_ERR_TOO_LARGE : NPU_ERR_NONE;
}

static uint32_t check_eltwise(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    const eltwise_args_t *a = &cmd->u.elt;
    uint32_t err;
    if ((err = check_desc(&a->input1, region_bases, 0)) || (err = check_desc(&a->input2, region_bases, 0)) ||
        (err = check_desc(&a->output, region_bases, 1))) {
        return err;
    }
    if (cmd->flags != 0 || a->reserved != 0 || check_act_high(&a->output, a->act_high) ||
        a->left_shift > NPU_MAX_LEFT_SHIFT || a->input1.dtype != a->output.dtype ||
        a->input2.dtype != a->output.dtype) {
        return NPU_ERR_BAD_PARAM;
    }
    if (!same_shape(&a->input1, &a->output) || !same_shape(&a->input2, &a->output)) {
        return NPU_ERR_BAD_SHAPE;
    }
    if (a->input1_multiplier < 0 || a->input2_multiplier < 0 || a->output_multiplier < 0 ||
        !shift_ok(a->input1_shift) || !shift_ok(a->input2_shift) || !shift_ok(a->output_shift)) {
        return NPU_ERR_BAD_QUANT;
    }
    if ((err = check_act_range(a->act_min, a->act_max))) {
        return err;
    }
    return shape_elements(a->output.shape) > NPU_MAX_OPS_PER_COMMAND ? NPU_ERR_TOO_LARGE : NPU_ERR_NONE;
}

static uint32_t check_dma(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    const dma_args_t *a = &cmd->u.dma;
    uint32_t err;
    if ((err = check_desc(&a->src, region_bases, 0)) || (err = check_desc(&a->dst, region_bases, 1))) {
        return err;
    }
    if (cmd->flags != 0 || a->src.dtype != a->dst.dtype) {
        return NPU_ERR_BAD_PARAM;
    }
    return same_shape(&a->src, &a->dst) ? NPU_ERR_NONE : NPU_ERR_BAD_SHAPE;
}

/* Entries of one table: 256 int8 results, or 513 int16 base values (the last only for interpolation). */
static uint32_t table_entries(uint32_t dtype)
{
    return dtype == NPU_DTYPE_INT16 ? NPU_TABLE_ENTRIES_INT16 : NPU_TABLE_ENTRIES_INT8;
}

static uint64_t table_bytes(const table_args_t *a)
{
    return (uint64_t)a->table_count * table_entries(a->input.dtype) * dtype_bytes(a->input.dtype);
}

static uint32_t check_table(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    const table_args_t *a = &cmd->u.table;
    uint32_t err;
    if ((err = check_desc(&a->input, region_bases, 0)) || (err = check_desc(&a->output, region_bases, 1))) {
        return err;
    }
    if (cmd->flags != 0 || a->reserved != 0 || a->input.dtype != a->output.dtype) {
        return NPU_ERR_BAD_PARAM;
    }
    if (!same_shape(&a->input, &a->output) || (a->table_count != 1 && a->table_count != a->output.shape[DIM_C])) {
        return NPU_ERR_BAD_SHAPE;
    }
    if ((err = check_param_ref(&a->table, table_bytes(a), region_bases))) {
        return err;
    }
    return shape_elements(a->output.shape) > NPU_MAX_OPS_PER_COMMAND ? NPU_ERR_TOO_LARGE : NPU_ERR_NONE;
}

static uint64_t gather_map_bytes(const gather_args_t *a)
{
    return 2u * ((uint64_t)a->dst.shape[DIM_H] + a->dst.shape[DIM_W]);
}

static uint32_t check_gather(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    const gather_args_t *a = &cmd->u.gather;
    uint32_t err;
    if ((err = check_desc(&a->src, region_bases, 0)) || (err = check_desc(&a->dst, region_bases, 1))) {
        return err;
    }
    if (cmd->flags != 0 || a->src.dtype != a->dst.dtype) {
        return NPU_ERR_BAD_PARAM;
    }
    if (a->src.shape[DIM_N] != a->dst.shape[DIM_N] || a->src.shape[DIM_C] != a->dst.shape[DIM_C]) {
        return NPU_ERR_BAD_SHAPE;
    }
    if ((err = check_param_ref(&a->maps, gather_map_bytes(a), region_bases))) {
        return err;
    }
    return shape_elements(a->dst.shape) > NPU_MAX_OPS_PER_COMMAND ? NPU_ERR_TOO_LARGE : NPU_ERR_NONE;
}

/* The commands of the conv datapath (MAC array or vector engine with channel records). */
static int is_conv(uint32_t opcode)
{
    return opcode == NPU_OP_CONV2D || opcode == NPU_OP_DEPTHWISE_CONV2D || opcode == NPU_OP_TRANSPOSE_CONV2D;
}

static int is_eltwise(uint32_t opcode)
{
    return opcode == NPU_OP_ADD || opcode == NPU_OP_MUL || opcode == NPU_OP_SUB || opcode == NPU_OP_MIN ||
           opcode == NPU_OP_MAX;
}

static uint32_t check_command(const npu_cmd_t *cmd, const uint32_t *region_bases)
{
    /* FP64 requantization exists in the conv datapath only. */
    uint32_t max_rounding = is_conv(cmd->opcode) ? NPU_ROUNDING_FP64 : NPU_ROUNDING_SINGLE;
    if (cmd->rounding > max_rounding || cmd->reserved != 0) {
        return NPU_ERR_BAD_PARAM;
    }
    if (is_conv(cmd->opcode)) {
        return check_conv(cmd, region_bases);
    }
    if (is_eltwise(cmd->opcode)) {
        return check_eltwise(cmd, region_bases);
    }
    switch (cmd->opcode) {
    case NPU_OP_END: return cmd->flags == 0 ? NPU_ERR_NONE : NPU_ERR_BAD_PARAM;
    case NPU_OP_DMA_COPY: return check_dma(cmd, region_bases);
    case NPU_OP_GATHER_HW: return check_gather(cmd, region_bases);
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVG_POOL: return check_pool(cmd, region_bases);
    case NPU_OP_TABLE: return check_table(cmd, region_bases);
    default: return NPU_ERR_BAD_OPCODE;
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* Timing model (edgesdk/targets/npu/hw/timing.py computes the same numbers; a test compares them)              */
/* ------------------------------------------------------------------------------------------------ */

typedef struct {
    uint64_t compute_cycles;
    uint64_t memory_cycles;
    uint64_t macs;
    uint64_t sram_read_bytes;
    uint64_t flash_read_bytes;
    uint64_t write_bytes;
} cmd_cost_t;

static const npu_memory_class_t *memory_class_of(const npu_env_t *env, uint32_t addr)
{
    for (uint32_t i = 0; i < env->num_memory_classes; i++) {
        const npu_memory_class_t *m = &env->memory_classes[i];
        if (addr >= m->base && (uint64_t)addr - m->base < m->size) {
            return m;
        }
    }
    return NULL;
}

/* One operand transfer: its own bandwidth, rounded up to whole cycles; bytes counted by memory kind. */
static void add_stream(const npu_env_t *env, cmd_cost_t *cost, uint32_t addr, uint64_t bytes, int is_write)
{
    const npu_memory_class_t *m = memory_class_of(env, addr);
    uint32_t bw = m ? m->bytes_per_cycle_x256 : NPU_DEFAULT_BYTES_PER_CYCLE_X256;
    uint32_t kind = m ? m->kind : NPU_MEM_KIND_SRAM;
    cost->memory_cycles += ceil_div(bytes * NPU_BANDWIDTH_SCALE, bw);
    if (is_write) {
        cost->write_bytes += bytes;
    } else if (kind == NPU_MEM_KIND_FLASH) {
        cost->flash_read_bytes += bytes;
    } else {
        cost->sram_read_bytes += bytes;
    }
}

static uint32_t desc_address(const npu_desc_t *d, const uint32_t *region_bases)
{
    return region_bases[d->region] + d->offset; /* range checked by check_desc */
}

static void add_desc_stream(const npu_env_t *env, cmd_cost_t *cost, const npu_desc_t *d,
                            const uint32_t *region_bases, int is_write)
{
    add_stream(env, cost, desc_address(d, region_bases), compact_bytes(d), is_write);
}

/* Vector engine (depthwise, pooling, elementwise, tables): 16 int8 channels (8 int16 ones) x 8 output
 * columns per cycle. */
static uint64_t vector_cycles(const npu_desc_t *out, uint64_t taps)
{
    uint32_t lanes = out->dtype == NPU_DTYPE_INT16 ? NPU_VEC_CHANNEL_LANES_16 : NPU_VEC_CHANNEL_LANES;
    uint64_t columns = ceil_div(out->shape[DIM_W], NPU_VEC_PIXEL_LANES);
    uint64_t channels = ceil_div(out->shape[DIM_C], lanes);
    return (uint64_t)out->shape[DIM_N] * out->shape[DIM_H] * columns * channels * taps;
}

/* MAC array: 8 output channels x 16 input channels (8 int16 ones) per cycle, one kernel tap at a time, over
 * `pixels` (output pixels; input pixels for a transposed convolution, which spreads each one over the taps). */
static uint64_t mac_array_cycles(const conv_args_t *a, uint64_t pixels)
{
    const uint32_t *w = a->weights.shape;
    uint32_t lanes = a->input.dtype == NPU_DTYPE_INT16 ? NPU_CONV_IC_LANES_16 : NPU_CONV_IC_LANES;
    return pixels * w[DIM_H] * w[DIM_W] * ceil_div(w[DIM_C], lanes) * ceil_div(a->output.shape[DIM_C], NPU_CONV_OC_LANES);
}

/*
 * A compressed weight stream: the fetch moves the compressed bytes, and the 16 decoder lanes (pipelined
 * behind the fetch, one code per lane per cycle, each code at least one weight) need at most
 * ceil(weights / 16) cycles; the stream takes the longer of the two.
 */
static void add_compressed_stream(const npu_env_t *env, cmd_cost_t *cost, uint32_t addr, uint64_t stream_bytes,
                                  uint64_t decoded_bytes)
{
    const npu_memory_class_t *m = memory_class_of(env, addr);
    uint32_t bw = m ? m->bytes_per_cycle_x256 : NPU_DEFAULT_BYTES_PER_CYCLE_X256;
    uint64_t fetch = ceil_div(stream_bytes * NPU_BANDWIDTH_SCALE, bw);
    uint64_t decode = ceil_div(decoded_bytes, NPU_WEIGHT_DECODE_LANES);
    cost->memory_cycles += fetch > decode ? fetch : decode;
    if (m != NULL && m->kind == NPU_MEM_KIND_FLASH) {
        cost->flash_read_bytes += stream_bytes;
    } else {
        cost->sram_read_bytes += stream_bytes;
    }
}

static void conv_cost(const npu_env_t *env, const npu_cmd_t *cmd, const uint32_t *rb, cmd_cost_t *cost)
{
    const conv_args_t *a = &cmd->u.conv;
    const uint32_t *i = a->input.shape, *o = a->output.shape, *w = a->weights.shape;
    if (cmd->opcode == NPU_OP_DEPTHWISE_CONV2D) {
        cost->compute_cycles = vector_cycles(&a->output, (uint64_t)w[DIM_H] * w[DIM_W]);
    } else if (cmd->opcode == NPU_OP_TRANSPOSE_CONV2D) {
        cost->compute_cycles = mac_array_cycles(a, (uint64_t)i[DIM_N] * i[DIM_H] * i[DIM_W]);
    } else {
        cost->compute_cycles = mac_array_cycles(a, (uint64_t)o[DIM_N] * o[DIM_H] * o[DIM_W]);
    }
    cost->macs = conv_ops(a, cmd->opcode);
    add_desc_stream(env, cost, &a->input, rb, 0);
    if (cmd->flags & NPU_FLAG_COMPRESSED_WEIGHTS) {
        add_compressed_stream(env, cost, desc_address(&a->weights, rb), a->weight_stream_bytes,
                              shape_elements(a->weights.shape));
    } else {
        add_desc_stream(env, cost, &a->weights, rb, 0);
    }
    add_stream(env, cost, rb[a->params.region] + a->params.offset, param_bytes(a, cmd->flags), 0);
    add_desc_stream(env, cost, &a->output, rb, 1);
}

static void command_cost(const npu_env_t *env, const npu_cmd_t *cmd, const uint32_t *rb, cmd_cost_t *cost)
{
    memset(cost, 0, sizeof(*cost));
    if (is_conv(cmd->opcode)) {
        conv_cost(env, cmd, rb, cost);
        return;
    }
    if (is_eltwise(cmd->opcode)) {
        cost->compute_cycles = vector_cycles(&cmd->u.elt.output, 1);
        add_desc_stream(env, cost, &cmd->u.elt.input1, rb, 0);
        add_desc_stream(env, cost, &cmd->u.elt.input2, rb, 0);
        add_desc_stream(env, cost, &cmd->u.elt.output, rb, 1);
        return;
    }
    switch (cmd->opcode) {
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVG_POOL:
        cost->compute_cycles = vector_cycles(&cmd->u.pool.output,
                                             (uint64_t)cmd->u.pool.filter_h * cmd->u.pool.filter_w);
        add_desc_stream(env, cost, &cmd->u.pool.input, rb, 0);
        add_desc_stream(env, cost, &cmd->u.pool.output, rb, 1);
        break;
    case NPU_OP_TABLE:
        cost->compute_cycles = vector_cycles(&cmd->u.table.output, 1);
        add_desc_stream(env, cost, &cmd->u.table.input, rb, 0);
        add_stream(env, cost, rb[cmd->u.table.table.region] + cmd->u.table.table.offset, table_bytes(&cmd->u.table), 0);
        add_desc_stream(env, cost, &cmd->u.table.output, rb, 1);
        break;
    case NPU_OP_GATHER_HW: {
        /* The DMA engine fetches one source element per destination element, through the index maps. */
        const gather_args_t *g = &cmd->u.gather;
        uint64_t bytes = mul_sat(shape_elements(g->dst.shape), dtype_bytes(g->dst.dtype));
        add_stream(env, cost, desc_address(&g->src, rb), bytes, 0);
        add_stream(env, cost, rb[g->maps.region] + g->maps.offset, gather_map_bytes(g), 0);
        add_desc_stream(env, cost, &g->dst, rb, 1);
        break;
    }
    case NPU_OP_DMA_COPY:
        add_desc_stream(env, cost, &cmd->u.dma.src, rb, 0);
        add_desc_stream(env, cost, &cmd->u.dma.dst, rb, 1);
        break;
    default: break;
    }
}

static void account(npu_result_t *r, const cmd_cost_t *cost)
{
    uint64_t busy = cost->compute_cycles > cost->memory_cycles ? cost->compute_cycles : cost->memory_cycles;
    r->cycles += NPU_CMD_OVERHEAD_CYCLES + busy; /* DMA overlaps compute; the overhead does not */
    r->macs += cost->macs;
    r->sram_read_bytes += cost->sram_read_bytes;
    r->flash_read_bytes += cost->flash_read_bytes;
    r->write_bytes += cost->write_bytes;
    r->commands++;
}

/* ------------------------------------------------------------------------------------------------ */
/* Operand transfer                                                                                  */
/* ------------------------------------------------------------------------------------------------ */

typedef struct {
    const npu_env_t *env;
    const uint32_t *region_bases;
} exec_t;

/* An operand in a host buffer: compact values (int8 or int16, widened) plus element steps (0 along
 * broadcast dimensions). */
typedef struct {
    int32_t *data;
    uint32_t shape[4];
    uint32_t step[4];
} operand_t;

static int aborted(const exec_t *x)
{
    return x->env->abort_request != NULL && *x->env->abort_request != 0;
}

/*
 * Move the elements of `d` (in the compact shape `cshape`) between memory and the dense byte buffer `buf`.
 * The innermost dimensions that are contiguous in memory form one run, so a dense tensor moves in one
 * bus transfer and a slice of a larger tensor in one transfer per row; a dimension walked backwards
 * (negative stride) moves element by element.
 */
static uint32_t transfer(const exec_t *x, const npu_desc_t *d, const uint32_t cshape[4], uint8_t *buf,
                         int is_write)
{
    const uint32_t size = dtype_bytes(d->dtype);
    const int64_t base = desc_address(d, x->region_bases);
    uint64_t run = 1;
    int outer = 3;
    while (outer >= 0 && (cshape[outer] == 1 || (int64_t)d->stride[outer] == (int64_t)(run * size))) {
        run *= cshape[outer];
        outer--;
    }
    uint64_t total = shape_elements(cshape);
    uint32_t idx[4] = {0, 0, 0, 0};
    for (uint64_t pos = 0; pos < total; pos += run) {
        int64_t addr = base;
        for (int j = 0; j <= outer; j++) {
            addr += (int64_t)idx[j] * d->stride[j]; /* inside [0, 2^32) by check_desc */
        }
        uint8_t *at_buf = buf + pos * size;
        uint32_t bytes = (uint32_t)(run * size);
        int bad = is_write ? x->env->write(x->env->ctx, (uint32_t)addr, at_buf, bytes)
                           : x->env->read(x->env->ctx, (uint32_t)addr, at_buf, bytes);
        if (bad) {
            return NPU_ERR_BUS;
        }
        if (aborted(x)) {
            return NPU_ERR_ABORTED;
        }
        for (int j = outer; j >= 0; j--) {
            if (++idx[j] < cshape[j]) {
                break;
            }
            idx[j] = 0;
        }
    }
    return NPU_ERR_NONE;
}

/* Element i of a raw buffer of `dtype`, sign-extended. */
static int32_t raw_value(const uint8_t *raw, uint64_t i, uint32_t dtype)
{
    return dtype == NPU_DTYPE_INT16 ? get_i16(raw + 2 * i) : get_i8(raw + i);
}

static void put_raw(uint8_t *raw, uint64_t i, int32_t v, uint32_t dtype)
{
    if (dtype == NPU_DTYPE_INT16) {
        raw[2 * i] = (uint8_t)((uint32_t)v & 0xFFu);
        raw[2 * i + 1] = (uint8_t)(((uint32_t)v >> 8) & 0xFFu);
    } else {
        raw[i] = (uint8_t)((uint32_t)v & 0xFFu);
    }
}

/* Widen `count` raw elements of `dtype` into a new int32 array (NULL: out of host memory). */
static int32_t *widen(const uint8_t *raw, uint64_t count, uint32_t dtype)
{
    int32_t *values = malloc((size_t)count * sizeof(int32_t) + 1);
    if (values != NULL) {
        for (uint64_t i = 0; i < count; i++) {
            values[i] = raw_value(raw, i, dtype);
        }
    }
    return values;
}

static uint32_t load_operand(const exec_t *x, const npu_desc_t *d, operand_t *op)
{
    uint32_t cshape[4];
    compact_shape(d, cshape);
    uint64_t count = shape_elements(cshape);
    uint8_t *raw = malloc((size_t)(count * dtype_bytes(d->dtype)));
    if (raw == NULL) {
        return NPU_ERR_NO_MEMORY;
    }
    uint32_t step = 1;
    for (int i = 3; i >= 0; i--) {
        op->step[i] = d->stride[i] == 0 ? 0 : step;
        step *= cshape[i];
    }
    memcpy(op->shape, d->shape, sizeof(op->shape)); /* logical shape; steps handle broadcast dims */
    uint32_t err = transfer(x, d, cshape, raw, 0);
    if (!err && (op->data = widen(raw, count, d->dtype)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    free(raw);
    return err;
}

/* Write the output values (already in the descriptor type's range) back in that type. */
static uint32_t store_output(const exec_t *x, const npu_desc_t *d, const int32_t *values)
{
    uint64_t count = shape_elements(d->shape);
    uint8_t *raw = malloc((size_t)(count * dtype_bytes(d->dtype)));
    if (raw == NULL) {
        return NPU_ERR_NO_MEMORY;
    }
    for (uint64_t i = 0; i < count; i++) {
        put_raw(raw, i, values[i], d->dtype);
    }
    uint32_t err = transfer(x, d, d->shape, raw, 1);
    free(raw);
    return err;
}

static int32_t *alloc_output(const npu_desc_t *d)
{
    return malloc((size_t)shape_elements(d->shape) * sizeof(int32_t));
}

static int32_t at(const operand_t *t, uint32_t n, uint32_t h, uint32_t w, uint32_t c)
{
    return t->data[n * t->step[0] + h * t->step[1] + w * t->step[2] + c * t->step[3]];
}

/* ------------------------------------------------------------------------------------------------ */
/* Compressed weight streams (datasheet "Compressed weight streams"; encoder: weight_codec.py)       */
/* ------------------------------------------------------------------------------------------------ */

enum {
    WEIGHT_LITERAL_SYMBOLS = 256,
    WEIGHT_SYMBOLS = WEIGHT_LITERAL_SYMBOLS + NPU_WEIGHT_RUN_SYMBOLS,
};

/* A canonical Huffman code: how many codes each length has, and the symbols in code order. */
typedef struct {
    uint16_t count[NPU_WEIGHT_MAX_CODE_LENGTH + 1];
    uint16_t symbol[WEIGHT_SYMBOLS];
} huffman_t;

/* Builds the code from its lengths (0 = unused); fails on over-subscribed lengths or no code at all. */
static int build_huffman(const uint8_t *lengths, huffman_t *h)
{
    uint16_t next[NPU_WEIGHT_MAX_CODE_LENGTH + 2];
    memset(h->count, 0, sizeof(h->count));
    for (uint32_t s = 0; s < WEIGHT_SYMBOLS; s++) {
        h->count[lengths[s]]++;
    }
    h->count[0] = 0;
    int32_t left = 1; /* codes still available at the current length (Kraft inequality) */
    uint32_t total = 0;
    for (int len = 1; len <= NPU_WEIGHT_MAX_CODE_LENGTH; len++) {
        left = 2 * left - h->count[len];
        if (left < 0) {
            return -1;
        }
        total += h->count[len];
    }
    next[1] = 0;
    for (int len = 1; len <= NPU_WEIGHT_MAX_CODE_LENGTH; len++) {
        next[len + 1] = (uint16_t)(next[len] + h->count[len]);
    }
    for (uint32_t s = 0; s < WEIGHT_SYMBOLS; s++) {
        if (lengths[s] != 0) {
            h->symbol[next[lengths[s]]++] = (uint16_t)s;
        }
    }
    return total == 0 ? -1 : 0;
}

/* Bits of one lane, most significant bit of each byte first. */
typedef struct {
    const uint8_t *data;
    uint64_t bits;
    uint64_t pos;
} bit_reader_t;

static int read_bits(bit_reader_t *r, uint32_t count, uint32_t *value)
{
    if (r->pos + count > r->bits) {
        return -1;
    }
    uint32_t v = 0;
    for (uint32_t i = 0; i < count; i++, r->pos++) {
        v = (v << 1) | ((r->data[r->pos >> 3] >> (7 - (r->pos & 7))) & 1u);
    }
    *value = v;
    return 0;
}

/* One code, bit by bit: canonical codes of each length are consecutive, starting at `first`. */
static int read_symbol(bit_reader_t *r, const huffman_t *h, uint32_t *symbol)
{
    int32_t code = 0, first = 0, index = 0;
    for (int len = 1; len <= NPU_WEIGHT_MAX_CODE_LENGTH; len++) {
        uint32_t bit;
        if (read_bits(r, 1, &bit)) {
            return -1;
        }
        code |= (int32_t)bit;
        int32_t count = h->count[len];
        if (code - first < count) {
            *symbol = h->symbol[index + code - first];
            return 0;
        }
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1; /* no code matches (an incomplete code's unused pattern) */
}

/* Inverse of the zig-zag literal symbol: 0, 1, 2, 3, 4 ... -> difference 0, -1, +1, -2, +2 ... */
static uint8_t literal_value(uint32_t symbol, uint32_t run_value)
{
    uint32_t delta = (symbol & 1u) ? (uint32_t)(-(int32_t)((symbol + 1) / 2)) : symbol / 2;
    return (uint8_t)(run_value + delta);
}

/* Decode one lane into out[0, count); it must use all its bytes, with zero padding bits. */
static uint32_t decode_lane(const uint8_t *data, uint32_t bytes, const huffman_t *h, uint32_t run_value,
                            uint8_t *out, uint32_t count)
{
    bit_reader_t r = {data, (uint64_t)bytes * 8, 0};
    uint32_t done = 0;
    while (done < count) {
        uint32_t symbol, extra;
        if (read_symbol(&r, h, &symbol)) {
            return NPU_ERR_BAD_WEIGHTS;
        }
        if (symbol < WEIGHT_LITERAL_SYMBOLS) {
            out[done++] = literal_value(symbol, run_value);
            continue;
        }
        uint32_t k = symbol - WEIGHT_LITERAL_SYMBOLS; /* run of 2^(k+1) + (k+1 extra bits) */
        if (read_bits(&r, k + 1, &extra)) {
            return NPU_ERR_BAD_WEIGHTS;
        }
        uint32_t run = (1u << (k + 1)) + extra;
        if (run > count - done) {
            return NPU_ERR_BAD_WEIGHTS;
        }
        memset(out + done, (int)run_value, run);
        done += run;
    }
    uint32_t pad;
    if ((r.pos + 7) / 8 != bytes || read_bits(&r, (uint32_t)(r.bits - r.pos), &pad) || pad != 0) {
        return NPU_ERR_BAD_WEIGHTS;
    }
    return NPU_ERR_NONE;
}

/* Header fields of a stream (datasheet table "Stream header"). */
typedef struct {
    uint32_t run_value, literal_count, decoded_bytes;
    uint32_t lane_bytes[NPU_WEIGHT_DECODE_LANES];
    uint8_t lengths[WEIGHT_SYMBOLS];
    uint32_t data_start; /* first byte of lane 0 */
} weight_header_t;

static uint32_t parse_weight_header(const uint8_t *s, uint32_t stream_bytes, uint32_t expected, weight_header_t *hd)
{
    hd->run_value = s[1];
    hd->literal_count = get_u16(s + 2);
    hd->decoded_bytes = get_u32(s + 4);
    uint64_t lanes_total = 0;
    for (int i = 0; i < NPU_WEIGHT_DECODE_LANES; i++) {
        hd->lane_bytes[i] = get_u32(s + 8 + 4 * i);
        lanes_total += hd->lane_bytes[i];
    }
    if (s[0] != NPU_WEIGHT_STREAM_FORMAT || hd->literal_count > WEIGHT_LITERAL_SYMBOLS ||
        hd->decoded_bytes != expected) {
        return NPU_ERR_BAD_WEIGHTS;
    }
    uint32_t table_nibbles = hd->literal_count + NPU_WEIGHT_RUN_SYMBOLS;
    hd->data_start = NPU_WEIGHT_STREAM_HEADER_BYTES + (table_nibbles + 1) / 2;
    if ((uint64_t)hd->data_start + lanes_total != stream_bytes) {
        return NPU_ERR_BAD_WEIGHTS;
    }
    memset(hd->lengths, 0, sizeof(hd->lengths));
    for (uint32_t i = 0; i < table_nibbles; i++) {
        uint8_t byte = s[NPU_WEIGHT_STREAM_HEADER_BYTES + i / 2];
        uint8_t len = (i & 1u) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 15u);
        uint32_t symbol = i < hd->literal_count ? i : WEIGHT_LITERAL_SYMBOLS + (i - hd->literal_count);
        hd->lengths[symbol] = len;
    }
    return NPU_ERR_NONE;
}

/* Decode a whole stream into out[0, decoded): lane i fills [i * seg, min((i + 1) * seg, decoded)). */
static uint32_t decode_weight_stream(const uint8_t *s, uint32_t stream_bytes, uint8_t *out, uint32_t decoded)
{
    weight_header_t hd;
    huffman_t h;
    uint32_t err = parse_weight_header(s, stream_bytes, decoded, &hd);
    if (err) {
        return err;
    }
    if (build_huffman(hd.lengths, &h)) {
        return NPU_ERR_BAD_WEIGHTS;
    }
    uint32_t seg = (decoded + NPU_WEIGHT_DECODE_LANES - 1) / NPU_WEIGHT_DECODE_LANES;
    uint32_t pos = hd.data_start;
    for (uint32_t i = 0; i < NPU_WEIGHT_DECODE_LANES && !err; i++) {
        uint32_t start = i * seg < decoded ? i * seg : decoded;
        uint32_t end = start + seg < decoded ? start + seg : decoded;
        err = decode_lane(s + pos, hd.lane_bytes[i], &h, hd.run_value, out + start, end - start);
        pos += hd.lane_bytes[i];
    }
    return err;
}

/* Fetch and decode compressed weights into a dense operand (the decoded tensor is dense OHWI int8). */
static uint32_t load_compressed_weights(const exec_t *x, const conv_args_t *a, operand_t *w)
{
    const npu_desc_t *d = &a->weights;
    uint32_t decoded = (uint32_t)shape_elements(d->shape); /* <= NPU_MAX_OPERAND_BYTES (checked) */
    uint8_t *stream = malloc(a->weight_stream_bytes);
    uint8_t *raw = malloc(decoded);
    if (stream == NULL || raw == NULL) {
        free(stream);
        free(raw);
        return NPU_ERR_NO_MEMORY;
    }
    memcpy(w->shape, d->shape, sizeof(w->shape));
    w->step[3] = 1;
    w->step[2] = d->shape[DIM_C];
    w->step[1] = d->shape[DIM_W] * d->shape[DIM_C];
    w->step[0] = d->shape[DIM_H] * w->step[1];
    uint32_t err = x->env->read(x->env->ctx, desc_address(d, x->region_bases), stream, a->weight_stream_bytes)
                       ? NPU_ERR_BUS
                   : aborted(x) ? NPU_ERR_ABORTED
                                : decode_weight_stream(stream, a->weight_stream_bytes, raw, decoded);
    if (!err && (w->data = widen(raw, decoded, NPU_DTYPE_INT8)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    free(stream);
    free(raw);
    return err;
}

/* ------------------------------------------------------------------------------------------------ */
/* Convolution (CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D; fully connected is a 1x1 CONV2D)         */
/* ------------------------------------------------------------------------------------------------ */

typedef struct {
    int64_t *bias;
    int32_t *multiplier, *shift;
    double *scale; /* NPU_ROUNDING_FP64 */
} channel_params_t;

static int64_t get_i64(const uint8_t *p)
{
    uint64_t u = (uint64_t)get_u32(p) | ((uint64_t)get_u32(p + 4) << 32);
    return (u & 0x8000000000000000ull) ? -(int64_t)(~u) - 1 : (int64_t)u;
}

/*
 * Decode one record: bias (int32; int64 in the 16-byte records of 16x8 layers), then multiplier and shift,
 * or (FP64) a binary64 scale. The 16x8 requantization shifts right by 15 - shift: shift <= 14.
 */
static uint32_t decode_channel_record(const uint8_t *rec, uint32_t rounding, int wide, channel_params_t *p,
                                      uint32_t c)
{
    p->bias[c] = wide ? get_i64(rec) : get_i32(rec);
    const uint8_t *q = rec + (wide ? 8 : 4);
    if (rounding == NPU_ROUNDING_FP64) {
        p->scale[c] = get_f64(q);
        /* NaN fails both comparisons; infinity fails the second. */
        return (p->scale[c] >= 0.0 && p->scale[c] <= 1.7976931348623157e308) ? NPU_ERR_NONE : NPU_ERR_BAD_QUANT;
    }
    p->multiplier[c] = get_i32(q);
    p->shift[c] = get_i32(q + 4);
    int shift_bad = !shift_ok(p->shift[c]) || (wide && p->shift[c] > NPU_MAX_SHIFT_WIDE);
    return (p->multiplier[c] < 0 || shift_bad) ? NPU_ERR_BAD_QUANT : NPU_ERR_NONE;
}

static uint32_t load_channel_params(const exec_t *x, const npu_cmd_t *cmd, channel_params_t *p)
{
    const conv_args_t *a = &cmd->u.conv;
    uint32_t channels = a->output.shape[DIM_C];
    uint32_t records = (cmd->flags & NPU_FLAG_PER_TENSOR_PARAMS) ? 1 : channels;
    uint32_t size = record_bytes(a);
    uint8_t *raw = malloc((size_t)records * size);
    p->bias = malloc(sizeof(int64_t) * channels);
    p->multiplier = malloc(sizeof(int32_t) * channels * 2);
    p->scale = malloc(sizeof(double) * channels);
    if (raw == NULL || p->bias == NULL || p->multiplier == NULL || p->scale == NULL) {
        free(raw);
        return NPU_ERR_NO_MEMORY;
    }
    p->shift = p->multiplier + channels;
    uint32_t addr = x->region_bases[a->params.region] + a->params.offset;
    uint32_t err = x->env->read(x->env->ctx, addr, raw, records * size) ? NPU_ERR_BUS
                   : aborted(x)                                        ? NPU_ERR_ABORTED
                                                                       : NPU_ERR_NONE;
    int wide = size == NPU_CHANNEL_PARAM_BYTES_WIDE;
    for (uint32_t c = 0; c < channels && err == NPU_ERR_NONE; c++) {
        const uint8_t *rec = raw + (size_t)(records == 1 ? 0 : c) * size;
        err = decode_channel_record(rec, cmd->rounding, wide, p, c);
    }
    free(raw);
    return err;
}

/* Input coordinate of a kernel tap, or -1 when the tap falls into the padding. */
static int64_t tap_coord(uint32_t out, uint32_t stride, uint32_t pad, uint32_t k, uint32_t dilation,
                         uint32_t size)
{
    int64_t v = (int64_t)out * stride - pad + (int64_t)k * dilation;
    return (v < 0 || v >= size) ? -1 : v;
}

/* Input coordinate whose transposed window puts tap k on output `out` (out = i * stride - pad + k), or -1. */
static int64_t transposed_tap_coord(uint32_t out, uint32_t stride, uint32_t pad, uint32_t k, uint32_t size)
{
    int64_t t = (int64_t)out + pad - k;
    if (t < 0 || t % stride != 0 || t / stride >= size) {
        return -1;
    }
    return t / stride;
}

/* Input coordinate of tap k of output `out` along one axis, as the command's window defines it. */
static int64_t window_coord(const conv_args_t *a, int transposed, int vertical, uint32_t out, uint32_t k,
                            uint32_t size)
{
    uint32_t stride = vertical ? a->stride_h : a->stride_w, pad = vertical ? a->pad_top : a->pad_left;
    if (transposed) {
        return transposed_tap_coord(out, stride, pad, k, size);
    }
    return tap_coord(out, stride, pad, k, vertical ? a->dilation_h : a->dilation_w, size);
}

/* acc = sum((x + input_offset) * (w + weight_offset)) over the window, exactly (int8 products summed in 64
 * bits wrap to TFLite's int32 accumulator later). */
static int64_t conv_accumulate(const npu_cmd_t *cmd, const operand_t *in, const operand_t *w, uint32_t n,
                               uint32_t oy, uint32_t ox, uint32_t oc)
{
    const conv_args_t *a = &cmd->u.conv;
    int depthwise = cmd->opcode == NPU_OP_DEPTHWISE_CONV2D;
    int transposed = cmd->opcode == NPU_OP_TRANSPOSE_CONV2D;
    int64_t acc = 0;
    uint32_t kh = w->shape[DIM_H], kw = w->shape[DIM_W];
    uint32_t channels = depthwise ? 1 : in->shape[DIM_C];
    uint32_t first_ic = depthwise ? oc / a->depth_multiplier : 0;
    for (uint32_t ky = 0; ky < kh; ky++) {
        int64_t iy = window_coord(a, transposed, 1, oy, ky, in->shape[DIM_H]);
        if (iy < 0) {
            continue;
        }
        for (uint32_t kx = 0; kx < kw; kx++) {
            int64_t ix = window_coord(a, transposed, 0, ox, kx, in->shape[DIM_W]);
            if (ix < 0) {
                continue;
            }
            for (uint32_t i = 0; i < channels; i++) {
                int64_t xv = at(in, n, (uint32_t)iy, (uint32_t)ix, first_ic + i) + a->input_offset;
                int64_t wv = depthwise ? at(w, 0, ky, kx, oc) : at(w, oc, ky, kx, i);
                acc += xv * (wv + a->weight_offset);
            }
        }
    }
    return acc;
}

/*
 * Bias and requantization of one accumulator. int8 input: TFLite's int32 accumulator (wrapping) and the
 * 32-bit requantization of the rounding field. 16x8: the int64 accumulator, then TFLite's 64-bit
 * MultiplyByQuantizedMultiplier (the same in both integer roundings) or, FP64, round(double(acc) * scale).
 */
static int32_t requantize_channel(const channel_params_t *p, uint32_t c, int64_t acc, uint32_t rounding, int wide)
{
    if (wide) {
        int64_t total = (int64_t)((uint64_t)acc + (uint64_t)p->bias[c]);
        if (rounding == NPU_ROUNDING_FP64) {
            return edgesdk_round_fp64((double)total * p->scale[c]);
        }
        return edgesdk_mbqm64(total, p->multiplier[c], p->shift[c]);
    }
    int32_t total = (int32_t)((uint32_t)(uint64_t)acc + (uint32_t)p->bias[c]);
    if (rounding == NPU_ROUNDING_FP64) {
        return edgesdk_requantize_fp64(total, p->scale[c]);
    }
    return edgesdk_requantize(total, p->multiplier[c], p->shift[c], (int)rounding);
}

static void conv_compute(const npu_cmd_t *cmd, const operand_t *in, const operand_t *w,
                         const channel_params_t *p, int32_t *out)
{
    const conv_args_t *a = &cmd->u.conv;
    const uint32_t *o = a->output.shape;
    int wide = a->input.dtype == NPU_DTYPE_INT16;
    size_t pos = 0;
    for (uint32_t n = 0; n < o[DIM_N]; n++) {
        for (uint32_t oy = 0; oy < o[DIM_H]; oy++) {
            for (uint32_t ox = 0; ox < o[DIM_W]; ox++) {
                for (uint32_t oc = 0; oc < o[DIM_C]; oc++) {
                    int64_t acc = conv_accumulate(cmd, in, w, n, oy, ox, oc);
                    int32_t v = requantize_channel(p, oc, acc, cmd->rounding, wide);
                    v = (int32_t)((uint32_t)v + (uint32_t)a->output_offset);
                    out[pos++] = edgesdk_clamp_i32(v, a->act_min, a->act_max);
                }
            }
        }
    }
}

static uint32_t run_conv(const exec_t *x, const npu_cmd_t *cmd)
{
    const conv_args_t *a = &cmd->u.conv;
    operand_t in = {0}, w = {0};
    channel_params_t p = {0};
    int32_t *out = NULL;
    uint32_t err = load_operand(x, &a->input, &in);
    if (!err) {
        err = (cmd->flags & NPU_FLAG_COMPRESSED_WEIGHTS) ? load_compressed_weights(x, a, &w)
                                                        : load_operand(x, &a->weights, &w);
    }
    if (!err) {
        err = load_channel_params(x, cmd, &p);
    }
    if (!err && (out = alloc_output(&a->output)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        conv_compute(cmd, &in, &w, &p, out);
        err = store_output(x, &a->output, out);
    }
    free(in.data);
    free(w.data);
    free(p.bias);
    free(p.multiplier);
    free(p.scale);
    free(out);
    return err;
}

/* ------------------------------------------------------------------------------------------------ */
/* Pooling                                                                                           */
/* ------------------------------------------------------------------------------------------------ */

/* TFLite int8/int16 average: round half away from zero with C truncating division. */
static int32_t average_half_away(int32_t sum, int32_t n)
{
    return sum > 0 ? (sum + n / 2) / n : (sum - n / 2) / n;
}

/* TFLite uint8 average (sum + n/2) / n on non-negative sums; after the -128 shift: a floor division. */
static int32_t average_floor(int32_t sum, int32_t n)
{
    int32_t t = sum + n / 2;
    int32_t q = t / n;
    return (t % n != 0 && t < 0) ? q - 1 : q;
}

static int32_t pool_one(const npu_cmd_t *cmd, const operand_t *in, uint32_t n, uint32_t oy, uint32_t ox, uint32_t c)
{
    const pool_args_t *a = &cmd->u.pool;
    int is_max = cmd->opcode == NPU_OP_MAX_POOL;
    int32_t count = 0, max = INT32_MIN;
    uint32_t sum = 0; /* TFLite's int32 sum; wraps only for int16 windows of more than 65536 taps */
    for (uint32_t ky = 0; ky < a->filter_h; ky++) {
        int64_t iy = tap_coord(oy, a->stride_h, a->pad_top, ky, 1, in->shape[DIM_H]);
        for (uint32_t kx = 0; kx < a->filter_w && iy >= 0; kx++) {
            int64_t ix = tap_coord(ox, a->stride_w, a->pad_left, kx, 1, in->shape[DIM_W]);
            if (ix < 0) {
                continue;
            }
            int32_t v = at(in, n, (uint32_t)iy, (uint32_t)ix, c);
            sum += (uint32_t)v;
            max = v > max ? v : max;
            count++;
        }
    }
    int32_t result;
    if (is_max) {
        result = max;
    } else {
        /* count >= 1: check_window guarantees each window overlaps the input */
        int32_t total = (int32_t)sum;
        result = (cmd->flags & NPU_FLAG_AVG_FLOOR) ? average_floor(total, count) : average_half_away(total, count);
    }
    return edgesdk_clamp_i32(result, a->act_min, a->act_max);
}

static uint32_t run_pool(const exec_t *x, const npu_cmd_t *cmd)
{
    const pool_args_t *a = &cmd->u.pool;
    const uint32_t *o = a->output.shape;
    operand_t in = {0};
    int32_t *out = NULL;
    uint32_t err = load_operand(x, &a->input, &in);
    if (!err && (out = alloc_output(&a->output)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        size_t pos = 0;
        for (uint32_t n = 0; n < o[DIM_N]; n++) {
            for (uint32_t oy = 0; oy < o[DIM_H]; oy++) {
                for (uint32_t ox = 0; ox < o[DIM_W]; ox++) {
                    for (uint32_t c = 0; c < o[DIM_C]; c++) {
                        out[pos++] = pool_one(cmd, &in, n, oy, ox, c);
                    }
                }
            }
        }
        err = store_output(x, &a->output, out);
    }
    free(in.data);
    free(out);
    return err;
}

/* ------------------------------------------------------------------------------------------------ */
/* Elementwise ADD / SUB / MUL / MIN / MAX (TFLite reference; broadcasting through zero strides)    */
/* ------------------------------------------------------------------------------------------------ */

/* One input of ADD/SUB: (x + offset) << left_shift, rescaled onto the common scale. */
static int32_t rescaled_input(int32_t x, int32_t offset, uint32_t left_shift, int32_t multiplier, int32_t shift,
                              int rounding)
{
    int32_t shifted = (int32_t)((uint32_t)(x + offset) << left_shift);
    return edgesdk_requantize(shifted, multiplier, shift, rounding);
}

static int32_t eltwise_one(const npu_cmd_t *cmd, int32_t x1, int32_t x2)
{
    const eltwise_args_t *a = &cmd->u.elt;
    int rounding = (int)cmd->rounding;
    int32_t v1 = x1 + a->input1_offset, v2 = x2 + a->input2_offset;
    switch (cmd->opcode) {
    case NPU_OP_MUL:
        return edgesdk_requantize((int32_t)((uint32_t)v1 * (uint32_t)v2), a->output_multiplier, a->output_shift,
                                  rounding);
    case NPU_OP_MIN: return v1 < v2 ? v1 : v2;
    case NPU_OP_MAX: return v1 > v2 ? v1 : v2;
    default: break;
    }
    int32_t s1 = rescaled_input(x1, a->input1_offset, a->left_shift, a->input1_multiplier, a->input1_shift, rounding);
    int32_t s2 = rescaled_input(x2, a->input2_offset, a->left_shift, a->input2_multiplier, a->input2_shift, rounding);
    uint32_t combined = cmd->opcode == NPU_OP_SUB ? (uint32_t)s1 - (uint32_t)s2 : (uint32_t)s1 + (uint32_t)s2;
    return edgesdk_requantize((int32_t)combined, a->output_multiplier, a->output_shift, rounding);
}

static uint32_t run_eltwise(const exec_t *x, const npu_cmd_t *cmd)
{
    const eltwise_args_t *a = &cmd->u.elt;
    const uint32_t *o = a->output.shape;
    operand_t in1 = {0}, in2 = {0};
    int32_t *out = NULL;
    uint32_t err = load_operand(x, &a->input1, &in1);
    if (!err) {
        err = load_operand(x, &a->input2, &in2);
    }
    if (!err && (out = alloc_output(&a->output)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        size_t pos = 0;
        for (uint32_t n = 0; n < o[DIM_N]; n++) {
            for (uint32_t h = 0; h < o[DIM_H]; h++) {
                for (uint32_t w = 0; w < o[DIM_W]; w++) {
                    for (uint32_t c = 0; c < o[DIM_C]; c++) {
                        int32_t v = eltwise_one(cmd, at(&in1, n, h, w, c), at(&in2, n, h, w, c));
                        v = (int32_t)((uint32_t)v + (uint32_t)a->output_offset);
                        out[pos++] = edgesdk_clamp_i32(v, a->act_min, a->act_max);
                    }
                }
            }
        }
        err = store_output(x, &a->output, out);
    }
    free(in1.data);
    free(in2.data);
    free(out);
    return err;
}

/* ------------------------------------------------------------------------------------------------ */
/* Table lookup (int8: 256 entries; int16: 513 entries with TFLite's LUTLookup interpolation)        */
/* ------------------------------------------------------------------------------------------------ */

/* floor(v / 2^n) for any sign (an arithmetic right shift, written without implementation-defined shifts). */
static int32_t shift_right_floor(int32_t v, int n)
{
    return v >= 0 ? v >> n : -(int32_t)((((uint32_t)(-(v + 1))) >> n) + 1);
}

/* Wrap to int16, as TFLite's static_cast<int16_t> does on its targets. */
static int32_t wrap16(int32_t v)
{
    uint32_t u = (uint32_t)v & 0xFFFFu;
    return (int32_t)u - ((u & 0x8000u) ? 65536 : 0);
}

/* TFLite's LUTLookup(int16_t): base lut[256 + (x >> 7)], slope to the next entry, 7 fractional bits of x. */
static int32_t lookup16(const int32_t *lut, int32_t x)
{
    int32_t index = 256 + shift_right_floor(x, 7);
    int32_t offset = x & 0x7f;
    int32_t base = lut[index];
    int32_t slope = wrap16(lut[index + 1] - lut[index]);
    int32_t delta = shift_right_floor(slope * offset + 64, 7);
    return wrap16(base + delta);
}

static uint32_t run_table(const exec_t *x, const npu_cmd_t *cmd)
{
    const table_args_t *a = &cmd->u.table;
    const uint32_t *o = a->output.shape;
    uint32_t dtype = a->input.dtype, entries = table_entries(dtype);
    uint64_t bytes = table_bytes(a);
    operand_t in = {0};
    int32_t *out = NULL, *lut = NULL;
    uint8_t *raw = malloc((size_t)bytes);
    uint32_t err = raw == NULL ? NPU_ERR_NO_MEMORY
                   : x->env->read(x->env->ctx, x->region_bases[a->table.region] + a->table.offset, raw,
                                  (uint32_t)bytes) ? NPU_ERR_BUS
                   : aborted(x) ? NPU_ERR_ABORTED : NPU_ERR_NONE;
    if (!err && (lut = widen(raw, (uint64_t)a->table_count * entries, dtype)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        err = load_operand(x, &a->input, &in);
    }
    if (!err && (out = alloc_output(&a->output)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        size_t pos = 0;
        for (uint32_t n = 0; n < o[DIM_N]; n++) {
            for (uint32_t h = 0; h < o[DIM_H]; h++) {
                for (uint32_t w = 0; w < o[DIM_W]; w++) {
                    for (uint32_t c = 0; c < o[DIM_C]; c++) {
                        const int32_t *t = lut + (size_t)(a->table_count == 1 ? 0 : c) * entries;
                        int32_t v = at(&in, n, h, w, c);
                        out[pos++] = dtype == NPU_DTYPE_INT16 ? lookup16(t, v) : t[(uint32_t)v & 0xFFu];
                    }
                }
            }
        }
        err = store_output(x, &a->output, out);
    }
    free(raw);
    free(lut);
    free(in.data);
    free(out);
    return err;
}

/* ------------------------------------------------------------------------------------------------ */
/* Data movement: DMA copy, row/column gather                                                         */
/* ------------------------------------------------------------------------------------------------ */

static uint32_t run_dma(const exec_t *x, const npu_cmd_t *cmd)
{
    const dma_args_t *a = &cmd->u.dma;
    const uint32_t *o = a->dst.shape;
    operand_t src = {0};
    int32_t *out = NULL;
    uint32_t err = load_operand(x, &a->src, &src);
    if (!err && (out = alloc_output(&a->dst)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        size_t pos = 0;
        for (uint32_t n = 0; n < o[DIM_N]; n++) {
            for (uint32_t h = 0; h < o[DIM_H]; h++) {
                for (uint32_t w = 0; w < o[DIM_W]; w++) {
                    for (uint32_t c = 0; c < o[DIM_C]; c++) {
                        out[pos++] = at(&src, n, h, w, c);
                    }
                }
            }
        }
        err = store_output(x, &a->dst, out);
    }
    free(src.data);
    free(out);
    return err;
}

/* The row and column maps of a GATHER_HW command: u16 each, every entry inside the source (else BAD_INDEX). */
static uint32_t load_gather_maps(const exec_t *x, const gather_args_t *a, uint32_t *rows, uint32_t *cols)
{
    uint32_t oh = a->dst.shape[DIM_H], ow = a->dst.shape[DIM_W];
    uint64_t bytes = gather_map_bytes(a);
    uint8_t *raw = malloc((size_t)bytes);
    if (raw == NULL) {
        return NPU_ERR_NO_MEMORY;
    }
    uint32_t err = x->env->read(x->env->ctx, x->region_bases[a->maps.region] + a->maps.offset, raw, (uint32_t)bytes)
                       ? NPU_ERR_BUS
                   : aborted(x) ? NPU_ERR_ABORTED : NPU_ERR_NONE;
    for (uint32_t y = 0; y < oh && !err; y++) {
        rows[y] = get_u16(raw + 2 * y);
        err = rows[y] < a->src.shape[DIM_H] ? NPU_ERR_NONE : NPU_ERR_BAD_INDEX;
    }
    for (uint32_t c = 0; c < ow && !err; c++) {
        cols[c] = get_u16(raw + 2 * ((size_t)oh + c));
        err = cols[c] < a->src.shape[DIM_W] ? NPU_ERR_NONE : NPU_ERR_BAD_INDEX;
    }
    free(raw);
    return err;
}

static uint32_t run_gather(const exec_t *x, const npu_cmd_t *cmd)
{
    const gather_args_t *a = &cmd->u.gather;
    const uint32_t *o = a->dst.shape;
    operand_t src = {0};
    int32_t *out = NULL;
    uint32_t *rows = malloc(sizeof(uint32_t) * ((size_t)o[DIM_H] + o[DIM_W]));
    uint32_t err = rows == NULL ? NPU_ERR_NO_MEMORY : load_gather_maps(x, a, rows, rows + o[DIM_H]);
    if (!err) {
        err = load_operand(x, &a->src, &src);
    }
    if (!err && (out = alloc_output(&a->dst)) == NULL) {
        err = NPU_ERR_NO_MEMORY;
    }
    if (!err) {
        const uint32_t *cols = rows + o[DIM_H];
        size_t pos = 0;
        for (uint32_t n = 0; n < o[DIM_N]; n++) {
            for (uint32_t h = 0; h < o[DIM_H]; h++) {
                for (uint32_t w = 0; w < o[DIM_W]; w++) {
                    for (uint32_t c = 0; c < o[DIM_C]; c++) {
                        out[pos++] = at(&src, n, rows[h], cols[w], c);
                    }
                }
            }
        }
        err = store_output(x, &a->dst, out);
    }
    free(rows);
    free(src.data);
    free(out);
    return err;
}

static uint32_t run_command(const exec_t *x, const npu_cmd_t *cmd)
{
    if (is_conv(cmd->opcode)) {
        return run_conv(x, cmd);
    }
    if (is_eltwise(cmd->opcode)) {
        return run_eltwise(x, cmd);
    }
    switch (cmd->opcode) {
    case NPU_OP_MAX_POOL:
    case NPU_OP_AVG_POOL: return run_pool(x, cmd);
    case NPU_OP_TABLE: return run_table(x, cmd);
    case NPU_OP_DMA_COPY: return run_dma(x, cmd);
    case NPU_OP_GATHER_HW: return run_gather(x, cmd);
    default: return NPU_ERR_NONE; /* END */
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* Table execution                                                                                   */
/* ------------------------------------------------------------------------------------------------ */

static uint32_t fail(npu_result_t *r, uint32_t code, uint32_t command)
{
    r->error_code = code;
    r->error_command = command;
    return code;
}

static uint32_t check_table_header(const uint8_t *t, uint32_t table_bytes, uint32_t *num_commands)
{
    if (get_u32(t) != NPU_TABLE_MAGIC) {
        return NPU_ERR_TABLE_MAGIC;
    }
    if (get_u16(t + 4) != NPU_VERSION_MAJOR) {
        return NPU_ERR_TABLE_VERSION;
    }
    *num_commands = get_u32(t + 8);
    if (get_u32(t + 12) != table_bytes || *num_commands < 1 || *num_commands > NPU_MAX_COMMANDS) {
        return NPU_ERR_TABLE_SIZE;
    }
    return NPU_ERR_NONE;
}

/* Pass 1: every command decodes, passes its static checks, and END is exactly the last one. */
static uint32_t validate_table(const uint8_t *t, uint32_t table_bytes, uint32_t num_commands,
                               const uint32_t *region_bases, npu_result_t *r)
{
    uint32_t pos = NPU_TABLE_HEADER_BYTES;
    npu_cmd_t cmd;
    for (uint32_t i = 0; i < num_commands; i++) {
        uint32_t err = decode_command(t + pos, table_bytes - pos, &cmd);
        if (!err) {
            err = check_command(&cmd, region_bases);
        }
        if (!err && (cmd.opcode == NPU_OP_END) != (i == num_commands - 1)) {
            err = NPU_ERR_NO_END;
        }
        if (err) {
            return fail(r, err, i);
        }
        pos += cmd.size;
    }
    return pos == table_bytes ? NPU_ERR_NONE : fail(r, NPU_ERR_TABLE_SIZE, NPU_NO_COMMAND);
}

/* Pass 2: run the (already validated) commands in order. */
static uint32_t execute_commands(const exec_t *x, const uint8_t *t, uint32_t table_bytes, uint32_t num_commands,
                                 npu_result_t *r)
{
    uint32_t pos = NPU_TABLE_HEADER_BYTES;
    npu_cmd_t cmd;
    for (uint32_t i = 0; i < num_commands; i++) {
        decode_command(t + pos, table_bytes - pos, &cmd);
        uint32_t err = aborted(x) ? NPU_ERR_ABORTED : run_command(x, &cmd);
        if (err) {
            return fail(r, err, i);
        }
        cmd_cost_t cost;
        command_cost(x->env, &cmd, x->region_bases, &cost);
        uint64_t cycles_before = r->cycles;
        account(r, &cost);
        if (x->env->observer != NULL) {
            x->env->observer(x->env->observer_ctx, i, r->cycles - cycles_before);
        }
        pos += cmd.size;
    }
    return NPU_ERR_NONE;
}

uint32_t npu_execute_table(const npu_env_t *env, uint32_t table_addr, uint32_t table_bytes,
                           const uint32_t region_bases[NPU_NUM_REGIONS], npu_result_t *result)
{
    memset(result, 0, sizeof(*result));
    result->error_command = NPU_NO_COMMAND;
    if (env->read == NULL || env->write == NULL) {
        return fail(result, NPU_ERR_NO_BUS, NPU_NO_COMMAND);
    }
    if (table_bytes < NPU_TABLE_HEADER_BYTES + NPU_CMD_BYTES_END || table_bytes > NPU_MAX_TABLE_BYTES ||
        (uint64_t)table_addr + table_bytes - 1 > UINT32_MAX) {
        return fail(result, NPU_ERR_TABLE_SIZE, NPU_NO_COMMAND);
    }
    uint8_t *table = malloc(table_bytes);
    if (table == NULL) {
        return fail(result, NPU_ERR_NO_MEMORY, NPU_NO_COMMAND);
    }
    uint32_t bases[NPU_NUM_REGIONS];
    memcpy(bases, region_bases, sizeof(bases)); /* a reset during the run must not change them */
    exec_t x = {env, bases};
    uint32_t num_commands = 0, err;
    if (env->read(env->ctx, table_addr, table, table_bytes)) {
        fail(result, NPU_ERR_BUS, NPU_NO_COMMAND);
    } else if ((err = check_table_header(table, table_bytes, &num_commands))) {
        fail(result, err, NPU_NO_COMMAND);
    } else if (validate_table(table, table_bytes, num_commands, bases, result) == NPU_ERR_NONE) {
        execute_commands(&x, table, table_bytes, num_commands, result);
    }
    free(table);
    return result->error_code;
}

uint32_t npu_validate_table(const uint8_t *table, uint32_t table_addr, uint32_t table_bytes,
                            const uint32_t region_bases[NPU_NUM_REGIONS], npu_result_t *result)
{
    memset(result, 0, sizeof(*result));
    result->error_command = NPU_NO_COMMAND;
    if (table_bytes < NPU_TABLE_HEADER_BYTES + NPU_CMD_BYTES_END || table_bytes > NPU_MAX_TABLE_BYTES ||
        (uint64_t)table_addr + table_bytes - 1 > UINT32_MAX) {
        return fail(result, NPU_ERR_TABLE_SIZE, NPU_NO_COMMAND);
    }
    uint32_t num_commands = 0, err;
    if ((err = check_table_header(table, table_bytes, &num_commands))) {
        return fail(result, err, NPU_NO_COMMAND);
    }
    return validate_table(table, table_bytes, num_commands, region_bases, result);
}

/* ------------------------------------------------------------------------------------------------ */
/* Register file                                                                                     */
/* ------------------------------------------------------------------------------------------------ */

struct npu_device {
    uint32_t status;
    uint32_t error_command;
    uint32_t irq_status;
    uint32_t irq_enable;
    uint32_t cmd_base;
    uint32_t cmd_size;
    uint32_t region_base[NPU_NUM_REGIONS];
    npu_result_t perf;
    npu_bus_read_fn read;
    npu_bus_write_fn write;
    void *bus_ctx;
    npu_memory_class_t classes[NPU_MAX_MEMORY_CLASSES];
    uint32_t num_classes;
    int running;
    volatile uint32_t abort_request;
    npu_command_observer_fn observer;
    void *observer_ctx;
};

/* Soft reset: every register to its reset value; the bus binding and memory classes are wiring, kept. */
static void reset_registers(npu_device_t *dev)
{
    dev->status = 0;
    dev->error_command = 0;
    dev->irq_status = 0;
    dev->irq_enable = 0;
    dev->cmd_base = 0;
    dev->cmd_size = 0;
    memset(dev->region_base, 0, sizeof(dev->region_base));
    memset(&dev->perf, 0, sizeof(dev->perf));
}

npu_device_t *npu_create(void)
{
    npu_device_t *dev = calloc(1, sizeof(*dev));
    if (dev != NULL) {
        reset_registers(dev);
    }
    return dev;
}

void npu_destroy(npu_device_t *dev) { free(dev); }

void npu_set_bus(npu_device_t *dev, npu_bus_read_fn read, npu_bus_write_fn write, void *ctx)
{
    dev->read = read;
    dev->write = write;
    dev->bus_ctx = ctx;
}

int npu_set_memory_class(npu_device_t *dev, uint32_t base, uint32_t size, uint32_t kind,
                         uint32_t bytes_per_cycle_x256)
{
    if (dev->num_classes >= NPU_MAX_MEMORY_CLASSES || size == 0 || bytes_per_cycle_x256 == 0 ||
        kind > NPU_MEM_KIND_FLASH) {
        return -1;
    }
    npu_memory_class_t *m = &dev->classes[dev->num_classes++];
    m->base = base;
    m->size = size;
    m->kind = kind;
    m->bytes_per_cycle_x256 = bytes_per_cycle_x256;
    return 0;
}

void npu_clear_memory_classes(npu_device_t *dev) { dev->num_classes = 0; }

void npu_set_command_observer(npu_device_t *dev, npu_command_observer_fn observer, void *ctx)
{
    dev->observer = observer;
    dev->observer_ctx = ctx;
}

static uint32_t saturate32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

static void start(npu_device_t *dev)
{
    if (dev->running) {
        return; /* START from a bus callback during a run: ignored */
    }
    npu_env_t env = {dev->read, dev->write, dev->bus_ctx, dev->classes, dev->num_classes, &dev->abort_request,
                     dev->observer, dev->observer_ctx};
    npu_result_t result;
    dev->running = 1;
    dev->abort_request = 0;
    dev->status = NPU_STATUS_BUSY;
    uint32_t err = npu_execute_table(&env, dev->cmd_base, dev->cmd_size, dev->region_base, &result);
    dev->running = 0;
    dev->perf = result;
    dev->error_command = result.error_command;
    if (err == NPU_ERR_NONE) {
        dev->status = NPU_STATUS_DONE;
        dev->irq_status |= NPU_IRQ_DONE;
    } else {
        dev->status = NPU_STATUS_ERROR | (err << NPU_STATUS_ERROR_CODE_SHIFT);
        dev->irq_status |= NPU_IRQ_ERROR;
    }
}

uint32_t npu_reg_read(npu_device_t *dev, uint32_t offset)
{
    if (offset >= NPU_REG_REGION_BASE0 && offset < NPU_REG_REGION_BASE0 + 4 * NPU_NUM_REGIONS &&
        offset % 4 == 0) {
        return dev->region_base[(offset - NPU_REG_REGION_BASE0) / 4];
    }
    switch (offset) {
    case NPU_REG_ID: return NPU_ID_VALUE;
    case NPU_REG_VERSION: return NPU_VERSION_VALUE;
    case NPU_REG_STATUS: return dev->status;
    case NPU_REG_ERROR_COMMAND: return dev->error_command;
    case NPU_REG_IRQ_STATUS: return dev->irq_status;
    case NPU_REG_IRQ_ENABLE: return dev->irq_enable;
    case NPU_REG_CMD_BASE: return dev->cmd_base;
    case NPU_REG_CMD_SIZE: return dev->cmd_size;
    case NPU_REG_PERF_CYCLES_LO: return (uint32_t)dev->perf.cycles;
    case NPU_REG_PERF_CYCLES_HI: return (uint32_t)(dev->perf.cycles >> 32);
    case NPU_REG_PERF_MACS_LO: return (uint32_t)dev->perf.macs;
    case NPU_REG_PERF_MACS_HI: return (uint32_t)(dev->perf.macs >> 32);
    case NPU_REG_PERF_COMMANDS: return dev->perf.commands;
    case NPU_REG_PERF_SRAM_READ_BYTES: return saturate32(dev->perf.sram_read_bytes);
    case NPU_REG_PERF_FLASH_READ_BYTES: return saturate32(dev->perf.flash_read_bytes);
    case NPU_REG_PERF_WRITE_BYTES: return saturate32(dev->perf.write_bytes);
    default: return 0; /* CTRL, IRQ_CLEAR (write-only) and unused offsets */
    }
}

static void write_ctrl(npu_device_t *dev, uint32_t value)
{
    if (value & NPU_CTRL_RESET) {
        if (dev->running) {
            dev->abort_request = 1; /* the run stops at its next bus transfer with NPU_ERR_ABORTED */
        }
        reset_registers(dev);
        return; /* START in the same write is ignored */
    }
    if (value & NPU_CTRL_START) {
        start(dev);
    }
}

void npu_reg_write(npu_device_t *dev, uint32_t offset, uint32_t value)
{
    if (offset >= NPU_REG_REGION_BASE0 && offset < NPU_REG_REGION_BASE0 + 4 * NPU_NUM_REGIONS &&
        offset % 4 == 0) {
        dev->region_base[(offset - NPU_REG_REGION_BASE0) / 4] = value;
        return;
    }
    switch (offset) {
    case NPU_REG_CTRL: write_ctrl(dev, value); break;
    case NPU_REG_IRQ_CLEAR: dev->irq_status &= ~value; break;
    case NPU_REG_IRQ_ENABLE: dev->irq_enable = value & (NPU_IRQ_DONE | NPU_IRQ_ERROR); break;
    case NPU_REG_CMD_BASE: dev->cmd_base = value; break;
    case NPU_REG_CMD_SIZE: dev->cmd_size = value; break;
    default: break; /* read-only and unused offsets ignore writes */
    }
}

int npu_irq_pending(npu_device_t *dev) { return (dev->irq_status & dev->irq_enable) != 0; }

/* ---- State for snapshots (Renode saves the emulation; edgesdk/renode/EdgesdkNpu1.cs) -------------------
 * The register file as a flat array of words, in a fixed order. The bus binding and the memory classes are
 * wiring, which the owner declares again after creating a device; they are not part of the state. */
enum { NPU_STATE_FIXED_WORDS = 6, NPU_STATE_PERF_WORDS = 13 };

uint32_t npu_state_words(void) { return NPU_STATE_FIXED_WORDS + NPU_NUM_REGIONS + NPU_STATE_PERF_WORDS; }

static void put64(uint32_t **w, uint64_t v)
{
    *(*w)++ = (uint32_t)v;
    *(*w)++ = (uint32_t)(v >> 32);
}

static uint64_t get64(const uint32_t **w)
{
    uint64_t lo = *(*w)++;
    uint64_t hi = *(*w)++;
    return lo | (hi << 32);
}

void npu_save_state(const npu_device_t *dev, uint32_t *words)
{
    uint32_t *w = words;
    *w++ = dev->status;
    *w++ = dev->error_command;
    *w++ = dev->irq_status;
    *w++ = dev->irq_enable;
    *w++ = dev->cmd_base;
    *w++ = dev->cmd_size;
    for (uint32_t i = 0; i < NPU_NUM_REGIONS; i++) {
        *w++ = dev->region_base[i];
    }
    *w++ = dev->perf.error_code;
    *w++ = dev->perf.error_command;
    put64(&w, dev->perf.cycles);
    put64(&w, dev->perf.macs);
    *w++ = dev->perf.commands;
    put64(&w, dev->perf.sram_read_bytes);
    put64(&w, dev->perf.flash_read_bytes);
    put64(&w, dev->perf.write_bytes);
}

int npu_restore_state(npu_device_t *dev, const uint32_t *words, uint32_t count)
{
    if (count != npu_state_words() || dev->running) {
        return -1;
    }
    const uint32_t *w = words;
    dev->status = *w++;
    dev->error_command = *w++;
    dev->irq_status = *w++;
    dev->irq_enable = *w++ & (NPU_IRQ_DONE | NPU_IRQ_ERROR);
    dev->cmd_base = *w++;
    dev->cmd_size = *w++;
    for (uint32_t i = 0; i < NPU_NUM_REGIONS; i++) {
        dev->region_base[i] = *w++;
    }
    dev->perf.error_code = *w++;
    dev->perf.error_command = *w++;
    dev->perf.cycles = get64(&w);
    dev->perf.macs = get64(&w);
    dev->perf.commands = *w++;
    dev->perf.sram_read_bytes = get64(&w);
    dev->perf.flash_read_bytes = get64(&w);
    dev->perf.write_bytes = get64(&w);
    return 0;
}
