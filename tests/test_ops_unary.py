"""Single-input elementwise ops and activations, beyond the converter-made corpus (tests/models/ops): hand-made
models (tests/modelgen.py) in the dtypes and quantizations the converter does not produce, fed every int8
value, every int16 value, and float32 special values (signed zeros, infinities, NaNs with payloads,
subnormals, halves, random bit patterns), compared byte for byte with LiteRT's reference kernels (--rounding
ref) and TFLite Micro (--rounding tflm) op by op on the host kernels. Malformed models give a ModelError,
quantizations TFLite refuses a clear refusal.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import modelgen as mg
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.partition.partitioner import partition
from edgesdk.targets.c import testing

BOTH, REF, TFLM = ("ref", "tflm"), ("ref",), ("tflm",)
KERNELS = testing.KERNELS_DIR
INT8_ALL = np.arange(-128, 128, dtype=np.int8)
INT16_ALL = np.arange(-32768, 32768, dtype=np.int16)


def _q(rng, lo=0.005, hi=0.2, zp=True, zp_range=(-128, 128)):
    scale = float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))
    return scale, (int(rng.integers(*zp_range)) if zp else 0)


def float_specials(rng, n_random=512) -> np.ndarray:
    """Signed zeros, infinities, quiet and signalling NaNs with payloads, subnormals, halves, values near
    the int8/int16/int32 limits, then random bit patterns and random normals."""
    bits = [0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fc12345, 0xff812345,
            0x7f800001, 0xff800123, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x80800000,
            0x7f7fffff, 0xff7fffff]
    values = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, -0.49999997, 1.0, -1.0, 127.5, -128.5, 128.0,
              -129.0, 32767.5, -32768.5, 2147483520.0, -2147483648.0, 2147483648.0, 8388607.5, -8388607.5,
              8388608.0, 16777217.0, 1e-30, -1e-30, 6.0, 5.999999, 6.000001, 3e9, -3e9, 1e20, -1e20]
    random_bits = rng.integers(0, 1 << 32, n_random, dtype=np.uint64).astype(np.uint32)
    normals = rng.normal(0.0, 4.0, n_random).astype(np.float32)
    return np.concatenate([np.array(bits, np.uint32).view(np.float32), np.array(values, np.float32),
                           random_bits.view(np.float32), normals]).astype(np.float32)


class Case:
    """A single-op model, the input arrays it is fed, and the references that run it."""

    def __init__(self, name, data, inputs, modes=BOTH):
        self.name, self.data, self.inputs, self.modes = name, data, inputs, modes


def _unary(name, op, x, in_q, out_q, dtype, modes=BOTH, out_dtype=None, options=None, **fields):
    x = np.asarray(x)
    data = mg.unary_model(op, x.shape, in_q, out_q, dtype=dtype, out_dtype=out_dtype, options=options, **fields)
    return Case(name, data, [[x]], modes)


def int8_cases(rng) -> list:
    cases = []
    for k in range(6):
        cases.append(_unary(f"abs_int8_{k}", "ABS", INT8_ALL, _q(rng), _q(rng), "int8"))
        same = _q(rng)
        cases.append(_unary(f"abs_int8_same_scale_{k}", "ABS", INT8_ALL, same, (same[0], int(rng.integers(-128, 128))),
                            "int8"))
        for alpha in (0.2, -0.5, 1.5, 0.0):
            cases.append(_unary(f"leaky_relu_int8_{alpha}_{k}", "LEAKY_RELU", INT8_ALL, _q(rng), _q(rng), "int8",
                                options="LeakyReluOptions", Alpha=alpha))
        cases.append(_unary(f"exp_int8_{k}", "EXP", INT8_ALL, _q(rng, 0.01, 0.05), _q(rng, 0.01, 0.5), "int8", REF))
        cases.append(_unary(f"log_int8_{k}", "LOG", INT8_ALL, _q(rng, 0.01, 0.5), _q(rng, 0.005, 0.05), "int8", REF))
        cases.append(_unary(f"elu_int8_{k}", "ELU", INT8_ALL, _q(rng, 0.01, 0.1), _q(rng, 0.005, 0.05), "int8", TFLM))
        # RSQRT/SQRT: TFLite refuses inputs below the zero point (negative real values): feed those at or above
        for op, modes in (("RSQRT", BOTH), ("SQRT", REF)):
            in_q = _q(rng, 0.002, 0.2)
            x = INT8_ALL[INT8_ALL >= in_q[1]]
            cases.append(_unary(f"{op.lower()}_int8_{k}", op, x, in_q, _q(rng, 0.002, 0.2), "int8", modes))
    return cases


def int16_cases(rng) -> list:
    cases = []
    sym = dict(zp=False)
    for k in range(3):
        for op in ("RELU", "RELU6"):
            cases.append(_unary(f"{op.lower()}_int16_{k}", op, INT16_ALL, _q(rng, 1e-4, 1e-3, **sym),
                                _q(rng, 1e-4, 1e-3, **sym), "int16"))
        cases.append(_unary(f"abs_int16_{k}", "ABS", INT16_ALL, _q(rng, 1e-4, 1e-3, **sym), _q(rng, 1e-4, 1e-3, **sym),
                            "int16"))
        for alpha in (0.3, -0.7, 2.0):
            cases.append(_unary(f"leaky_relu_int16_{alpha}_{k}", "LEAKY_RELU", INT16_ALL, _q(rng, 1e-4, 1e-3, **sym),
                                _q(rng, 1e-4, 1e-3, **sym), "int16", options="LeakyReluOptions", Alpha=alpha))
        cases.append(_unary(f"exp_int16_{k}", "EXP", INT16_ALL, _q(rng, 5e-5, 3e-4, **sym), _q(rng, 1e-4, 1e-2, **sym),
                            "int16", REF))
        cases.append(_unary(f"log_int16_{k}", "LOG", INT16_ALL, _q(rng, 1e-4, 1e-2, **sym), _q(rng, 5e-5, 5e-4, **sym),
                            "int16", REF))
        positive = INT16_ALL[INT16_ALL >= 0]
        cases.append(_unary(f"rsqrt_int16_{k}", "RSQRT", positive, _q(rng, 1e-4, 1e-2, **sym),
                            _q(rng, 1e-4, 1e-3, **sym), "int16"))
        cases.append(_unary(f"sqrt_int16_{k}", "SQRT", positive, _q(rng, 1e-4, 1e-2, **sym), _q(rng, 1e-4, 1e-2, **sym),
                            "int16", REF))
    # LOGISTIC/TANH: output scale 2^-15; power-of-two input scales (the multiplier-free path) and others
    for op in ("LOGISTIC", "TANH"):
        for k, s_in in enumerate((2.0 ** -12, 2.0 ** -11, 2.0 ** -10, 2.0 ** -13, 4.5e-4, 1.1e-4, 3.05e-5, 2e-3)):
            cases.append(_unary(f"{op.lower()}_int16_{k}", op, INT16_ALL, (s_in, 0), (2.0 ** -15, 0), "int16"))
    return cases


def quantize_cases(rng) -> list:
    cases = []
    floats = float_specials(rng)
    floats = floats[~np.isnan(floats)]  # NaN -> int is undefined in TFLite (x86 gives INT32_MIN + zero point)
    for k in range(3):
        for out in ("int8", "int16"):
            q = _q(rng, 0.001, 0.1) if out == "int8" else _q(rng, 1e-5, 1e-3, zp_range=(-300, 300))
            cases.append(_unary(f"quantize_f32_{out}_{k}", "QUANTIZE", floats, None, q, "float32", out_dtype=out))
        for src, dst, modes in (("int8", "int16", BOTH), ("int16", "int8", BOTH), ("int16", "int16", BOTH),
                                ("int16", "int32", BOTH), ("int8", "int32", TFLM), ("int32", "int8", BOTH),
                                ("int32", "int16", BOTH), ("int8", "int8", BOTH)):
            zp = lambda t: (0 if src == dst == "int16" else int(rng.integers(-100, 100))) if t != "int32" else \
                int(rng.integers(-1000, 1000))
            in_q, out_q = (float(np.float32(rng.uniform(1e-4, 0.1))), zp(src)), (float(np.float32(rng.uniform(1e-4, 0.1))), zp(dst))
            if src == "int8":
                x = INT8_ALL
            elif src == "int16":
                x = INT16_ALL
            else:
                x = np.concatenate([np.arange(-70000, 70000, 7), [2 ** 31 - 1, -2 ** 31, 10 ** 9, -10 ** 9]]).astype(np.int32)
            cases.append(_unary(f"requantize_{src}_{dst}_{k}", "QUANTIZE", x, in_q, out_q, src, modes, out_dtype=dst))
        # uint8 -> int16 (LiteRT only): the importer shifts uint8 to int8, the requantization is int8 -> int16
        cases.append(_unary(f"requantize_uint8_int16_{k}", "QUANTIZE", np.arange(256, dtype=np.uint8),
                            _q(rng, 0.005, 0.1, zp_range=(0, 256)), _q(rng, 1e-4, 1e-2, zp_range=(-300, 300)), "uint8",
                            REF, out_dtype="int16"))
        cases.append(_unary(f"dequantize_int16_{k}", "DEQUANTIZE", INT16_ALL, _q(rng, 1e-5, 1e-2, zp=False),
                            None, "int16", out_dtype="float32"))
        # LiteRT's DEQUANTIZE requires int16 zero point 0; TFLite Micro takes any
        cases.append(_unary(f"dequantize_int16_zp_{k}", "DEQUANTIZE", INT16_ALL, _q(rng, 1e-5, 1e-2, zp_range=(-500, 500)),
                            None, "int16", TFLM, out_dtype="float32"))
    return cases


FLOAT_OPS = (("ABS", BOTH), ("NEG", BOTH), ("SQUARE", BOTH), ("SQRT", BOTH), ("RSQRT", BOTH), ("FLOOR", BOTH),
             ("CEIL", TFLM), ("ROUND", TFLM), ("RELU", BOTH), ("RELU6", BOTH), ("RELU_N1_TO_1", REF),
             ("ZEROS_LIKE", BOTH), ("EXP", BOTH), ("LOG", BOTH), ("SIN", BOTH), ("COS", BOTH), ("ELU", TFLM),
             ("TANH", BOTH), ("LOGISTIC", BOTH), ("HARD_SWISH", BOTH))


def float_cases(rng) -> list:
    x = float_specials(rng)
    # the inputs where glibc's fused expf/sinf/cosf differ from the unfused algorithms (the exception tables),
    # and dense ranges around the functions' thresholds
    with open(KERNELS / "edgesdk_mathf_exceptions.h") as f:
        exceptions = [int(v, 16) for v in re.findall(r"\{0x([0-9a-f]+)u, 0x", f.read())]
    dense = [np.linspace(lo, hi, 256, dtype=np.float32) for lo, hi in ((-0.5, 0.5), (-12, 12), (-110, 95), (85, 90),
                                                                       (-105, -100), (115, 125), (0.9, 1.1))]
    x = np.concatenate([x, np.array(exceptions, np.uint32).view(np.float32), *dense]).astype(np.float32)
    cases = [_unary(f"{op.lower()}_float", op, x, None, None, "float32", modes) for op, modes in FLOAT_OPS]
    ints = np.array([0, 1, -1, 7, -7, 2 ** 31 - 1, -2 ** 31, -2 ** 31 + 1, 123456789, -987654321], np.int32)
    cases.append(_unary("abs_int32", "ABS", ints, None, None, "int32", REF))
    cases.append(_unary("neg_int32", "NEG", ints, None, None, "int32", REF))
    cases.append(_unary("neg_int64", "NEG", np.array([0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 40], np.int64), None, None,
                        "int64", REF))
    for alpha in (0.2, -1.5, 0.0):
        cases.append(_unary(f"leaky_relu_float_{alpha}", "LEAKY_RELU", x, None, None, "float32",
                            options="LeakyReluOptions", Alpha=alpha))
    return cases


CAST_VALUES = {
    "int8": INT8_ALL, "int16": INT16_ALL[::97],
    "int32": np.array([0, 1, -1, 127, 128, 255, 256, -129, 32767, 32768, -32769, 65536, 16777217, 2 ** 31 - 1,
                       -2 ** 31, 123456789, -987654321], np.int32),
    "int64": np.array([0, 1, -1, 2 ** 31, -2 ** 31 - 1, 2 ** 40 + 3, -(2 ** 62), 2 ** 63 - 1, -2 ** 63], np.int64),
    "bool": np.array([True, False, True], np.bool_),
}
# (from, to) pairs each reference runs (TFLite Micro: no int64, no bool output from float, no uint8)
CAST_PAIRS = {("float32", "int32"): BOTH, ("float32", "int8"): BOTH, ("float32", "int16"): BOTH,
              ("float32", "bool"): BOTH, ("int32", "float32"): BOTH, ("int32", "int8"): BOTH,
              ("int32", "int16"): BOTH, ("int32", "bool"): BOTH, ("int8", "int32"): BOTH, ("int16", "int32"): BOTH,
              ("int8", "float32"): BOTH, ("int16", "float32"): BOTH, ("bool", "float32"): BOTH,
              ("bool", "int32"): BOTH, ("int32", "int64"): REF, ("int64", "int32"): REF, ("int64", "float32"): REF,
              ("float32", "int64"): REF, ("int8", "int16"): BOTH, ("int16", "int8"): BOTH}


def cast_cases(rng) -> list:
    floats = float_specials(rng, 256)
    cases = []
    for (src, dst), modes in CAST_PAIRS.items():
        x = floats if src == "float32" else CAST_VALUES[src]
        if src == "float32" and modes == BOTH and dst != "bool":
            x = x[~np.isnan(x)]  # NaN -> integer: the references differ (tested separately)
        cases.append(_unary(f"cast_{src}_{dst}", "CAST", x, None, None, src, modes, out_dtype=dst))
    nan = np.array([np.nan, -np.nan, 1.0], np.float32)
    for dst in ("int8", "int16", "int32"):
        cases.append(_unary(f"cast_nan_{dst}", "CAST", nan, None, None, "float32", BOTH, out_dtype=dst))
    return cases


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    rng = np.random.default_rng(2026)
    root = tmp_path_factory.mktemp("unary")
    result = []
    for case in int8_cases(rng) + int16_cases(rng) + quantize_cases(rng) + float_cases(rng) + cast_cases(rng):
        path = root / f"{case.name}.tflite"
        path.write_bytes(case.data)
        result.append((case, import_tflite(path)))
    return result


@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_unary_ops_bit_exact(cases, mode):
    selected = [(c, g) for c, g in cases if mode in c.modes]
    for _, graph in selected:
        partition(graph, ["c"])  # every case compiles on the C target
    library = testing.OpLibrary([op for _, g in selected for op in g.ops], mode)
    problems = []
    for case, graph in selected:
        for inputs in case.inputs:
            ref = testing.reference_tensors(case.data, inputs, mode)
            for op, diff, count in testing.compare_ops(graph, ref, mode, library):
                problems.append(f"{case.name} [{mode}]: {count} values differ (max {diff})")
    assert not problems, "\n".join(problems[:50])


def test_cast_nan_follows_each_reference(cases):
    """float NaN -> integer: LiteRT gives the type's maximum, TFLite Micro 0."""
    case, graph = next((c, g) for c, g in cases if c.name == "cast_nan_int16")
    for mode, expected in (("ref", 32767), ("tflm", 0)):
        library = testing.OpLibrary(graph.ops, mode)
        out = library.run(graph.ops[0], {graph.ops[0].inputs[0]: case.inputs[0][0]})[0]
        assert out.tolist() == [expected, expected, 1]


