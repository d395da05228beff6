/*
 * dsp_model.c - C model of the DSP-1 vector DSP (dsp_model.h, docs/dsp-datasheet.md).
 *
 * One CTRL.START = one kernel: fetch and check the parameter record, map the operands (in place through
 * a direct window, or staged through the bus callbacks), compute, count cycles. The arithmetic is the
 * kernel library's (edgesdk/kernels), so the DSP rounds exactly as the host C target and TFLite's
 * reference kernels do; what this file adds is the hardware: the register file, the record format, the
 * checks a bus master needs (every byte it touches inside memory, inside the operand sizes the host
 * programmed) and the cycle counter.
 */
#include "dsp_model.h"

#include <stdlib.h>
#include <string.h>

#include "edgesdk_add.h"
#include "edgesdk_arith.h"
#include "edgesdk_depthwise_conv2d.h"
#include "edgesdk_lut.h"
#include "edgesdk_mul.h"
#include "edgesdk_pool2d.h"
#include "edgesdk_softmax.h"

#define MAX_PARAM_WORDS 64
#define MAX_DIM 65535    /* any tensor dimension */
#define MAX_WINDOW 255   /* filter sizes, strides, dilations, paddings */
#define MAX_TAPS 4096    /* filter_h * filter_w of a depthwise convolution */
#define LUT_ENTRIES 256
#define NUM_REGS (DSP_REG_WINDOW_BYTES / 4)

struct dsp_window {
    uint32_t base;
    uint32_t size;
    uint8_t *host;
    int writable;
};

struct dsp_device {
    uint32_t regs[NUM_REGS]; /* the programmable registers, by offset / 4 */
    uint32_t status;
    uint32_t last_cycles;
    uint64_t cycles;
    uint32_t kernels;
    uint32_t errors;
    struct dsp_window windows[DSP_MAX_WINDOWS];
    dsp_bus_read_fn bus_read;
    dsp_bus_write_fn bus_write;
    void *bus_context;
};

/* One operand as the kernel sees it: `data` points into a direct window, or into `staging` (bus mode). */
typedef struct {
    uint8_t *data;
    uint8_t *staging;
    uint32_t address;
    uint32_t length;
    int output;
} operand;

/* The operands and parameter record of the kernel being run. */
typedef struct {
    dsp_device *dev;
    int32_t words[MAX_PARAM_WORDS];
    uint32_t num_words;
    operand ops[8];
    int num_ops;
    uint64_t lane_ops; /* work, for the cycle model */
} job;

/* ---- registers and memory --------------------------------------------------------------------------- */

static uint32_t reg(const dsp_device *dev, uint32_t offset)
{
    return dev->regs[offset / 4];
}

dsp_device *dsp_create(void)
{
    return (dsp_device *)calloc(1, sizeof(dsp_device));
}

void dsp_destroy(dsp_device *dev)
{
    free(dev);
}

int dsp_set_window(dsp_device *dev, uint32_t index, uint32_t base, uint32_t size, void *host, int writable)
{
    if (index >= DSP_MAX_WINDOWS || (size != 0 && host == 0)) {
        return -1;
    }
    dev->windows[index].base = base;
    dev->windows[index].size = size;
    dev->windows[index].host = (uint8_t *)host;
    dev->windows[index].writable = writable;
    return 0;
}

void dsp_set_bus(dsp_device *dev, dsp_bus_read_fn read, dsp_bus_write_fn write, void *context)
{
    dev->bus_read = read;
    dev->bus_write = write;
    dev->bus_context = context;
}

static const struct dsp_window *window_of(const dsp_device *dev, uint32_t address, uint32_t length)
{
    for (int i = 0; i < DSP_MAX_WINDOWS; i++) {
        const struct dsp_window *w = &dev->windows[i];
        if (w->size != 0 && address >= w->base && length <= w->size && address - w->base <= w->size - length) {
            return w;
        }
    }
    return 0;
}

