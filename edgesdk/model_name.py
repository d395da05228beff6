"""A build's model name (`edgesdk build --name NAME`): the prefix of every symbol, macro and file the model
brings, so that several models link into one firmware (like microTVM's --module-name).

The compiler generates one program per model whatever its name; only the rendered text differs. A build named
`default` (no --name) is exactly today's output: `edgesdk_default_run()`, `edgesdk_arena`, `model.h`. A build
named NAME renames, in every generated source of the model:

* the API: `edgesdk_default_*` -> `edgesdk_NAME_*`, `EDGESDK_DEFAULT_*` -> `EDGESDK_NAME_*` (functions, the
  inputs/outputs structs, the input-row reader of a streamed input, the macros);
* the arena: `edgesdk_arena` -> `edgesdk_NAME_arena` (and its guarded block);
* every other symbol the model's C files define with external linkage (weights, constant blobs, a target's
  command tables or serialized graphs): SYMBOL -> `edgesdk_NAME__SYMBOL` (private_symbol);
* its header guards, and its file names: `model.h` -> `NAME_model.h`, ... (and the #includes naming them).

What stays shared is the library code the targets bring (kernels, drivers): the same files for every model, so
a firmware compiles them once (docs/several-models.md).
"""

from __future__ import annotations

import re

from .errors import UsageError

DEFAULT_NAME = "default"
MAX_NAME_CHARS = 32
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*\Z")
# edgesdk's own firmware symbol families (harness, console, board support), which a model prefix must not enter
FIRMWARE_WORDS = ("arena", "board", "console", "exit", "halt", "harness", "reset", "stack", "trap")
HARNESS_FILE_PREFIX = "edgesdk_harness"  # harness files the build writes beside the model's (not the model's own)


def check_model_name(name: str) -> str:
    """`name` if it can prefix the model's C symbols, else a UsageError saying what a name may be."""
    if name == DEFAULT_NAME:
        return name
    rule = ("a model name is lower-case letters, digits and single '_' between them, starting with a letter, "
            f"at most {MAX_NAME_CHARS} characters (it becomes part of C symbols: edgesdk_NAME_run)")
    if not isinstance(name, str) or not NAME_PATTERN.match(name) or len(name) > MAX_NAME_CHARS:
        raise UsageError(f"--name {name!r} cannot be used: {rule}; e.g. --name kws.")
    clash = reserved_names().get(name)
    if clash:
        raise UsageError(f"--name {name!r} cannot be used: edgesdk_{name}_* would mix the model's symbols with "
                         f"{clash}. Choose another name, e.g. --name {name}_model.")
    return name


def reserved_names() -> dict:
    """{name: what uses the symbol prefix edgesdk_<name>_}: the installed targets and their firmware sources
    (kernel library, drivers: edgesdk_<file stem>_... and every shorter stem), and the harness's families."""
    from .targets import all_targets

    reserved = {word: "edgesdk's own firmware symbols" for word in FIRMWARE_WORDS}
    for target in all_targets():
        reserved[target.name] = f"the driver of target '{target.name}'"
        for source in target.firmware_sources(None):
            stem = str(getattr(source, "stem", source)).split("/")[-1].split(".")[0]
            words = stem.removeprefix("edgesdk_").split("_")
            for n in range(1, len(words) + 1):
                reserved.setdefault("_".join(words[:n]), f"the library of target '{target.name}' ({stem})")
    return reserved


def api_prefix(name: str) -> str:
    return f"edgesdk_{name}_"


def arena_symbol(name: str) -> str:
    """The C symbol of the model's activation arena."""
    return "edgesdk_arena" if name == DEFAULT_NAME else f"edgesdk_{name}_arena"


def file_name(name: str, file: str) -> str:
    """The name of generated file `file` (model.h, model_data.c, a target's tables) in a build named `name`."""
    return file if name == DEFAULT_NAME or file.startswith(HARNESS_FILE_PREFIX) else f"{name}_{file}"


def public_header(name: str) -> str:
    return file_name(name, "model.h")


def stream_symbol(name: str) -> str:
    """The test harness's buffer holding a streamed input whole (edgesdk/firmware/main.c, harness_main.c.j2)."""
    return "edgesdk_harness_stream" if name == DEFAULT_NAME else f"edgesdk_harness_{name}_stream"


def model_name_macro(name: str) -> str:
    """The macro of the public header naming the model (the model file's name, not the build's --name)."""
    return "EDGESDK_MODEL_NAME" if name == DEFAULT_NAME else f"EDGESDK_{name.upper()}_MODEL_NAME"


