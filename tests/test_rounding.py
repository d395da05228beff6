"""edgesdk.ir.rounding: each per-op rule, checked on inputs that tell the candidate arithmetics apart.

Every case below is built so that the candidates give different bytes (ties on negative halves for the
rounding, scales where float32 and double constants give different multipliers): the chosen arithmetic
must equal the reference interpreter and each alternative must not (so the case really discriminates).
The cases were found by the searches described in docs/rounding.md.
"""

from __future__ import annotations

import numpy as np
import pytest

import modelgen as mg
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.ir import quant
from edgesdk.ir.rounding import differing_op_types, requant_rounding
from edgesdk.ops import conv_2d, depthwise_conv_2d
from edgesdk.targets.c import testing

P = [2.0 ** -k for k in range(8)]  # power-of-two scales make exact ties
SWEEP = np.arange(-8, 9, dtype=np.int8)


class _Op:
    def __init__(self, type_, uint8_semantics=False):
        self.type = type_
        self.uint8_semantics = uint8_semantics


@pytest.mark.parametrize("op_type,ref,tflm", [
    ("CONV_2D", "double", "double"),
    ("DEPTHWISE_CONV_2D", "double", "double"),
    ("FULLY_CONNECTED", "fp64", "double"),
    ("ADD", "double", "double"),
    ("MUL", "double", "double"),
    ("MEAN", "double", "double"),
    ("QUANTIZE", "double", "double"),
    ("SOFTMAX", "double", "double"),
    ("LOGISTIC", "lut", "double"),
    ("TANH", "lut", "double"),
])
def test_rule_table(op_type, ref, tflm):
    assert requant_rounding(_Op(op_type), "ref") == ref
    assert requant_rounding(_Op(op_type), "tflm") == tflm


def test_uint8_depthwise_always_double_and_modes_checked():
    assert requant_rounding(_Op("DEPTHWISE_CONV_2D", uint8_semantics=True), "ref") == "double"
    with pytest.raises(ValueError):
        requant_rounding(_Op("CONV_2D"), "litert")
    assert {"FULLY_CONNECTED", "LOGISTIC", "TANH", "MUL", "RELU"} <= set(differing_op_types())


def _run(tmp_path, data: bytes, inputs: list, mode: str, library_mode: str | None = None, force=None):
    """(C output of the model's last op, the reference's output) for one single-op model."""
    path = tmp_path / "case.tflite"
    path.write_bytes(data)
    graph = import_tflite(path)
    op = [o for o in graph.ops if not o.attrs.get("edge")][-1]  # not the importer's uint8 edge conversions
    ref = testing.reference_tensors(path, inputs, mode)
    library = testing.OpLibrary([op], library_mode or mode, force)
    feed = {t: testing.ir_value(t, graph, ref) for t in op.inputs if t is not None and not t.is_const}
    return library.run(op, feed)[0], testing.ir_value(op.outputs[0], graph, ref)


def _check(tmp_path, data, inputs, mode, chosen, alternatives, op_type):
    got, want = _run(tmp_path, data, inputs, mode, force={op_type: chosen})
    assert np.array_equal(got, want), f"{op_type} with {chosen} differs from {mode}: {got.ravel()} vs {want.ravel()}"
    for alt in alternatives:
        got_alt, _ = _run(tmp_path, data, inputs, mode, force={op_type: alt})
        assert not np.array_equal(got_alt, want), f"case does not separate {chosen} from {alt}"


# -- rounding: negative halves (eff. scale 2^-3 with acc -4 gives -0.5) ---------------------------------------

def _fc_tie():
    data = mg.fully_connected_model(len(SWEEP), np.ones((1, 1), np.int8), np.zeros(1, np.int32), (P[4], 0), P[4],
                                    (P[5], 0))
    return data, [SWEEP.reshape(-1, 1)]


def _conv_tie():
    data = mg.conv_model((1, 1, len(SWEEP), 1), np.ones((1, 1, 1, 1), np.int8), np.zeros(1, np.int32), (P[4], 0),
                         [P[4]], (P[5], 0))
    return data, [SWEEP.reshape(1, 1, -1, 1)]


