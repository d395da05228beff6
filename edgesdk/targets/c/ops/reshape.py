"""RESHAPE on the host: nothing when the memory plan gives input and output the same slot, else a copy."""

from __future__ import annotations

from .. import supported as rules
from ..emit import Emit, c_op, footprint


@c_op("RESHAPE", constraints=[rules.reshape_same_size],
      headers=("edgesdk_reshape.h",), sources=("edgesdk_reshape.c",))
def emit_reshape(e: Emit):
    return alias_or_copy(e)


def alias_or_copy(e: Emit):
    """An op whose output holds its input's bytes unchanged (RESHAPE, EXPAND_DIMS, SQUEEZE): no code when the
    memory plan gives both one slot, else a byte copy."""
    x, y = e.op.inputs[0], e.op.outputs[0]
    src, dst = e.tensor(x), e.arena(y)
    if not x.is_const and src.offset == dst.offset:
        e.layer.aliased = True
        e.layer.note = "aliased, no copy"
        return e.layer
    e.call("edgesdk_reshape", e.int(y.nbytes), src, dst)
    e.layer.note = "copy"
    return e.layer


@footprint("edgesdk_reshape", "edgesdk_convert_u8_s8", "edgesdk_convert_s8_u8")
def counted_footprint(call, op) -> list:
    """(bytes or elements, in, out) of one byte each."""
    n, x, y = call.args
    if not isinstance(n.value, int) or n.value < 1:
        return ["the byte count is not a positive integer"]
    return [(x, n.value, "input"), (y, n.value, "output")]


@footprint("edgesdk_default_read_input_rows", "edgesdk_read_input_rows_uint8")
def input_rows_footprint(call, op) -> list:
    """The caller writes `rows` rows of the streamed input into the stripe buffer `dst` points into (the uint8
    reader then converts exactly those bytes in place)."""
    from ....ops.stripes import row_bytes

    rows, dst = call.args[2], call.args[3]
    if not isinstance(rows.value, int) or rows.value < 1:
        return ["the row count is not a positive integer"]
    nbytes = rows.value * row_bytes(dst.tensor)
    if len(call.args) == 5 and call.args[4].value != nbytes:
        return [f"the uint8 reader converts {call.args[4].value} bytes, not the {nbytes} bytes of its rows"]
    return [(dst, nbytes, "input rows")]
