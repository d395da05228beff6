/*
 * edgesdk_window.h - which filter taps of a convolution/pooling window fall inside the input.
 *
 * TFLite skips taps outside the image (zero padding contributes nothing); computing the valid tap range
 * once per output row/column keeps that test out of the inner loops.
 */
#ifndef EDGESDK_WINDOW_H
#define EDGESDK_WINDOW_H

#include <stdint.h>

typedef struct {
    int32_t first; /* first valid tap index */
    int32_t last;  /* one past the last valid tap index (last <= first: no valid tap) */
} edgesdk_window;

/* Taps t in [0, taps) with 0 <= origin + t * dilation < size. */
static inline edgesdk_window edgesdk_window_taps(int32_t origin, int32_t dilation, int32_t taps, int32_t size)
{
    edgesdk_window w;
    w.first = 0;
    while (w.first < taps && origin + w.first * dilation < 0) {
        w.first++;
    }
    w.last = taps;
    while (w.last > w.first && origin + (w.last - 1) * dilation >= size) {
        w.last--;
    }
    return w;
}

#endif /* EDGESDK_WINDOW_H */
