"""Reductions and normalizations on hand-made models: the cases the converter-made corpus (tests/models/ops) does
not reach -- float32 variants, int16 SOFTMAX with multipliers that differ between the references, ties and NaN for
ARG_MAX/ARG_MIN, -0.0 and NaN in float reductions, int64 indices, ranks up to 6, duplicate and negative axes --
each checked op by op on the host kernels against LiteRT's reference kernels and TFLite Micro (where it runs the
model); malformed models (wrong arity, inconsistent shapes, axes out of range) must fail with a ModelError; the
expf/logf the float kernels use must equal the host C library's; and a few models run end to end on the emulator.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import modelgen as mg
from image_batches import link_and_run, load_runs
from edgesdk.errors import ModelError
from edgesdk.hostcc import build_shared_library
from edgesdk.importer import import_tflite
from edgesdk.targets.c import testing

F32 = dict(dtype="float32")


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(sum(name.encode()))


def _float_inputs(shape, rng, specials=()):
    """Normal values, a few exact ties, and the given special values at the front."""
    x = rng.normal(0.0, 3.0, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[1::5] = np.round(flat[1::5])  # repeated integers: ties for ARG_MAX/ARG_MIN and MAX/MIN
    for k, v in enumerate(specials):
        flat[k] = v
    return x


def _ints(shape, dtype, rng, lo=None, hi=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1, shape).astype(dtype)


# -- the models: (name, .tflite bytes, [input sets], modes) ---------------------------------------------------

def _cases() -> list:
    cases = []

    def add(name, data, inputs, modes=("ref", "tflm")):
        assert name not in {c[0] for c in cases}, name
        cases.append((name, data, inputs, modes))

    q8 = (0.05, -7)
    # float32 reductions; every dim reduced takes LiteRT's ReduceAllDims path (starts from the first element)
    for op in ("SUM", "REDUCE_MAX", "REDUCE_MIN"):
        shape = (3, 4)
        rng = _rng(op)
        add(f"{op.lower()}_float_all_dims", mg.reduce_model(op, shape, [0, 1], False, **F32),
            [[_float_inputs(shape, rng)], [np.full(shape, -0.0, np.float32)],
             [_float_inputs(shape, rng, specials=(np.nan,))], [_float_inputs(shape, rng, specials=(1.0, np.nan))]])
    for op in ("SUM", "MEAN", "REDUCE_MAX", "REDUCE_MIN"):
        shape = (2, 3, 4, 5)
        rng = _rng(op + "4d")
        inputs = [[_float_inputs(shape, rng)], [_float_inputs(shape, rng, specials=(np.nan, -0.0, 5.0))],
                  [np.full(shape, -0.0, np.float32)]]
        add(f"{op.lower()}_float_hw_keep", mg.reduce_model(op, shape, [1, 2], True, **F32), inputs)
        add(f"{op.lower()}_float_neg_dup_axes", mg.reduce_model(op, shape, [-1, 3, 0], False, **F32), inputs)
    # int16 and int8 MEAN/SUM/MAX/MIN, ranks 1 to 6, duplicate and negative axes
    for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"):
        rng = _rng(op + "int")
        for shape, axes, keep in (((2, 3, 1, 4, 2, 3), [1, -2, 1], True), ((7,), [0], False),
                                  ((3, 1, 5, 2, 4), [0, 2, 4], False)):
            qin = (float(np.float32(rng.uniform(1e-4, 1e-3))), 0)
            qout = qin if op.startswith("REDUCE") else (float(np.float32(rng.uniform(1e-4, 3e-3))), 0)
            inputs = [[_ints(shape, np.int16, rng)], [np.full(shape, -32768, np.int16)],
                      [np.full(shape, 32767, np.int16)]]
            # LiteRT's int16 SUM is undefined (docs/rounding.md); TFLite Micro runs no int16 MAX/MIN
            modes = ("tflm",) if op == "SUM" else ("ref",) if op.startswith("REDUCE") else ("ref", "tflm")
            add(f"{op.lower()}_int16_{len(shape)}d", mg.reduce_model(op, shape, axes, keep, qin, qout, dtype="int16"),
                inputs, modes)
            q8out = q8 if op.startswith("REDUCE") else (float(np.float32(rng.uniform(0.02, 0.5))),
                                                        int(rng.integers(-20, 20)))
            add(f"{op.lower()}_int8_{len(shape)}d", mg.reduce_model(op, shape, axes, keep, q8, q8out),
                [[_ints(shape, np.int8, rng)], [np.full(shape, -128, np.int8)], [np.full(shape, 127, np.int8)]])
    # bool ANY/ALL (TFLite Micro has no REDUCE_ANY)
    for op in ("REDUCE_ANY", "REDUCE_ALL"):
        rng = _rng(op)
        shape = (2, 3, 4, 2)
        inputs = [[rng.integers(0, 2, shape).astype(bool)], [rng.random(shape) < 0.1], [rng.random(shape) < 0.9],
                  [np.zeros(shape, bool)], [np.ones(shape, bool)]]
        for axes, keep in (([1, 3], True), ([0, 1, 2, 3], False), ([-2], False)):
            add(f"{op.lower()}_{len(axes)}_{keep}", mg.reduce_model(op, shape, axes, keep, dtype="bool"), inputs,
                ("ref",) if op == "REDUCE_ANY" else ("ref", "tflm"))
    # ARG_MAX / ARG_MIN: ties, NaN, int64 indices (TFLite Micro writes int32 only)
    for op in ("ARG_MAX", "ARG_MIN"):
        rng = _rng(op)
        for shape, axis in (((2, 5, 3, 4), 1), ((4, 9), -1), ((6, 3), 0)):
            ties = [[rng.integers(-2, 3, shape).astype(np.float32)], [_float_inputs(shape, rng, (np.nan, np.nan))],
                    [np.full(shape, np.nan, np.float32)], [_float_inputs(shape, rng)]]
            for out in ("int32", "int64"):
                modes = ("ref", "tflm") if out == "int32" else ("ref",)
                add(f"{op.lower()}_float_{len(shape)}d_axis{axis}_{out}",
                    mg.arg_min_max_model(op, shape, axis, dtype="float32", output_type=out), ties, modes)
                add(f"{op.lower()}_int8_{len(shape)}d_axis{axis}_{out}",
                    mg.arg_min_max_model(op, shape, axis, q8, output_type=out),
                    [[rng.integers(-3, 3, shape).astype(np.int8)], [_ints(shape, np.int8, rng)],
                     [np.full(shape, 127, np.int8)]], modes)
    # CUMSUM
    rng = _rng("CUMSUM")
    for shape, axis, exclusive, reverse in (((2, 3, 4), 1, False, True), ((2, 3, 4), -1, True, False),
                                            ((5,), 0, True, True), ((3, 2, 2, 5), 0, False, False)):
        add(f"cumsum_{len(shape)}d_{axis}_{exclusive}_{reverse}", mg.cumsum_model(shape, axis, exclusive, reverse),
            [[_float_inputs(shape, rng)], [_float_inputs(shape, rng, (-0.0, -0.0))]])
    # L2_NORMALIZATION: many rows (float sums in order), zero rows (the epsilon / the inv-sqrt special case)
    rng = _rng("L2")
    shape = (500, 16)
    rows = _float_inputs(shape, rng)
    rows[3] = 0.0
    rows[4] = 1e-30
    add("l2norm_float_rows", mg.unary_model("L2_NORMALIZATION", shape, None, None, dtype="float32",
                                            options="L2NormOptions", FusedActivationFunction=0), [[rows]])
    for zp in (-128, 0, 77):
        shape = (2, 3, 3, 7)
        x = _ints(shape, np.int8, rng)
        x[0, 0, 0, :] = zp  # a row equal to the zero point: sum of squares 0
        x[0, 0, 1, :] = zp
        x[0, 0, 1, 0] = zp + 1 if zp < 127 else zp - 1  # sum of squares 1
        add(f"l2norm_int8_zp{zp}", mg.unary_model("L2_NORMALIZATION", shape, (0.02, zp), (1 / 128, 0),
                                                  options="L2NormOptions", FusedActivationFunction=0),
            [[x], [np.full(shape, 127, np.int8)], [np.full(shape, -128, np.int8)]])
    # LOG_SOFTMAX: int8 over a range of input scales, float32 with wide rows
    for scale in (0.001, 0.04, 0.3, 2.0):
        shape = (6, 13)
        add(f"log_softmax_int8_{scale}", mg.unary_model("LOG_SOFTMAX", shape, (scale, 3), (16 / 256, 127),
                                                         options="LogSoftmaxOptions"),
            [[_ints(shape, np.int8, rng)], [_ints(shape, np.int8, rng, -3, 3)], [np.full(shape, 5, np.int8)]])
    shape = (40, 33)
    add("log_softmax_float", mg.unary_model("LOG_SOFTMAX", shape, None, None, dtype="float32",
                                            options="LogSoftmaxOptions"),
        [[_float_inputs(shape, rng)], [_float_inputs(shape, rng) * 30], [np.zeros(shape, np.float32)]])
    # SOFTMAX int16: betas whose float32 product with the scale rounds (LiteRT and TFLite Micro then derive
    # different multipliers), many rows to reach many entries of the reciprocal table
    for k, (scale, beta) in enumerate(((0.000122074, 1.0), (0.0006605525, 1.7), (0.00042743981, 0.3),
                                       (3.0e-5, 2.0), (0.01, 0.5))):
        shape = (300, 6)
        add(f"softmax_int16_{k}", mg.unary_model("SOFTMAX", shape, (scale, 0), (1 / 32768, 0), dtype="int16",
                                                 options="SoftmaxOptions", Beta=beta),
            [[_ints(shape, np.int16, rng)], [_ints(shape, np.int16, rng, -3000, 3000)],
             [np.full(shape, 32767, np.int16)]])
    # every input difference once (rows [32767, 32767 + d]): the float32 and the double scale product give
    # multipliers that round some of them differently
    rows = np.stack([np.full(65536, 32767), 32767 + np.arange(-65535, 1)], axis=1).astype(np.int16)
    add("softmax_int16_all_diffs", mg.unary_model("SOFTMAX", rows.shape, (0.00042743981, 0), (1 / 32768, 0),
                                                  dtype="int16", options="SoftmaxOptions", Beta=0.3), [[rows]])
    for beta in (1.0, 0.3, 2.5):
        shape = (50, 17)
        add(f"softmax_float_{beta}", mg.unary_model("SOFTMAX", shape, None, None, dtype="float32",
                                                    options="SoftmaxOptions", Beta=beta),
            [[_float_inputs(shape, rng) * 10], [_float_inputs(shape, rng)], [np.zeros(shape, np.float32)]])
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("reduce_models")
    result = []
    for name, data, inputs, modes in CASES:
        path = root / f"{name}.tflite"
        path.write_bytes(data)
        result.append((name, path, import_tflite(path), inputs, modes))
    return result


@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_hand_made_models_bit_exact(models, mode):
    selected = [m for m in models if mode in m[4]]
    library = testing.OpLibrary([op for _, _, g, _, _ in selected for op in g.ops], mode)
    problems = []
    for name, path, graph, input_sets, _ in selected:
        for k, inputs in enumerate(input_sets):
            ref = testing.reference_tensors(path, inputs, mode)
            for op, diff, count in testing.compare_ops(graph, ref, mode, library):
                problems.append(f"{name} [{mode} inputs {k}] {op.location}: {count} values differ (max {diff})")
    assert not problems, "\n".join(problems[:40])


def test_references_differ_where_the_modes_do(models):
    """The mode-dependent choices are visible: reducing every dim, LiteRT starts from the first element, so its
    float SUM of -0.0 stays -0.0 (TFLite Micro: +0.0) and its MAX/MIN of a leading NaN is NaN (TFLite Micro skips
    it); its int16 SOFTMAX (float32 scale product, double tables) differs from TFLite Micro's somewhere in these
    inputs. Each mode's kernel is bit-exact with its own reference (test above)."""
    by_name = {m[0]: m for m in models}

    def outputs(name, k):
        _, path, graph, inputs, _ = by_name[name]
        y = graph.ops[0].outputs[0]
        return [testing.reference_tensors(path, inputs[k], mode)[y.id] for mode in ("ref", "tflm")]

    ref, tflm = outputs("sum_float_all_dims", 1)
    assert np.signbit(ref).all() and not np.signbit(tflm).any()
    for name in ("reduce_max_float_all_dims", "reduce_min_float_all_dims"):
        ref, tflm = outputs(name, 2)
        assert np.isnan(ref).all() and not np.isnan(tflm).any()
    differ = 0
    for name in (n for n in by_name if n.startswith("softmax_int16")):
        _, path, graph, input_sets, _ = by_name[name]
        y = graph.ops[0].outputs[0]
        for inputs in input_sets:
            a = testing.reference_tensors(path, inputs, "ref")[y.id]
            b = testing.reference_tensors(path, inputs, "tflm")[y.id]
            differ += int(np.count_nonzero(a != b))
    assert differ > 0


