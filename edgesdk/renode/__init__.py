"""Renode support: the boards' Renode platforms (.repl/.resc), the C# peripherals and their native models.

* repl.py      reads and writes Renode platform descriptions (the subset edgesdk uses);
* platform.py  checks a board's .repl against its board.json and gives the built-in emulator its machine;
* build_platform.py  the platform of one build: only the peripherals it uses, with their native libraries;
* EdgesdkSiFiveTestFinisher.cs  the board exit device Renode loads with `include @file.cs`; each target brings
  the C# peripheral of its hardware in its own package (PeripheralModel.renode_sources, e.g.
  edgesdk/targets/<name>/renode/);
* standins/    minimal stand-ins of Renode's API, to compile (and run) the peripherals without Renode.

A C# peripheral that P/Invokes a native model (DllImport) needs that library on LD_LIBRARY_PATH. The target
that brings the peripheral builds it (PeripheralModel.renode_library); `native_libraries(dir, types)` builds
those of the given Renode types, `dllimport_libraries(file)` names the libraries a C# file loads.
`compile_peripherals(dir)` compiles the peripherals (`peripheral_sources()`) against the stand-ins with Mono's C#
compiler.
Command line: `python3 -m edgesdk.renode {library DIR [BOARD] | check [BOARD] | scaffold BOARD | compile DIR}`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from ..errors import ToolchainError

RENODE_DIR = Path(__file__).resolve().parent
CORE_PERIPHERAL_SOURCES = (RENODE_DIR / "EdgesdkSiFiveTestFinisher.cs",)
STANDIN_SOURCES = (RENODE_DIR / "standins" / "RenodeStandins.cs",)


def peripheral_sources() -> tuple:
    """Every C# peripheral file: the core's (the exit device) and each installed target's, in target order."""
    sources = list(CORE_PERIPHERAL_SOURCES)
    for model in peripheral_models().values():
        for source in model.renode_sources:
            source = Path(source).resolve()
            if source.suffix == ".cs" and source not in sources:
                sources.append(source)
    return tuple(sources)


def library_file(name: str) -> str:
    """The file a DllImport("name") resolves to on Linux (Mono and .NET add the lib prefix and .so)."""
    return f"lib{name}.so"


def install_library(built: Path, out_dir, name: str) -> Path:
    """Copy a built host library into out_dir under the file name DllImport("name") looks for."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / library_file(name)
    shutil.copyfile(built, target)
    return target


def dllimport_libraries(source: Path) -> set:
    """The native library names a C# file P/Invokes: DllImport("x") or DllImport(Constant) with
    `const string Constant = "x"`."""
    text = Path(source).read_text()
    constants = dict(re.findall(r'const\s+string\s+(\w+)\s*=\s*"([^"]+)"', text))
    names = set()
    for argument in re.findall(r"DllImport\(\s*([^,)]+)", text):
        argument = argument.strip()
        names.add(argument.strip('"') if argument.startswith('"') else constants.get(argument, argument))
    return names


def csharp_types(source: Path) -> set:
    """The Renode type names a C# file defines: its namespace after Antmicro.Renode.Peripherals, then each public
    class ("Edgesdk.Npu1"); empty for a file outside that namespace."""
    text = Path(source).read_text()
    namespace = re.search(r"namespace\s+Antmicro\.Renode\.Peripherals\.([\w.]+)", text)
    if namespace is None:
        return set()
    return {f"{namespace.group(1)}.{name}" for name in re.findall(r"public\s+class\s+(\w+)", text)}


def peripheral_models() -> dict:
    """{Renode type: PeripheralModel} of every installed target's peripheral models (the first target wins)."""
    from ..targets import all_targets

    models = {}
    for target in all_targets():
        for model in target.peripherals():
            models.setdefault(model.renode_type, model)
    return models


def native_libraries(out_dir, renode_types=None) -> list:
    """Build into out_dir the native library of every peripheral model (of the given Renode types; all
    installed ones when None) whose Renode peripheral P/Invokes one; returns their paths."""
    models = peripheral_models()
    wanted = models if renode_types is None else {t: models[t] for t in renode_types if t in models}
    return [model.renode_library(out_dir) for _, model in sorted(wanted.items()) if model.renode_library is not None]


def csharp_compiler() -> str:
    mcs = shutil.which("mcs")
    if mcs is None:
        raise ToolchainError("The C# compiler 'mcs' is not installed (needed to compile-check edgesdk's Renode "
                             "peripherals). Install it with: sudo apt-get install mono-mcs")
    return mcs


def compile_peripherals(out_dir, harness=None, sources=None) -> Path:
    """Compile the C# peripherals (`sources`, default peripheral_sources()) against the Renode stand-ins with
    warnings as errors.

    harness None: a library (the compile check); a C# file with a Main: <its name>.exe, runnable with `mono`
    (tests/renode/PeripheralHarness.cs drives the built-in targets' peripherals).
    Raises ToolchainError with the compiler's messages when the peripherals do not compile.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / (Path(harness).stem + ".exe" if harness else "EdgesdkRenodePeripherals.dll")
    peripherals = peripheral_sources() if sources is None else sources
    sources = [*peripherals, *STANDIN_SOURCES, *([harness] if harness else [])]
    cmd = [csharp_compiler(), "-target:" + ("exe" if harness else "library"), "-warnaserror+", "-warn:4",
           "-nologo", f"-out:{output}", *map(str, sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"The Renode peripherals do not compile against the stand-ins ({' '.join(cmd)}):\n"
                             f"{(proc.stdout + proc.stderr).strip()}")
    return output
