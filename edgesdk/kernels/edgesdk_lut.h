/*
 * edgesdk_lut.h - int8 -> int8 table lookup: LiteRT's reference LOGISTIC and TANH for int8 (and uint8)
 * are 256-entry tables built at prepare time (LUTPopulate); the compiler builds the same table.
 */
#ifndef EDGESDK_LUT_H
#define EDGESDK_LUT_H

#include <stdint.h>

typedef struct {
    int32_t size;
    const int8_t *table; /* 256 entries, indexed by the input byte as uint8 (TFLite's LUT order) */
} edgesdk_lut_params;

void edgesdk_lut_s8(const edgesdk_lut_params *p, const int8_t *input, int8_t *output);

#endif /* EDGESDK_LUT_H */