def test_litert_int8_sum_reads_bytes_as_uint8(tmp_path):
    """LiteRT's reference SUM sums int8 bytes as uint8 values (--rounding ref reproduces it); TFLite Micro sums
    the int8 values."""
    path = tmp_path / "sum.tflite"
    path.write_bytes(mg.reduce_model("SUM", (4,), [0], False, (1.0, 0), (1.0, 0)))
    x = np.array([-1, -1, 1, 1], np.int8)  # as uint8: 255 + 255 + 1 + 1 = 512 -> clamped to 255
    y = import_tflite(path).ops[0].outputs[0]
    assert int(testing.reference_tensors(path, [x], "ref")[y.id]) == -1  # the byte 255
    assert int(testing.reference_tensors(path, [x], "tflm")[y.id]) == 0


# -- malformed models ----------------------------------------------------------------------------------------

def _model(op, inputs, outputs, options=None, **fields):
    """inputs/outputs: (shape, dtype, quant or None, constant data or None)."""
    m = mg.ModelBuilder()

    def tensor(spec):
        shape, dtype, q, data = spec
        if data is not None:
            return m.const(np.asarray(data).reshape(shape), dtype)
        return m.tensor(shape, dtype, *(q or (None, None)))

    xs = [tensor(t) for t in inputs]
    ys = [tensor(t) for t in outputs]
    m.op(op, xs, ys, options, **fields)
    return m.build([x for x, t in zip(xs, inputs) if t[3] is None], ys)


