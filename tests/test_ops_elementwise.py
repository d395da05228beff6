"""The elementwise family (ADD, SUB, MUL, DIV, MINIMUM/MAXIMUM, SQUARED_DIFFERENCE, FLOOR_DIV/MOD, ADD_N, the
comparisons, the logical ops, SELECT_V2/SELECT, PRELU) on hand-made models: the cases the converter-made corpus
(tests/test_op_corpus.py) cannot produce -- LiteRT's power-of-two int16 ADD/SUB, int16 comparisons and PRELU,
int32 overflow and fused activations, float32 infinities, NaN and signed zeros, exhaustive int8 DIV grids with
zero divisors, random quantizations -- each compared op by op with both references on the host kernels, and
malformed models, which must be refused with a clear error.
"""

from __future__ import annotations

import numpy as np
import pytest

import modelgen
from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.ops import prepared
from edgesdk.ops.add import AddPotData
from edgesdk.targets.c import testing
from edgesdk.targets.c.supported import C_SUPPORT

ACT = modelgen.ACTIVATION_CODES
OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}
INT8_GRID = np.arange(-128, 128, dtype=np.int8)
F32 = np.float32
SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0e38, -3.0e38, np.inf, -np.inf, np.nan, 1e-45, -7.0, 6.0,
                        3.5, -0.75], np.float32)
# NaNs with payloads, a negative one and a signaling one: which NaN a result carries is part of bit-exactness.
NAN_F32 = np.array([0x7FC00001, 0xFFC00002, 0x7F800003, 0x7FC00000, 0x3F800000, 0x7F800000, 0x00000000],
                   np.uint32).view(np.float32)


def special_pairs():
    """Every pair of special values, then every pair of NaN-payload values."""
    a = np.concatenate([np.repeat(SPECIAL_F32, SPECIAL_F32.size), np.repeat(NAN_F32, NAN_F32.size)])
    b = np.concatenate([np.tile(SPECIAL_F32, SPECIAL_F32.size), np.tile(NAN_F32, NAN_F32.size)])
    return a, b


def binary(op, shape_a, shape_b, out_shape, dtype, qa=None, qb=None, qy=None, out_dtype=None, **fields):
    """A one-op model with two activation inputs (quantization (scale, zero point) or None)."""
    m = modelgen.ModelBuilder()
    a = m.tensor(shape_a, dtype, *(qa or (None, None)))
    b = m.tensor(shape_b, dtype, *(qb or (None, None)))
    y = m.tensor(out_shape, out_dtype or dtype, *(qy or (None, None)))
    options = OPTIONS.get(op)
    if options:
        fields.setdefault("FusedActivationFunction", 0)
    m.op(op, [a, b], [y], options, **fields)
    return m.build([a, b], [y])


def run_both(tmp_path, data, cases, modes=("ref", "tflm"), name="model"):
    """Compare every op of the model with each reference in `modes` on each (label, inputs) case."""
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    graph = import_tflite(path)
    for op in graph.ops:
        ok, why = C_SUPPORT.check(op)
        assert ok, f"{op.location}: {why}"
    problems = []
    for mode in modes:
        library = testing.OpLibrary(graph.ops, mode)
        for label, inputs in cases:
            ref = testing.reference_tensors(path, inputs, mode)
            for op, diff, count in testing.compare_ops(graph, ref, mode, library):
                problems.append(f"{name} [{mode} {label}] {op.location}: {count} values differ (max {diff})")
    assert not problems, "\n".join(problems[:20])
    return graph


def random_ints(rng, shape, dtype, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dtype)


def extremes(shapes, dtype):
    info = np.iinfo(dtype)
    return [("all min", [np.full(s, info.min, dtype) for s in shapes]),
            ("all max", [np.full(s, info.max, dtype) for s in shapes])]


# -- int16 ADD / SUB / MUL / SQUARED_DIFFERENCE: the general path on random quantizations ------------------------

