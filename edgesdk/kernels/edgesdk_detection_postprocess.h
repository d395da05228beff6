/*
 * edgesdk_detection_postprocess.h - DETECTION_POSTPROCESS (TFLite_Detection_PostProcess), LiteRT's reference
 * semantics for the quantized SSD form: box decoding against anchors, then greedy non-maximum suppression over each
 * box's best class ("fast") or per class merged by score ("regular"). Float32 outputs.
 *
 * Every value that depends on an input code comes from the compiler's tables (edgesdk/ops/detection_postprocess.py):
 * center offsets and half sizes in double, scores in float, indexed by int8 code + 128. The kernel multiplies and
 * adds them with the anchors in double and float exactly as LiteRT does (IEEE arithmetic, no contraction).
 */
#ifndef EDGESDK_DETECTION_POSTPROCESS_H
#define EDGESDK_DETECTION_POSTPROCESS_H

#include <stdint.h>

#define EDGESDK_DETECTION_MAX_PER_CLASS 100 /* regular NMS: boxes kept per class, on the stack */

typedef struct {
    int32_t num_boxes;
    int32_t code_size;               /* values per box encoding; the first four are y, x, h, w */
    int32_t num_classes;
    int32_t classes_with_background; /* the class predictions' row length */
    int32_t label_offset;            /* 1 when column 0 is the background */
    int32_t max_detections;
    int32_t detections_per_class;    /* regular NMS: min(detections_per_class, max_detections) */
    int32_t regular;                 /* 1: regular NMS, 0: fast NMS (one class per box) */
    int32_t min_score_code;          /* scores at or above the threshold: codes >= this (128: none) */
    float iou_threshold;
    const double *center_y;          /* [256]: dq(code) / y_scale */
    const double *center_x;          /* [256]: dq(code) / x_scale */
    const double *half_h;            /* [256]: 0.5 * exp(dq(code) / h_scale) */
    const double *half_w;            /* [256]: 0.5 * exp(dq(code) / w_scale) */
    const float *scores;             /* [256]: the dequantized class prediction */
    const float *anchors;            /* [num_boxes][4]: y, x, h, w */
} edgesdk_detection_postprocess_params;

void edgesdk_detection_postprocess_s8(const edgesdk_detection_postprocess_params *p, const int8_t *box_encodings,
                                      const int8_t *class_predictions, float *boxes, float *classes, float *scores,
                                      float *num_detections);

#endif /* EDGESDK_DETECTION_POSTPROCESS_H */
