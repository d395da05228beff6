"""The export: a build's model as a self-contained static library for the user's own firmware (issue 14).

    edgesdk build MODEL -o OUT --export        or, on an existing build,        edgesdk export OUT

writes, like microTVM's Model Library Format (but not in its layout):

    OUT/export/<model>/
        include/model.h         the public API (the only header a caller includes)
        src/                    the generated executor and constants (model.c, model_data.c, a target's tables ...)
        src/targets/<name>/     the kernels and drivers of the targets the model uses, only what its code calls
        src/board.h             only if a driver includes it: the addresses of the peripherals the targets drive,
                                each overridable with -D (the library's own header, not the firmware's board.h)
        Makefile, CMakeLists.txt   lib<model>.a with the board's toolchain prefix and flags, written in at export
                                time and overridable (CC=, CFLAGS=, EXTRA_CFLAGS=; CMake: the compiler,
                                EDGESDK_MODEL_CFLAGS, or add_subdirectory from the user's project)
        metadata.json           memory (arena, constants, stack, code size), tensors, state and reset, status codes,
                                targets and their peripherals, toolchain, edgesdk version, the model's sha256
        README.md               how to build and link it
    OUT/export/<model>.tar      the same folder as one reproducible tar (sorted, no times or owners)

The test harness (main.c, the console, the emulator marks, link.ld and the firmware's board.h) stays out. When the
board's cross compiler is installed, the export compiles the library once in a temporary directory to measure
what it costs a firmware (edgesdk/export/measure.py) and to prove it builds and links on its own.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tarfile
import tempfile
from pathlib import Path

import jinja2

from .. import __version__
from ..board import BUILD_BOARD_FILE, Board, load_board
from ..dataclass_cache import dataclass
from ..errors import UsageError
from ..model_name import (DEFAULT_NAME, api_prefix, arena_symbol, model_name_macro, public_header,
                          rename_api_text)

EXPORT_DIR = "export"  # OUT/export/
FORMAT = "edgesdk-model-library"
FORMAT_VERSION = 1
PUBLIC_HEADER = "model.h"
# Generated files of a build that belong to the test harness or the firmware image, not to the library.
HARNESS_FILES = ("board.h", "link.ld")
HARNESS_PREFIX = "edgesdk_harness"
LIBC_FLAGS = ("--specs=picolibc.specs",)  # the C library the board's firmware uses (headers for string.h, math.h)
STD_FLAGS = ("-std=c11",)  # what the firmware build compiles with (C_STANDARD 11, no extensions)
ARENA_ALIGNMENT = 16  # model.c.j2: aligned(16); checked against the object file when the library is measured


def api_of(name: str = DEFAULT_NAME) -> dict:
    """metadata.json's `api`: the public header and symbols of a build named `name` (edgesdk build --name)."""
    prefix = api_prefix(name)
    return {"header": f"include/{public_header(name)}", "run": f"{prefix}run", "reset": f"{prefix}reset",
            "arena_io": f"{prefix}arena_io", "inputs_struct": f"struct {prefix}inputs",
            "outputs_struct": f"struct {prefix}outputs", "arena_symbol": arena_symbol(name), "reentrant": False}


API = api_of(DEFAULT_NAME)
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "float32": "float", "bool": "bool"}
TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"


@dataclass
class ExportResult:
    dir: Path  # OUT/export/<model>/
    tar: Path  # OUT/export/<model>.tar
    metadata: dict

    def summary(self, relative_to: Path) -> dict:
        """report.json's `export` entry: paths relative to the build directory."""
        return {"dir": str(self.dir.relative_to(relative_to)), "tar": str(self.tar.relative_to(relative_to)),
                "library": self.metadata["library"]["file"]}