@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "SQUARED_DIFFERENCE"])
def test_int16_random_quantizations(tmp_path, op):
    rng = np.random.default_rng(16)
    for k in range(6):
        scales = [float(rng.uniform(1e-5, 1e-3)) for _ in range(3)]
        if op == "SQUARED_DIFFERENCE":
            scales[2] = float(max(scales[:2]) ** 2 * rng.uniform(2e3, 5e4))  # a representable output range
        elif op == "MUL":
            scales[2] = float(scales[0] * scales[1] * rng.uniform(500, 40000))
        shape_a, shape_b, out_shape = [((2, 3, 4), (2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,), (2, 3, 4)),
                                       ((3, 1), (1, 5), (3, 5))][k % 3]
        activation = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"][k % 4] if op != "SQUARED_DIFFERENCE" else None
        fields = {} if activation is None else {"FusedActivationFunction": ACT[activation]}
        if op in ("ADD", "SUB"):
            fields["PotScaleInt16"] = False
        data = binary(op, shape_a, shape_b, out_shape, "int16", (scales[0], 0), (scales[1], 0), (scales[2], 0), **fields)
        cases = [("random", [random_ints(rng, shape_a, np.int16), random_ints(rng, shape_b, np.int16)])]
        cases += extremes([shape_a, shape_b], np.int16)
        # LiteRT has no int16 SQUARED_DIFFERENCE: --rounding ref builds run TFLite Micro's arithmetic.
        modes = ("tflm",) if op == "SQUARED_DIFFERENCE" else ("ref", "tflm")
        run_both(tmp_path, data, cases, modes, name=f"{op.lower()}_{k}")


@pytest.mark.parametrize("op", ["ADD", "SUB"])
def test_int8_random_quantizations(tmp_path, op):
    """The rescaling constants in double in both references (TFLite Micro's SUB sources divide in float32; the
    package does not)."""
    rng = np.random.default_rng(8)
    for k in range(8):
        qa, qb = [(float(rng.uniform(0.003, 0.2)), int(rng.integers(-128, 128))) for _ in range(2)]
        qy = (float(max(qa[0], qb[0]) * rng.uniform(1.0, 3.0)), int(rng.integers(-128, 128)))
        data = binary(op, (256, 1), (1, 64), (256, 64), "int8", qa, qb, qy,
                      FusedActivationFunction=ACT[["NONE", "RELU", "RELU6", "RELU_N1_TO_1"][k % 4]])
        b = random_ints(rng, (1, 64), np.int8)
        run_both(tmp_path, data, [("grid", [INT8_GRID.reshape(256, 1), b])], name=f"{op.lower()}_{k}")


# -- LiteRT's power-of-two int16 ADD / SUB ---------------------------------------------------------------------

POT_CASES = [  # (input 1 scale, input 2 scale, output scale): one input on the output's scale
    (2.0 ** -12, 2.0 ** -12, 2.0 ** -12),
    (2.0 ** -15, 2.0 ** -12, 2.0 ** -12),
    (2.0 ** -10, 2.0 ** -13, 2.0 ** -10),
    (2.0 ** -30, 2.0 ** -8, 2.0 ** -8),       # a right shift of 22: gemmlowp's int16 arithmetic
    (1.0 / 32767, 1.0 / 32767, 1.0 / 32767),  # within CheckedLog2's 1e-3 of 2^-15: LiteRT takes the POT path too
]


@pytest.mark.parametrize("op", ["ADD", "SUB"])
@pytest.mark.parametrize("scales", POT_CASES)
def test_int16_power_of_two_path(tmp_path, op, scales):
    rng = np.random.default_rng(2)
    shape = (4, 33)
    data = binary(op, shape, shape, shape, "int16", (scales[0], 0), (scales[1], 0), (scales[2], 0),
                  FusedActivationFunction=ACT["RELU_N1_TO_1" if scales[0] == scales[1] else "NONE"], PotScaleInt16=True)
    cases = [("random", [random_ints(rng, shape, np.int16), random_ints(rng, shape, np.int16)])]
    cases += extremes([shape, shape], np.int16)
    graph = run_both(tmp_path, data, cases, name=f"pot_{op.lower()}")
    assert isinstance(prepared(graph.ops[0], "ref"), AddPotData)  # LiteRT: the POT path
    assert not isinstance(prepared(graph.ops[0], "tflm"), AddPotData)  # TFLite Micro: the general path