/* Make [address, address + length) available to the kernel; outputs must be writable memory. */
static int map_operand(job *j, uint32_t address, uint32_t length, int output, uint8_t **data)
{
    dsp_device *dev = j->dev;
    if (length == 0 || (uint64_t)address + length > 0x100000000ull) {
        return DSP_ERR_BUS;
    }
    operand *op = &j->ops[j->num_ops];
    memset(op, 0, sizeof(*op));
    op->address = address;
    op->length = length;
    op->output = output;
    const struct dsp_window *w = window_of(dev, address, length);
    if (w != 0) {
        if (output && !w->writable) {
            return DSP_ERR_BUS;
        }
        op->data = w->host + (address - w->base);
    } else {
        if (dev->bus_read == 0 || (output && dev->bus_write == 0)) {
            return DSP_ERR_BUS;
        }
        op->staging = (uint8_t *)malloc(length);
        if (op->staging == 0) {
            return DSP_ERR_NO_MEMORY;
        }
        op->data = op->staging;
        j->num_ops++; /* owned from here on: released by release_operands */
        /* Outputs are read too, so bytes a kernel leaves alone keep their value when written back. */
        if (dev->bus_read(dev->bus_context, address, op->staging, length) != 0) {
            return DSP_ERR_BUS;
        }
        *data = op->data;
        return DSP_ERR_NONE;
    }
    j->num_ops++;
    *data = op->data;
    return DSP_ERR_NONE;
}

/* Write staged outputs back (only when the kernel ran: `commit`) and free the staging buffers. */
static int release_operands(job *j, int commit)
{
    int error = DSP_ERR_NONE;
    for (int i = 0; i < j->num_ops; i++) {
        operand *op = &j->ops[i];
        if (op->staging == 0) {
            continue;
        }
        if (commit && op->output && error == DSP_ERR_NONE &&
            j->dev->bus_write(j->dev->bus_context, op->address, op->staging, op->length) != 0) {
            error = DSP_ERR_BUS;
        }
        free(op->staging);
        op->staging = 0;
    }
    j->num_ops = 0;
    return error;
}

/* A constant of the record: CONST_BASE + ref, which must lie inside [0, CONST_BYTES). */
static int map_const(job *j, int32_t ref, uint32_t length, const uint8_t **data)
{
    const uint32_t const_bytes = reg(j->dev, DSP_REG_CONST_BYTES);
    if (ref < 0 || length > const_bytes || (uint32_t)ref > const_bytes - length) {
        return DSP_ERR_CONST_REF;
    }
    uint8_t *mapped = 0;
    const int error = map_operand(j, reg(j->dev, DSP_REG_CONST_BASE) + (uint32_t)ref, length, 0, &mapped);
    *data = mapped;
    return error;
}

/* Map SRC0 (and SRC1) and DST after the record said how many bytes each must have. */
static int map_io(job *j, uint64_t src0, uint64_t src1, uint64_t dst, const int8_t **in0, const int8_t **in1,
                  int8_t **out)
{
    const dsp_device *dev = j->dev;
    if (src0 != reg(dev, DSP_REG_SRC0_BYTES) || dst != reg(dev, DSP_REG_DST_BYTES) ||
        (in1 != 0 && src1 != reg(dev, DSP_REG_SRC1_BYTES))) {
        return DSP_ERR_PARAM;
    }
    uint8_t *p = 0;
    int error = map_operand(j, reg(dev, DSP_REG_SRC0_ADDR), (uint32_t)src0, 0, &p);
    *in0 = (const int8_t *)p;
    if (error == DSP_ERR_NONE && in1 != 0) {
        error = map_operand(j, reg(dev, DSP_REG_SRC1_ADDR), (uint32_t)src1, 0, &p);
        *in1 = (const int8_t *)p;
    }
    if (error == DSP_ERR_NONE) {
        error = map_operand(j, reg(dev, DSP_REG_DST_ADDR), (uint32_t)dst, 1, &p);
        *out = (int8_t *)p;
    }
    return error;
}