def _malformed_models() -> dict:
    q = (0.1, 0)
    i8 = lambda shape: (shape, "int8", q, None)  # noqa: E731
    f32 = lambda shape: (shape, "float32", None, None)  # noqa: E731
    axes = lambda values, dtype="int32": ((len(values),), dtype, None, values)  # noqa: E731
    reducer = dict(options="ReducerOptions", KeepDims=False)
    arg_max = dict(options="ArgMaxOptions", OutputType=mg.TENSOR_TYPES["int32"])
    cumsum = dict(options="CumsumOptions", Exclusive=False, Reverse=False)
    return {
        "sum_without_axes": _model("SUM", [i8((2, 3))], [i8((2,))], **reducer),
        "sum_axis_out_of_range": _model("SUM", [i8((2, 3, 4)), axes([3])], [i8((2, 3))], **reducer),
        "mean_negative_axis_out_of_range": _model("MEAN", [i8((2, 3)), axes([-3])], [i8((3,))], **reducer),
        "reduce_max_wrong_output_size": _model("REDUCE_MAX", [i8((2, 3, 4)), axes([1])], [i8((2, 3))], **reducer),
        "reduce_min_float_axes": _model("REDUCE_MIN", [f32((2, 3)), axes([1.0], "float32")], [f32((2,))], **reducer),
        "reduce_any_int8_input": _model("REDUCE_ANY", [i8((2, 3)), axes([1])], [i8((2,))], **reducer),
        "sum_type_change": _model("SUM", [i8((2, 3)), axes([1])], [((2,), "int16", q, None)], **reducer),
        "arg_max_axis_out_of_range": _model("ARG_MAX", [i8((2, 3)), axes([2])], [((2,), "int32", None, None)],
                                            **arg_max),
        "arg_max_wrong_output_shape": _model("ARG_MAX", [i8((2, 3)), axes([1])], [((3,), "int32", None, None)],
                                             **arg_max),
        "arg_max_float_indices": _model("ARG_MAX", [i8((2, 3)), axes([1])], [f32((2,))], **arg_max),
        "arg_max_two_axes": _model("ARG_MAX", [i8((2, 3)), axes([0, 1])], [((2,), "int32", None, None)], **arg_max),
        "cumsum_axis_out_of_range": _model("CUMSUM", [f32((2, 3)), axes([-3])], [f32((2, 3))], **cumsum),
        "cumsum_shape_mismatch": _model("CUMSUM", [f32((2, 3)), axes([0])], [f32((3, 2))], **cumsum),
        "l2_normalization_two_inputs": _model("L2_NORMALIZATION", [i8((2, 4)), i8((2, 4))], [i8((2, 4))],
                                              options="L2NormOptions", FusedActivationFunction=0),
        "l2_normalization_scalar": _model("L2_NORMALIZATION", [i8(())], [i8(())], options="L2NormOptions",
                                          FusedActivationFunction=0),
        "log_softmax_two_inputs": _model("LOG_SOFTMAX", [i8((2, 4)), i8((2, 4))], [i8((2, 4))],
                                         options="LogSoftmaxOptions"),
        "log_softmax_shape_mismatch": _model("LOG_SOFTMAX", [i8((2, 4))], [i8((2, 5))], options="LogSoftmaxOptions"),
        "softmax_two_outputs": _model("SOFTMAX", [i8((2, 4))], [i8((2, 4)), i8((2, 4))], options="SoftmaxOptions",
                                      Beta=1.0),
    }


