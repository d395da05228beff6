/*
 * edgesdk_detection_postprocess.c - see edgesdk_detection_postprocess.h.
 *
 * LiteRT keeps the boxes scoring at least the threshold, stable-sorts them by score (descending) and selects
 * greedily: a box is selected unless an already selected box overlaps it by IoU > threshold, until the limit. The
 * scores increase strictly with the code, so that order is "code descending, box index ascending": each pass over
 * the boxes takes one code and finds the next lower one present, and no sort buffer is needed.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off") /* every product and sum rounds, as in the reference */
#endif

#include "edgesdk_detection_postprocess.h"

typedef struct {
    float ymin, xmin, ymax, xmax;
} box_corners;

#define NO_CODE (-129)

static void decode_box(const edgesdk_detection_postprocess_params *p, const int8_t *encodings, int32_t k,
                       box_corners *box)
{
    const int8_t *e = encodings + k * p->code_size;
    const float *a = p->anchors + 4 * k; /* y, x, h, w */
    const float ycenter = (float)(p->center_y[e[0] + 128] * (double)a[2] + (double)a[0]);
    const float xcenter = (float)(p->center_x[e[1] + 128] * (double)a[3] + (double)a[1]);
    const float half_h = (float)(p->half_h[e[2] + 128] * (double)a[2]);
    const float half_w = (float)(p->half_w[e[3] + 128] * (double)a[3]);
    box->ymin = ycenter - half_h;
    box->xmin = xcenter - half_w;
    box->ymax = ycenter + half_h;
    box->xmax = xcenter + half_w;
}

/* std::max<float> / std::min<float>: (a < b) ? b : a and (b < a) ? b : a. */
static float max_f(float a, float b)
{
    return a < b ? b : a;
}

static float min_f(float a, float b)
{
    return b < a ? b : a;
}

/* ComputeIntersectionOverUnion(i, j) as LiteRT evaluates it. */
static float intersection_over_union(const box_corners *i, const box_corners *j)
{
    const float area_i = (i->ymax - i->ymin) * (i->xmax - i->xmin);
    const float area_j = (j->ymax - j->ymin) * (j->xmax - j->xmin);
    if (area_i <= 0 || area_j <= 0) {
        return 0.0f;
    }
    const float ymin = max_f(i->ymin, j->ymin);
    const float xmin = max_f(i->xmin, j->xmin);
    const float ymax = min_f(i->ymax, j->ymax);
    const float xmax = min_f(i->xmax, j->xmax);
    const float intersection = max_f(ymax - ymin, 0.0f) * max_f(xmax - xmin, 0.0f);
    return intersection / (area_i + area_j - intersection);
}

/* The code that scores box k: its class column `column`, or (column < 0) its best class (the first maximum, as
 * ArgMaxVector), whose class index goes to *best. */
static int32_t score_code(const edgesdk_detection_postprocess_params *p, const int8_t *predictions, int32_t k,
                          int32_t column, int32_t *best)
{
    const int8_t *row = predictions + k * p->classes_with_background + p->label_offset;
    if (column >= 0) {
        return row[column];
    }
    int32_t arg = 0;
    for (int32_t c = 1; c < p->num_classes; c++) {
        if (row[c] > row[arg]) {
            arg = c;
        }
    }
    *best = arg;
    return row[arg];
}

/* The highest code at or below `ceiling` that any box scores at or above the threshold (NO_CODE: none). */
static int32_t next_code(const edgesdk_detection_postprocess_params *p, const int8_t *predictions, int32_t column,
                         int32_t ceiling)
{
    int32_t found = NO_CODE, best = 0;
    for (int32_t k = 0; k < p->num_boxes; k++) {
        const int32_t code = score_code(p, predictions, k, column, &best);
        if (code <= ceiling && code >= p->min_score_code && code > found) {
            found = code;
        }
    }
    return found;
}

/* Whether box `candidate` overlaps one of the `count` selected boxes by more than the threshold. */
static int suppressed(const edgesdk_detection_postprocess_params *p, const box_corners *candidate,
                      const box_corners *selected, int32_t count)
{
    for (int32_t s = 0; s < count; s++) {
        if (intersection_over_union(&selected[s], candidate) > p->iou_threshold) {
            return 1;
        }
    }
    return 0;
}

