/*
 * edgesdk_select.h - SELECT_V2 / SELECT: output = condition ? x : y, copying stored values (int8, int16, int32,
 * float32, bool) (TFLite's BroadcastSelect5DSlow / Select). The three inputs broadcast to the output: shapes right-aligned
 * and padded to EDGESDK_MAX_DIMS, each input's element strides 0 along its broadcast dimensions.
 */
#ifndef EDGESDK_SELECT_H
#define EDGESDK_SELECT_H

#include <stdint.h>

#include "edgesdk_broadcast.h"

typedef struct {
    int32_t broadcast;                        /* 0: all shapes equal, a flat loop over `size` elements */
    int32_t size;                             /* output element count */
    int32_t out_shape[EDGESDK_MAX_DIMS];
    int32_t condition_strides[EDGESDK_MAX_DIMS];
    int32_t x_strides[EDGESDK_MAX_DIMS];
    int32_t y_strides[EDGESDK_MAX_DIMS];
} edgesdk_select_params;

void edgesdk_select_s8(const edgesdk_select_params *p, const uint8_t *condition, const int8_t *x, const int8_t *y,
                       int8_t *output);
void edgesdk_select_s16(const edgesdk_select_params *p, const uint8_t *condition, const int16_t *x, const int16_t *y,
                        int16_t *output);
void edgesdk_select_i32(const edgesdk_select_params *p, const uint8_t *condition, const int32_t *x, const int32_t *y,
                        int32_t *output);
void edgesdk_select_f32(const edgesdk_select_params *p, const uint8_t *condition, const float *x, const float *y,
                        float *output);
void edgesdk_select_b(const edgesdk_select_params *p, const uint8_t *condition, const uint8_t *x, const uint8_t *y,
                      uint8_t *output);

#endif /* EDGESDK_SELECT_H */