@pytest.mark.parametrize("name", sorted(_malformed_models()))
def test_malformed_models_are_model_errors(tmp_path, name):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(_malformed_models()[name])
    with pytest.raises(ModelError) as err:
        import_tflite(path)
    assert "inconsistent" in str(err.value) or "operator" in str(err.value), str(err.value)


def test_cli_reports_a_malformed_reduction_with_exit_2(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "bad.tflite"
    path.write_bytes(_malformed_models()["sum_axis_out_of_range"])
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "inspect", str(path), "--board", "riscv-npu"],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "axis 3" in proc.stderr + proc.stdout


# -- the references' expf and logf ---------------------------------------------------------------------------

_LIBM_CHECK = r"""
#include <math.h>
#include <stdint.h>
#include "edgesdk_reduce_libm.h"
/* Counts the inputs u = first, first + step, ... (count of them, below 2^32) where edgesdk_expf/logf differ
 * from the host's. */
uint64_t edgesdk_test_libm(uint32_t first, uint32_t step, uint64_t count, int log)
{
    uint64_t bad = 0;
    for (uint64_t u = first; u <= 0xffffffffu && count > 0; u += step, count--) {
        const float x = edgesdk_libm_float((uint32_t)u);
        const float a = log ? logf(x) : expf(x);
        const float b = log ? edgesdk_logf(x) : edgesdk_expf(x);
        if (edgesdk_libm_bits32(a) != edgesdk_libm_bits32(b) && !(a != a && b != b)) {
            bad++;
        }
    }
    return bad;
}

/* A 64-bit hash of f(u) for the inputs u = first .. first + count - 1 (every NaN as one word, since the check
 * takes any two NaNs as equal): one side of the check at a time, so that the host's side can be computed once
 * per C library (test_expf_and_logf_equal_the_host_libm_everywhere). The hash is the sum of a bijective,
 * non-linear mix (an odd multiply, then an xor-shift) of each input with its result: one result that differs
 * always changes it, results that differ by opposite amounts do not cancel as in a plain sum, and the terms
 * do not wait for each other as a chained hash's would (2.5-2.7 ns per input against 4.4-4.7 ns for the
 * input-by-input comparison, which evaluates both sides). */
static inline uint64_t edgesdk_test_libm_mix(uint64_t z)
{
    z *= 0x9e3779b97f4a7c15u;
    return z ^ (z >> 32);
}
#define EDGESDK_TEST_LIBM_HASH(name, f)                                                              \
    uint64_t name(uint32_t first, uint64_t count)                                                    \
    {                                                                                                \
        uint64_t h = 0;                                                                              \
        for (uint64_t u = first; u <= 0xffffffffu && count > 0; u++, count--) {                      \
            const float y = f(edgesdk_libm_float((uint32_t)u));                                      \
            h += edgesdk_test_libm_mix(u << 32 | (y != y ? 0x7fc00000u : edgesdk_libm_bits32(y)));   \
        }                                                                                            \
        return h;                                                                                    \
    }
EDGESDK_TEST_LIBM_HASH(edgesdk_test_libm_hash_host_expf, expf)
EDGESDK_TEST_LIBM_HASH(edgesdk_test_libm_hash_host_logf, logf)
EDGESDK_TEST_LIBM_HASH(edgesdk_test_libm_hash_edgesdk_expf, edgesdk_expf)
EDGESDK_TEST_LIBM_HASH(edgesdk_test_libm_hash_edgesdk_logf, edgesdk_logf)
"""


