/*
 * edgesdk_reshape.h - RESHAPE when the memory planner cannot alias input and output: a byte copy.
 */
#ifndef EDGESDK_RESHAPE_H
#define EDGESDK_RESHAPE_H

#include <stdint.h>

void edgesdk_reshape(int32_t nbytes, const void *input, void *output);

#endif /* EDGESDK_RESHAPE_H */
