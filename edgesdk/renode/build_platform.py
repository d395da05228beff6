"""The Renode platform of one build: the board's platform with only the peripherals the build uses.

A board's .repl describes all of its hardware and its .resc includes the C# file of each edgesdk peripheral.
Renode creates every peripheral of the .repl it loads, and a C# peripheral that P/Invokes a native model
fails to load without its library (a DSP that no code uses still needs libedgesdk_dsp.so). A build uses only
some targets (report.json "regions"), so `write_build_platform()` writes, into one directory (OUT/hil/renode
for `edgesdk hil`):

    <board>.repl   the board's .repl without the peripherals of installed targets the build does not use
    <board>.resc   the board's .resc that includes only the C# files of the peripherals left and loads that
                   .repl (from $ORIGIN, so the directory can move); the board's own paths made absolute
    board.json     the board's board.json without those peripherals: the built-in emulator builds its machine
                   from this pair, the same files Renode loads
    lib/           the native library of every C# peripheral left (PeripheralModel.renode_library), checked
                   against the DllImports of the C# files the .resc includes

Which Renode type belongs to which target comes from the targets (PeripheralModel.renode_type), so core code
names none. Entries no target provides (memories, UART, exit device, CPU, interrupt controllers) stay.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..board import Board
from ..dataclass_cache import dataclass, field
from ..errors import ToolchainError, UsageError
from ..run_io import used_targets  # noqa: F401 (the targets a build uses; tests and callers read it here)
from .platform import repl_path, resc_path
from .repl import Connection, Reference, Repl, format_repl, read_repl

LIBRARY_DIRNAME = "lib"
BOARD_FILE = "board.json"
_CS_INCLUDE = re.compile(r"^(?:include|i)\s+(\S+\.cs)\s*$")
_LOAD_PLATFORM = re.compile(r"^(machine\s+LoadPlatformDescription\s+)(\S+)(.*)$")


@dataclass
class BuildPlatform:
    directory: Path
    resc: Path
    repl: Path
    board_file: Path
    library_dir: Path
    peripherals: dict  # name -> Renode type of the target peripherals kept
    left_out: dict  # name -> (Renode type, target) of the target peripherals dropped
    sources: list = field(default_factory=list)  # the C# files the .resc includes
    libraries: list = field(default_factory=list)  # the native libraries built into library_dir


def target_peripherals() -> dict:
    """{Renode type: (target name, PeripheralModel)} of every installed target's peripheral models."""
    from ..targets import all_targets

    return {model.renode_type: (target.name, model) for target in all_targets() for model in target.peripherals()}


def build_repl(board_repl: Repl, used: set) -> tuple:
    """(the .repl without the peripherals of unused targets, {name: (type, target)} of those left out)."""
    owners = target_peripherals()
    left_out = {name: (entry.type, owners[entry.type][0]) for name, entry in board_repl.entries.items()
                if entry.type in owners and owners[entry.type][0] not in used}
    kept = {name: entry for name, entry in board_repl.entries.items() if name not in left_out}
    for name, entry in kept.items():
        for other in _references(entry):
            if other in left_out:
                raise UsageError(f"{board_repl.path}:{entry.line}: '{name}' refers to '{other}', a peripheral of "
                                 f"target {left_out[other][1]}, which this build does not use; the build's Renode "
                                 "platform leaves that peripheral out, so nothing else may depend on it.")
    return Repl(kept, board_repl.path, ""), left_out


def _references(entry) -> set:
    names = {value.name for value in entry.attributes.values() if isinstance(value, Reference)}
    names |= {c.target for c in entry.connections if isinstance(c, Connection)}
    if entry.bus is not None:
        names.add(entry.bus)
    return names


def write_build_platform(board: Board, report: dict, directory) -> BuildPlatform:
    """Write the build's platform (module doc) into `directory` and build its native libraries there."""
    board_repl_path, board_resc_path = repl_path(board), resc_path(board)
    for path, what in ((board_resc_path, "Renode script"), (board_repl_path, "Renode platform description")):
        if not path.is_file():
            raise UsageError(f"Board {board.name} has no {what} {path.name} beside {board.path}; the HIL suites "
                             "load the board's Renode platform. Keep the board's folder (board.json with its .repl and "
                             ".resc) as it was when you built (edgesdk/boards/riscv-npu shows the files).")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    repl, left_out = build_repl(read_repl(board_repl_path), used_targets(report))
    kept_types = {entry.type for entry in repl.entries.values() if entry.type}
    owners = target_peripherals()
    peripherals = {name: entry.type for name, entry in repl.entries.items() if entry.type in owners}

    repl.header = _repl_header(board, board_repl_path, peripherals, left_out)
    repl_file = directory / board_repl_path.name
    repl_file.write_text(format_repl(repl))
    board_file = directory / BOARD_FILE
    board_file.write_text(_board_json(board, left_out))

    sources = csharp_sources(board_resc_path, kept_types, owners)
    resc_file = directory / board_resc_path.name
    resc_file.write_text(_resc_text(board, board_resc_path, repl_file.name, sources, peripherals, left_out))

    library_dir = directory / LIBRARY_DIRNAME
    library_dir.mkdir(exist_ok=True)  # always there: renode-test gets it on LD_LIBRARY_PATH
    from . import native_libraries

    libraries = native_libraries(library_dir, sorted(set(peripherals.values())))
    check_libraries(sources, library_dir)
    return BuildPlatform(directory, resc_file, repl_file, board_file, library_dir, peripherals, left_out, sources,
                         libraries)


