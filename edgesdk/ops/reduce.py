"""REDUCE_MAX, REDUCE_MIN, REDUCE_ANY and REDUCE_ALL over constant axes (MEAN and SUM: edgesdk/ops/mean.py).

Nothing to prepare but the axes: MAX and MIN of int8/int16 compare the stored values (TFLite requires the input
and output quantization to be equal), ANY and ALL reduce bool tensors."""

from __future__ import annotations

from .base import op_error
from .mean import Reduction
from . import register


@register
class ReduceMaxMin(Reduction):
    types = ("REDUCE_MAX", "REDUCE_MIN")


@register
class ReduceAnyAll(Reduction):
    types = ("REDUCE_ANY", "REDUCE_ALL")

    def check(self, op) -> None:
        super().check(op)
        if op.inputs[0].dtype != "bool":
            raise op_error(op, f"reduces a {op.inputs[0].dtype} tensor (TFLite's {op.type} takes bool)")