/* ---- field checks ------------------------------------------------------------------------------------ */

static int in_range(int32_t v, int32_t lo, int32_t hi)
{
    return v >= lo && v <= hi;
}

static int dims_ok(const int32_t *dims, int count)
{
    for (int i = 0; i < count; i++) {
        if (!in_range(dims[i], 1, MAX_DIM)) {
            return 0;
        }
    }
    return 1;
}

static int shift_ok(int32_t shift)
{
    return in_range(shift, -31, 30);
}

static int rounding_ok(int32_t rounding)
{
    return rounding == EDGESDK_ROUNDING_DOUBLE || rounding == EDGESDK_ROUNDING_SINGLE;
}

static int activation_ok(int32_t act_min, int32_t act_max)
{
    return in_range(act_min, -128, 127) && in_range(act_max, act_min, 127);
}

/* ---- kernels ------------------------------------------------------------------------------------------ */

/* COPY: [bytes] - a reshape that the memory plan could not alias. */
static int run_copy(job *j)
{
    const int32_t bytes = j->words[0];
    const int8_t *in = 0;
    int8_t *out = 0;
    if (bytes <= 0) {
        return DSP_ERR_PARAM;
    }
    int error = map_io(j, (uint64_t)bytes, 0, (uint64_t)bytes, &in, 0, &out);
    if (error == DSP_ERR_NONE) {
        memmove(out, in, (size_t)bytes);
        j->lane_ops = (uint64_t)bytes;
    }
    return error;
}

/* LUT: [size, table_ref] - LOGISTIC/TANH (and any int8 -> int8 function) through a 256-entry table. */
static int run_lut(job *j)
{
    const int32_t size = j->words[0];
    const uint8_t *table = 0;
    const int8_t *in = 0;
    int8_t *out = 0;
    if (size <= 0) {
        return DSP_ERR_PARAM;
    }
    int error = map_const(j, j->words[1], LUT_ENTRIES, &table);
    if (error == DSP_ERR_NONE) {
        error = map_io(j, (uint64_t)size, 0, (uint64_t)size, &in, 0, &out);
    }
    if (error == DSP_ERR_NONE) {
        const edgesdk_lut_params p = {.size = size, .table = (const int8_t *)table};
        edgesdk_lut_s8(&p, in, out);
        j->lane_ops = (uint64_t)size;
    }
    return error;
}

/* SOFTMAX: [rows, depth, input_multiplier, input_left_shift, diff_min, rounding] */
static int run_softmax(job *j)
{
    const int32_t *w = j->words;
    const edgesdk_softmax_params p = {.rows = w[0], .depth = w[1], .input_multiplier = w[2],
                                      .input_left_shift = w[3], .diff_min = w[4], .rounding = w[5]};
    const int8_t *in = 0;
    int8_t *out = 0;
    if (!dims_ok(w, 2) || !shift_ok(p.input_left_shift) || p.input_multiplier < 0 || p.diff_min > 0 ||
        !rounding_ok(p.rounding)) {
        return DSP_ERR_PARAM;
    }
    const uint64_t n = (uint64_t)p.rows * (uint64_t)p.depth;
    int error = map_io(j, n, 0, n, &in, 0, &out);
    if (error == DSP_ERR_NONE) {
        edgesdk_softmax_s8(&p, in, out);
        j->lane_ops = 3u * n + (uint64_t)p.rows * DSP_SOFTMAX_ROW_OPS;
    }
    return error;
}

/* MAX_POOL / AVERAGE_POOL: [batches, in_h, in_w, channels, out_h, out_w, filter_h, filter_w, stride_h,
 * stride_w, pad_top, pad_left, act_min, act_max, uint8_rounding] (edgesdk_pool2d_params, same order). */