def _libm_library() -> ctypes.CDLL:
    from edgesdk.hostcc import cache_dir

    src = cache_dir() / "generated" / "edgesdk_test_libm.c"
    src.parent.mkdir(parents=True, exist_ok=True)
    if not src.exists() or src.read_text() != _LIBM_CHECK:
        src.write_text(_LIBM_CHECK)
    lib = ctypes.CDLL(str(build_shared_library("edgesdk_test_libm", [src], [testing.KERNELS_DIR])))
    lib.edgesdk_test_libm.restype = ctypes.c_uint64
    lib.edgesdk_test_libm.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int]
    for side in ("host", "edgesdk"):
        for function in ("expf", "logf"):
            fn = getattr(lib, f"edgesdk_test_libm_hash_{side}_{function}")
            fn.restype, fn.argtypes = ctypes.c_uint64, [ctypes.c_uint32, ctypes.c_uint64]
    return lib


def _libm_check():
    return _libm_library().edgesdk_test_libm


def _host_libm_identity() -> str:
    """What the host's expf/logf results depend on: the C library's math library as loaded (its bytes) and the
    CPU's features (glibc picks its FMA or its plain build of expf at load time), and how they are hashed."""
    import hashlib
    import re

    _libm_library()  # loads the host's libm into this process
    with open("/proc/self/maps") as maps:
        libm = next(line.split()[-1] for line in maps if re.search(r"/libm(\.so|-)[^/]*$", line.strip()))
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line for line in cpuinfo if line.startswith("flags")), "")
    digest = hashlib.sha256(open(libm, "rb").read())
    digest.update(flags.encode() + _LIBM_CHECK.encode())
    return digest.hexdigest()[:32]