def _describe(peripherals: dict) -> str:
    return ", ".join(f"{name} ({kind})" for name, kind in peripherals.items()) or "none"


def _repl_header(board: Board, source: Path, peripherals: dict, left_out: dict) -> str:
    return "\n".join("// " + line for line in _generated_note(source, peripherals, left_out))


def _generated_note(source: Path, peripherals: dict, left_out: dict) -> list:
    lines = ["Generated by edgesdk (edgesdk/renode/build_platform.py) for one build from", f"  {source}",
             "with only the peripherals the build uses. Do not edit: edgesdk hil writes it again.",
             f"Target peripherals: {_describe(peripherals)}."]
    if left_out:
        lines.append("Left out (their target runs none of this build's code): "
                     + ", ".join(f"{name} (target {target})" for name, (_, target) in left_out.items()) + ".")
    return lines


def _board_json(board: Board, left_out: dict) -> str:
    data = json.loads(board.path.read_text())
    data["peripherals"] = {name: p for name, p in data.get("peripherals", {}).items() if name not in left_out}
    return json.dumps(data, indent=2) + "\n"


def _resolve(argument: str, origin: Path) -> Path:
    """A path argument of a board's .resc ($ORIGIN/x or @x) as an absolute path."""
    text = argument.removeprefix("@").replace("\\ ", " ")
    if text.startswith("$ORIGIN"):
        text = str(origin) + text[len("$ORIGIN"):]
    return Path(text).resolve()


def renode_path(path: Path) -> str:
    """`path` as a Renode monitor path argument: @ and the path with spaces escaped (Renode's tokenizer)."""
    text = str(path)
    if ";" in text or "\n" in text or "`" in text:
        raise UsageError(f"Renode's monitor cannot name the path {text!r} (it contains ';', '`' or a line break); "
                         "move the build or edgesdk to a path without them.")
    return "@" + text.replace(" ", "\\ ")


def csharp_sources(board_resc: Path, kept_types: set, owners: dict) -> list:
    """The C# files to include: those the board's .resc includes that define a type the build's .repl uses,
    then each kept target peripheral's own (PeripheralModel.renode_sources) not among them."""
    from . import csharp_types

    sources = []
    for line in board_resc.read_text().splitlines():
        found = _CS_INCLUDE.match(line.strip())
        if found:
            path = _resolve(found.group(1), board_resc.parent)
            if path.is_file() and csharp_types(path) & kept_types and path not in sources:
                sources.append(path)
    for kind in sorted(kept_types & set(owners)):
        for source in owners[kind][1].renode_sources:
            source = Path(source).resolve()
            if source.suffix == ".cs" and source not in sources:
                sources.append(source)
    return sources


def _resc_text(board: Board, board_resc: Path, repl_name: str, sources: list, peripherals: dict,
               left_out: dict) -> str:
    """The board's .resc with the C# includes replaced by `sources`, the platform by the build's .repl
    ($ORIGIN: this file's directory) and the board's other $ORIGIN paths made absolute."""
    origin = renode_path(board_resc.parent)
    lines = board_resc.read_text().splitlines()
    head = [line for line in lines if line.startswith(":")]  # :name: and :description: stay first (Renode's style)
    from . import dllimport_libraries

    note = _generated_note(board_resc, peripherals, left_out) + [
        f"It loads {repl_name} from beside this file; the board script's comments are left out (read them there)."]
    if any(dllimport_libraries(source) for source in sources):
        note += ["The native models of its C# peripherals are in lib/ beside this file: put that directory on",
                 "LD_LIBRARY_PATH (docs/renode.md)."]
    out = head + ["# " + line for line in note]
    includes_written = loaded = False
    for line in lines:
        stripped = line.strip()
        if line.startswith(":") or stripped.startswith("#"):
            continue
        if _CS_INCLUDE.match(stripped):
            if not includes_written:
                out += [f"include {renode_path(source)}" for source in sources]
                includes_written = True
            continue
        platform = _LOAD_PLATFORM.match(stripped)
        if platform:
            if not includes_written:  # the C# types must be known before the platform that uses them
                out += [f"include {renode_path(source)}" for source in sources]
                includes_written = True
            out.append(f"{platform.group(1)}$ORIGIN/{repl_name}{platform.group(3)}")
            loaded = True
            continue
        if stripped or (out and out[-1].strip()):  # one blank line where the board's comments were
            out.append(line.replace("$ORIGIN", origin))
    if not loaded:
        raise UsageError(f"{board_resc} does not load its platform (no 'machine LoadPlatformDescription' line); "
                         "the build's Renode script is made from it.")
    return "\n".join(out) + "\n"


def check_libraries(sources: list, library_dir: Path) -> None:
    """Every native library a C# peripheral of the platform P/Invokes was built: Renode fails to create the
    peripheral without it (System.DllNotFoundException)."""
    from . import dllimport_libraries, library_file

    for source in sources:
        for name in sorted(dllimport_libraries(source)):
            if not (library_dir / library_file(name)).is_file():
                raise ToolchainError(f"{source.name} P/Invokes {library_file(name)}, but no installed target builds it "
                                     f"(PeripheralModel.renode_library of the target that brings {source.name}); "
                                     "Renode could not create that peripheral.")
