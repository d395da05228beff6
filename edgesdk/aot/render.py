"""Step 6: render the executor model into C sources through the Jinja templates in edgesdk/templates/."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import jinja2
import numpy as np

from .. import __version__
from ..ctext import c_value_lines, comment_text
from ..importer.names import sanitize_name
from ..model_name import DEFAULT_NAME, public_header, rename_sources, stream_symbol
from ..resources import template_bytecode_cache
from .executor import C_TYPES, ExecutorModel

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"
# Guard bytes on each side of the activation arena (model.c.j2; EDGESDK_ARENA_GUARD_BYTES is twice this).
ARENA_GUARD_BYTES_PER_SIDE = 16
# The test harness's main of a firmware of named models (edgesdk/firmware/main.c is the default model's).
HARNESS_MAIN = "edgesdk_harness_main.c"


def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
                              bytecode_cache=template_bytecode_cache())


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
        state=[dataclasses.replace(s, name=comment_text(s.name)) for s in model.state],
        blobs={name: dataclasses.replace(b, labels=[(offset, size, comment_text(label)) for offset, size, label in b.labels])
               for name, b in model.blobs.items()})


def _targets_of(model: ExecutorModel) -> list:
    """The targets whose code the model contains, in order of first appearance."""
    from ..targets import get_target

    names = list(dict.fromkeys(step.target for step in model.steps))
    return [get_target(name) for name in names]


def api_targets(model: ExecutorModel) -> list:
    """What model.h says about the targets whose code the model contains: name, peripheral types, and the error
    codes their code makes edgesdk_default_run() return (Target.error_codes), checked and made comment-safe."""
    result = []
    for target in _targets_of(model):
        codes = []
        for name, value, meaning in target.error_codes:
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", str(name)) or not isinstance(value, int) or value >= 0:
                raise ValueError(f"target '{target.name}' declares error code {name!r} = {value!r}: the name must be "
                                 "upper-case letters, digits and '_', the value a negative int")
            codes.append((name, value, comment_text(meaning)))
        result.append({"name": target.name, "peripheral_types": list(target.peripheral_types), "error_codes": codes})
    return result


def render_sources(model: ExecutorModel, out_dir: Path, *, source: str, board: str, rounding: str,
                   name: str = DEFAULT_NAME) -> list:
    """Write model.h/.c, model_data.h/.c and the files each target renders (Target.render_sources); return the
    paths. A build named `name` (edgesdk build --name) prefixes their symbols and files (edgesdk/model_name.py)
    and brings its test harness's main (harness_main.c.j2)."""
    env = environment()
    model = _with_safe_text(model)
    common = {"m": model, "version": __version__, "source": sanitize_name(source), "board": comment_text(board),
              "rounding": rounding, "ctypes": C_TYPES, "guard_bytes_per_side": ARENA_GUARD_BYTES_PER_SIDE}
    files = {
        "model.h": env.get_template("model.h.j2").render(**common, targets=api_targets(model), name=name),
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
    files["edgesdk_harness_targets.h"] = render_harness_targets([t.name for t in _targets_of(model)], model.model_name)
    for target in _targets_of(model):
        for file, text in target.render_sources(model, env, common).items():
            if file in files:
                raise ValueError(f"target '{target.name}' renders {file}, which another step already wrote")
            files[file] = text
    if name != DEFAULT_NAME:
        files = rename_sources(files, name)
        files[HARNESS_MAIN] = render_harness_main([name], board)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for file, text in files.items():
        path = out_dir / file
        path.write_text(text)
        paths.append(path)
    return paths


def render_harness_main(names: list, board: str) -> str:
    """The test harness's main for a firmware of the models named `names` (each built with --name): it runs
    them one after the other, each between the emulator's marks 1 and 2."""
    models = [{"name": n, "upper": n.upper(), "header": public_header(n), "stream": stream_symbol(n)} for n in names]
    return environment().get_template("harness_main.c.j2").render(models=models, version=__version__,
                                                                   board=comment_text(board))


def render_harness_targets(target_names: list, title: str) -> str:
    """edgesdk_harness_targets.h for a firmware whose models (`title`) use the targets `target_names`: a build's
    own, or an image's union."""
    from ..targets import get_target

    targets = [t for t in map(get_target, target_names) if t.harness_failure()]
    return environment().get_template("edgesdk_harness_targets.h.j2").render(
        m={"model_name": comment_text(title)}, version=__version__, harness_targets=targets)
