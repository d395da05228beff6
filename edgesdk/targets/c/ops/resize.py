"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR on the host (edgesdk_resize.c): the op layer's per-row and
per-column geometry as constant tables, one copy (nearest) or interpolation (bilinear) per output element."""

from __future__ import annotations

import numpy as np

from ..emit import Emit, c_op, footprint
from ..proof import positive, require

ELEMENT_BYTES = {"int8": 1, "int16": 2, "float32": 4}
BILINEAR = {"int8": "edgesdk_resize_bilinear_s8", "int16": "edgesdk_resize_bilinear_s16",
            "float32": "edgesdk_resize_bilinear_f32"}


def resize_dtypes(op):
    """Input and output are int8, int16 or float32 of the same type (RESIZE_BILINEAR: not a uint8 model, whose kernel interpolates in float)"""
    x, y = op.inputs[0], op.outputs[0]
    if x.dtype != y.dtype or x.dtype not in ELEMENT_BYTES:
        return False, f"{x.dtype} -> {y.dtype}"
    if op.type == "RESIZE_BILINEAR" and op.uint8_semantics:
        return False, "uint8 RESIZE_BILINEAR (TFLite's uint8 kernel interpolates in float)"
    return True, ""


def resize_constant_size(op):
    """The size input is a constant"""
    size = op.inputs[1]
    return size.is_const, f"size {size.name} is computed at run time"


def _geometry(op) -> dict:
    x, y = op.inputs[0], op.outputs[0]
    return {"batches": x.shape[0], "in_h": x.shape[1], "in_w": x.shape[2], "channels": x.shape[3],
            "out_h": y.shape[1], "out_w": y.shape[2], "element_bytes": ELEMENT_BYTES[x.dtype]}


@c_op("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", constraints=[resize_dtypes, resize_constant_size],
      headers=("edgesdk_resize.h",), sources=("edgesdk_resize.c",))
def emit_resize(e: Emit):
    op, d = e.op, e.data
    x, y = op.inputs[0], op.outputs[0]
    fields = _geometry(op)
    flags = ", ".join(k for k in ("align_corners", "half_pixel_centers") if op.attrs.get(k)) or "no flags"
    if op.type == "RESIZE_NEAREST_NEIGHBOR":
        fields.update(rows=e.int32s("rows", d.rows), cols=e.int32s("cols", d.cols),
                      row_weights=e.null("float"), col_weights=e.null("float"))
        params = e.params("edgesdk_resize_params", fields)
        e.call("edgesdk_resize_nearest_neighbor", params, e.tensor(x), e.arena(y))
    elif x.dtype == "float32":
        fields.update(rows=e.int32s("rows", [v for r in d.rows for v in r[:2]]),
                      cols=e.int32s("cols", [v for c in d.cols for v in c[:2]]),
                      row_weights=e.const("row_weights", np.asarray([r[2:] for r in d.rows], np.float32), "float"),
                      col_weights=e.const("col_weights", np.asarray([c[2:] for c in d.cols], np.float32), "float"))
        params = e.params("edgesdk_resize_params", fields)
        e.call(BILINEAR[x.dtype], params, e.tensor(x), e.arena(y))
    else:
        fields.update(rows=e.int32s("rows", [v for r in d.rows for v in r]),
                      cols=e.int32s("cols", [v for c in d.cols for v in c]),
                      row_weights=e.null("float"), col_weights=e.null("float"))
        params = e.params("edgesdk_resize_params", fields)
        e.call(BILINEAR[x.dtype], params, e.tensor(x), e.arena(y))
    kind = "nearest" if op.type == "RESIZE_NEAREST_NEIGHBOR" else "bilinear"
    e.layer.note = f"{kind} {x.shape[1]}x{x.shape[2]} -> {y.shape[1]}x{y.shape[2]} {x.dtype}, {flags}"
    return e.layer


def _table(p, key: str, stride: int, limit: int, what: str) -> list:
    """A row/column table's source indices are inside the input (and bilinear weights in [-1024, 1024])."""
    values = [int(v) for v in getattr(p[key], "values", [])]
    count = p["out_h" if key == "rows" else "out_w"] * stride
    if len(values) < count:
        return [f"{key} holds {len(values)} values, not {count}"]
    indices = [v for k, v in enumerate(values[:count]) if stride != 3 or k % 3 != 2]
    weights = [v for k, v in enumerate(values[:count]) if stride == 3 and k % 3 == 2]
    return require(all(0 <= v < limit for v in indices) and all(-1024 <= w <= 1024 for w in weights),
                   f"the {what} table reads outside the input or weighs beyond 1024")


@footprint("edgesdk_resize_nearest_neighbor", *BILINEAR.values())
def resize_footprint(call, op) -> list:
    p, x, y = call.args
    checks = positive(p, "batches", "in_h", "in_w", "channels", "out_h", "out_w", "element_bytes")
    if checks:
        return checks
    size = {"int8_t": 1, "int16_t": 2, "float": 4}.get(y.ctype)
    checks += require(size == p["element_bytes"], f"element size {p['element_bytes']} for {y.ctype} tensors")
    stride = 1 if call.kernel == "edgesdk_resize_nearest_neighbor" else (2 if call.kernel.endswith("_f32") else 3)
    checks += _table(p, "rows", stride, p["in_h"], "row") + _table(p, "cols", stride, p["in_w"], "column")
    accesses = [(p["rows"], 4 * p["out_h"] * stride, "rows"), (p["cols"], 4 * p["out_w"] * stride, "cols")]
    if stride == 2:
        accesses += [(p["row_weights"], 8 * p["out_h"], "row_weights"), (p["col_weights"], 8 * p["out_w"], "col_weights")]
    return checks + accesses + [(x, p["element_bytes"] * p["batches"] * p["in_h"] * p["in_w"] * p["channels"], "input"),
                                (y, p["element_bytes"] * p["batches"] * p["out_h"] * p["out_w"] * p["channels"],
                                 "output")]
