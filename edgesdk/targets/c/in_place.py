"""Which host kernels may write their output over their dying input (Target.in_place; the rules are defined in
edgesdk/aot/memory_plan.py).

Only kernels checked on overlapping buffers are listed: tests/test_memory_plan.py runs every in-place op of the
MLPerf Tiny models through these kernels on one arena at the planned offsets, and the raster ones at the closest
distance any plan may use. They are the int8 kernels (uint8 models are legalized to int8): the pixel loops are
outermost, the blocked convolution computes two adjacent pixels together, the sliding depthwise kernel one channel
of one row at a time, and the elementwise kernels read element i before writing it. A kernel that computes several
rows together, or loops over channels outside rows, must leave these tables; kernels must not declare input and
output pointers `restrict`. Other dtypes' kernels (int16, float32, ...) are not listed: they never overlap.
"""

from __future__ import annotations

EXACT = {"ADD", "MUL", "RELU", "RELU6", "RELU_N1_TO_1", "HARD_SWISH"}
RASTER = {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "FULLY_CONNECTED"}


def in_place_rule(op, x) -> str | None:
    """'exact' or 'raster' for the int8 kernels above, or the exact uint8 <-> int8 edge conversions of a
    legalized uint8 model (edgesdk_convert_u8_s8 / _s8_u8: byte i read, then byte i written), else None."""
    if op.type == "QUANTIZE" and _edge_conversion(op):
        return "exact"
    if op.outputs[0].dtype != "int8" or any(t.dtype != "int8" for t in op.inputs if t is not None and not t.is_const):
        return None
    if op.type in EXACT:
        return "exact"
    if op.type in RASTER:
        return "raster"
    return None


def _edge_conversion(op) -> bool:
    from ...ops.quantize import _is_uint8_edge

    x, y = op.inputs[0], op.outputs[0]
    if (x.dtype, y.dtype) == ("uint8", "int8"):
        return _is_uint8_edge(x, y)
    return (x.dtype, y.dtype) == ("int8", "uint8") and _is_uint8_edge(y, x)
