"""C text shared by the executor's templates and every target's generated code: exact literals, comment-safe
text and the one-line description of an op. Plain functions of values; imports nothing but the IR's names."""

from __future__ import annotations

import numpy as np

from .importer.names import sanitize_name

VALUES_PER_LINE = {"int8_t": 16, "uint8_t": 16, "int16_t": 12, "int32_t": 8, "uint32_t": 8, "int64_t": 4, "float": 6,
                   "double": 4}


# --stream-input, a uint8 model input: the caller's rows (model.h's edgesdk_default_read_input_rows) as the int8
# the model computes on. Targets define it once per build (CodegenContext.define_function) and call it by name.
UINT8_INPUT_READER = "edgesdk_read_input_rows_uint8"
UINT8_INPUT_READER_TEXT = """\
/* A streamed uint8 model input: the caller's rows, converted to the int8 the model computes on (q - 128, the
   same scale: the sign bit flipped), as the model's edge conversion would have done to the whole input. */
static void edgesdk_read_input_rows_uint8(uint32_t input, uint32_t first_row, uint32_t rows, uint8_t *dst,
                                          uint32_t bytes)
{
    edgesdk_default_read_input_rows(input, first_row, rows, dst);
    for (uint32_t i = 0; i < bytes; ++i) {
        dst[i] ^= 0x80u;
    }
}"""


def float_literal(value) -> str:
    """An exact float32 C literal: a hex float with an f suffix (-0.0 keeps its sign), GCC's constant builtins for
    infinities and NaNs (sign, quiet bit and payload kept; both the host and the RISC-V compiler are GCC)."""
    v = np.float32(value)
    if np.isfinite(v):
        return float(v).hex() + "f"
    bits = int(np.array(v, np.float32).view(np.uint32))
    sign = "-" if bits >> 31 else ""
    mantissa = bits & 0x7FFFFF
    if mantissa == 0:
        return f"({sign}__builtin_inff())"
    builtin = "__builtin_nanf" if mantissa >> 22 else "__builtin_nansf"
    return f'({sign}{builtin}("0x{mantissa & 0x3FFFFF:x}"))'


def _readable_float_literal(v: np.float32) -> str:
    """Decimal where that is exact and readable (9 significant digits round-trip a float32); infinities, NaNs
    and -0.0 as float_literal writes them."""
    if not np.isfinite(v) or (v == 0 and np.signbit(v)):
        return float_literal(v)
    text = np.format_float_scientific(v, unique=True, precision=9) if v != 0 else "0.0"
    return f"{text}f"


def c_value_lines(values: np.ndarray, ctype: str) -> list:
    """Comma-terminated lines of C literals for an array initializer, every value exact."""
    flat = np.asarray(values).reshape(-1)
    if ctype == "float":
        items = [_readable_float_literal(v) for v in flat.astype(np.float32)]
    elif ctype == "double":
        items = [float(v).hex() for v in flat.astype(np.float64)]  # exact
    elif ctype == "int32_t":
        # INT32_MIN cannot be written as a plain negative literal in C.
        items = ["(-2147483647 - 1)" if int(v) == -2147483648 else str(int(v)) for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    per_line = VALUES_PER_LINE.get(ctype, 8)
    return [", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]


def comment_text(text: str) -> str:
    """Text for a C comment: sanitize_name without shortening (idempotent on already sanitized text)."""
    return sanitize_name(str(text), max_chars=max(len(str(text)), 1))


def describe_op(op) -> str:
    """'layer 3: CONV_2D -> 'name'' for the comment above an op's code ('inserted' for importer-made ops)."""
    where = f"layer {op.index}" if op.index >= 0 else "inserted"
    if op.subgraph:  # inlined from a control-flow op's subgraph (edgesdk/importer/control_flow.py)
        where = f"subgraph {op.subgraph} {where}"
    what = f"{op.type} ({op.attrs['part']})" if "part" in op.attrs else op.type
    return sanitize_name(f"{where}: {what}" + (f" -> '{op.outputs[0].name}'" if op.outputs else ""))
