/*
 * edgesdk_gather_axes.c - the separable data movement walk (edgesdk_gather_axes.h).
 *
 * Five nested loops over the outer output dimensions accumulate the input offset; a padded index fills its
 * whole block with the pad element at once. The innermost dimension is one memcpy when it steps by one
 * element without a table and spans at least 16 bytes, else an element loop (one per element size).
 */
#include "edgesdk_gather_axes.h"

#include <string.h>

enum { D = EDGESDK_SHAPE_MAX_DIMS };

static inline int32_t axis_offset(const edgesdk_gather_axes_params *p, int d, int32_t i)
{
    return p->table[d] ? p->table[d][i] : i * p->step[d];
}

/* The innermost dimension: a strided run (one loop per element size, no per-element dispatch) or a table. */
static uint8_t *inner_row(const edgesdk_gather_axes_params *p, const uint8_t *row, uint8_t *out, int32_t n)
{
    const int32_t *table = p->table[D - 1];
    const int32_t step = p->step[D - 1];
    const int32_t eb = p->element_bytes;
    if (table) {
        for (int32_t i = 0; i < n; i++) {
            edgesdk_copy_element(out, table[i] < 0 ? p->pad_value : row + table[i], eb);
            out += eb;
        }
        return out;
    }
    switch (eb) {
    case 1:
        for (int32_t i = 0; i < n; i++) {
            out[i] = row[i * step];
        }
        break;
    case 2: {
        uint16_t *o = (uint16_t *)(void *)out;
        for (int32_t i = 0; i < n; i++) {
            o[i] = *(const uint16_t *)(const void *)(row + i * step);
        }
        break;
    }
    case 4: {
        uint32_t *o = (uint32_t *)(void *)out;
        for (int32_t i = 0; i < n; i++) {
            o[i] = *(const uint32_t *)(const void *)(row + i * step);
        }
        break;
    }
    default:
        for (int32_t i = 0; i < n; i++) {
            edgesdk_copy_element(out + (size_t)i * (size_t)eb, row + i * step, eb);
        }
        break;
    }
    return out + (size_t)n * (size_t)eb;
}

static void gather_axes(const edgesdk_gather_axes_params *p, const uint8_t *in, uint8_t *out)
{
    const int32_t eb = p->element_bytes;
    int32_t block[D]; /* output elements under one index of dimension d */
    block[D - 1] = 1;
    for (int d = D - 2; d >= 0; d--) {
        block[d] = block[d + 1] * p->out_shape[d + 1];
    }
    const int32_t n5 = p->out_shape[D - 1];
    /* a contiguous innermost run: a block copy when it is long enough to beat the element loop */
    const int inner_run = p->table[D - 1] == 0 && p->step[D - 1] == eb && n5 * eb >= 16;
    for (int32_t i0 = 0; i0 < p->out_shape[0]; i0++) {
        const int32_t t0 = axis_offset(p, 0, i0);
        if (p->table[0] && t0 < 0) {
            edgesdk_fill_elements(out, p->pad_value, eb, block[0]);
            out += (size_t)block[0] * (size_t)eb;
            continue;
        }
        const int32_t o0 = p->base + t0;
        for (int32_t i1 = 0; i1 < p->out_shape[1]; i1++) {
            const int32_t t1 = axis_offset(p, 1, i1);
            if (p->table[1] && t1 < 0) {
                edgesdk_fill_elements(out, p->pad_value, eb, block[1]);
                out += (size_t)block[1] * (size_t)eb;
                continue;
            }
            const int32_t o1 = o0 + t1;
            for (int32_t i2 = 0; i2 < p->out_shape[2]; i2++) {
                const int32_t t2 = axis_offset(p, 2, i2);
                if (p->table[2] && t2 < 0) {
                    edgesdk_fill_elements(out, p->pad_value, eb, block[2]);
                    out += (size_t)block[2] * (size_t)eb;
                    continue;
                }
                const int32_t o2 = o1 + t2;
                for (int32_t i3 = 0; i3 < p->out_shape[3]; i3++) {
                    const int32_t t3 = axis_offset(p, 3, i3);
                    if (p->table[3] && t3 < 0) {
                        edgesdk_fill_elements(out, p->pad_value, eb, block[3]);
                        out += (size_t)block[3] * (size_t)eb;
                        continue;
                    }
                    const int32_t o3 = o2 + t3;
                    for (int32_t i4 = 0; i4 < p->out_shape[4]; i4++) {
                        const int32_t t4 = axis_offset(p, 4, i4);
                        if (p->table[4] && t4 < 0) {
                            edgesdk_fill_elements(out, p->pad_value, eb, block[4]);
                            out += (size_t)block[4] * (size_t)eb;
                            continue;
                        }
                        const uint8_t *row = in + (o3 + t4);
                        if (inner_run) {
                            edgesdk_copy_bytes(out, row, (size_t)n5 * (size_t)eb);
                            out += (size_t)n5 * (size_t)eb;
                            continue;
                        }
                        out = inner_row(p, row, out, n5);
                    }
                }
            }
        }
    }
}

void edgesdk_gather_axes(const edgesdk_gather_axes_params *p, const void *input, void *output)
{
    gather_axes(p, (const uint8_t *)input, (uint8_t *)output);
}

void edgesdk_slice_dynamic(const edgesdk_slice_dynamic_params *p, const void *input, const void *begin, void *output)
{
    int32_t offset = 0;
    for (int32_t d = 0; d < p->rank; d++) {
        const int64_t limit = (int64_t)p->in_shape[d] - p->size[d];
        int64_t b = edgesdk_read_index(begin, p->index_bytes, d);
        b = b < 0 ? 0 : (b > limit ? limit : b);
        offset += (int32_t)b * p->in_strides[d];
    }
    gather_axes(&p->axes, (const uint8_t *)input + offset, (uint8_t *)output);
}