def _depthwise_tie():
    data = mg.depthwise_model((1, 1, len(SWEEP), 1), np.ones((1, 1, 1, 1), np.int8), np.zeros(1, np.int32), (P[4], 0),
                              [P[4]], (P[5], 0))
    return data, [SWEEP.reshape(1, 1, -1, 1)]


def _add_tie():  # both inputs 2^-6, output 2^-4: (a + b) / 4
    data = mg.binary_model("ADD", (1, len(SWEEP)), (1, len(SWEEP)), (1, len(SWEEP)), (P[6], 0), (P[6], 0), (P[4], 0))
    return data, [SWEEP.reshape(1, -1), np.zeros((1, len(SWEEP)), np.int8)]


def _mul_tie():  # 2^-4 * 2^-4 / 2^-5: a * b / 8
    data = mg.binary_model("MUL", (1, len(SWEEP)), (1, 1), (1, len(SWEEP)), (P[4], 0), (P[4], 0), (P[5], 0))
    return data, [SWEEP.reshape(1, -1), np.array([[1]], np.int8)]


def _mean_tie():  # mean of (0, x), output scale 4x: x / 8
    data = mg.mean_model((1, 2, 1, len(SWEEP)), [1], True, (P[4], 0), (P[2], 0))
    x = np.stack([np.zeros(len(SWEEP), np.int8), SWEEP]).reshape(1, 2, 1, -1)
    return data, [x]


def _requantize_tie():  # 2^-4 -> 2^-2: x / 4
    data = mg.unary_model("QUANTIZE", (1, len(SWEEP)), (P[4], 0), (P[2], 0))
    return data, [SWEEP.reshape(1, -1)]


@pytest.mark.parametrize("op_type,builder", [
    ("CONV_2D", _conv_tie), ("DEPTHWISE_CONV_2D", _depthwise_tie), ("ADD", _add_tie), ("MUL", _mul_tie),
    ("MEAN", _mean_tie), ("QUANTIZE", _requantize_tie),
])
@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_both_references_round_twice(tmp_path, op_type, builder, mode):
    data, inputs = builder()
    _check(tmp_path, data, inputs, mode, "double", ["single"], op_type)


def test_litert_fully_connected_rounds_in_double_precision(tmp_path):
    data, inputs = _fc_tie()
    _check(tmp_path, data, inputs, "ref", "fp64", ["double", "single"], "FULLY_CONNECTED")


def test_tflm_fully_connected_rounds_twice(tmp_path):
    data, inputs = _fc_tie()
    _check(tmp_path, data, inputs, "tflm", "double", ["single", "fp64"], "FULLY_CONNECTED")


def test_logistic_table_in_litert_fixed_point_in_tflm(tmp_path):
    # One of the rare input quantizations where the float32 table and gemmlowp's fixed point disagree.
    data = mg.unary_model("LOGISTIC", (1, 256), (0.35525211691856384, -44), (1 / 256, -128))
    inputs = [np.arange(-128, 128, dtype=np.int8).reshape(1, 256)]
    _check(tmp_path, data, inputs, "ref", "lut", ["double"], "LOGISTIC")
    _check(tmp_path, data, inputs, "tflm", "double", ["lut"], "LOGISTIC")


@pytest.mark.parametrize("scale,zero_point", [(0.0439, 7), (0.0123, -128), (0.25, 100)])
def test_tanh_matches_both_references(tmp_path, scale, zero_point):
    # No input quantization separating table and fixed point was found for TANH (docs/rounding.md); the
    # rule follows LiteRT's source (TanhEval: LookupTable for int8) and both must still match.
    data = mg.unary_model("TANH", (1, 256), (scale, zero_point), (1 / 128, 0))
    inputs = [np.arange(-128, 128, dtype=np.int8).reshape(1, 256)]
    for mode in ("ref", "tflm"):
        got, want = _run(tmp_path, data, inputs, mode)
        assert np.array_equal(got, want), mode


# -- constants: float32 vs double scale arithmetic in Prepare() -----------------------------------------------

