"""DETECTION_POSTPROCESS: the custom op TFLite_Detection_PostProcess that ends an SSD (TFLite's
kernels/detection_postprocess.cc; TFLite Micro registers it too). It decodes box encodings against anchors
(center-size boxes: y/x scaled by the anchor size, h/w through exp) and keeps the best-scoring boxes by non-maximum
suppression, either over each box's best class ("fast", max_classes_per_detection per box) or per class, merged by
score ("regular", use_regular_nms). Options are a flexbuffer map. Outputs (float32): boxes [1, n, 4], classes
[1, n], scores [1, n], the number of detections [1]; n = max_detections * max_classes_per_detection.

LiteRT runs it on uint8 (imported as int8, shifted by 128) or float32 inputs, dequantizing in float and decoding in
double. For the quantized form every input-dependent float is a function of one 8-bit code, so the build computes
it once per code with LiteRT's own arithmetic (the double exp is the host C library's, the one LiteRT calls):
center offsets dq / scale and half sizes 0.5 * exp(dq / scale) in double, scores in float. The kernel then only
multiplies and adds in double and float (IEEE arithmetic, the same on the device) and compares.
"""

from __future__ import annotations

import math

import numpy as np

from ..dataclass_cache import dataclass
from . import register
from .base import FLEXBUFFER_OPTIONS, OpDef, Operands, op_error

REQUIRED = ("max_detections", "max_classes_per_detection", "nms_score_threshold", "nms_iou_threshold",
            "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")
DEFAULT_DETECTIONS_PER_CLASS = 100  # kNumDetectionsPerClass


@dataclass(frozen=True)
class DetectionData:
    num_boxes: int
    code_size: int  # values per box encoding (>= 4; the first four are y, x, h, w)
    num_classes: int
    classes_with_background: int  # the class predictions' last dimension
    label_offset: int  # classes_with_background - num_classes: the background column skipped
    max_detections: int
    categories_per_anchor: int  # fast NMS: min(max_classes_per_detection, num_classes)
    detections_per_class: int  # regular NMS: min(detections_per_class, max_detections)
    regular: bool
    iou_threshold: float  # float32
    min_score_code: int  # the smallest int8 class prediction code whose score passes the threshold (128: none)
    center_y: np.ndarray  # float64 [256] by box code + 128: double(dq) / double(y_scale)
    center_x: np.ndarray
    half_h: np.ndarray  # float64 [256]: 0.5 * exp(double(dq) / double(h_scale))
    half_w: np.ndarray
    scores: np.ndarray  # float32 [256] by class prediction code + 128
    anchors: np.ndarray  # float32 [num_boxes, 4]: dequantized (y, x, h, w)


def _f32(value) -> np.float32:
    return np.float32(value)


def dequantized_codes(t) -> np.ndarray:
    """LiteRT's Dequantizer over all 256 int8 codes of `t`: (float(q) - zero point) * scale, in float32."""
    codes = np.arange(-128, 128, dtype=np.float32)
    return ((codes - np.float32(int(t.quant.zero_point[0]))) * np.float32(t.quant.scale[0])).astype(np.float32)