def test_int16_power_of_two_sub_broadcasts(tmp_path):
    rng = np.random.default_rng(3)
    data = binary("SUB", (3, 1, 8), (5, 1), (3, 5, 8), "int16", (2.0 ** -9, 0), (2.0 ** -11, 0), (2.0 ** -9, 0),
                  FusedActivationFunction=ACT["RELU"], PotScaleInt16=True)
    cases = [("random", [random_ints(rng, (3, 1, 8), np.int16), random_ints(rng, (5, 1), np.int16)])]
    run_both(tmp_path, data, cases, name="pot_sub_broadcast")


def test_int16_power_of_two_add_that_litert_cannot_run_needs_tflm(tmp_path):
    """LiteRT's POT ADD does not broadcast (it would read past the smaller input) and needs one input on the
    output's scale: --rounding ref refuses those models, --rounding tflm builds them (general path)."""
    broadcast = binary("ADD", (2, 8), (8,), (2, 8), "int16", (2.0 ** -10, 0), (2.0 ** -10, 0), (2.0 ** -10, 0),
                       PotScaleInt16=True)
    both_shifted = binary("ADD", (2, 8), (2, 8), (2, 8), "int16", (2.0 ** -12, 0), (2.0 ** -13, 0), (2.0 ** -10, 0),
                          PotScaleInt16=True)
    for name, data, fragment in (("bcast", broadcast, "does not broadcast"), ("shifted", both_shifted, "one input")):
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        with pytest.raises(UnsupportedOpError, match=fragment):
            compile_model(path, BuildOptions(target="c", rounding="ref"))
        compile_model(path, BuildOptions(target="c", rounding="tflm"))
    rng = np.random.default_rng(4)
    run_both(tmp_path, broadcast, [("random", [random_ints(rng, (2, 8), np.int16), random_ints(rng, (8,), np.int16)])],
             modes=("tflm",), name="pot_add_bcast")


# -- int32 and float32 ADD / SUB / MUL / DIV --------------------------------------------------------------------

@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_int32_arithmetic(tmp_path, op, activation):
    """Wrapping overflow (not DIV: INT32_MIN / -1 traps both references), and the fused activation, which
    TFLite Micro's int32 ADD ignores."""
    rng = np.random.default_rng(32)
    big = np.array([2**31 - 1, -2**31, 2**30, -2**30 - 7, 123456789, -1, 0, 1, 5, -6, 7, 100000], np.int32)
    a = np.concatenate([big, random_ints(rng, (12,), np.int32)]).reshape(4, 6)
    b = np.concatenate([big[::-1], random_ints(rng, (12,), np.int32, -1000, 1000)]).reshape(4, 6)
    if op == "DIV":
        a[a == -2**31] = -2**31 + 1
        b[b == 0] = 3
    data = binary(op, (4, 6), (4, 6), (4, 6), "int32", FusedActivationFunction=ACT[activation])
    bcast = binary(op, (4, 6), (6,), (4, 6), "int32", FusedActivationFunction=ACT[activation])
    run_both(tmp_path, data, [("mixed", [a, b])], name=f"{op.lower()}_i32")
    run_both(tmp_path, bcast, [("bcast", [a, b[1]])], name=f"{op.lower()}_i32_bcast")


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV"])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
def test_float32_arithmetic_special_values(tmp_path, op, activation):
    """Infinities become +-FLT_MAX through CalculateActivationRange's clamp, NaN passes, -0.0 stays."""
    a, b = special_pairs()
    n = a.size
    data = binary(op, (n,), (n,), (n,), "float32", FusedActivationFunction=ACT[activation])
    rng = np.random.default_rng(5)
    bcast = binary(op, (3, 1, 4), (5, 1), (3, 5, 4), "float32", FusedActivationFunction=ACT[activation])
    run_both(tmp_path, data, [("special", [a, b])], name=f"{op.lower()}_f32")
    run_both(tmp_path, bcast, [("random", [rng.normal(0, 3, (3, 1, 4)).astype(F32), rng.normal(0, 3, (5, 1)).astype(F32)])],
             name=f"{op.lower()}_f32_bcast")