# -- malformed models and refused quantizations ---------------------------------------------------------------

def _import(tmp_path, data):
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return import_tflite(path)


@pytest.mark.parametrize("op", ["ABS", "NEG", "SQRT", "RSQRT", "EXP", "LOG", "FLOOR", "CAST", "ZEROS_LIKE",
                                "LEAKY_RELU", "SQUARE", "ELU"])
def test_malformed_models_are_model_errors(tmp_path, op):
    m = mg.ModelBuilder()
    x = m.tensor((2, 3), "float32")
    y = m.tensor((2, 4), "float32")
    m.op(op, [x], [y])
    with pytest.raises(ModelError, match="maps 6 input elements to 8"):
        _import(tmp_path, m.build([x], [y]))
    m = mg.ModelBuilder()
    a, b = m.tensor((2, 3), "float32"), m.tensor((2, 3), "float32")
    y = m.tensor((2, 3), "float32")
    m.op(op, [a, b], [y])
    with pytest.raises(ModelError, match="takes 1 input"):
        _import(tmp_path, m.build([a, b], [y]))


def test_leaky_relu_with_a_nan_alpha_is_a_model_error(tmp_path):
    data = mg.unary_model("LEAKY_RELU", (4,), None, None, dtype="float32", options="LeakyReluOptions",
                          Alpha=float("nan"))
    with pytest.raises(ModelError, match="alpha"):
        _import(tmp_path, data)


