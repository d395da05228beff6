"""Hand-written SSD post-processing models: the custom op TFLite_Detection_PostProcess (TFLite's
DETECTION_POSTPROCESS) with its flexbuffer options, as the TF object detection API's export writes it at the end
of a quantized SSD (uint8 box encodings, class predictions and constant anchors; float32 outputs). The converter
does not make the op, and no shared model ends with it (ssd_mobilenet_v3_int8.tflite stops at the raw outputs)."""

from __future__ import annotations

import numpy as np
from flatbuffers import flexbuffers

from modelgen import ModelBuilder

CUSTOM = "CUSTOM:TFLite_Detection_PostProcess"


def options(max_detections=10, max_classes_per_detection=1, detections_per_class=None, use_regular_nms=False,
            nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=3, scales=(10.0, 10.0, 5.0, 5.0)) -> bytes:
    values = {"max_detections": max_detections, "max_classes_per_detection": max_classes_per_detection,
              "nms_score_threshold": float(nms_score_threshold), "nms_iou_threshold": float(nms_iou_threshold),
              "num_classes": num_classes, "y_scale": float(scales[0]), "x_scale": float(scales[1]),
              "h_scale": float(scales[2]), "w_scale": float(scales[3])}
    if detections_per_class is not None:
        values["detections_per_class"] = detections_per_class
    values["use_regular_nms"] = bool(use_regular_nms)
    return bytes(flexbuffers.Dumps(values))


def anchors_grid(num_boxes: int, rng) -> np.ndarray:
    """Anchors (ycenter, xcenter, h, w) in [0, 1], overlapping neighbours as an SSD's do."""
    side = int(np.ceil(np.sqrt(num_boxes)))
    k = np.arange(num_boxes)
    y, x = (k // side + 0.5) / side, (k % side + 0.5) / side
    size = rng.uniform(0.8, 2.5, (num_boxes, 2)) / side
    return np.stack([y, x, size[:, 0], size[:, 1]], axis=1).astype(np.float32)


def detection_model(seed: int = 0, num_boxes: int = 24, num_classes: int = 3, background: bool = True,
                    box_q=(0.05, 128), score_q=(1 / 256, 0), anchor_q=(1 / 255, 0), code_size: int = 4,
                    dtype: str = "uint8", raw_options: bytes | None = None, **option_values) -> bytes:
    """Inputs: box encodings [1, boxes, code_size] and class predictions [1, boxes, classes (+1 background)],
    uint8; constant uint8 anchors [boxes, 4]. Outputs (float32): boxes [1, n, 4], classes [1, n], scores [1, n],
    num_detections [1], n = max_detections * max_classes_per_detection. `dtype` "int8" (the same values shifted by
    128, which LiteRT's kernel refuses) or "float32" (the float form) for the other forms; `raw_options` replaces
    the flexbuffer options (malformed files)."""
    rng = np.random.default_rng(seed)
    opts = dict(num_classes=num_classes, **option_values)
    n = opts.get("max_detections", 10) * opts.get("max_classes_per_detection", 1)
    m = ModelBuilder()
    shift = 128 if dtype == "int8" else 0
    quant = {"float32": lambda q: (None, None)}.get(dtype, lambda q: (q[0], q[1] - shift))
    boxes = m.tensor((1, num_boxes, code_size), dtype, *quant(box_q), name="box_encodings")
    classes = num_classes + int(background)
    scores = m.tensor((1, num_boxes, classes), dtype, *quant(score_q), name="class_predictions")
    real = anchors_grid(num_boxes, rng)
    if dtype == "float32":
        anchors = m.const(real, "float32", name="anchors")
    else:
        codes = np.clip(np.round(real / anchor_q[0]) + anchor_q[1], 0, 255).astype(np.int64) - shift
        scale, zero_point = quant(anchor_q)
        anchors = m.const(codes, dtype, scale=scale, zero_point=zero_point, name="anchors")
    outs = [m.tensor((1, n, 4), "float32", name="detection_boxes"),
            m.tensor((1, n), "float32", name="detection_classes"),
            m.tensor((1, n), "float32", name="detection_scores"),
            m.tensor((1,), "float32", name="num_detections")]
    m.op(CUSTOM, [boxes, scores, anchors], outs, custom_options=raw_options or options(**opts))
    return m.build([boxes, scores], outs)
