"""EXPAND_DIMS and SQUEEZE on the host: like RESHAPE, nothing when the memory plan aliases output and input,
else a byte copy (edgesdk_reshape)."""

from __future__ import annotations

from ..emit import Emit, c_op
from .reshape import alias_or_copy
from .shape_common import data_tensor_types


@c_op("EXPAND_DIMS", "SQUEEZE", constraints=[data_tensor_types],
      headers=("edgesdk_reshape.h",), sources=("edgesdk_reshape.c",))
def emit_squeeze(e: Emit):
    return alias_or_copy(e)
