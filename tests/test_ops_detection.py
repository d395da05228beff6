"""DETECTION_POSTPROCESS (the custom op TFLite_Detection_PostProcess that ends an SSD; issue 10).

The converter does not make it and no shared model ends with it, so the models are hand-written
(tests/detection_models.py): the quantized SSD form (uint8 box encodings, class predictions and anchors, float32
outputs), which LiteRT's reference kernel runs. TFLite Micro's kernel takes float32 inputs only and TFLite Micro
refuses uint8 models, so these are checked against LiteRT (--rounding ref; --rounding tflm builds the same code).

Host: the op's generated call on the host kernels, on seeded random, all-min and all-max inputs, against LiteRT's
BUILTIN_REF outputs byte for byte -- except the fast-NMS rows after the detections, which LiteRT never writes (edgesdk
writes zeros there). Firmware (slow): the models built and run on the emulator.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import detection_models as dm
from conftest import REPO
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.partition.partitioner import partition
from edgesdk.targets.c import testing

VARIANTS = {
    "fast": dict(seed=1),
    "regular": dict(seed=2, use_regular_nms=True),
    "fast_no_background": dict(seed=3, background=False, num_classes=4),
    "regular_no_background_code6": dict(seed=4, use_regular_nms=True, background=False, code_size=6),
    "fast_few_pass": dict(seed=5, nms_score_threshold=0.9, max_detections=20),  # fewer detections than rows
    "regular_few_pass": dict(seed=6, use_regular_nms=True, nms_score_threshold=0.85, max_detections=20),
    "regular_per_class_2": dict(seed=7, use_regular_nms=True, detections_per_class=2, max_detections=8),
    "regular_default_per_class": dict(seed=8, use_regular_nms=True, max_detections=6, use_regular_nms_default=True),
    "fast_strict_iou": dict(seed=9, nms_iou_threshold=0.05, max_detections=15),
    "regular_iou_1": dict(seed=10, use_regular_nms=True, nms_iou_threshold=1.0, num_classes=5),
    "fast_ties": dict(seed=11, score_q=(0.1, 0), num_boxes=40),  # coarse scores: many equal ones
    "regular_ties": dict(seed=12, use_regular_nms=True, score_q=(0.1, 0), num_boxes=40, num_classes=2),
    "fast_many_boxes": dict(seed=13, num_boxes=150, num_classes=6, max_detections=25, box_q=(0.2, 120)),
    "regular_many_boxes": dict(seed=14, use_regular_nms=True, num_boxes=120, num_classes=4, max_detections=30,
                               detections_per_class=12),
    "fast_none_pass": dict(seed=15, nms_score_threshold=1.5),
}


def _model(variant: str) -> bytes:
    kw = dict(VARIANTS[variant])
    if kw.pop("use_regular_nms_default", False):
        kw["detections_per_class"] = None  # the option left out: LiteRT's default 100
    return dm.detection_model(**kw)


def _cases(path):
    """Seeded random inputs, then all-min and all-max ones."""
    graph = import_tflite(path)
    shapes = [tuple(t.shape) for t in graph.inputs]
    cases = [testing.random_model_inputs(path, seed) for seed in range(3)]
    cases += [[np.full(s, v, np.uint8) for s in shapes] for v in (0, 255)]
    return cases


def detection_mismatches(path, mode: str = "ref") -> list:
    graph = import_tflite(path)
    partition(graph, ["c"])
    op = next(o for o in graph.ops if o.type == "DETECTION_POSTPROCESS")
    library = testing.OpLibrary([op], mode)
    problems = []
    for k, inputs in enumerate(_cases(path)):
        ref = testing.reference_tensors(path, inputs, "ref")
        got = library.run(op, {t: testing.ir_value(t, graph, ref) for t in op.inputs if not t.is_const})
        want = [ref[t.id] for t in op.outputs]
        count = int(want[3][0])
        rows = count if not op.attrs["use_regular_nms"] else want[1].size  # fast NMS: LiteRT writes `count` rows
        for name, g, w in zip(("boxes", "classes", "scores"), got, want):
            g, w = g.reshape(g.shape[1], -1)[:rows], w.reshape(w.shape[1], -1)[:rows]
            if g.tobytes() != w.tobytes():
                problems.append(f"case {k} {name}: {np.count_nonzero(g != w)} values differ")
        if got[3].tobytes() != want[3].tobytes():
            problems.append(f"case {k}: {got[3]} detections, LiteRT {want[3]}")
        if rows < want[1].size and (np.any(got[1][0, rows:] != 0) or np.any(got[0][0, rows:] != 0)):
            problems.append(f"case {k}: rows after the detections are not zero")
    return problems


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_detection_postprocess_bit_exact_with_litert(tmp_path, variant):
    path = tmp_path / f"{variant}.tflite"
    path.write_bytes(_model(variant))
    assert not detection_mismatches(path)


def test_the_variants_select_boxes_and_suppress_some(tmp_path):
    """The models are not degenerate: detections are found, and NMS removes overlapping boxes (fewer detections with
    a strict IoU threshold than with none)."""
    counts = {}
    for name, iou in (("strict", 0.05), ("loose", 1.0)):
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(dm.detection_model(9, nms_iou_threshold=iou, max_detections=24, num_boxes=24))
        ref = testing.reference_tensors(path, testing.random_model_inputs(path, 0), "ref")
        graph = import_tflite(path)
        counts[name] = int(ref[graph.outputs[3].id][0])
    assert 0 < counts["strict"] < counts["loose"], counts


def test_the_custom_op_imports_under_its_tflite_name(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(dm.detection_model(1, use_regular_nms=True, detections_per_class=7))
    op = next(o for o in import_tflite(path).ops if o.type == "DETECTION_POSTPROCESS")
    assert op.attrs["use_regular_nms"] and op.attrs["detections_per_class"] == 7 and op.attrs["num_classes"] == 3
    assert op.attrs["nms_iou_threshold"] == float(np.float32(0.5))


@pytest.mark.parametrize("change, message", [
    (dict(num_classes=None), "lacks the option"),
    (dict(num_classes=7), "num_classes 7"),
    (dict(nms_iou_threshold=0.0), "IoU threshold"),
    (dict(max_detections=4), "outputs"),
], ids=["missing_option", "num_classes", "iou_threshold", "output_shape"])
def test_malformed_detection_postprocess_is_a_model_error(tmp_path, change, message):
    path = tmp_path / "bad.tflite"
    path.write_bytes(dm.detection_model(1, raw_options=_options_bytes(**change)))
    with pytest.raises(ModelError, match=message):
        import_tflite(path)


def _options_bytes(**change) -> bytes:
    from flatbuffers import flexbuffers

    values = dict(max_detections=10, max_classes_per_detection=1, nms_score_threshold=0.3, nms_iou_threshold=0.5,
                  num_classes=3, y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0)
    values.update(change)
    return bytes(flexbuffers.Dumps({k: v for k, v in values.items() if v is not None}))


def test_malformed_model_exits_2_without_a_traceback(tmp_path):
    path = tmp_path / "bad.tflite"
    path.write_bytes(dm.detection_model(1, raw_options=_options_bytes(num_classes=None)))
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "build", str(path), "--target", "c", "--no-firmware",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "lacks the option" in proc.stderr


@pytest.mark.parametrize("change, constraint", [
    (dict(dtype="int8"), "detection_quantized"),
    (dict(dtype="float32"), "detection_quantized"),
    (dict(max_classes_per_detection=2), "detection_one_class_per_box"),
    (dict(use_regular_nms=True, detections_per_class=150, max_detections=200), "detection_per_class_limit"),
], ids=["int8", "float32", "two_classes_per_box", "per_class_limit"])
def test_forms_outside_the_kernel_are_refused_by_name(tmp_path, change, constraint):
    path = tmp_path / "m.tflite"
    path.write_bytes(dm.detection_model(1, **change))
    with pytest.raises(UnsupportedOpError, match=constraint):
        partition(import_tflite(path), ["c"])


FIRMWARE = ("fast_many_boxes", "regular_ties")


@pytest.mark.slow
@pytest.mark.parametrize("variant", FIRMWARE)
def test_firmware_bit_exact(tmp_path, variant):
    """Built into firmware (picolibc, soft-float double on the emulated RV32) and run on the emulator: the outputs
    equal LiteRT's (fast NMS: the rows it writes)."""
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.reference import run_reference
    from edgesdk.runner import run_inference

    path = tmp_path / f"{variant}.tflite"
    path.write_bytes(_model(variant))
    out = tmp_path / "out"
    build(path, out, BuildOptions(target="c", rounding="ref", werror=True))
    regular = VARIANTS[variant].get("use_regular_nms", False)
    for k, inputs in enumerate(_cases(path)):
        result = run_inference(out, inputs)
        assert result.exit_code == 0, result.uart
        want = run_reference(path, inputs, "ref")
        got = result.outputs
        rows = want[1].size if regular else int(want[3][0])
        for g, w in zip(got[:3], want[:3]):
            g, w = np.asarray(g).reshape(w.shape[1], -1)[:rows], np.asarray(w).reshape(w.shape[1], -1)[:rows]
            assert g.tobytes() == w.tobytes(), f"case {k}"
        assert np.asarray(got[3]).tobytes() == np.asarray(want[3]).tobytes(), f"case {k}"