@pytest.mark.parametrize("data, rule", [
    (mg.unary_model("RELU", (8,), (1e-3, 5), (1e-3, 0), dtype="int16"), "relu_types"),
    (mg.unary_model("LOGISTIC", (8,), (1e-3, 0), (1e-3, 0), dtype="int16"), "int16_sigmoid_quantization"),
    (mg.unary_model("TANH", (8,), (30.0, 0), (2.0 ** -15, 0), dtype="int16"), "int16_sigmoid_quantization"),
    (mg.unary_model("QUANTIZE", (8,), (1e-3, 3), (2e-3, 0), dtype="int16"), "quantize_types"),
    (mg.unary_model("EXP", (8,), (1e-3, 1), (1e-3, 0), dtype="int16"), "table_ops_types"),
    (mg.unary_model("RELU_N1_TO_1", (8,), (1e-3, 0), (1e-3, 0), dtype="int16"), "relu_types"),
    (mg.unary_model("CAST", (8,), None, None, dtype="uint8", out_dtype="int32"), "cast_types"),
])
def test_quantizations_tflite_refuses_are_refused(tmp_path, data, rule):
    graph = _import(tmp_path, data)
    with pytest.raises(UnsupportedOpError) as info:
        partition(graph, ["c"])
    assert rule in str(info.value)