# -- MAXIMUM / MINIMUM, SQUARED_DIFFERENCE, FLOOR_DIV / FLOOR_MOD on float32 and int32 -----------------------------

@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "FLOOR_DIV", "FLOOR_MOD"])
def test_float32_and_int32_binary_ops(tmp_path, op):
    a, b = special_pairs()
    if op.startswith("FLOOR"):  # both references refuse a zero divisor at run time
        b = np.where(b == 0, F32(-3.0), b)
    n = a.size
    modes = ("ref", "tflm")
    run_both(tmp_path, binary(op, (n,), (n,), (n,), "float32"), [("special", [a, b])], modes, name=f"{op.lower()}_f32")
    rng = np.random.default_rng(6)
    ia = np.concatenate([[2**31 - 1, -2**31, -2**31, 17, -17, 0], random_ints(rng, (18,), np.int32, -100, 100)])
    ib = np.concatenate([[-2, 2, 3, -5, 5, 7], random_ints(rng, (18,), np.int32, -9, 9)])
    ib[ib == 0] = 4
    ia, ib = ia.astype(np.int32).reshape(4, 6), ib.astype(np.int32).reshape(4, 6)
    # TFLite Micro runs FLOOR_DIV / FLOOR_MOD on float32 only; LiteRT on int32 too.
    imodes = ("ref",) if op.startswith("FLOOR") else modes
    run_both(tmp_path, binary(op, (4, 6), (6,), (4, 6), "int32"), [("mixed", [ia, ib[2]])], imodes,
             name=f"{op.lower()}_i32")


@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
def test_maximum_minimum_int16_broadcast(tmp_path, op):
    rng = np.random.default_rng(7)
    q = (1.0 / 2048, 0)
    data = binary(op, (2, 1, 5), (3, 1), (2, 3, 5), "int16", q, q, q)
    cases = [("random", [random_ints(rng, (2, 1, 5), np.int16), random_ints(rng, (3, 1), np.int16)])]
    run_both(tmp_path, data, cases + extremes([(2, 1, 5), (3, 1)], np.int16), name=f"{op.lower()}_s16")


# -- int8 DIV: every (numerator, divisor) pair ---------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_int8_div_every_pair(tmp_path, seed):
    """TFLite Micro divides by a divisor at its zero point (LiteRT refuses it at run time) and both compute
    RoundingDivideByPOT with exponents of 32 and more the x86 way: edgesdk_div.c reproduces both."""
    rng = np.random.default_rng(seed)
    for k in range(4):
        qa, qb = [(float(rng.uniform(0.002, 0.2)), int(rng.integers(-128, 128))) for _ in range(2)]
        qy = (float(rng.uniform(0.002, 2.0) * 10 ** rng.uniform(-2, 1)), int(rng.integers(-128, 128)))
        data = binary("DIV", (256, 1), (1, 256), (256, 256), "int8", qa, qb, qy,
                      FusedActivationFunction=ACT[["NONE", "RELU"][k % 2]])
        a, b = INT8_GRID.reshape(256, 1), INT8_GRID.reshape(1, 256)
        run_both(tmp_path, data, [("every pair", [a, b])], modes=("tflm",), name=f"div_{k}")
        b_nonzero = np.where(b == qb[1], np.int8(qb[1] + (1 if qb[1] < 127 else -1)), b).astype(np.int8)
        run_both(tmp_path, data, [("nonzero divisors", [a, b_nonzero])], modes=("ref",), name=f"div_{k}")


# -- comparisons ---------------------------------------------------------------------------------------------------

COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]


@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_quantized_int8_grid(tmp_path, op):
    rng = np.random.default_rng(9)
    qa, qb = (0.05, 3), (float(rng.uniform(0.01, 0.1)), -20)
    data = binary(op, (256, 1), (1, 48), (256, 48), "int8", qa, qb, out_dtype="bool")
    run_both(tmp_path, data, [("grid", [INT8_GRID.reshape(256, 1), random_ints(rng, (1, 48), np.int8)])], name=op.lower())