def _host_has_fma() -> bool:
    try:
        return " fma " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


@pytest.mark.skipif(not _host_has_fma(), reason="the host's glibc expf is the non-FMA build (differs on two inputs)")
def test_expf_and_logf_equal_the_host_libm_sampled():
    check = _libm_check()
    everything = 1 << 32
    assert check(0, 65521, everything, 0) == 0 and check(0, 65521, everything, 1) == 0
    # the two inputs where glibc's FMA and non-FMA expf differ, and the edges of the special cases
    for x in ("0x1.04845ep+5", "-0x1.f8cbb2p+5", "0x1.6p+6", "-0x1.6p+6", "0x1.62e42ep+6", "-0x1.9fe368p+6",
              "-0x1.9ep+6", "0x1p+0", "0x0p+0", "0x1p-149"):
        u = int(np.float32(float.fromhex(x)).view(np.uint32))
        assert check(u, 1, 1, 0) == 0 and check(u, 1, 1, 1) == 0


LIBM_SLICES = 8  # the 2**32 inputs in 8 slices per function: tests pytest-xdist can run side by side


@pytest.mark.slow
@pytest.mark.skipif(not _host_has_fma(), reason="the host's glibc expf is the non-FMA build (differs on two inputs)")
@pytest.mark.parametrize("function", [0, 1], ids=["expf", "logf"])
@pytest.mark.parametrize("part", range(LIBM_SLICES))
def test_expf_and_logf_equal_the_host_libm_everywhere(function, part):
    """edgesdk's function gives the host's float for every input of the slice (_equal_to_the_host)."""
    from edgesdk.hostcc import cache_dir

    name = ("expf", "logf")[function]
    size = (1 << 32) // LIBM_SLICES
    lib = _libm_library()
    kept = cache_dir() / "libm-hashes" / f"{_host_libm_identity()}-{name}-{part}-of-{LIBM_SLICES}"
    _equal_to_the_host(getattr(lib, f"edgesdk_test_libm_hash_edgesdk_{name}"),
                       getattr(lib, f"edgesdk_test_libm_hash_host_{name}"),
                       lambda first, count: lib.edgesdk_test_libm(first, 1, count, function), part * size, size, kept)


