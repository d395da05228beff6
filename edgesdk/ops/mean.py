"""MEAN and SUM over constant axes (keep_dims or not), and what every reduction shares (edgesdk/ops/reduce.py).

Build-time data (int8/int16, TFLite's PrepareMeanOrSum + QuantizedMeanOrSum): the input-to-output multiplier,
for MEAN with 1/count folded in exactly as QuantizedMeanOrSum does it at run time. float32 needs none: the sum
is divided by the float count."""

from __future__ import annotations

import math

import numpy as np

from ..dataclass_cache import dataclass
from ..errors import UnsupportedOpError
from ..ir import quant
from .base import OpDef, Operands, input_of, op_error, rounding_of
from . import register


@dataclass(frozen=True)
class ReduceData:
    axes: tuple          # reduced dims, normalized, deduplicated, sorted
    count: int           # input elements per output
    all_dims: bool       # every dim is reduced (LiteRT's ReduceAllDims path)
    multiplier: int = 0  # quantized MEAN / SUM only
    shift: int = 0
    input_zero_point: int = 0
    output_zero_point: int = 0
    rounding: str = "double"
    bytes_as_uint8: bool = False  # LiteRT's reference int8 SUM (see Sum.prepare)
    scale: float = 0.0  # rounding "f32" (--rounding ort): the float32 scale of the sum


MeanData = ReduceData