@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_int16_float32_int32_bool(tmp_path, op):
    rng = np.random.default_rng(10)
    # int16 quantized: LiteRT only (TFLite Micro has no int16 comparisons; --rounding tflm builds use LiteRT's).
    data = binary(op, (4, 16), (16,), (4, 16), "int16", (1.0 / 4096, 0), (3.0 / 16384, 0), out_dtype="bool")
    cases = [("random", [random_ints(rng, (4, 16), np.int16), random_ints(rng, (16,), np.int16)])]
    run_both(tmp_path, data, cases, modes=("ref",), name=f"{op.lower()}_s16")
    a = np.repeat(SPECIAL_F32, SPECIAL_F32.size)
    b = np.tile(SPECIAL_F32, SPECIAL_F32.size)
    run_both(tmp_path, binary(op, (a.size,), (b.size,), (a.size,), "float32", out_dtype="bool"), [("special", [a, b])],
             name=f"{op.lower()}_f32")
    ia = random_ints(rng, (3, 5), np.int32, -3, 3)
    run_both(tmp_path, binary(op, (3, 5), (1, 5), (3, 5), "int32", out_dtype="bool"), [("random", [ia, ia[:1]])],
             name=f"{op.lower()}_i32")
    if op in ("EQUAL", "NOT_EQUAL"):
        ba, bb = np.array([[0, 1], [1, 0]], np.bool_), np.array([1, 1], np.bool_)
        run_both(tmp_path, binary(op, (2, 2), (2,), (2, 2), "bool"), [("bool", [ba, bb])], name=f"{op.lower()}_b")


def test_comparison_input_scale_of_one_is_refused(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(binary("LESS", (4,), (4,), (4,), "int8", (1.0, 0), (0.5, 0), out_dtype="bool"))
    ok, why = C_SUPPORT.check(import_tflite(path).ops[0])
    assert not ok and "comparison_input_scales" in why


# -- logical ops, SELECT_V2 / SELECT ----------------------------------------------------------------------------------

def test_logical_ops(tmp_path):
    a = np.array([[0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 0, 1]], np.bool_)
    b = np.array([1, 0, 0, 1], np.bool_)
    for op in ("LOGICAL_AND", "LOGICAL_OR"):
        run_both(tmp_path, binary(op, (3, 4), (4,), (3, 4), "bool"), [("all pairs", [a, b])], name=op.lower())
    m = modelgen.ModelBuilder()
    x, y = m.tensor((3, 4), "bool"), m.tensor((3, 4), "bool")
    m.op("LOGICAL_NOT", [x], [y])
    run_both(tmp_path, m.build([x], [y]), [("not", [a])], name="logical_not")


def select_model(op, shapes, dtype, q=None):
    m = modelgen.ModelBuilder()
    c = m.tensor(shapes[0], "bool")
    x = m.tensor(shapes[1], dtype, *(q or (None, None)))
    y = m.tensor(shapes[2], dtype, *(q or (None, None)))
    out = m.tensor(shapes[3], dtype, *(q or (None, None)))
    m.op(op, [c, x, y], [out])
    return m.build([c, x, y], [out])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "float32", "bool"])
def test_select_v2_three_way_broadcast(tmp_path, dtype):
    rng = np.random.default_rng(11)
    shapes = [(2, 1, 4), (3, 1), (1, 3, 4), (2, 3, 4)]
    q = (0.1, 2) if dtype in ("int8", "int16") else None

    def values(shape):
        if dtype == "float32":
            return rng.normal(0, 1, shape).astype(F32)
        if dtype == "bool":
            return rng.integers(0, 2, shape).astype(np.bool_)
        return random_ints(rng, shape, np.dtype(dtype).type)

    cond = rng.integers(0, 2, shapes[0]).astype(np.bool_)
    modes = ("ref", "tflm") if dtype in ("int8", "int16", "float32") else ("ref",)  # TFLite Micro's types
    run_both(tmp_path, select_model("SELECT_V2", shapes, dtype, q), [("random", [cond, values(shapes[1]), values(shapes[2])])],
             modes, name=f"select_v2_{dtype}")