# -- the float32 libm functions against the host's glibc --------------------------------------------------------

@pytest.mark.parametrize("name", ["expf", "logf", "sinf", "cosf", "expm1f", "tanhf"])
def test_mathf_equals_glibc_on_random_inputs(name):
    """edgesdk's float32 expf/logf/sinf/cosf/expm1f/tanhf (edgesdk_mathf.c, what the firmware runs) return
    glibc's bits on random bit patterns and on dense ranges; tests/glibc_mathf_scan.py checks all 2^32."""
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    kernels = testing.kernels_library()
    ref, mine = getattr(libm, name), getattr(kernels, f"edgesdk_{name}")
    for f in (ref, mine):
        f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.integers(0, 1 << 32, 40000, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        rng.uniform(-120, 120, 20000).astype(np.float32),
                        rng.uniform(-1, 1, 20000).astype(np.float32)])
    bits = lambda v: int(np.float32(v).view(np.uint32))  # noqa: E731
    bad = [hex(int(v.view(np.uint32))) for v in x if bits(ref(float(v))) != bits(mine(float(v)))]
    assert not bad, f"{name}: {len(bad)} inputs differ, e.g. {bad[:5]}"


# -- firmware: the float32 kernels on the emulator (soft-float RISC-V) ----------------------------------------------