static int run_pool(job *j, int average)
{
    const int32_t *w = j->words;
    const edgesdk_pool2d_params p = {.batches = w[0], .in_h = w[1], .in_w = w[2], .channels = w[3],
                                     .out_h = w[4], .out_w = w[5], .filter_h = w[6], .filter_w = w[7],
                                     .stride_h = w[8], .stride_w = w[9], .pad_top = w[10], .pad_left = w[11],
                                     .act_min = w[12], .act_max = w[13], .uint8_rounding = w[14]};
    const int8_t *in = 0;
    int8_t *out = 0;
    if (!dims_ok(w, 6) || !in_range(p.filter_h, 1, MAX_WINDOW) || !in_range(p.filter_w, 1, MAX_WINDOW) ||
        !in_range(p.stride_h, 1, MAX_WINDOW) || !in_range(p.stride_w, 1, MAX_WINDOW) ||
        !in_range(p.pad_top, 0, MAX_WINDOW) || !in_range(p.pad_left, 0, MAX_WINDOW) ||
        !activation_ok(p.act_min, p.act_max) || !in_range(p.uint8_rounding, 0, 1)) {
        return DSP_ERR_PARAM;
    }
    const uint64_t pixels_in = (uint64_t)p.batches * (uint64_t)p.in_h * (uint64_t)p.in_w;
    const uint64_t out_elements = (uint64_t)p.batches * (uint64_t)p.out_h * (uint64_t)p.out_w * (uint64_t)p.channels;
    int error = map_io(j, pixels_in * (uint64_t)p.channels, 0, out_elements, &in, 0, &out);
    if (error == DSP_ERR_NONE) {
        if (average) {
            edgesdk_average_pool2d_s8(&p, in, out);
        } else {
            edgesdk_max_pool2d_s8(&p, in, out);
        }
        j->lane_ops = out_elements * (uint64_t)p.filter_h * (uint64_t)p.filter_w;
    }
    return error;
}

/* DEPTHWISE_CONV: [batches, in_h, in_w, in_c, out_h, out_w, out_c, depth_multiplier, filter_h, filter_w,
 * stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, input_offset, filter_offset,
 * output_offset, act_min, act_max, rounding, filter_ref, bias_ref, multiplier_ref, shift_ref] */
enum { DW_FILTER_REF = 22, DW_BIAS_REF, DW_MULTIPLIER_REF, DW_SHIFT_REF };

static int depthwise_fields_ok(const edgesdk_depthwise_conv2d_params *p)
{
    return in_range(p->depth_multiplier, 1, MAX_DIM) && (int64_t)p->in_c * p->depth_multiplier == p->out_c &&
           in_range(p->filter_h, 1, MAX_WINDOW) && in_range(p->filter_w, 1, MAX_WINDOW) &&
           p->filter_h * p->filter_w <= MAX_TAPS && in_range(p->stride_h, 1, MAX_WINDOW) &&
           in_range(p->stride_w, 1, MAX_WINDOW) && in_range(p->dilation_h, 1, MAX_WINDOW) &&
           in_range(p->dilation_w, 1, MAX_WINDOW) && in_range(p->pad_top, 0, MAX_WINDOW) &&
           in_range(p->pad_left, 0, MAX_WINDOW) && in_range(p->input_offset, -255, 255) &&
           in_range(p->filter_offset, -255, 255) && in_range(p->output_offset, -255, 255) &&
           activation_ok(p->act_min, p->act_max) && rounding_ok(p->rounding);
}