def _cross_check(tmp_path, data, inputs):
    """The library generated for each mode matches that mode's reference, and not the other one."""
    for mode, other in (("ref", "tflm"), ("tflm", "ref")):
        got, want = _run(tmp_path, data, inputs, mode)
        assert np.array_equal(got, want), f"{mode} constants differ from the {mode} reference"
        got_other, _ = _run(tmp_path, data, inputs, mode, library_mode=other)
        assert not np.array_equal(got_other, want), f"case does not separate {mode} from {other} constants"


def test_mul_constants_float32_in_litert_double_in_tflm(tmp_path):
    a = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    data = mg.binary_model("MUL", (1, 256), (1, 1), (1, 256), (0.010590525344014168, -113), (0.013158661313354969, -57),
                           (0.07963413000106812, -1))
    _cross_check(tmp_path, data, [a, np.array([[68]], np.int8)])


def test_relu_constants_float32_in_litert_double_in_tflm(tmp_path):
    data = mg.unary_model("RELU", (1, 256), (0.08690829575061798, 3), (0.07164958864450455, -88))
    _cross_check(tmp_path, data, [np.arange(-128, 128, dtype=np.int8).reshape(1, 256)])


def test_relu6_tflm_clamps_without_requantizing(tmp_path):
    data = mg.unary_model("RELU6", (1, 256), (0.05, -10), (0.03, -100))
    _cross_check(tmp_path, data, [np.arange(-128, 128, dtype=np.int8).reshape(1, 256)])


def _double_product(op):
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    channels = int(y.shape[-1])
    return [quant.effective_scale(x.quant.scale[0], float(w.quant.scale[0]), denominator=y.quant.scale[0])] * channels


@pytest.mark.parametrize("kind,p", [
    ("conv", dict(si=0.1585397571325302, zi=84, sw=0.0050591034814715385, wzp=154, so=0.1471458375453949, zo=101, w=227,
                  bias=-3691)),
    ("depthwise", dict(si=0.06711070239543915, zi=40, sw=0.0103608388453722, wzp=122, so=0.12135034799575806, zo=64,
                       w=249, bias=3192)),
])
def test_uint8_convolutions_use_float32_scale_product(tmp_path, monkeypatch, kind, p):
    build = mg.conv_model if kind == "conv" else mg.depthwise_model
    data = build((1, 1, 256, 1), np.array([p["w"]], np.uint8).reshape(1, 1, 1, 1), np.array([p["bias"]], np.int32),
                 (p["si"], p["zi"]), p["sw"], (p["so"], p["zo"]), w_zero_point=p["wzp"], dtype="uint8")
    inputs = [np.arange(256, dtype=np.uint8).reshape(1, 1, 256, 1)]
    got, want = _run(tmp_path, data, inputs, "ref")
    assert np.array_equal(got, want)
    monkeypatch.setattr(conv_2d, "conv_effective_scales", _double_product)
    monkeypatch.setattr(depthwise_conv_2d, "conv_effective_scales", _double_product)
    got_alt, _ = _run(tmp_path, data, inputs, "ref")
    assert not np.array_equal(got_alt, want), "case does not separate float32 from double scale products"


def test_vectorised_quantize_multipliers_equals_the_scalar_one():
    """ir.quant.quantize_multipliers (vectorised, with a shorter path when every scale is positive) gives
    quantize_multiplier's (multiplier, shift) for each value: mantissas that round up to 2^31, zeros, values too
    small for a shift of -31, negative values, subnormals, and mixes of them."""
    rng = np.random.default_rng(13)
    carries = [float(np.ldexp(1 - 2.0 ** -33, e)) for e in range(-40, 40)]
    special = [0.0, -0.0, 5e-324, 2.0 ** -31, 2.0 ** -32, 2.0 ** -33, 1.0, 0.5, 2.0 ** 30]
    vectors = [list(2.0 ** rng.uniform(-70, 40, 64)), carries, special, [-s for s in carries] + special, [],
               list(2.0 ** rng.uniform(-12, -6, 256)), list(-(2.0 ** rng.uniform(-70, 40, 16)))]
    for values in vectors:
        multipliers, shifts = quant.quantize_multipliers(values)
        assert list(zip(multipliers, shifts)) == [quant.quantize_multiplier(v) for v in values]
        assert all(type(m) is int and type(s) is int for m, s in zip(multipliers, shifts))
