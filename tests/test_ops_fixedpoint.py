"""The op layer's Python model of TFLite Micro's fixed-point int8 LOGISTIC/TANH (edgesdk/ops/fixedpoint.py,
ops.sigmoid.fixed_point_table), which the DSP tabulates, against the host C kernels (edgesdk_logistic_s8 /
edgesdk_tanh_s8, bit-exact with TFLite Micro) on every int8 input, over a spread of input scales, zero points
and both roundings."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from edgesdk.ops import fixedpoint
from edgesdk.ops.sigmoid import INPUT_INTEGER_BITS, fixed_point_table, sigmoid_input_rescale
from edgesdk.ops.softmax import input_radius

ROUNDING_CODES = {"double": 0, "single": 1}  # EDGESDK_ROUNDING_DOUBLE / _SINGLE (edgesdk_arith.h)


class _SigmoidParams(ctypes.Structure):
    """edgesdk_sigmoid_params (edgesdk/kernels/edgesdk_logistic.h)."""

    _fields_ = [(name, ctypes.c_int32) for name in ("size", "input_zero_point", "input_range_radius",
                                                     "input_multiplier", "input_left_shift", "rounding")]


def _kernel_table(op_type, zero_point, multiplier, left_shift, rounding):
    from edgesdk.targets.c.testing import kernels_library

    params = _SigmoidParams(256, zero_point, input_radius(INPUT_INTEGER_BITS, left_shift), multiplier, left_shift,
                            ROUNDING_CODES[rounding])
    inputs = np.arange(256, dtype=np.uint8).view(np.int8).copy()  # entry k holds op((int8)k)
    table = np.zeros(256, np.int8)
    fn = getattr(kernels_library(), "edgesdk_logistic_s8" if op_type == "LOGISTIC" else "edgesdk_tanh_s8")
    fn(ctypes.byref(params), inputs.ctypes.data_as(ctypes.c_void_p), table.ctypes.data_as(ctypes.c_void_p))
    return table


# Input scales from a tiny 2^-12 to a coarse 0.5 (LOGISTIC/TANH inputs in real models sit near 0.01-0.1),
# including exact powers of two.
SCALES = sorted({*np.geomspace(2.0 ** -12, 0.5, 23).tolist(), 1 / 16, 1 / 32, 0.0078125, 0.0039215689})
ZERO_POINTS = (-128, -77, -1, 0, 5, 64, 127)


@pytest.mark.parametrize("op_type", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("rounding", ["double", "single"])
def test_fixed_point_tables_match_the_kernels_for_every_input(op_type, rounding):
    compared = 0
    for scale in SCALES:
        multiplier, left_shift = sigmoid_input_rescale(scale)
        for zero_point in ZERO_POINTS:
            ours = fixed_point_table(op_type, zero_point, multiplier, left_shift, rounding)
            theirs = _kernel_table(op_type, zero_point, multiplier, left_shift, rounding)
            assert np.array_equal(ours, theirs), (op_type, rounding, scale, zero_point,
                                                  np.flatnonzero(ours != theirs)[:8])
            compared += ours.size
    assert compared == 256 * len(SCALES) * len(ZERO_POINTS)


def test_gemmlowp_landmarks():
    one_q4 = 1 << 27
    assert fixedpoint.logistic(0, 4) == 1 << 30  # 0.5
    assert fixedpoint.tanh(0, 4) == 0
    assert abs(fixedpoint.logistic(one_q4, 4) / 2.0 ** 31 - 1 / (1 + np.exp(-1))) < 1e-7
    assert abs(fixedpoint.tanh(-one_q4, 4) / 2.0 ** 31 - np.tanh(-1)) < 1e-7
    assert fixedpoint.exp_on_negative_values(0, 4) == fixedpoint.ONE_Q0


@pytest.mark.parametrize("op_type", ["LOGISTIC", "TANH"])
def test_the_dsp_tabulates_tflite_micro_with_the_op_layer(op_type):
    from edgesdk.ir.graph import Op, QuantParams, Tensor
    from edgesdk.targets.dsp.codegen import _unary_table

    def quant(scale, zero_point):
        return QuantParams(np.array([scale], np.float32), np.array([zero_point], np.int64))

    x = Tensor(0, "x", (1, 8), "int8", quant(0.047, -3))
    y = Tensor(1, "y", (1, 8), "int8", quant(1 / 256, -128) if op_type == "LOGISTIC" else quant(1 / 128, 0))
    op = Op(0, op_type, [x], [y])

    class TflmContext:
        def rounding_for(self, _op):
            return "double"

    multiplier, left_shift = sigmoid_input_rescale(0.047)
    assert np.array_equal(_unary_table(op, TflmContext()), _kernel_table(op_type, -3, multiplier, left_shift, "double"))