def test_select_v1_rank_one_and_scalar_condition(tmp_path):
    """SELECT (v1): a condition vector runs along the first dimension (LiteRT's RankOneSelect)."""
    rng = np.random.default_rng(12)
    x, y = rng.normal(0, 1, (3, 4)).astype(F32), rng.normal(0, 1, (3, 4)).astype(F32)
    for name, cshape in (("rank1", (3,)), ("same", (3, 4))):
        cond = rng.integers(0, 2, cshape).astype(np.bool_)
        run_both(tmp_path, select_model("SELECT", [cshape, (3, 4), (3, 4), (3, 4)], "float32"),
                 [("random", [cond, x, y])], modes=("ref",), name=f"select_{name}")


# -- PRELU ------------------------------------------------------------------------------------------------------------

def prelu_model(shape, alpha_shape, dtype, qx=None, qa=None, qy=None, alpha=None):
    m = modelgen.ModelBuilder()
    x = m.tensor(shape, dtype, *(qx or (None, None)))
    a_dtype = "int8" if dtype in ("int8", "int16") else dtype
    a = m.const(alpha, a_dtype, **({"scale": qa[0], "zero_point": qa[1]} if qa else {}))
    y = m.tensor(shape, dtype, *(qy or (None, None)))
    m.op("PRELU", [x, a], [y])
    return m.build([x], [y])


def test_prelu_int16_int8_float32(tmp_path):
    rng = np.random.default_rng(13)
    alpha8 = random_ints(rng, (1, 1, 5), np.int8)
    data = prelu_model((2, 3, 5), (1, 1, 5), "int16", (1 / 2048, 0), (0.01, 3), (1 / 1024, 0), alpha8)
    cases = [("random", [random_ints(rng, (2, 3, 5), np.int16)])] + extremes([(2, 3, 5)], np.int16)
    run_both(tmp_path, data, cases, name="prelu_s16")
    data = prelu_model((40, 6), (6,), "int8", (0.05, -7), (0.004, -2), (0.03, 11), random_ints(rng, (6,), np.int8))
    run_both(tmp_path, data, [("grid", [INT8_GRID[:240].reshape(40, 6)])], name="prelu_s8")
    alpha = np.concatenate([np.array([0.25, -1.5, 0.0, np.inf, np.nan], F32), NAN_F32])
    x = np.repeat(np.concatenate([SPECIAL_F32, NAN_F32]), alpha.size).reshape(-1, alpha.size)
    run_both(tmp_path, prelu_model(x.shape, alpha.shape, "float32", alpha=alpha), [("special", [x])], name="prelu_f32")


# -- ADD_N ------------------------------------------------------------------------------------------------------------

def add_n_model(n, shape, dtype):
    m = modelgen.ModelBuilder()
    xs = [m.tensor(shape, dtype) for _ in range(n)]
    y = m.tensor(shape, dtype)
    m.op("ADD_N", xs, [y])
    return m.build(xs, [y])


@pytest.mark.parametrize("n", [2, 5])
def test_add_n_float32_order_and_overflow(tmp_path, n):
    """LiteRT starts from input 0 and clamps each partial sum to +-FLT_MAX; TFLite Micro sums from 0.0f."""
    rng = np.random.default_rng(14)
    xs = [rng.normal(0, 1e3, (4, 16)).astype(F32) for _ in range(n)]
    big = [np.tile(np.array([3e38, -3e38, -0.0, np.inf], F32), (4, 4)) for _ in range(n)]
    nans = [np.resize(np.roll(NAN_F32, k), (4, 16)) for k in range(n)]
    run_both(tmp_path, add_n_model(n, (4, 16), "float32"), [("random", xs), ("overflow", big), ("nan", nans)],
             name=f"add_n_{n}")


def test_add_n_int32_wraps(tmp_path):
    rng = np.random.default_rng(15)
    xs = [random_ints(rng, (10,), np.int32) for _ in range(3)]
    run_both(tmp_path, add_n_model(3, (10,), "int32"), [("random", xs)], modes=("ref",), name="add_n_i32")


# -- malformed models ----------------------------------------------------------------------------------------------------

def _compile(tmp_path, data):
    path = tmp_path / "bad.tflite"
    path.write_bytes(data)
    return compile_model(path, BuildOptions(target="c"))