def export_build(build_dir, measure: bool = True) -> ExportResult:
    """`edgesdk export OUT`: write OUT/export/ from the build in OUT, replacing an earlier export (never half
    written: it is written beside and renamed into place)."""
    from ..output_dir import apply_umask
    from ..runner import load_report

    build_dir = Path(build_dir)
    report = load_report(build_dir)
    target = build_dir / EXPORT_DIR
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise UsageError(f"{target} exists and is not a directory edgesdk wrote; move it away and export again.")
    stage = Path(tempfile.mkdtemp(prefix=f".{EXPORT_DIR}.staging-", dir=build_dir))
    apply_umask(stage, directory=True)
    try:
        result = write_export(build_dir, report, stage, measure=measure)
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{EXPORT_DIR}.old-", dir=build_dir))
            os.replace(target, old / EXPORT_DIR)
        os.replace(stage, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return ExportResult(target / result.dir.name, target / result.tar.name, result.metadata)


def write_export(build_dir: Path, report: dict, dest: Path, board: Board | None = None,
                 measure: bool = True) -> ExportResult:
    """Write dest/<model>/ and dest/<model>.tar from the build in `build_dir` (its src/, board.json and
    `report`, the build's report.json contents)."""
    build_dir, dest = Path(build_dir), Path(dest)
    src = build_dir / "src"
    name = report.get("name", DEFAULT_NAME)  # edgesdk build --name: the prefix of the model's symbols and files
    header_file = public_header(name)
    if not (src / header_file).is_file():
        raise UsageError(f"{src / header_file} is missing: {build_dir} is not a complete edgesdk build. "
                         f"Rebuild it with 'edgesdk build MODEL -o {build_dir}'.")
    if board is None:
        copy = build_dir / BUILD_BOARD_FILE
        board = load_board(str(copy) if copy.is_file() else report["board"])
    header = (src / header_file).read_text()
    model_name = _header_value(header, rf'#define {model_name_macro(name)} "([^"]*)"', "model")
    made_by = _header_value(header, r"Generated by edgesdk (\S+)", __version__)
    lib = library_name(model_name if name == DEFAULT_NAME else name)  # named: libNAME.a, distinct per model
    used = list(dict.fromkeys(region["target"] for region in report["regions"]))

    files = _library_files(src, used, header_file)
    peripherals = _peripherals(board, used)
    if any(b'#include "board.h"' in data for path, data in files.items() if path.startswith("src/")):
        files["src/board.h"] = _render("export_board.h.j2", lib=lib, board_name=board.name, version=__version__,
                                       peripherals=peripherals,
                                       macros=[m for p in peripherals for m in p["macros"]]).encode()
    sources = sorted(p for p in files if p.endswith(".c"))
    target_dirs = sorted({str(Path(p).parent) for p in files if p.startswith("src/targets/")})
    include_dirs = ["include", "src", *target_dirs]
    toolchain = _toolchain(board)
    context = {"lib": lib, "model_name": model_name, "version": __version__, "board_name": board.name,
               "targets": used, "prefix": toolchain["prefix"], "arch_flags": toolchain["arch_flags"],
               "libc_flags": toolchain["libc_flags"], "std_flags": toolchain["std_flags"], "board_cflags": toolchain["cflags"],
               "sources": sources, "include_dirs": include_dirs, "system_processor": _system_processor(board),
               "board_macros": [m for p in peripherals for m in p["macros"]]}
    files["Makefile"] = rename_api_text(_render("export_makefile.j2", **context), name).encode()
    files["CMakeLists.txt"] = rename_api_text(_render("export_cmakelists.txt.j2", **context), name).encode()

    folder = dest / lib
    _write_tree(folder, files)
    api = api_of(name)
    library = _measured(folder, sources, include_dirs, toolchain, api) if measure else {
        "measured": False, "reason": "not measured (edgesdk export --no-measure)"}
    metadata = _metadata(report, board, model_name, made_by, lib, used, peripherals, sources, include_dirs,
                         toolchain, library, files, api)
    files["metadata.json"] = (json.dumps(metadata, indent=2) + "\n").encode()
    files["README.md"] = rename_api_text(_render(
        "export_readme.md.j2", **context, source=Path(report["model"]).name, sha256=report["model_sha256"],
        rounding=report["rounding"], board_h="src/board.h" in files, packages=board.toolchain.get("debian_packages", []),
        link_arch_flags=toolchain["link_arch_flags"], board_ldflags=toolchain["ldflags"],
        externals=library.get("externals", []), arena_bytes=metadata["memory"]["arena"]["bytes"],
        guard_bytes=metadata["memory"]["arena"]["guard_bytes"], arena_align=metadata["memory"]["arena"]["alignment"],
        constants_bytes=metadata["memory"]["constants"]["bytes"], stack_bytes=metadata["memory"]["stack"]["bytes"],
        constants_what=_constants_what(used), peripherals=peripherals,
        streamed_inputs=[t for t in report["io"]["inputs"] if t.get("streamed")]), name).encode()
    _write_tree(folder, {name: files[name] for name in ("metadata.json", "README.md")})
    tar = dest / f"{lib}.tar"
    tar.write_bytes(_tar_bytes(lib, files))
    return ExportResult(folder, tar, metadata)


def _constants_what(used: list) -> str:
    """What the constants hold, in words: the weights and each used target's own flash data (Target.flash_data)."""
    from ..targets import get_target

    parts = ["weights", *(get_target(name).flash_data for name in used if get_target(name).flash_data)]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def library_name(model_name: str) -> str:
    """lib<name>.a, the CMake target and the export folder: the model's name as a C identifier."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", model_name).strip("_") or "model"
    return name if not name[0].isdigit() else f"m_{name}"


def _header_value(header: str, pattern: str, default: str) -> str:
    found = re.search(pattern, header)
    return found.group(1) if found else default


def _library_files(src: Path, used: list, header: str = PUBLIC_HEADER) -> dict:
    """{path in the export: bytes}: the public header (model.h) in include/, the generated sources in src/, the
    used targets' sources."""
    files = {f"include/{header}": (src / header).read_bytes()}
    for path in sorted(src.iterdir()):
        if (path.is_file() and path.suffix in (".c", ".h") and path.name != header
                and path.name not in HARNESS_FILES and not path.name.startswith(HARNESS_PREFIX)):
            files[f"src/{path.name}"] = path.read_bytes()
    for name in used:  # a target listed in --target but given no layer brings nothing
        directory = src / "targets" / name
        if directory.is_dir():
            for path in sorted(directory.iterdir()):
                if path.is_file():
                    files[f"src/targets/{name}/{path.name}"] = path.read_bytes()
    return files


def _peripherals(board: Board, used: list) -> list:
    """The board peripherals the used targets drive, with the board.h macros their drivers read."""
    from ..firmware_build.board_files import _peripherals as board_h_peripherals
    from ..targets import get_target

    described = {p["name"]: p for p in board_h_peripherals(board)}
    result = []
    for name in used:
        target = get_target(name)
        periph = target.peripheral_of(board) if target.peripheral_types else None
        if periph is None:
            continue
        p = described[periph.name]
        macros = [{"name": f"BOARD_{p['macro']}_BASE", "value": f"0x{periph.base:08x}u"},
                  {"name": f"BOARD_{p['macro']}_SIZE", "value": f"{periph.size}u"}]
        macros += [{"name": f"BOARD_{p['macro']}_{key}", "value": f"{value}u"} for key, value in p["int_props"]]
        result.append({"target": name, "name": periph.name, "type": periph.type, "base": f"0x{periph.base:08x}",
                       "size": periph.size, "base_macro": macros[0]["name"], "macros": macros,
                       "properties": dict(sorted(periph.props.items()))})
    return result


def _toolchain(board: Board) -> dict:
    cpu, tools = board.cpu, board.toolchain
    link_march = cpu.get("link_march") or cpu["march"]
    return {"prefix": tools["prefix"], "cc": f"{tools['prefix']}gcc", "ar": f"{tools['prefix']}ar",
            "arch_flags": [f"-march={cpu['march']}", f"-mabi={cpu['mabi']}"],
            "link_arch_flags": [f"-march={link_march}", f"-mabi={cpu['mabi']}"],
            "libc_flags": list(LIBC_FLAGS), "std_flags": list(STD_FLAGS), "cflags": list(tools.get("cflags", [])),
            "ldflags": list(tools.get("ldflags", [])), "debian_packages": list(tools.get("debian_packages", []))}


def _system_processor(board: Board) -> str:
    march = board.cpu.get("march", "")
    return "riscv32" if march.startswith("rv32") else "riscv64" if march.startswith("rv64") else "unknown"


def _measured(folder: Path, sources: list, include_dirs: list, toolchain: dict, api: dict = API) -> dict:
    """measure.measure_library with the Makefile's default flags, or why it was not measured."""
    from .measure import measure_library

    if shutil.which(toolchain["cc"]) is None:
        return {"measured": False, "reason": f"{toolchain['cc']} is not installed where the export ran"}
    cflags = [toolchain["cc"], *toolchain["arch_flags"], *toolchain["libc_flags"], *toolchain["std_flags"],
              *toolchain["cflags"]]
    link = [*toolchain["link_arch_flags"], *toolchain["libc_flags"]]
    functions = (api["run"], api["reset"], api["arena_io"])
    return {"measured": True, **measure_library(folder, sources, include_dirs, cflags, link, functions)}


def _metadata(report: dict, board: Board, model_name: str, made_by: str, lib: str, used: list, peripherals: list,
              sources: list, include_dirs: list, toolchain: dict, library: dict, files: dict,
              api: dict = API) -> dict:
    from ..aot.render import ARENA_GUARD_BYTES_PER_SIDE
    from ..targets import get_target

    memory = report["memory"]
    stack = library.get("stack") or {"bytes": None, "reason": library.get("reason")}
    status_codes = [{"name": "EDGESDK_OK", "value": 0, "target": None, "meaning": "success: the outputs are valid"}]
    for name in used:
        status_codes += [{"name": f"EDGESDK_ERR_{code}", "value": value, "target": name, "meaning": meaning}
                         for code, value, meaning in get_target(name).error_codes]
    status_codes.append({"name": "EDGESDK_ERR_ARENA_CORRUPT", "value": -5, "target": None,
                         "meaning": "a guard word around the arena changed after a layer: something wrote outside "
                                    "the arena (a bug, or memory corrupted by other code)"})
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "edgesdk_version": made_by,  # the edgesdk that generated the sources
        "exported_by": __version__,
        "model": {"name": model_name, "file": Path(report["model"]).name, "sha256": report["model_sha256"],
                  "rounding": report["rounding"]},
        "library": {"name": lib, "file": f"lib{lib}.a", "public_headers": [api["header"]], "sources": sources,
                    "include_dirs": include_dirs, "build_files": ["Makefile", "CMakeLists.txt"],
                    "sha256": {path: _sha256(data) for path, data in sorted(files.items())}},
        "api": {**api, "status_codes": status_codes},
        "memory": {
            "arena": {"symbol": api["arena_symbol"], "section": ".noinit", "memory": "ram",
                      "bytes": memory["arena_bytes"], "guard_bytes": 2 * ARENA_GUARD_BYTES_PER_SIDE,
                      "alignment": library.get("arena_alignment") or ARENA_ALIGNMENT, "zeroed_at_boot": False},
            "constants": {"section": ".rodata", "memory": "flash", "bytes": memory.get("constants_bytes",
                                                                                        memory["weights_bytes"]),
                          "weights_bytes": memory["weights_bytes"], "blobs": memory.get("blobs", {})},
            "stack": stack,
            "library": library.get("sizes") or {"measured": False, "reason": library.get("reason")},
        },
        "inputs": [_tensor(t) for t in report["io"]["inputs"]],
        "outputs": [_tensor(t) for t in report["io"]["outputs"]],
        "state": {"bytes": memory.get("state_bytes", 0), "reset_function": api["reset"],
                  "buffers": [{"name": b["name"], "arena_offset": b["offset"], "bytes": b["size"]}
                              for b in memory.get("buffers", []) if b.get("kind") == "state"]},
        "targets": [{"name": name, "description": get_target(name).description,
                     "sources": sorted(p for p in files if p.startswith(f"src/targets/{name}/")),
                     "peripherals": [{k: v for k, v in p.items() if k != "target"} for p in peripherals
                                     if p["target"] == name]} for name in used],
        "board": {"name": board.name, "cpu": dict(board.cpu),
                  "memory": {m.name: {"base": f"0x{m.base:08x}", "size": m.size, "kind": m.kind}
                             for m in board.memories.values()}},
        "toolchain": {**toolchain, "externals": library.get("externals")},
    }


def _tensor(t: dict) -> dict:
    quant = t.get("quant")
    return {"name": t["name"], "c_name": t["c_name"], "dtype": t["dtype"], "c_type": C_TYPES.get(t["dtype"]),
            "shape": t["shape"], "bytes": t["bytes"], "arena_offset": t["arena_offset"],
            "quantization": {"scale": quant["scale"], "zero_point": quant["zero_point"]} if quant else None,
            **({"streamed": True, "row_bytes": t["row_bytes"]} if t.get("streamed") else {})}


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _render(name: str, **context) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    return env.get_template(name).render(**context)


def _write_tree(root: Path, files: dict) -> None:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _tar_bytes(top: str, files: dict) -> bytes:
    """A tar of `files` under `top/`, the same bytes for the same files: sorted, no times, owners or modes of the
    machine that wrote it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        directories = sorted({str(parent) for path in files for parent in Path(top, path).parents if str(parent) != "."})
        for directory in directories:
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path in sorted(files):
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size, info.mode = len(files[path]), 0o644
            tar.addfile(info, io.BytesIO(files[path]))
    return buffer.getvalue()
