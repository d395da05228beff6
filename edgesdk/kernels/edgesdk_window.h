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

/* The window [first, last) of taps in [0, taps), empty (last == first) when no tap falls inside: the tail both
 * edgesdk_window_taps functions share. first >= 0 and last <= taps on entry. */
static inline edgesdk_window edgesdk_window_clamped(int64_t first, int64_t last, int32_t taps)
{
    if (first > taps) {
        first = taps;
    }
    if (last < first) {
        last = first;
    }
    edgesdk_window w;
    w.first = (int32_t)first;
    w.last = (int32_t)last;
    return w;
}

/* Taps t in [0, taps) with 0 <= origin + t * dilation < size.
 *
 * Closed form, O(1) whatever `taps` is: a pooling filter size comes from the model's options, not from a
 * tensor, and may be 2^31 - 1 (issue 12 item 7: counting taps one by one ran for billions of instructions).
 * 64-bit arithmetic so that origin + t * dilation cannot overflow. Dilation >= 1. */
static inline edgesdk_window edgesdk_window_taps(int32_t origin, int32_t dilation, int32_t taps, int32_t size)
{
    int64_t first = 0;
    int64_t last = taps;
    const int64_t room = (int64_t)size - 1 - origin; /* the largest t * dilation still inside the input */
    if (origin < 0) {
        first = dilation == 1 ? -(int64_t)origin : (-(int64_t)origin + dilation - 1) / dilation;
    }
    if (room < 0) {
        last = 0;
    } else {
        const int64_t inside = (dilation == 1 ? room : room / dilation) + 1;
        if (inside < last) {
            last = inside;
        }
    }
    return edgesdk_window_clamped(first, last, taps);
}

/* The same taps, with the two quotients in uint32 (a divu, not a call to libgcc's 64-bit division, which then
 * stays out of the firmware; the int16 conv kernel and the int8 conv and depthwise reference loops, whose
 * dilated layers compute a window per pixel): -origin + dilation - 1 and size - 1 - origin are at most
 * 2^32 - 2 where they are divided. Its own function: the int16 depthwise loops measured slower with it (GCC
 * allocates their registers differently), and these are the same results. */
static inline edgesdk_window edgesdk_window_taps_u32(int32_t origin, int32_t dilation, int32_t taps, int32_t size)
{
    int64_t first = 0;
    int64_t last = taps;
    const int64_t room = (int64_t)size - 1 - origin;
    if (origin < 0) {
        first = dilation == 1 ? -(int64_t)origin
                              : ((uint32_t)(-(int64_t)origin) + (uint32_t)(dilation - 1)) / (uint32_t)dilation;
    }
    if (room < 0) {
        last = 0;
    } else {
        const int64_t inside = (dilation == 1 ? room : (uint32_t)room / (uint32_t)dilation) + 1;
        if (inside < last) {
            last = inside;
        }
    }
    return edgesdk_window_clamped(first, last, taps);
}

#endif /* EDGESDK_WINDOW_H */
