"""DETECTION_POSTPROCESS (TFLite_Detection_PostProcess) on the host: edgesdk_detection_postprocess_s8 for the
quantized SSD form (uint8 box encodings, class predictions and constant anchors, float32 outputs), with the
op layer's per-code tables (edgesdk/ops/detection_postprocess.py). It needs no scratch memory: candidates are
visited in LiteRT's order (score descending, box index ascending) by scanning the codes, and the kept boxes live in
the outputs (fast NMS) or in a small stack list (regular NMS, at most MAX_PER_CLASS per class)."""

from __future__ import annotations

import numpy as np

from ..emit import Emit, c_op, footprint
from ..proof import positive, require

MAX_PER_CLASS = 100  # EDGESDK_DETECTION_MAX_PER_CLASS (edgesdk_detection_postprocess.h)


def detection_quantized(op):
    """uint8 box encodings, class predictions and constant anchors (LiteRT's quantized kernel), float32 outputs

    LiteRT's kernel reads quantized inputs as uint8 only (int8 ones fail at run time), TFLite Micro's float32 only;
    the float32 form needs the host's double exp at run time and is not supported."""
    bad = [f"{t.name} ({t.orig_dtype or t.dtype})" for t in op.inputs if t.orig_dtype != "uint8" or t.quant is None]
    if bad:
        return False, f"not uint8: {', '.join(bad)}"
    if not op.inputs[2].is_const:
        return False, "the anchors are not constant"
    bad = [t.name for t in op.outputs if t.dtype != "float32"]
    return not bad, f"outputs not float32: {', '.join(bad)}" if bad else ""


def detection_one_class_per_box(op):
    """max_classes_per_detection is 1 (LiteRT's partial sort orders tied class scores of one box arbitrarily)"""
    k = op.attrs.get("max_classes_per_detection")
    return k == 1, f"max_classes_per_detection {k}"


def detection_per_class_limit(op):
    """Regular NMS keeps at most 100 boxes per class (min(detections_per_class, max_detections))"""
    a = op.attrs
    k = min(a.get("detections_per_class", 0), a.get("max_detections", 0))
    return not a.get("use_regular_nms") or k <= MAX_PER_CLASS, f"{k} detections per class"


def detection_scores_increase(op):
    """The class predictions' scale is positive (scores increase with the code) and the anchors' sizes are not negative"""
    preds, anchors = op.inputs[1], op.inputs[2]
    if preds.quant is None or anchors.quant is None or anchors.data is None:
        return True, ""  # detection_quantized reports it
    if not float(preds.quant.scale[0]) > 0:
        return False, f"class prediction scale {float(preds.quant.scale[0])}"
    zp, scale = int(anchors.quant.zero_point[0]), np.float32(anchors.quant.scale[0])
    sizes = (anchors.data.reshape(-1, 4)[:, 2:].astype(np.float32) - np.float32(zp)) * scale
    return bool(np.all(sizes >= 0)), "negative anchor heights or widths"


@c_op("DETECTION_POSTPROCESS", constraints=[detection_quantized, detection_one_class_per_box,
                                            detection_per_class_limit, detection_scores_increase],
      headers=("edgesdk_detection_postprocess.h",), sources=("edgesdk_detection_postprocess.c",))
def emit_detection_postprocess(e: Emit):
    op, d = e.op, e.data
    boxes, preds = op.inputs[0], op.inputs[1]
    fields = {"num_boxes": d.num_boxes, "code_size": d.code_size, "num_classes": d.num_classes,
              "classes_with_background": d.classes_with_background, "label_offset": d.label_offset,
              "max_detections": d.max_detections, "detections_per_class": d.detections_per_class,
              "regular": int(d.regular), "min_score_code": d.min_score_code,
              "iou_threshold": float(np.float32(d.iou_threshold)),
              "center_y": e.const("center_y", d.center_y, "double"), "center_x": e.const("center_x", d.center_x, "double"),
              "half_h": e.const("half_h", d.half_h, "double"), "half_w": e.const("half_w", d.half_w, "double"),
              "scores": e.float32s("scores", d.scores), "anchors": e.float32s("anchors", d.anchors)}
    params = e.params("edgesdk_detection_postprocess_params", fields)
    e.call("edgesdk_detection_postprocess_s8", params, e.arena(boxes), e.arena(preds),
           *[e.arena(t) for t in op.outputs])
    e.layer.note = (f"{d.num_boxes} boxes, {d.num_classes} classes, {'regular' if d.regular else 'fast'} NMS, "
                    f"{d.max_detections} detections")
    return e.layer


@footprint("edgesdk_detection_postprocess_s8")
def detection_postprocess_footprint(call, op) -> list:
    p, boxes, preds, out_boxes, out_classes, out_scores, out_count = call.args
    checks = positive(p, "num_boxes", "num_classes", "classes_with_background")
    if checks:
        return checks
    n, rows = p["num_boxes"], p["max_detections"]
    checks += require(p["code_size"] >= 4, "a box encoding has at least 4 values")
    checks += require(0 <= p["label_offset"] <= 1 and p["label_offset"] + p["num_classes"] == p[
        "classes_with_background"], "the class columns are the classes after at most one background column")
    checks += require(rows >= 0 and (not p["regular"] or 1 <= p["detections_per_class"] <= MAX_PER_CLASS),
                      "regular NMS keeps 1 to 100 boxes per class")
    checks += require(-128 <= p["min_score_code"] <= 128, "the score threshold code is an int8 code or 128")
    tables = [(p[k], 8 * 256, f"{k} table") for k in ("center_y", "center_x", "half_h", "half_w")]
    return checks + tables + [(p["scores"], 4 * 256, "score table"), (p["anchors"], 16 * n, "anchors"),
                              (boxes, n * p["code_size"], "box encodings"),
                              (preds, n * p["classes_with_background"], "class predictions"),
                              (out_boxes, 16 * rows, "output boxes"), (out_classes, 4 * rows, "output classes"),
                              (out_scores, 4 * rows, "output scores"), (out_count, 4, "output count")]