def rename_api_text(text: str, name: str) -> str:
    """Text that names a default build's API (an export's README, Makefile), for a build named `name`."""
    if name == DEFAULT_NAME:
        return text
    text = re.sub(r"\bedgesdk_default_", api_prefix(name), text)
    text = re.sub(r"\bEDGESDK_DEFAULT_", f"EDGESDK_{name.upper()}_", text)
    text = re.sub(r"\bedgesdk_arena\b", arena_symbol(name), text)
    return re.sub(r"(?<![\w.])model\.h\b", public_header(name), text)


# A file-scope definition with external linkage, as the templates and targets write them: at column 0, a type
# (after qualifiers or a macro such as TVM's TVM_DLL), then the symbol, then '[', '(' or '=' (static ones,
# declarations, macros and asm statements do not match).
_DEFINITION = re.compile(r"^(?:[A-Za-z_]\w*[\s*]+)+([A-Za-z_]\w*)\s*[\[(=]")
_NOT_DEFINITION = re.compile(r"\b(?:static|extern|typedef|struct|union|enum)\b|^(?:#|_Static_assert|__asm__)")
_HEADER_GUARD = re.compile(r"^#ifndef (\w+)\n#define \1\b", re.MULTILINE)


def defined_symbols(c_text: str) -> list:
    """The symbols a generated C file defines with external linkage."""
    found = []
    for line in c_text.splitlines():
        if not line[:1].isalpha() and not line.startswith("_"):
            continue  # indented code, comments, braces, preprocessor lines
        if _NOT_DEFINITION.search(line.split("(")[0].split("[")[0].split("=")[0]) or line.startswith("#"):
            continue
        match = _DEFINITION.match(line)
        if match:
            found.append(match.group(1))
    return found


def private_symbol(name: str, symbol: str, taken: set = frozenset()) -> str:
    """The name of a model's own external symbol (not its API) in a build named `name`: edgesdk_NAME__SYMBOL.
    The double underscore, which no name contains, keeps models apart whatever their names: edgesdk_kws__x
    can only be model kws's, where edgesdk_kws_cpu_x could be kws's symbol cpu_x or kws_cpu's x. An
    `edgesdk_` prefix is not repeated, unless that makes two of the model's symbols one."""
    short = f"{api_prefix(name)}_{symbol.removeprefix('edgesdk_')}"
    return short if short not in taken else f"{api_prefix(name)}_{symbol}"


_STRUCT_BODY = re.compile(r"(struct\s+\w+\s*\{[^}]*\})")


def _outside_struct_bodies(text: str, change) -> str:
    """`text` with `change` applied to everything but struct type bodies (whose members are not symbols)."""
    parts = _STRUCT_BODY.split(text)
    return "".join(part if k % 2 else change(part) for k, part in enumerate(parts))


def rename_sources(files: dict, name: str) -> dict:
    """{file name: text} of a model's generated sources, as a build named `name` writes them."""
    if name == DEFAULT_NAME:
        return dict(files)
    check_model_name(name)
    upper = name.upper()
    symbols = {"edgesdk_arena": arena_symbol(name), "edgesdk_arena_block": f"{arena_symbol(name)}_block"}
    for file, text in files.items():
        if file.endswith(".c") and not file.startswith(HARNESS_FILE_PREFIX):
            for symbol in defined_symbols(text):
                if symbol not in symbols and not symbol.startswith("edgesdk_default_"):
                    symbols[symbol] = private_symbol(name, symbol, taken=set(symbols.values()))
    guards = {}
    for file, text in files.items():
        if file.endswith(".h") and not file.startswith(HARNESS_FILE_PREFIX):
            for guard in _HEADER_GUARD.findall(text):
                guards[guard] = f"EDGESDK_{upper}_{guard.removeprefix('EDGESDK_')}"
    renamed_files = {file: file_name(name, file) for file in files}
    word = re.compile(r"(?<![\w.>])(" + "|".join(sorted(map(re.escape, symbols), key=len, reverse=True)) + r")\b")
    include = re.compile(r'#include "(' + "|".join(map(re.escape, files)) + r')"')
    result = {}
    for file, text in files.items():
        if not file.startswith(HARNESS_FILE_PREFIX):
            text = re.sub(r"\bedgesdk_default_", api_prefix(name), text)
            text = re.sub(r"\bEDGESDK_DEFAULT_", f"EDGESDK_{upper}_", text)
            text = re.sub(r"\bEDGESDK_MODEL_NAME\b", f"EDGESDK_{upper}_MODEL_NAME", text)
            text = _outside_struct_bodies(text, lambda part: word.sub(lambda m: symbols[m.group(1)], part))
            for guard, new in guards.items():
                text = re.sub(rf"\b{guard}\b", new, text)
        text = include.sub(lambda m: f'#include "{renamed_files[m.group(1)]}"', text)
        result[renamed_files[file]] = text
    return result