def _equal_to_the_host(ours, host, differences, first: int, count: int, kept) -> None:
    """Each side is hashed over the inputs (every result word); ours is computed on every run, the host's once
    per C library and CPU: its hash is kept in `kept` (named by libm's bytes and the CPU's flags), since about
    half of the comparison's time is the host's calls. Unequal hashes run the input-by-input comparison
    (`differences`), which counts the inputs that differ; a kept hash can only make that comparison run,
    never pass a result that differs from the host's."""
    mine = ours(first, count)
    if kept.is_file() and kept.read_text().strip() == f"{mine:016x}":
        return  # the host's hash, computed on an earlier run, equals ours
    theirs = host(first, count)
    if theirs == mine:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(f".{kept.name}.{os.getpid()}")
        tmp.write_text(f"{theirs:016x}\n")
        os.replace(tmp, kept)
        return
    bad = differences(first, count)
    raise AssertionError(f"{bad} of {count} inputs from {first:#x} differ from the host's" if bad else
                         "the hashes differ but no input does: the hash is wrong")


def test_the_libm_check_keeps_the_host_hash_and_still_fails(tmp_path):
    """The exhaustive check's mechanics on 2^16 inputs: the host's hash is kept after a passing run and
    reused; a different function on our side (logf against the host's expf) fails, kept hash or not."""
    lib = _libm_library()
    first, count, kept = 0x3f000000, 1 << 16, tmp_path / "kept"
    host = lib.edgesdk_test_libm_hash_host_expf
    calls = []

    def counted_host(*args):
        calls.append(args)
        return host(*args)

    def differences(a, n):
        return lib.edgesdk_test_libm(a, 1, n, 0)

    _equal_to_the_host(lib.edgesdk_test_libm_hash_edgesdk_expf, counted_host, differences, first, count, kept)
    assert kept.read_text().strip() == f"{host(first, count):016x}" and len(calls) == 1
    _equal_to_the_host(lib.edgesdk_test_libm_hash_edgesdk_expf, counted_host, differences, first, count, kept)
    assert len(calls) == 1  # the kept hash: the host's side is not computed again

    def exp_against_log(a, n):  # how many inputs differ between the two sides of this deliberately wrong pair
        x = np.arange(a, a + n, dtype=np.uint32).view(np.float32).astype(np.float64)
        return int(np.count_nonzero(np.float32(np.exp(x)) != np.float32(np.log(x))))

    with pytest.raises(AssertionError, match=f"{1 << 16} of {1 << 16} inputs from 0x3f000000 differ"):
        _equal_to_the_host(lib.edgesdk_test_libm_hash_edgesdk_logf, counted_host, exp_against_log, first, count, kept)
    assert len(calls) == 2  # the kept hash is not ours: the host's side was computed again


# -- end to end on the emulator ------------------------------------------------------------------------------

FIRMWARE_CASES = ("softmax_float_0.3", "log_softmax_float", "l2norm_float_rows", "softmax_int16_1",
                  "sum_float_all_dims", "arg_max_float_4d_axis1_int64", "cumsum_3d_1_False_True", "reduce_all_4_False")