def mean_multiplier(x, y, count: int) -> tuple:
    """TFLite's QuantizedMeanOrSum: the input/output multiplier with 1/count folded in (integer steps)."""
    m, shift = sum_multiplier(x, y)
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return int((m << extra) // count), shift - extra


def sum_multiplier(x, y) -> tuple:
    """PrepareMeanOrSum: QuantizeMultiplier(double(input_scale) / double(output_scale)), in both references."""
    real = quant.effective_scale(float(x.quant.scale[0]), denominator=float(y.quant.scale[0]))
    return quant.quantize_multiplier(real)


def reduction_axes(op) -> tuple:
    """The constant axes input, normalized and deduplicated."""
    axes_tensor = input_of(op, 1)
    if axes_tensor is None or not axes_tensor.is_const:
        raise UnsupportedOpError(f"{op.type} at {op.location} has non-constant axes; only constant axes are supported.")
    if axes_tensor.dtype not in ("int32", "int64"):
        raise op_error(op, f"has axes of type {axes_tensor.dtype} (TFLite requires int32)")
    rank = len(op.inputs[0].shape)
    values = [int(a) for a in axes_tensor.data.reshape(-1)]
    bad = [a for a in values if not -rank <= a < rank] if rank else []  # TFLite ignores a scalar's axes
    if bad:
        raise op_error(op, f"reduces over axis {bad[0]} of a rank-{rank} tensor")
    return tuple(sorted({a + rank if a < 0 else a for a in values} if rank else set()))


def quantized(t) -> bool:
    return t.quant is not None and t.dtype in ("int8", "int16")


class Reduction(OpDef):
    """A reducer over the constant axes of input 1 (TFLite's ReducerOptions: keep_dims)."""

    operands = Operands(inputs=("input", "axes"))
    options = "ReducerOptions"

    def attributes(self, op, options: dict) -> dict:
        return {"axes": reduction_axes(op), "keep_dims": bool(options.get("keep_dims", False))}

    def check(self, op) -> None:
        x, y = op.inputs[0], op.outputs[0]
        axes = op.attrs["axes"]
        kept = math.prod(d for k, d in enumerate(x.shape) if k not in axes)
        if y.num_elements != kept:
            raise op_error(op, f"reducing {list(x.shape)} over axes {list(axes)} leaves {kept} elements, "
                               f"not the {y.num_elements} of output {list(y.shape)}")
        if x.dtype != y.dtype:
            raise op_error(op, f"reduces a {x.dtype} input into a {y.dtype} output (the types must match)")

    def reduce_data(self, op, **quantization) -> ReduceData:
        x = op.inputs[0]
        axes = op.attrs["axes"]
        count = math.prod(int(x.shape[d]) for d in axes)
        return ReduceData(axes, count, len(axes) == len(x.shape), **quantization)

    def prepare(self, op, mode: str) -> ReduceData:
        return self.reduce_data(op)

    def fold(self, op) -> list | None:
        """Integer and bool reductions of constant, unquantized data (shape arithmetic), as TFLite computes them:
        sums wrap, MEAN divides the int64 sum truncating toward zero."""
        x, y = op.inputs[0], op.outputs[0]
        if not x.is_const or x.quant is not None or x.dtype not in ("int32", "int64", "bool"):
            return None
        axes = op.attrs["axes"]
        data = x.data
        if op.type in ("REDUCE_ANY", "REDUCE_ALL"):
            reduced = (np.any if op.type == "REDUCE_ANY" else np.all)(data, axis=axes)
        elif op.type in ("REDUCE_MAX", "REDUCE_MIN"):
            if data.size == 0:
                return None
            reduced = (np.max if op.type == "REDUCE_MAX" else np.min)(data, axis=axes)
        elif op.type in ("SUM", "MEAN"):
            total = data.astype(np.int64).sum(axis=axes, dtype=np.int64)
            if op.type == "MEAN":
                count = max(math.prod(int(x.shape[d]) for d in axes), 1)
                total = np.vectorize(lambda s: int(s) // count if s >= 0 else -((-int(s)) // count),
                                     otypes=[np.int64])(total)
            reduced = total
        else:
            return None
        return [np.asarray(reduced).astype(data.dtype).reshape(y.shape)]


@register
class Mean(Reduction):
    types = ("MEAN",)

    def prepare(self, op, mode: str) -> ReduceData:
        x, y = op.inputs[0], op.outputs[0]
        data = self.reduce_data(op)
        if not (quantized(x) and quantized(y)):
            return data
        m, s = mean_multiplier(x, y, max(data.count, 1))
        if str(mode) == "ort":  # QLinearGlobalAveragePool: sum - zp * count, float32 requantization
            from . import ort  # here: only --rounding ort loads the ONNX Runtime arithmetic
            return self.reduce_data(op, multiplier=m, shift=s, input_zero_point=int(x.quant.zero_point[0]),
                                    output_zero_point=int(y.quant.zero_point[0]), rounding=rounding_of(op, mode),
                                    scale=ort.global_average_scale(op, max(data.count, 1)))
        return self.reduce_data(op, multiplier=m, shift=s, input_zero_point=int(x.quant.zero_point[0]),
                                output_zero_point=int(y.quant.zero_point[0]), rounding=rounding_of(op, mode))


@register
class Sum(Reduction):
    types = ("SUM",)

    def prepare(self, op, mode: str) -> ReduceData:
        x, y = op.inputs[0], op.outputs[0]
        if not (quantized(x) and quantized(y)):
            return self.reduce_data(op)
        m, s = sum_multiplier(x, y)
        # LiteRT's kReference SUM hands the int8/int16 buffers to QuantizedMeanOrSum as uint8_t: int8 bytes are
        # summed as uint8 values and the result is clamped to [0, 255]. Deterministic for int8, so --rounding ref
        # does the same; uint8 models (legalized to int8) are read as uint8 there anyway. For int16 it reads bytes
        # and leaves half the output bytes unwritten: nothing can match that, edgesdk computes TFLite Micro's
        # value (docs/rounding.md).
        litert_bytes = str(mode) == "ref" and x.dtype == "int8" and not op.uint8_semantics
        return self.reduce_data(op, multiplier=m, shift=s, input_zero_point=int(x.quant.zero_point[0]),
                                output_zero_point=int(y.quant.zero_point[0]), rounding=rounding_of(op, mode),
                                bytes_as_uint8=litert_bytes)