static int run_depthwise(job *j)
{
    const int32_t *w = j->words;
    edgesdk_depthwise_conv2d_params p = {
        .batches = w[0], .in_h = w[1], .in_w = w[2], .in_c = w[3], .out_h = w[4], .out_w = w[5], .out_c = w[6],
        .depth_multiplier = w[7], .filter_h = w[8], .filter_w = w[9], .stride_h = w[10], .stride_w = w[11],
        .dilation_h = w[12], .dilation_w = w[13], .pad_top = w[14], .pad_left = w[15], .input_offset = w[16],
        .filter_offset = w[17], .output_offset = w[18], .act_min = w[19], .act_max = w[20], .rounding = w[21],
        .sliding = 0};
    if (!dims_ok(w, 7) || !depthwise_fields_ok(&p)) {
        return DSP_ERR_PARAM;
    }
    const uint32_t channels = (uint32_t)p.out_c;
    const uint8_t *filter = 0, *bias = 0, *multiplier = 0, *shift = 0;
    int error = map_const(j, w[DW_FILTER_REF], (uint32_t)(p.filter_h * p.filter_w) * channels, &filter);
    if (error == DSP_ERR_NONE && w[DW_BIAS_REF] != DSP_NO_REF) {
        error = map_const(j, w[DW_BIAS_REF], 4u * channels, &bias);
    }
    if (error == DSP_ERR_NONE) {
        error = map_const(j, w[DW_MULTIPLIER_REF], 4u * channels, &multiplier);
    }
    if (error == DSP_ERR_NONE) {
        error = map_const(j, w[DW_SHIFT_REF], 4u * channels, &shift);
    }
    if (error != DSP_ERR_NONE) {
        return error;
    }
    /* The kernel reads the per-channel arrays as int32: copy them to aligned memory, checking the shifts. */
    int32_t *arrays = (int32_t *)malloc(3u * channels * sizeof(int32_t));
    if (arrays == 0) {
        return DSP_ERR_NO_MEMORY;
    }
    memcpy(arrays, multiplier, 4u * channels);
    memcpy(arrays + channels, shift, 4u * channels);
    if (bias != 0) {
        memcpy(arrays + 2u * channels, bias, 4u * channels);
    }
    for (uint32_t c = 0; c < channels && error == DSP_ERR_NONE; c++) {
        if (!shift_ok(arrays[channels + c]) || arrays[c] < 0) {
            error = DSP_ERR_PARAM;
        }
    }
    const int8_t *in = 0;
    int8_t *out = 0;
    const uint64_t in_bytes = (uint64_t)p.batches * (uint64_t)p.in_h * (uint64_t)p.in_w * (uint64_t)p.in_c;
    const uint64_t out_bytes = (uint64_t)p.batches * (uint64_t)p.out_h * (uint64_t)p.out_w * channels;
    if (error == DSP_ERR_NONE) {
        error = map_io(j, in_bytes, 0, out_bytes, &in, 0, &out);
    }
    if (error == DSP_ERR_NONE) {
        p.multiplier = arrays;
        p.shift = arrays + channels;
        edgesdk_depthwise_conv2d_s8(&p, in, (const int8_t *)filter, bias != 0 ? arrays + 2u * channels : 0, out);
        j->lane_ops = out_bytes * (uint64_t)p.filter_h * (uint64_t)p.filter_w;
    }
    free(arrays);
    return error;
}

/* The broadcast walk of ADD and MUL: [broadcast, size, out_shape[6], in1_strides[6], in2_strides[6]]. */
#define BROADCAST_WORDS (2 + 3 * EDGESDK_MAX_DIMS)

/* Number of elements the walk reads from an input with these strides (its highest index + 1). */
static uint64_t broadcast_extent(const edgesdk_broadcast_shape *s, const int32_t *strides)
{
    uint64_t last = 0;
    for (int d = 0; d < EDGESDK_MAX_DIMS; d++) {
        last += (uint64_t)(s->out_shape[d] - 1) * (uint64_t)strides[d];
    }
    return last + 1;
}

