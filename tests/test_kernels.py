"""The C kernel library, through the C target's codegen, is bit-exact per op with both references.

Each op of a model is fed the reference interpreter's own input tensors (LiteRT BUILTIN_REF with
experimental_preserve_all_tensors, or TFLite Micro with kPreserveAllTensors) and its output must equal
that interpreter's output tensor byte for byte. Real models cover the ops they use; single-op models from
tests/modelgen.py cover the rest, with random and extreme (all -128 / all 127) inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import modelgen
from conftest import SHARED_MODELS
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.targets.c import testing

SEEDS = (0, 1, 2)
UINT8_MODELS = {"mobilenet_uint8"}  # TFLite Micro runs no uint8 kernels


def _describe(failures) -> str:
    return "; ".join(f"{op.location}: {count} values differ (max {diff})" for op, diff, count in failures)


@pytest.mark.parametrize("mode", ["ref", "tflm"])
@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_real_model_ops_bit_exact(models_dir, name, mode):
    if mode == "tflm" and name in UINT8_MODELS:
        pytest.skip("TFLite Micro has no uint8 kernels")
    path = models_dir / SHARED_MODELS[name]
    graph = import_tflite(path)
    library = testing.OpLibrary(graph.ops, mode)
    compared = 0
    for seed in SEEDS:
        ref = testing.reference_tensors(path, testing.random_model_inputs(path, seed), mode)
        failures = testing.compare_ops(graph, ref, mode, library)
        assert not failures, f"{name} seed {seed}: {_describe(failures)}"
        compared += 1
    assert compared == len(SEEDS)


def _extreme_inputs(inputs: list, which: str) -> list:
    result = []
    for x in inputs:
        if x.dtype == np.float32:
            result.append(np.full_like(x, -1e4 if which == "min" else 1e4))
        else:
            info = np.iinfo(x.dtype)
            result.append(np.full_like(x, info.min if which == "min" else info.max))
    return result


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """(name, path, graph) of every single-op model, written once per test module."""
    root = tmp_path_factory.mktemp("single_op")
    models = []
    for name, data in modelgen.single_op_suite(seed=0) + modelgen.single_op_suite(seed=1):
        path = root / f"{name}_{len(models)}.tflite"
        path.write_bytes(data)
        models.append((name, path, import_tflite(path)))
    return models


@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_single_op_models_bit_exact(suite, mode):
    selected = [(n, p, g) for n, p, g in suite if not (mode == "tflm" and "uint8" in n)]
    library = testing.OpLibrary([op for _, _, g in selected for op in g.ops], mode)
    problems = []
    for name, path, graph in selected:
        random_inputs = testing.random_model_inputs(path, seed=len(name))
        for label, inputs in (("random", random_inputs), ("all min", _extreme_inputs(random_inputs, "min")),
                              ("all max", _extreme_inputs(random_inputs, "max"))):
            ref = testing.reference_tensors(path, inputs, mode)
            failures = testing.compare_ops(graph, ref, mode, library)
            if failures:
                problems.append(f"{name} ({label}): {_describe(failures)}")
    assert not problems, "\n".join(problems)


def test_suite_covers_every_c_op(suite):
    from edgesdk.targets.c.supported import C_SUPPORT

    covered = {op.type for _, _, g in suite for op in g.ops}
    assert set(C_SUPPORT.ops) <= covered, f"no single-op model for {sorted(set(C_SUPPORT.ops) - covered)}"


def test_comparison_detects_a_wrong_kernel(models_dir):
    """The harness can fail: LiteRT's FULLY_CONNECTED computed with TFLite Micro's rounding must differ."""
    path = models_dir / SHARED_MODELS["ad"]
    graph = import_tflite(path)
    library = testing.OpLibrary(graph.ops, "ref", force_rounding={"FULLY_CONNECTED": "double"})
    failures = []
    for seed in range(4):
        ref = testing.reference_tensors(path, testing.random_model_inputs(path, seed), "ref")
        failures += testing.compare_ops(graph, ref, "ref", library)
    assert failures and all(op.type == "FULLY_CONNECTED" and diff == 1 for op, diff, _ in failures)


def test_fp64_requantization_fast_path_equals_double_rounding(tmp_path):
    """edgesdk_requantize_fp64_fast (integer fast path + guard) == round(acc * scale) in IEEE double."""
    import ctypes
    import math

    from edgesdk.hostcc import load_shared_library
    from edgesdk.ir import quant

    src = tmp_path / "fp64_wrap.c"
    src.write_text('#include "edgesdk_fp64.h"\n'
                   "int32_t fast(int32_t a, double s, int32_t m, int sh)\n"
                   "{ return edgesdk_requantize_fp64_fast(a, s, m, sh); }\n")
    lib = load_shared_library("edgesdk_test_fp64", [src], [testing.KERNELS_DIR])
    lib.fast.argtypes = [ctypes.c_int32, ctypes.c_double, ctypes.c_int32, ctypes.c_int]
    lib.fast.restype = ctypes.c_int32

    def expected(a, s):  # LiteRT: static_cast<int32_t>(round(double(acc) * scale)) on x86
        r = float(a) * s
        q = math.copysign(math.floor(abs(r) + 0.5), r) if -2.0 ** 31 < r < 2.0 ** 31 else -2.0 ** 31
        return -(1 << 31) if q >= 2.0 ** 31 else int(q)

    rng = np.random.default_rng(0)
    for i in range(30000):
        if i % 3 == 0:  # power-of-two-ish scales: exact ties on the half
            s = 2.0 ** -int(rng.integers(1, 20)) * (1 + int(rng.integers(0, 8)) / 8)
        else:
            s = float(np.float32(rng.uniform(1e-3, 0.05))) * float(np.float32(rng.uniform(1e-3, 0.05))) / float(
                np.float32(rng.uniform(0.01, 0.5)))
        a = int(rng.integers(-(1 << 31), 1 << 31)) if i % 5 == 0 else int(rng.integers(-300000, 300000))
        if i % 7 == 0:  # right next to a half
            near = round((int(rng.integers(-300, 300)) + 0.5) / s) + int(rng.integers(-1, 2))
            a = int(np.clip(near, -(1 << 31), (1 << 31) - 1))
        m, sh = quant.quantize_multiplier(s)
        assert lib.fast(a, s, m, sh) == expected(a, s), (a, s)
