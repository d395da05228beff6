/*
 * edgesdk_select.c - SELECT_V2 / SELECT: element copies (int8, int16, int32, float32, bool).
 */
#include "edgesdk_select.h"

#define EDGESDK_SELECT(suffix, type)                                                                           \
    void edgesdk_select_##suffix(const edgesdk_select_params *p, const uint8_t *condition, const type *x,     \
                                 const type *y, type *output)                                                 \
    {                                                                                                         \
        if (!p->broadcast) {                                                                                  \
            for (int32_t i = 0; i < p->size; i++) {                                                           \
                output[i] = condition[i] ? x[i] : y[i];                                                       \
            }                                                                                                 \
            return;                                                                                           \
        }                                                                                                     \
        const int32_t inner = p->out_shape[EDGESDK_MAX_DIMS - 1];                                             \
        const int32_t cs = p->condition_strides[EDGESDK_MAX_DIMS - 1];                                        \
        const int32_t xs = p->x_strides[EDGESDK_MAX_DIMS - 1];                                                \
        const int32_t ys = p->y_strides[EDGESDK_MAX_DIMS - 1];                                                \
        for (int32_t row = 0; row < p->size / inner; row++) {                                                 \
            int32_t oc = 0, ox = 0, oy = 0, rest = row;                                                       \
            for (int d = EDGESDK_MAX_DIMS - 2; d >= 0; d--) {                                                 \
                const int32_t i = rest % p->out_shape[d];                                                     \
                rest /= p->out_shape[d];                                                                      \
                oc += i * p->condition_strides[d];                                                            \
                ox += i * p->x_strides[d];                                                                    \
                oy += i * p->y_strides[d];                                                                    \
            }                                                                                                 \
            for (int32_t i = 0; i < inner; i++) {                                                             \
                *output++ = condition[oc + i * cs] ? x[ox + i * xs] : y[oy + i * ys];                         \
            }                                                                                                 \
        }                                                                                                     \
    }

EDGESDK_SELECT(s8, int8_t)
EDGESDK_SELECT(s16, int16_t)
EDGESDK_SELECT(i32, int32_t)
EDGESDK_SELECT(f32, float)
EDGESDK_SELECT(b, uint8_t)
