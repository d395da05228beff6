"""TRANSPOSE, SLICE, STRIDED_SLICE, REVERSE_V2, SPLIT, SPLIT_V, UNPACK, BROADCAST_TO, MIRROR_PAD,
DEPTH_TO_SPACE, SPACE_TO_DEPTH and BATCH_TO_SPACE_ND on the host: each is the op layer's AxisMap walked by
edgesdk_gather_axes (one call per output for the splits); SLICE with a run-time begin is edgesdk_slice_dynamic."""

from __future__ import annotations

from ....ops.axis_map import AxisMap
from ....ops.slice import DynamicSlice
from ..emit import Emit, c_op
from .shape_common import KERNEL_FILES, axes_fields, constant_parameters, data_tensor_types, element_bytes, \
    emit_gather_axes

SEPARABLE = ("TRANSPOSE", "STRIDED_SLICE", "REVERSE_V2", "BROADCAST_TO", "MIRROR_PAD", "DEPTH_TO_SPACE",
             "SPACE_TO_DEPTH", "BATCH_TO_SPACE_ND")


def slice_begin_type(op):
    """A run-time begin of SLICE is int32 or int64"""
    begin = op.inputs[1]
    return begin.is_const or begin.dtype in ("int32", "int64"), f"begin is {begin.dtype}"


@c_op(*SEPARABLE, constraints=[data_tensor_types, constant_parameters], **KERNEL_FILES)
def emit_separable(e: Emit):
    m = e.data
    x = e.op.inputs[0]
    emit_gather_axes(e, m, x, e.op.outputs[0])
    e.layer.note = f"{list(x.shape)} -> {list(e.op.outputs[0].shape)}"
    return e.layer


@c_op("SLICE", constraints=[data_tensor_types, constant_parameters, slice_begin_type], **KERNEL_FILES)
def emit_slice(e: Emit):
    d, x, y = e.data, e.op.inputs[0], e.op.outputs[0]
    if isinstance(d, AxisMap):
        emit_gather_axes(e, d, x, y)
        e.layer.note = "constant begin"
        return e.layer
    assert isinstance(d, DynamicSlice)
    eb, rank = element_bytes(y), len(d.in_shape)
    pad = [1] * (6 - rank)
    fields = {"axes": axes_fields(e, d.axes, y), "rank": rank, "index_bytes": element_bytes(e.op.inputs[1]),
              "in_shape": list(d.in_shape) + pad, "size": list(d.sizes) + pad,
              "in_strides": [s * eb for s in d.in_strides] + [0] * (6 - rank)}
    params = e.params("edgesdk_slice_dynamic_params", fields)
    e.call("edgesdk_slice_dynamic", params, e.tensor(x), e.tensor(e.op.inputs[1]), e.arena(y))
    e.layer.note = "begin read at run time, clamped into the input"
    return e.layer


@c_op("SPLIT", "SPLIT_V", "UNPACK", constraints=[data_tensor_types, constant_parameters], **KERNEL_FILES)
def emit_split(e: Emit):
    x = e.op.inputs[1] if e.op.type == "SPLIT" else e.op.inputs[0]
    for k, (m, y) in enumerate(zip(e.data, e.op.outputs)):
        emit_gather_axes(e, m, x, y, f"out{k}_axis")
    e.layer.note = f"{len(e.op.outputs)} outputs"
    return e.layer