FIRMWARE_FLOAT_OPS = ("EXP", "LOG", "SIN", "COS", "TANH", "LOGISTIC", "SQRT", "RSQRT", "SQUARE", "FLOOR", "HARD_SWISH",
                      "ABS", "NEG", "RELU6")


def _multi_output_model(ops, n, dtype="float32"):
    """One input feeding each op of `ops`; every op's result is a model output."""
    m = mg.ModelBuilder()
    x = m.tensor((n,), dtype)
    outputs = []
    for op in ops:
        y = m.tensor((n,), dtype)
        m.op(op, [x], [y])
        outputs.append(y)
    return m.build([x], outputs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_float_kernels_in_firmware_equal_the_references(tmp_path, mode):
    """The soft-float firmware computes the references' (x86 glibc) bits: special values, random bit patterns,
    the FMA exception inputs and dense ranges, for the float32 ops of the family in one model."""
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.reference import run_reference
    from edgesdk.runner import run_inference

    rng = np.random.default_rng(11)
    with open(KERNELS / "edgesdk_mathf_exceptions.h") as f:
        exceptions = [int(v, 16) for v in re.findall(r"\{0x([0-9a-f]+)u, 0x", f.read())]
    x = np.concatenate([float_specials(rng, 1024), np.array(exceptions, np.uint32).view(np.float32),
                        np.linspace(-110, 120, 1024, dtype=np.float32)]).astype(np.float32)
    path = tmp_path / "float_ops.tflite"
    path.write_bytes(_multi_output_model(FIRMWARE_FLOAT_OPS, x.size))
    out = tmp_path / "fw"
    build(path, out, BuildOptions(target="c", rounding=mode))
    result = run_inference(out, [x])
    assert result.exit_code == 0
    expected = run_reference(path, [x], mode)
    assert len(expected) == len(result.outputs) == len(FIRMWARE_FLOAT_OPS)
    problems = []
    for op, want, got in zip(FIRMWARE_FLOAT_OPS, expected, result.outputs):
        differ = np.nonzero(np.asarray(want).reshape(-1).view(np.uint32) != np.asarray(got).reshape(-1).view(np.uint32))[0]
        if differ.size:
            i = differ[0]
            problems.append(f"{op}: {differ.size} values differ, e.g. x={x[i]!r} ({hex(x.view(np.uint32)[i])})")
    assert not problems, "\n".join(problems)


def test_expf_table_holds_correctly_rounded_powers_of_two():
    """edgesdk_mathf.c's expf table: bits(2^(i/32)) - (i << 47), each power correctly rounded to double."""
    import struct
    from decimal import Decimal, getcontext
    from fractions import Fraction

    getcontext().prec = 60
    source = (KERNELS / "edgesdk_mathf.c").read_text()
    body = source.split("expf_tab[EXPF_N] = {")[1].split("};")[0]
    table = [int(v, 16) for v in re.findall(r"0x([0-9a-f]{16})u", body)]
    assert len(table) == 32
    for i, entry in enumerate(table):
        power = float(Fraction(Decimal(2) ** (Decimal(i) / 32)))  # float(Fraction) rounds correctly
        assert struct.unpack("<Q", struct.pack("<d", power))[0] - (i << 47) == entry


EXTREME_SCALES = (2.0 ** -60, 2.0 ** -40, 1e-10, 2.0 ** -28, 1e-3, 2.0 ** 20, 2.0 ** 60)


def test_extreme_scales_of_int16_and_table_ops_end_cleanly():
    """int16 and table-built ops (not in the single-op suite the fuzz tests mutate) with scales at the ends of
    the range: every build ends in 'ok' or a clear error in both roundings, never a traceback."""
    from fuzz.harness import check_input

    sym = (1e-3, 0)
    models = {f"{op}_int16": mg.unary_model(op, (8,), sym, sym, dtype="int16")
              for op in ("RELU", "RELU6", "ABS", "EXP", "LOG", "RSQRT", "SQRT")}
    models.update({f"{op}_int16": mg.unary_model(op, (8,), sym, (2.0 ** -15, 0), dtype="int16")
                   for op in ("LOGISTIC", "TANH")})
    models["LEAKY_RELU_int16"] = mg.unary_model("LEAKY_RELU", (8,), sym, sym, dtype="int16",
                                                options="LeakyReluOptions", Alpha=0.5)
    models["ELU_int8"] = mg.unary_model("ELU", (8,), (0.1, 0), (0.1, 0))
    models["QUANTIZE_f32_int16"] = mg.unary_model("QUANTIZE", (8,), None, sym, dtype="float32", out_dtype="int16")
    models["QUANTIZE_int16_int8"] = mg.unary_model("QUANTIZE", (8,), sym, (0.1, 0), dtype="int16", out_dtype="int8")
    models["DEQUANTIZE_int16"] = mg.unary_model("DEQUANTIZE", (8,), sym, None, dtype="int16", out_dtype="float32")
    outcomes = {}
    for name, data in models.items():
        graph_scales = [s for s in (1e-3, 2.0 ** -15, 0.1)]
        for old in graph_scales:
            pattern = np.float32(old).tobytes()
            if pattern not in data:
                continue
            for value in EXTREME_SCALES:
                mutated = data.replace(pattern, np.float32(value).tobytes())
                for rounding in ("ref", "tflm"):
                    outcome = check_input(mutated, "npu,c", rounding, render=False)
                    assert outcome.kind in ("ok", "error"), (name, old, value, rounding, outcome.detail[-800:])
                    outcomes[outcome.kind] = outcomes.get(outcome.kind, 0) + 1
    assert outcomes.get("ok", 0) > 0 and outcomes.get("error", 0) > 0, outcomes