@pytest.fixture(scope="session")
def reduce_firmware(session_builds):
    """name -> (model path, {boot: {(name, mode): (status, outputs, uart)}}): the FIRMWARE_CASES models built with
    --target c for each of their modes (sources only, under names of their own), linked into one firmware image,
    booted once per input set, once per session (any worker; tests/image_batches.py). Boot k runs each model on
    its input set k; a model with fewer sets runs its first again there (not checked)."""
    from edgesdk.compiler import BuildOptions, build

    chosen = {name: (data, input_sets, modes) for name, data, input_sets, modes in CASES if name in FIRMWARE_CASES}

    def make(out):
        builds = {}
        for k, (name, (data, _, modes)) in enumerate(chosen.items()):
            (out / f"{name}.tflite").write_bytes(data)
            for mode in modes:
                build(out / f"{name}.tflite", out / f"{name}_{mode}",
                      BuildOptions(target="c", rounding=mode, name=f"m{k}_{mode}", compile_firmware=False))
                builds[name, mode] = out / f"{name}_{mode}"
        boots = max(len(input_sets) for _, input_sets, _ in chosen.values())
        sets = {name: input_sets for name, (_, input_sets, _) in chosen.items()}
        link_and_run(out, builds, {k: {key: (sets[key[0]] + sets[key[0]][:1] * boots)[k] for key in builds}
                                   for k in range(boots)})

    out = session_builds("reduce-firmware", make)
    return lambda name: (out / f"{name}.tflite", load_runs(out))


@pytest.mark.slow
@pytest.mark.parametrize("name", FIRMWARE_CASES)
def test_firmware_bit_exact(reduce_firmware, name):
    """Float kernels (soft-float double arithmetic, expf/logf without picolibc), int16 tables, int64 indices and
    bool tensors end to end: the firmware's outputs equal each reference's, byte for byte (in one firmware image
    with the other FIRMWARE_CASES models, each build under a name of its own)."""
    from edgesdk.reference import run_reference

    _, _, input_sets, modes = next(c for c in CASES if c[0] == name)
    path, runs = reduce_firmware(name)
    problems = []
    for mode in modes:
        for k, inputs in enumerate(input_sets):
            status, outputs, uart = runs[k][name, mode]
            assert status == 0, f"{name} {mode} inputs {k}: exit {-status} {uart!r}"
            for want, got in zip(run_reference(path, inputs, mode), outputs):
                differ = np.count_nonzero(np.asarray(want).reshape(-1).view(np.uint8)
                                          != np.asarray(got).reshape(-1).view(np.uint8))
                if differ:
                    problems.append(f"{name} {mode} inputs {k}: {differ} bytes differ")
    assert not problems, "\n".join(problems)


def test_constant_integer_reductions_fold_like_tflite():
    """fold: int32 sums wrap, MEAN truncates the int64 sum toward zero, ARG_MIN takes the first index."""
    from edgesdk.ir.graph import Op, Tensor
    from edgesdk.ops import op_def

    def tensor(i, shape, dtype, data=None):
        t = Tensor(i, f"t{i}", tuple(shape), dtype)
        if data is not None:
            t.data = np.asarray(data, dtype=dtype)
        return t

    x = tensor(0, (2, 3), "int32", [[1, -7, 3], [4, 5, 2**31 - 1]])
    axes = tensor(1, (1,), "int32", [1])
    expected = {"SUM": [-3, -(2**31) + 8], "MEAN": [-1, 715827885], "REDUCE_MAX": [3, 2**31 - 1],
                "REDUCE_MIN": [-7, 4]}
    for op_type, want in expected.items():
        op = Op(0, op_type, [x, axes], [tensor(2, (2,), "int32")], {"axes": (1,), "keep_dims": False})
        assert op_def(op_type).fold(op)[0].tolist() == want, op_type
    ties = tensor(3, (2, 3), "int32", [[2, 1, 1], [0, 0, 0]])
    op = Op(0, "ARG_MIN", [ties, tensor(4, (), "int32", 1)], [tensor(5, (2,), "int64")], {"axis": 1})
    assert op_def("ARG_MIN").fold(op)[0].tolist() == [1, 0]
    quantized = tensor(6, (2, 3), "int8", [[1, 2, 3], [4, 5, 6]])
    quantized.quant = object()  # quantized data is not shape arithmetic: never folded
    op = Op(0, "SUM", [quantized, axes], [tensor(7, (2,), "int8")], {"axes": (1,), "keep_dims": False})
    assert op_def("SUM").fold(op) is None