@pytest.mark.parametrize("case, fragment", [
    ("sub_three_inputs", r"takes 2 input\(s\)"),
    ("add_shapes", "do not broadcast"),
    ("select_shapes", "do not broadcast"),
    ("select_v1_condition", "neither x's shape"),
    ("prelu_alpha", "does not broadcast to the input"),
    ("add_n_shapes", "ADD_N adds tensors of one shape"),
    ("logical_not_size", "maps 4 input elements"),
])
def test_malformed_models_are_model_errors(tmp_path, case, fragment):
    m = modelgen.ModelBuilder()
    if case == "sub_three_inputs":
        xs = [m.tensor((4,), "int8", 0.1, 0) for _ in range(3)]
        y = m.tensor((4,), "int8", 0.1, 0)
        m.op("SUB", xs, [y], "SubOptions", FusedActivationFunction=0)
        data = m.build(xs, [y])
    elif case == "add_shapes":
        data = binary("ADD", (2, 3), (4,), (2, 3), "float32", FusedActivationFunction=0)
    elif case == "select_shapes":
        data = select_model("SELECT_V2", [(2, 3), (2, 3), (4, 3), (2, 3)], "float32")
    elif case == "select_v1_condition":
        data = select_model("SELECT", [(4,), (3, 4), (3, 4), (3, 4)], "float32")
    elif case == "prelu_alpha":
        data = prelu_model((2, 4), (3,), "float32", alpha=np.ones(3, F32))
    elif case == "add_n_shapes":
        a, b = m.tensor((2, 3), "float32"), m.tensor((3, 2), "float32")
        y = m.tensor((2, 3), "float32")
        m.op("ADD_N", [a, b], [y])
        data = m.build([a, b], [y])
    else:
        x, y = m.tensor((4,), "bool"), m.tensor((5,), "bool")
        m.op("LOGICAL_NOT", [x], [y])
        data = m.build([x], [y])
    with pytest.raises(ModelError, match=fragment):
        _compile(tmp_path, data)


def test_unsupported_dtypes_are_refused_with_the_rule(tmp_path):
    """int64 arithmetic and int8 tensors without quantization are not run; the partitioner names the rule."""
    for data, rule in ((binary("ADD", (4,), (4,), (4,), "int64", FusedActivationFunction=0), "arithmetic_types"),
                       (binary("MAXIMUM", (4,), (4,), (4,), "int64"), "stored_value_types"),
                       (binary("FLOOR_DIV", (4,), (4,), (4,), "int8", (0.1, 0), (0.1, 0), (0.1, 0)), "float_or_int32_types")):
        path = tmp_path / "m.tflite"
        path.write_bytes(data)
        ok, why = C_SUPPORT.check(import_tflite(path).ops[0])
        assert not ok and rule in why, why
        with pytest.raises(UnsupportedOpError):
            compile_model(path, BuildOptions(target="c"))


# -- firmware: the kernels cross-compiled (soft-float RV32) and run on the emulator -------------------------------

def float_ops_model(n: int) -> bytes:
    """Every float32 kernel of the family in one graph, each result a model output."""
    m = modelgen.ModelBuilder()
    a, b, c = (m.tensor((n,), "float32") for _ in range(3))  # c: nonzero divisors for FLOOR_DIV / FLOOR_MOD
    outputs = []

    def op(name, inputs, dtype="float32", options=None, **fields):
        y = m.tensor((n,), dtype)
        m.op(name, inputs, [y], options, **fields)
        outputs.append(y)
        return y

    op("ADD", [a, b], options="AddOptions", FusedActivationFunction=0)
    op("SUB", [a, b], options="SubOptions", FusedActivationFunction=ACT["RELU6"])
    op("MUL", [a, b], options="MulOptions", FusedActivationFunction=0)
    op("DIV", [a, b], options="DivOptions", FusedActivationFunction=ACT["RELU_N1_TO_1"])
    op("MAXIMUM", [a, b])
    op("MINIMUM", [a, b])
    op("SQUARED_DIFFERENCE", [a, b])
    op("FLOOR_DIV", [a, c])
    op("FLOOR_MOD", [a, c])
    alpha = m.const(np.resize(np.array([0.25, -1.5, np.inf, np.nan], F32), n), "float32")
    op("PRELU", [a, alpha])
    less = op("LESS", [a, b], dtype="bool")
    op("SELECT_V2", [less, a, b])
    op("ADD_N", [a, b, c])
    return m.build([a, b, c], outputs)