static int broadcast_decode(const int32_t *w, edgesdk_broadcast_shape *s, uint64_t *extent1, uint64_t *extent2)
{
    s->broadcast = w[0];
    s->size = w[1];
    uint64_t product = 1;
    for (int d = 0; d < EDGESDK_MAX_DIMS; d++) {
        s->out_shape[d] = w[2 + d];
        s->in1_strides[d] = w[2 + EDGESDK_MAX_DIMS + d];
        s->in2_strides[d] = w[2 + 2 * EDGESDK_MAX_DIMS + d];
        if (!in_range(s->out_shape[d], 1, MAX_DIM) || s->in1_strides[d] < 0 || s->in2_strides[d] < 0) {
            return 0;
        }
        product *= (uint64_t)s->out_shape[d];
        if (product > 0x7FFFFFFFu) {
            return 0;
        }
    }
    if (!in_range(s->broadcast, 0, 1) || s->size <= 0 || product != (uint64_t)s->size) {
        return 0;
    }
    *extent1 = s->broadcast ? broadcast_extent(s, s->in1_strides) : (uint64_t)s->size;
    *extent2 = s->broadcast ? broadcast_extent(s, s->in2_strides) : (uint64_t)s->size;
    return 1;
}

/* ADD: broadcast walk, then [input1_offset, input2_offset, output_offset, left_shift, input1_multiplier,
 * input1_shift, input2_multiplier, input2_shift, output_multiplier, output_shift, act_min, act_max,
 * rounding] */
static int run_add(job *j)
{
    const int32_t *w = j->words + BROADCAST_WORDS;
    edgesdk_add_params p;
    uint64_t extent1 = 0, extent2 = 0;
    memset(&p, 0, sizeof(p));
    if (!broadcast_decode(j->words, &p.shape, &extent1, &extent2)) {
        return DSP_ERR_PARAM;
    }
    p.input1_offset = w[0];
    p.input2_offset = w[1];
    p.output_offset = w[2];
    p.left_shift = w[3];
    p.input1_multiplier = w[4];
    p.input1_shift = w[5];
    p.input2_multiplier = w[6];
    p.input2_shift = w[7];
    p.output_multiplier = w[8];
    p.output_shift = w[9];
    p.act_min = w[10];
    p.act_max = w[11];
    p.rounding = w[12];
    if (!in_range(p.input1_offset, -255, 255) || !in_range(p.input2_offset, -255, 255) ||
        !in_range(p.output_offset, -255, 255) || !in_range(p.left_shift, 0, 22) || !shift_ok(p.input1_shift) ||
        !shift_ok(p.input2_shift) || !shift_ok(p.output_shift) || p.input1_multiplier < 0 ||
        p.input2_multiplier < 0 || p.output_multiplier < 0 || !activation_ok(p.act_min, p.act_max) ||
        !rounding_ok(p.rounding)) {
        return DSP_ERR_PARAM;
    }
    const int8_t *in1 = 0, *in2 = 0;
    int8_t *out = 0;
    int error = map_io(j, extent1, extent2, (uint64_t)p.shape.size, &in1, &in2, &out);
    if (error == DSP_ERR_NONE) {
        edgesdk_add_s8(&p, in1, in2, out);
        j->lane_ops = (uint64_t)p.shape.size;
    }
    return error;
}

/* MUL: broadcast walk, then [input1_offset, input2_offset, output_offset, output_multiplier, output_shift,
 * act_min, act_max, rounding] */
