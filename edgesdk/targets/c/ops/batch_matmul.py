"""BATCH_MATMUL on the host: edgesdk_batch_matmul_s8 / _s16 / _f32 (edgesdk_batch_matmul.c), adj_x / adj_y and
broadcast batch dimensions as strides."""

from __future__ import annotations

from ....ops.batch_matmul import MAX_BATCH_DIMS, batch_shape, matmul_dims
from ..calls import Macro
from ..emit import Emit, c_op, footprint
from ..proof import positive, prod, require, shift_checks

KERNELS = {"int8": "edgesdk_batch_matmul_s8", "int16": "edgesdk_batch_matmul_s16",
           "float32": "edgesdk_batch_matmul_f32"}
SIZES = {"int8_t": 1, "int16_t": 2, "float": 4}


def _per_tensor(t) -> bool:
    return t.quant is not None and t.quant.scale.size == 1


def batch_matmul_dtypes(op):
    """Both inputs and the output are per-tensor int8, per-tensor int16 with zero point 0, or float32, all the same type"""
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if not a.dtype == b.dtype == y.dtype or a.dtype not in KERNELS:
        return False, f"{a.dtype} x {b.dtype} -> {y.dtype}"
    if a.dtype == "float32":
        return True, ""
    if not all(_per_tensor(t) for t in (a, b, y)):
        return False, "not quantized per tensor"
    if a.dtype == "int16" and any(int(t.quant.zero_point[0]) != 0 for t in (a, b, y)):
        return False, "int16 zero points must be 0"
    return True, ""


def batch_matmul_rank(op):
    """The output has at most 4 batch dimensions (rank 6)"""
    y = op.outputs[0]
    return len(y.shape) - 2 <= MAX_BATCH_DIMS, f"output rank {len(y.shape)}"


def batch_matmul_shift(op):
    """int16: the requantization shift is at most 14 (TFLite's 64-bit MultiplyByQuantizedMultiplier)"""
    from ....ops import prepared

    if op.inputs[0].dtype != "int16":
        return True, ""
    d = prepared(op, "tflm")
    return d.multiplier == 0 or d.shift <= 14, f"shift {d.shift}"


def _strides(shape, batch) -> list:
    """Element strides of an operand's batch dimensions, padded to MAX_BATCH_DIMS, 0 where it broadcasts."""
    dims = tuple(int(d) for d in shape[:-2])
    dims = (1,) * (len(batch) - len(dims)) + dims
    matrix = int(shape[-1]) * int(shape[-2])
    strides, stride = [], matrix
    for d, n in zip(reversed(dims), reversed(batch)):
        strides.append(0 if d == 1 and n != 1 else stride)
        stride *= d
    strides.reverse()
    return [0] * (MAX_BATCH_DIMS - len(strides)) + strides


@c_op("BATCH_MATMUL", constraints=[batch_matmul_dtypes, batch_matmul_rank, batch_matmul_shift],
      headers=("edgesdk_batch_matmul.h",), sources=("edgesdk_batch_matmul.c",))
def emit_batch_matmul(e: Emit):
    op, d = e.op, e.data
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    adj_x, adj_y = op.attrs["adj_x"], op.attrs["adj_y"]
    rows, depth, _, cols = matmul_dims(op)
    batch = batch_shape(op)
    fields = {
        "batch_shape": [1] * (MAX_BATCH_DIMS - len(batch)) + [int(n) for n in batch],
        "lhs_batch_stride": _strides(a.shape, batch), "rhs_batch_stride": _strides(b.shape, batch),
        "rows": rows, "cols": cols, "depth": depth,
        "lhs_row_stride": 1 if adj_x else depth, "lhs_depth_stride": rows if adj_x else 1,
        "rhs_depth_stride": 1 if adj_y else cols, "rhs_col_stride": depth if adj_y else 1,
        "lhs_offset": 0, "rhs_offset": 0, "output_offset": 0, "act_min": 0, "act_max": 0,
        "multiplier": 0, "shift": 0, "rounding": e.rounding("double"), "accumulator": Macro("EDGESDK_ACC32"),
    }
    if a.dtype != "float32":
        fields.update(lhs_offset=d.lhs_offset, rhs_offset=d.rhs_offset, output_offset=d.output_offset,
                      act_min=d.act_min, act_max=d.act_max, multiplier=d.multiplier, shift=d.shift)
    if a.dtype == "int16":
        fields["accumulator"] = Macro("EDGESDK_ACC64")
    params = e.params("edgesdk_batch_matmul_params", fields)
    e.call(KERNELS[a.dtype], params, e.tensor(a), e.tensor(b), e.arena(y))
    e.layer.note = (f"{'x'.join(map(str, batch)) or '1'} x ({rows}x{depth} @ {depth}x{cols}) {a.dtype}"
                    f"{', adj_x' if adj_x else ''}{', adj_y' if adj_y else ''}")
    return e.layer


def _extent(p, strides, matrix: int) -> int:
    """Elements an operand spans: the farthest batch offset plus one matrix."""
    return sum((n - 1) * s for n, s in zip(p["batch_shape"], strides)) + matrix


@footprint(*KERNELS.values())
def batch_matmul_footprint(call, op) -> list:
    p, a, b, y = call.args
    checks = positive(p, "rows", "cols", "depth")
    shape = [int(n) for n in p["batch_shape"]]
    checks += require(len(shape) == MAX_BATCH_DIMS and all(n >= 1 for n in shape), f"batch shape {shape}")
    strides = [int(s) for s in list(p["lhs_batch_stride"]) + list(p["rhs_batch_stride"])]
    checks += require(len(strides) == 2 * MAX_BATCH_DIMS and min(strides) >= 0, "negative batch strides")
    rows, cols, depth = p["rows"], p["cols"], p["depth"]
    checks += require((p["lhs_row_stride"], p["lhs_depth_stride"]) in ((depth, 1), (1, rows)),
                      "lhs strides do not describe a rows x depth matrix (or its transpose)")
    checks += require((p["rhs_depth_stride"], p["rhs_col_stride"]) in ((cols, 1), (1, depth)),
                      "rhs strides do not describe a depth x cols matrix (or its transpose)")
    checks += shift_checks(p)
    if call.kernel.endswith("_s16"):
        checks += require(p["accumulator"].name == "EDGESDK_ACC64" and p["shift"] <= 14,
                          "the int16 kernel requantizes an int64 accumulator with shifts up to 14")
    if checks:
        return checks
    size = SIZES[y.ctype]
    # the largest element index read: (rows - 1) * row stride + (depth - 1) * depth stride, plus the batch offset
    lhs_matrix = (rows - 1) * p["lhs_row_stride"] + (depth - 1) * p["lhs_depth_stride"] + 1
    rhs_matrix = (cols - 1) * p["rhs_col_stride"] + (depth - 1) * p["rhs_depth_stride"] + 1
    return [(a, size * _extent(p, p["lhs_batch_stride"], lhs_matrix), "lhs"),
            (b, size * _extent(p, p["rhs_batch_stride"], rhs_matrix), "rhs"),
            (y, size * prod(shape) * rows * cols, "output")]