def int_ops_model(n: int) -> bytes:
    """int32 arithmetic and int8 DIV on every numerator against a spread of divisors (zero included)."""
    m = modelgen.ModelBuilder()
    a, b = m.tensor((n,), "int32"), m.tensor((n,), "int32")
    p = m.tensor((256, 1), "int8", 0.05, 3)
    q = m.tensor((1, 16), "int8", 0.11, -7)
    outputs = []
    for name, options, fields in (("ADD", "AddOptions", {"FusedActivationFunction": ACT["RELU"]}),
                                  ("SUB", "SubOptions", {"FusedActivationFunction": 0}),
                                  ("MUL", "MulOptions", {"FusedActivationFunction": ACT["RELU6"]}),
                                  ("DIV", "DivOptions", {"FusedActivationFunction": 0}),
                                  ("SQUARED_DIFFERENCE", None, {}), ("MAXIMUM", None, {})):
        y = m.tensor((n,), "int32")
        m.op(name, [a, b], [y], options, **fields)
        outputs.append(y)
    d = m.tensor((256, 16), "int8", 0.02, -5)
    m.op("DIV", [p, q], [d], "DivOptions", FusedActivationFunction=0)
    outputs.append(d)
    return m.build([a, b, p, q], outputs)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["float", "int"])
def test_firmware_bit_exact(tmp_path, which):
    from edgesdk.compiler import build
    from edgesdk.reference import run_reference
    from edgesdk.runner import run_inference

    rng = np.random.default_rng(17)
    if which == "float":
        a, b = special_pairs()
        c = np.where(b == 0, F32(-3.0), b)
        data, inputs = float_ops_model(a.size), [a, b, c]
    else:
        a = np.concatenate([[2**31 - 1, -2**31 + 1, 2**30, -7, 0], random_ints(rng, (59,), np.int32)]).astype(np.int32)
        b = np.concatenate([[2, -3, 4, 5, 9], random_ints(rng, (59,), np.int32, -50, 50)]).astype(np.int32)
        b[b == 0] = 11
        q = np.linspace(-128, 127, 16).astype(np.int8).reshape(1, 16)
        data, inputs = int_ops_model(a.size), [a, b, INT8_GRID.reshape(256, 1), q]
    path = tmp_path / f"{which}.tflite"
    path.write_bytes(data)
    problems = []
    for mode in ("ref", "tflm"):
        if which == "int" and mode == "ref":
            inputs[3] = np.where(q == -7, np.int8(-6), q)  # LiteRT refuses a divisor at its zero point
        out = tmp_path / mode
        build(path, out, BuildOptions(target="c", rounding=mode))
        result = run_inference(out, inputs)
        assert result.exit_code == 0
        expected = run_reference(path, inputs, mode)
        for k, (want, got) in enumerate(zip(expected, result.outputs)):
            want, got = np.asarray(want), np.asarray(got)
            w, g = want.reshape(-1).view(np.uint8), got.reshape(-1).view(np.uint8)
            if w.tobytes() != g.tobytes():
                size = want.itemsize
                bad = np.flatnonzero((w != g).reshape(-1, size).any(axis=1))
                problems.append(f"{which} {mode} output {k}: {bad.size} values differ, e.g. at {bad[:3].tolist()}: "
                                f"{want.reshape(-1)[bad[:3]].tolist()} expected, {got.reshape(-1)[bad[:3]].tolist()} "
                                f"({[hex(v) for v in want.reshape(-1)[bad[:3]].view(np.uint32)] if size == 4 else ''} "
                                f"vs {[hex(v) for v in got.reshape(-1)[bad[:3]].view(np.uint32)] if size == 4 else ''})")
    assert not problems, "\n".join(problems)