static int run_mul(job *j)
{
    const int32_t *w = j->words + BROADCAST_WORDS;
    edgesdk_mul_params p;
    uint64_t extent1 = 0, extent2 = 0;
    memset(&p, 0, sizeof(p));
    if (!broadcast_decode(j->words, &p.shape, &extent1, &extent2)) {
        return DSP_ERR_PARAM;
    }
    p.input1_offset = w[0];
    p.input2_offset = w[1];
    p.output_offset = w[2];
    p.output_multiplier = w[3];
    p.output_shift = w[4];
    p.act_min = w[5];
    p.act_max = w[6];
    p.rounding = w[7];
    if (!in_range(p.input1_offset, -255, 255) || !in_range(p.input2_offset, -255, 255) ||
        !in_range(p.output_offset, -255, 255) || !shift_ok(p.output_shift) || p.output_multiplier < 0 ||
        !activation_ok(p.act_min, p.act_max) || !rounding_ok(p.rounding)) {
        return DSP_ERR_PARAM;
    }
    const int8_t *in1 = 0, *in2 = 0;
    int8_t *out = 0;
    int error = map_io(j, extent1, extent2, (uint64_t)p.shape.size, &in1, &in2, &out);
    if (error == DSP_ERR_NONE) {
        edgesdk_mul_s8(&p, in1, in2, out);
        j->lane_ops = (uint64_t)p.shape.size;
    }
    return error;
}

/* ---- one START ------------------------------------------------------------------------------------------ */

/* Parameter record size of each opcode, in int32 words (0: no such opcode). */
static uint32_t record_words(uint32_t opcode)
{
    switch (opcode) {
    case DSP_OP_COPY: return 1;
    case DSP_OP_LUT: return 2;
    case DSP_OP_SOFTMAX: return 6;
    case DSP_OP_MAX_POOL:
    case DSP_OP_AVERAGE_POOL: return 15;
    case DSP_OP_DEPTHWISE_CONV: return 26;
    case DSP_OP_ADD: return BROADCAST_WORDS + 13;
    case DSP_OP_MUL: return BROADCAST_WORDS + 8;
    default: return 0;
    }
}

static int dispatch(job *j, uint32_t opcode)
{
    switch (opcode) {
    case DSP_OP_COPY: return run_copy(j);
    case DSP_OP_LUT: return run_lut(j);
    case DSP_OP_SOFTMAX: return run_softmax(j);
    case DSP_OP_MAX_POOL: return run_pool(j, 0);
    case DSP_OP_AVERAGE_POOL: return run_pool(j, 1);
    case DSP_OP_DEPTHWISE_CONV: return run_depthwise(j);
    case DSP_OP_ADD: return run_add(j);
    case DSP_OP_MUL: return run_mul(j);
    default: return DSP_ERR_OPCODE;
    }
}

/* Fetch the parameter record from PARAM_ADDR (it must have exactly the opcode's size). */
static int fetch_record(job *j, uint32_t opcode)
{
    const uint32_t words = record_words(opcode);
    if (words == 0) {
        return DSP_ERR_OPCODE;
    }
    if (reg(j->dev, DSP_REG_PARAM_BYTES) != 4u * words) {
        return DSP_ERR_PARAM;
    }
    uint8_t *record = 0;
    int error = map_operand(j, reg(j->dev, DSP_REG_PARAM_ADDR), 4u * words, 0, &record);
    if (error == DSP_ERR_NONE) {
        memcpy(j->words, record, 4u * words); /* little-endian host, as the guest */
        j->num_words = words;
    }
    const int released = release_operands(j, 0);
    return error != DSP_ERR_NONE ? error : released;
}

static uint32_t cycles_of(uint64_t lane_ops)
{
    const uint64_t cycles = DSP_NODE_OVERHEAD_CYCLES + (lane_ops + DSP_LANES - 1) / DSP_LANES;
    return cycles > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)cycles;
}

static void start(dsp_device *dev)
{
    job *j = (job *)calloc(1, sizeof(job));
    int error = DSP_ERR_NO_MEMORY;
    if (j != 0) {
        j->dev = dev;
        const uint32_t opcode = reg(dev, DSP_REG_OPCODE);
        error = fetch_record(j, opcode);
        if (error == DSP_ERR_NONE) {
            error = dispatch(j, opcode);
        }
        const int released = release_operands(j, error == DSP_ERR_NONE);
        error = error != DSP_ERR_NONE ? error : released;
    }
    if (error == DSP_ERR_NONE) {
        dev->last_cycles = cycles_of(j->lane_ops);
        dev->cycles += dev->last_cycles;
        dev->kernels++;
        dev->status = DSP_STATUS_DONE;
    } else {
        dev->last_cycles = 0;
        dev->errors++;
        dev->status = DSP_STATUS_ERROR | ((uint32_t)error << DSP_STATUS_ERROR_CODE_SHIFT);
    }
    free(j);
}

