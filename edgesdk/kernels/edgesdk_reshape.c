/*
 * edgesdk_reshape.c - RESHAPE as a copy (memmove: the planner may overlap the two buffers).
 */
#include "edgesdk_reshape.h"

#include <string.h>

void edgesdk_reshape(int32_t nbytes, const void *input, void *output)
{
    if (input != output) {
        memmove(output, input, (size_t)nbytes);
    }
}
