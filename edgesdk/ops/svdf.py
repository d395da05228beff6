"""SVDF: a rank-r singular value decomposition filter over time, its memory in a TFLite variable tensor (a
persistent tensor of the IR, kept between inferences).

Inputs: 0 input [batch, input_size]; 1 weights_feature [num_filters, input_size]; 2 weights_time
[num_filters, memory_size]; 3 bias [num_units] (optional); 4 activation state [batch, memory_size * num_filters],
a variable tensor. Output [batch, num_units], num_units = num_filters / rank.

Each inference shifts every filter's memory by one step, writes the feature projection of the input into the
newest slot, and sums each unit's `rank` filters' time products (plus the bias).

Build-time data (SvdfData): sizes, and for int8 the two requantizations (input * weights_feature -> state,
state * weights_time -> output), from float32 scale arithmetic in both references. They differ in the state zero
point (LiteRT ignores it, TFLite Micro adds it when storing and subtracts it when reading) and in where a float32
bias enters the sum (LiteRT last, TFLite Micro first): docs/rounding.md, "Recurrent ops".
"""

from __future__ import annotations

import numpy as np

from ..dataclass_cache import dataclass
from ..errors import UnsupportedOpError
from ..ir import quant
from . import register
from .base import OpDef, Operands, fused_activation, input_of, op_error

INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class SvdfData:
    kind: str  # "int8" (int8 input, int16 or int8 state), "float32"
    arithmetic: str  # "litert" or "tflm"
    batches: int
    input_size: int
    num_filters: int
    num_units: int
    rank: int
    memory_size: int
    activation: str
    feature_multiplier: int = 0  # input * weights_feature -> state
    feature_shift: int = 0
    time_multiplier: int = 0  # state * weights_time -> output
    time_shift: int = 0
    input_zero_point: int = 0
    output_zero_point: int = 0
    state_zero_point: int = 0  # 0 for LiteRT, which ignores it


def svdf_sizes(op) -> tuple:
    x, wf, wt = op.inputs[INPUT], op.inputs[WEIGHTS_FEATURE], op.inputs[WEIGHTS_TIME]
    rank = int(op.attrs.get("rank", 0))
    return int(x.shape[0]), int(x.shape[1]), int(wf.shape[0]), int(wf.shape[0]) // max(rank, 1), rank, int(wt.shape[1])


def _scale(t) -> np.float32:
    return np.float32(t.quant.scale[0])


@register
class Svdf(OpDef):
    types = ("SVDF",)
    operands = Operands(inputs=("input", "weights_feature", "weights_time", "bias", "activation_state"),
                        optional=("bias",))
    options = "SVDFOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"rank": int(options.get("rank", 0)), "activation": fused_activation(op, options),
                "asymmetric_quantize_inputs": bool(options.get("asymmetric_quantize_inputs", False))}

    def check(self, op) -> None:
        x, wf, wt, state, y = (op.inputs[INPUT], op.inputs[WEIGHTS_FEATURE], op.inputs[WEIGHTS_TIME],
                               op.inputs[STATE], op.outputs[0])
        b = input_of(op, BIAS)
        for t in (wf, wt, b):
            if t is not None and not t.is_const:
                raise UnsupportedOpError(f"{op.type} at {op.location} has non-constant weights or bias ('{t.name}'); "
                                         "edgesdk needs constant weights.")
        if not state.persistent:
            raise op_error(op, f"activation state '{state.name}' must be a variable tensor (the SVDF keeps its memory "
                               "there between inferences)")
        rank = op.attrs.get("rank", 0)
        if len(x.shape) != 2 or len(wf.shape) != 2 or len(wt.shape) != 2:
            raise op_error(op, f"input {list(x.shape)}, weights_feature {list(wf.shape)} and weights_time "
                               f"{list(wt.shape)} must be 2-D")
        if rank < 1 or wf.shape[0] % rank != 0:
            raise op_error(op, f"rank {rank} does not divide the {wf.shape[0]} filters")
        batches, input_size, num_filters, num_units, _rank, memory = svdf_sizes(op)
        if wf.shape[1] != input_size:
            raise op_error(op, f"weights_feature {list(wf.shape)} do not take {input_size} input features")
        if wt.shape[0] != num_filters or memory < 1:
            raise op_error(op, f"weights_time {list(wt.shape)} must be [{num_filters}, memory size >= 1]")
        if b is not None and tuple(b.shape) != (num_units,):
            raise op_error(op, f"bias {list(b.shape)} must be [{num_units}]")
        if tuple(state.shape) != (batches, memory * num_filters):
            raise op_error(op, f"activation state {list(state.shape)} must be [{batches}, {memory * num_filters}]")
        if tuple(y.shape) != (batches, num_units):
            raise op_error(op, f"output {list(y.shape)} must be [{batches}, {num_units}]")

    def prepare(self, op, mode: str) -> SvdfData | None:
        x, wf, wt, state, y = (op.inputs[INPUT], op.inputs[WEIGHTS_FEATURE], op.inputs[WEIGHTS_TIME],
                               op.inputs[STATE], op.outputs[0])
        arithmetic = "tflm" if mode == "tflm" else "litert"
        common = dict(arithmetic=arithmetic, activation=op.attrs.get("activation", "NONE"))
        sizes = svdf_sizes(op)
        if x.dtype == "float32":
            return SvdfData("float32", common["arithmetic"], *sizes, common["activation"])
        if any(t.quant is None for t in (x, wf, wt, state, y)):
            return None
        # float32 products and quotients of the scales, then QuantizeMultiplier (both references)
        feature = float(np.float32(_scale(x) * _scale(wf)) / _scale(state))
        time = float(np.float32(_scale(state) * _scale(wt)) / _scale(y))
        fm, fs = quant.quantize_multiplier(feature)
        tm, ts = quant.quantize_multiplier(time)
        # LiteRT's int8 SVDF reads the state as int16 and ignores its zero point; an int8 state only TFLite Micro
        # runs, so it always follows TFLite Micro.
        state_zp = int(state.quant.zero_point[0]) if (arithmetic == "tflm" or state.dtype == "int8") else 0
        return SvdfData("int8", arithmetic, *sizes, common["activation"], fm, fs, tm, ts,
                        int(x.quant.zero_point[0]), int(y.quant.zero_point[0]), state_zp)