@register
class DetectionPostprocess(OpDef):
    types = ("DETECTION_POSTPROCESS",)
    operands = Operands(inputs=("box_encodings", "class_predictions", "anchors"),
                        outputs=("detection_boxes", "detection_classes", "detection_scores", "num_detections"))
    options = FLEXBUFFER_OPTIONS

    def attributes(self, op, options: dict) -> dict:
        missing = [k for k in REQUIRED if k not in options]
        if missing:
            raise op_error(op, f"lacks the option(s) {', '.join(missing)} in its flexbuffer options")
        attrs = {k: int(options[k]) for k in ("max_detections", "max_classes_per_detection", "num_classes")}
        attrs.update({k: float(_f32(options[k])) for k in ("nms_score_threshold", "nms_iou_threshold", "y_scale",
                                                            "x_scale", "h_scale", "w_scale")})
        attrs["detections_per_class"] = int(options.get("detections_per_class", DEFAULT_DETECTIONS_PER_CLASS))
        attrs["use_regular_nms"] = bool(options.get("use_regular_nms", False))
        return attrs

    def check(self, op) -> None:
        boxes, classes, anchors = op.inputs
        a = op.attrs
        if len(boxes.shape) != 3 or len(classes.shape) != 3 or len(anchors.shape) != 2:
            raise op_error(op, f"takes 3-D box encodings and class predictions and 2-D anchors, not "
                               f"{list(boxes.shape)}, {list(classes.shape)}, {list(anchors.shape)}")
        if boxes.shape[0] != 1 or classes.shape[0] != 1:
            raise op_error(op, "has a batch other than 1 (TFLite's kernel takes one image)")
        n = int(boxes.shape[1])
        if boxes.shape[2] < 4 or tuple(anchors.shape) != (n, 4) or classes.shape[1] != n:
            raise op_error(op, f"box encodings {list(boxes.shape)}, class predictions {list(classes.shape)} and "
                               f"anchors {list(anchors.shape)} disagree (need [1, {n}, >=4], [1, {n}, C], [{n}, 4])")
        extra = int(classes.shape[2]) - a["num_classes"]
        if a["num_classes"] < 1 or extra not in (0, 1):
            raise op_error(op, f"has num_classes {a['num_classes']} for {classes.shape[2]} class predictions (one "
                               "background column at most)")
        if a["max_detections"] < 0 or a["max_classes_per_detection"] < 1:
            raise op_error(op, "needs max_detections >= 0 and max_classes_per_detection >= 1")
        if not 0.0 < a["nms_iou_threshold"] <= 1.0:
            raise op_error(op, f"has an IoU threshold {a['nms_iou_threshold']} outside (0, 1]")
        if a["use_regular_nms"] and min(a["detections_per_class"], a["max_detections"]) <= 0:
            raise op_error(op, "needs at least one detection per class for regular non-maximum suppression")
        count = a["max_detections"] * a["max_classes_per_detection"]
        want = [(1, count, 4), (1, count), (1, count), (1,)]
        got = [tuple(t.shape) for t in op.outputs]
        if got != want:
            raise op_error(op, f"outputs {[list(s) for s in got]} must be {[list(s) for s in want]}")

    def prepare(self, op, mode: str) -> DetectionData | None:
        boxes, classes, anchors = op.inputs
        if any(t.dtype != "int8" or t.quant is None for t in op.inputs) or not anchors.is_const:
            return None  # the quantized form with constant anchors only (the target's constraints say so)
        a = op.attrs
        box_dq = dequantized_codes(boxes).astype(np.float64)
        half = [np.array([0.5 * math.exp(float(d) / a[k]) for d in box_dq]) for k in ("h_scale", "w_scale")]
        zp, scale = int(classes.quant.zero_point[0]), float(np.float32(classes.quant.scale[0]))
        scores = np.array([np.float32(scale * (q - zp)) for q in range(-128, 128)], dtype=np.float32)
        passing = np.nonzero(scores >= np.float32(a["nms_score_threshold"]))[0]
        anchor_dq = dequantized_codes(anchors)[anchors.data.astype(np.int64) + 128].reshape(-1, 4)
        num_classes = a["num_classes"]
        return DetectionData(
            num_boxes=int(boxes.shape[1]), code_size=int(boxes.shape[2]), num_classes=num_classes,
            classes_with_background=int(classes.shape[2]), label_offset=int(classes.shape[2]) - num_classes,
            max_detections=a["max_detections"],
            categories_per_anchor=min(a["max_classes_per_detection"], num_classes),
            detections_per_class=min(a["detections_per_class"], a["max_detections"]), regular=a["use_regular_nms"],
            iou_threshold=a["nms_iou_threshold"], min_score_code=int(passing[0]) - 128 if passing.size else 128,
            center_y=box_dq / a["y_scale"], center_x=box_dq / a["x_scale"], half_h=half[0], half_w=half[1],
            scores=scores, anchors=anchor_dq.astype(np.float32))
