"""Step 6: render the executor model into C sources through the Jinja templates in edgesdk/templates/."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jinja2
import numpy as np

from .. import __version__
from ..importer.names import sanitize_name
from .executor import C_TYPES, ExecutorModel

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"
# Guard bytes on each side of the activation arena (model.c.j2; EDGESDK_ARENA_GUARD_BYTES is twice this).
ARENA_GUARD_BYTES_PER_SIDE = 16
VALUES_PER_LINE = {"int8_t": 16, "uint8_t": 16, "int16_t": 12, "int32_t": 8, "uint32_t": 8, "int64_t": 4, "float": 6,
                   "double": 4}


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def c_value_lines(values: np.ndarray, ctype: str) -> list:
    """Comma-terminated lines of C literals; float32 printed with 9 significant digits (exact round trip)."""
    flat = np.asarray(values).reshape(-1)
    if ctype == "float":
        items = [_float_literal(v) for v in flat.astype(np.float32)]
    elif ctype == "double":
        items = [float(v).hex() for v in flat.astype(np.float64)]  # exact
    elif ctype == "int32_t":
        # INT32_MIN cannot be written as a plain negative literal in C.
        items = ["(-2147483647 - 1)" if int(v) == -2147483648 else str(int(v)) for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    per_line = VALUES_PER_LINE.get(ctype, 8)
    return [", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]


def _float_literal(v: np.float32) -> str:
    if not np.isfinite(v) or (v == 0 and np.signbit(v)):  # infinities, NaNs and -0.0 exactly (calls.float_literal)
        from ..targets.c.calls import float_literal

        return float_literal(v)
    text = np.format_float_scientific(v, unique=True, precision=9) if v != 0 else "0.0"
    return f"{text}f"


def comment_text(text: str) -> str:
    """Text for a C comment: sanitize_name without shortening (idempotent on already sanitized text)."""
    return sanitize_name(str(text), max_chars=max(len(str(text)), 1))


def _with_safe_text(model: ExecutorModel) -> ExecutorModel:
    """A shallow copy whose model-derived text (names, labels, layer comments) is sanitized once more here,
    where it enters C comments, whatever importer or codegen produced it. Identifiers are C identifiers
    already (edgesdk.importer.names.c_identifier) and are checked by edgesdk/verify.py's parse."""
    return dataclasses.replace(
        model,
        steps=[dataclasses.replace(s, comment=comment_text(s.comment)) for s in model.steps],
        consts=[dataclasses.replace(c, comment=comment_text(c.comment)) for c in model.consts],
        inputs=[dataclasses.replace(t, model_name=comment_text(t.model_name)) for t in model.inputs],
        outputs=[dataclasses.replace(t, model_name=comment_text(t.model_name)) for t in model.outputs],
        blobs={name: dataclasses.replace(b, labels=[(offset, size, comment_text(label)) for offset, size, label in b.labels])
               for name, b in model.blobs.items()})


def _targets_of(model: ExecutorModel) -> list:
    """The targets whose code the model contains, in order of first appearance."""
    from ..targets import get_target

    names = list(dict.fromkeys(step.target for step in model.steps))
    return [get_target(name) for name in names]


def render_sources(model: ExecutorModel, out_dir: Path, *, source: str, board: str, rounding: str) -> list:
    """Write model.h/.c, model_data.h/.c and the files each target renders (Target.render_sources); return the
    paths."""
    env = environment()
    model = _with_safe_text(model)
    common = {"m": model, "version": __version__, "source": sanitize_name(source), "board": comment_text(board),
              "rounding": rounding, "ctypes": C_TYPES, "guard_bytes_per_side": ARENA_GUARD_BYTES_PER_SIDE}
    files = {
        "model.h": env.get_template("model.h.j2").render(**common),
        "model.c": env.get_template("model.c.j2").render(**common, steps=model.steps),
        "model_data.h": env.get_template("model_data.h.j2").render(**common),
        "model_data.c": env.get_template("model_data.c.j2").render(
            **common,
            consts=[{"symbol": c.symbol, "ctype": c.ctype, "count": len(c.values), "comment": c.comment,
                     "lines": c_value_lines(c.values, c.ctype)} for c in model.consts],
            blobs=[{"name": b.name, "symbol": b.symbol, "size": len(b.data), "align": b.align, "labels": b.labels,
                    "lines": c_value_lines(np.frombuffer(bytes(b.data) or b"\0", np.uint8), "uint8_t")}
                   for b in model.blobs.values()]),
    }
    files["edgesdk_harness_targets.h"] = env.get_template("edgesdk_harness_targets.h.j2").render(
        **common, harness_targets=[t for t in _targets_of(model) if t.harness_failure()])
    for target in _targets_of(model):
        for name, text in target.render_sources(model, env, common).items():
            if name in files:
                raise ValueError(f"target '{target.name}' renders {name}, which another step already wrote")
            files[name] = text
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in files.items():
        path = out_dir / name
        path.write_text(text)
        paths.append(path)
    return paths