/* Fast NMS: each box scored by its best class; the selected boxes are the output rows. */
static int32_t fast_nms(const edgesdk_detection_postprocess_params *p, const int8_t *encodings,
                        const int8_t *predictions, float *boxes, float *classes, float *scores)
{
    box_corners *kept = (box_corners *)(void *)boxes; /* four floats per row, as the output */
    int32_t count = 0, best = 0;
    for (int32_t code = next_code(p, predictions, -1, 127); code != NO_CODE && count < p->max_detections;
         code = code > -128 ? next_code(p, predictions, -1, code - 1) : NO_CODE) {
        for (int32_t k = 0; k < p->num_boxes && count < p->max_detections; k++) {
            if (score_code(p, predictions, k, -1, &best) != code) {
                continue;
            }
            box_corners box;
            decode_box(p, encodings, k, &box);
            if (!suppressed(p, &box, kept, count)) {
                kept[count] = box;
                classes[count] = (float)best;
                scores[count] = p->scores[code + 128];
                count++;
            }
        }
    }
    return count;
}

/* Insert a detection into the output list sorted by score, after every entry of the same score (LiteRT's stable
 * merge), keeping at most max_detections entries; returns the new length. */
static int32_t insert_detection(const edgesdk_detection_postprocess_params *p, float *boxes, float *classes,
                                float *scores, int32_t length, const box_corners *box, int32_t cls, float score)
{
    int32_t at = 0;
    while (at < length && !(score > scores[at])) {
        at++;
    }
    if (at >= p->max_detections) {
        return length;
    }
    const int32_t last = length < p->max_detections ? length : p->max_detections - 1;
    for (int32_t r = last; r > at; r--) {
        scores[r] = scores[r - 1];
        classes[r] = classes[r - 1];
        for (int32_t c = 0; c < 4; c++) {
            boxes[4 * r + c] = boxes[4 * (r - 1) + c];
        }
    }
    scores[at] = score;
    classes[at] = (float)cls;
    boxes[4 * at + 0] = box->ymin;
    boxes[4 * at + 1] = box->xmin;
    boxes[4 * at + 2] = box->ymax;
    boxes[4 * at + 3] = box->xmax;
    return length < p->max_detections ? length + 1 : length;
}

/* Regular NMS: per class, in class order, merged into the output list by score. */
static int32_t regular_nms(const edgesdk_detection_postprocess_params *p, const int8_t *encodings,
                           const int8_t *predictions, float *boxes, float *classes, float *scores)
{
    box_corners kept[EDGESDK_DETECTION_MAX_PER_CLASS];
    int32_t length = 0, unused = 0;
    for (int32_t cls = 0; cls < p->num_classes; cls++) {
        int32_t count = 0;
        for (int32_t code = next_code(p, predictions, cls, 127); code != NO_CODE && count < p->detections_per_class;
             code = code > -128 ? next_code(p, predictions, cls, code - 1) : NO_CODE) {
            for (int32_t k = 0; k < p->num_boxes && count < p->detections_per_class; k++) {
                if (score_code(p, predictions, k, cls, &unused) != code) {
                    continue;
                }
                decode_box(p, encodings, k, &kept[count]);
                if (!suppressed(p, &kept[count], kept, count)) {
                    length = insert_detection(p, boxes, classes, scores, length, &kept[count], cls,
                                              p->scores[code + 128]);
                    count++;
                }
            }
        }
    }
    return length;
}

void edgesdk_detection_postprocess_s8(const edgesdk_detection_postprocess_params *p, const int8_t *box_encodings,
                                      const int8_t *class_predictions, float *boxes, float *classes, float *scores,
                                      float *num_detections)
{
    const int32_t count = p->regular ? regular_nms(p, box_encodings, class_predictions, boxes, classes, scores)
                                     : fast_nms(p, box_encodings, class_predictions, boxes, classes, scores);
    /* LiteRT's regular NMS zeroes the rows after the detections; its fast NMS leaves them as they were (edgesdk
     * zeroes them too, a defined value). */
    for (int32_t r = count; r < p->max_detections; r++) {
        boxes[4 * r + 0] = boxes[4 * r + 1] = boxes[4 * r + 2] = boxes[4 * r + 3] = 0.0f;
        classes[r] = 0.0f;
        scores[r] = 0.0f;
    }
    num_detections[0] = (float)count;
}
