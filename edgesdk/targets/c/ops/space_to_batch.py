"""SPACE_TO_BATCH_ND on the host: edgesdk_space_to_batch, with the op layer's geometry and pad byte (the output
zero point for --rounding ref, 0 for tflm)."""

from __future__ import annotations

from ..emit import Emit, c_op, footprint
from ..proof import require
from .shape_common import constant_parameters, data_tensor_types, element_bytes


@c_op("SPACE_TO_BATCH_ND", constraints=[data_tensor_types, constant_parameters],
      headers=("edgesdk_space_to_batch.h",), sources=("edgesdk_space_to_batch.c",))
def emit_space_to_batch(e: Emit):
    d, x, y = e.data, e.op.inputs[0], e.op.outputs[0]
    fields = {"batch": d.batch, "height": d.height, "width": d.width, "out_batch": d.out_batch,
              "out_height": d.out_height, "out_width": d.out_width, "block_h": d.block_h, "block_w": d.block_w,
              "pad_top": d.pad_top, "pad_left": d.pad_left, "pixel_bytes": d.depth * element_bytes(y),
              "pad_byte": d.pad_byte}
    params = e.params("edgesdk_space_to_batch_params", fields)
    e.call("edgesdk_space_to_batch", params, e.tensor(x), e.arena(y))
    e.layer.note = f"block {[d.block_h, d.block_w]}, pad byte {d.pad_byte}"
    return e.layer


@footprint("edgesdk_space_to_batch")
def space_to_batch_footprint(call, op) -> list:
    p, x, y = call.args
    f = p.fields
    ok = (all(f[k] >= 1 for k in ("batch", "height", "width", "out_batch", "out_height", "out_width", "block_h",
                                   "block_w", "pixel_bytes"))
          and f["pad_top"] >= 0 and f["pad_left"] >= 0 and 0 <= f["pad_byte"] <= 255
          and f["out_batch"] == f["batch"] * f["block_h"] * f["block_w"])
    return require(ok, f"space_to_batch fields {f}") or [
        (x, f["batch"] * f["height"] * f["width"] * f["pixel_bytes"], "input"),
        (y, f["out_batch"] * f["out_height"] * f["out_width"] * f["pixel_bytes"], "output")]