static void reset(dsp_device *dev)
{
    memset(dev->regs, 0, sizeof(dev->regs));
    dev->status = 0;
    dev->last_cycles = 0;
    dev->cycles = 0;
    dev->kernels = 0;
    dev->errors = 0;
}

uint32_t dsp_reg_read(dsp_device *dev, uint32_t offset)
{
    switch (offset) {
    case DSP_REG_ID: return DSP_ID_VALUE;
    case DSP_REG_VERSION: return DSP_VERSION_VALUE;
    case DSP_REG_CTRL: return 0;
    case DSP_REG_STATUS: return dev->status;
    case DSP_REG_LAST_CYCLES: return dev->last_cycles;
    case DSP_REG_CYCLES_LO: return (uint32_t)dev->cycles;
    case DSP_REG_CYCLES_HI: return (uint32_t)(dev->cycles >> 32);
    case DSP_REG_KERNELS: return dev->kernels;
    case DSP_REG_ERRORS: return dev->errors;
    default: return offset < DSP_REG_WINDOW_BYTES && offset % 4 == 0 ? dev->regs[offset / 4] : 0;
    }
}

void dsp_reg_write(dsp_device *dev, uint32_t offset, uint32_t value)
{
    if (offset >= DSP_REG_WINDOW_BYTES || offset % 4 != 0) {
        return;
    }
    if (offset == DSP_REG_CTRL) {
        if (value & DSP_CTRL_RESET) {
            reset(dev);
        }
        if (value & DSP_CTRL_START) {
            start(dev);
        }
        return;
    }
    if (offset >= DSP_REG_OPCODE && offset <= DSP_REG_CONST_BYTES) { /* the rest is read-only */
        dev->regs[offset / 4] = value;
    }
}

/* ---- State for snapshots (Renode saves the emulation; edgesdk/renode/EdgesdkDsp1.cs) -------------------
 * The programmable registers (OPCODE .. CONST_BYTES, the only writable ones) and the status and counters, as
 * words in a fixed order. Windows and the bus binding are wiring, declared again by the owner. */
#define STATE_FIRST_REG (DSP_REG_OPCODE / 4)
#define STATE_REGS (DSP_REG_CONST_BYTES / 4 - STATE_FIRST_REG + 1)

uint32_t dsp_state_words(void)
{
    return STATE_REGS + 6;
}

void dsp_save_state(const dsp_device *dev, uint32_t *words)
{
    uint32_t *w = words;
    for (uint32_t i = 0; i < STATE_REGS; i++) {
        *w++ = dev->regs[STATE_FIRST_REG + i];
    }
    *w++ = dev->status;
    *w++ = dev->last_cycles;
    *w++ = (uint32_t)dev->cycles;
    *w++ = (uint32_t)(dev->cycles >> 32);
    *w++ = dev->kernels;
    *w++ = dev->errors;
}

int dsp_restore_state(dsp_device *dev, const uint32_t *words, uint32_t count)
{
    if (count != dsp_state_words()) {
        return -1;
    }
    const uint32_t *w = words;
    for (uint32_t i = 0; i < STATE_REGS; i++) {
        dev->regs[STATE_FIRST_REG + i] = *w++;
    }
    dev->status = *w++;
    dev->last_cycles = *w++;
    dev->cycles = *w++;
    dev->cycles |= (uint64_t)*w++ << 32;
    dev->kernels = *w++;
    dev->errors = *w++;
    return 0;
}
