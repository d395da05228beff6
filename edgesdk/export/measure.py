"""What an exported library costs a firmware: code and data sizes, stack, and what it needs from libc/libgcc.

The export's sources are compiled with exactly the flags its Makefile uses by default (the board's), plus GCC's
`-fstack-usage -fcallgraph-info=su`, in a temporary directory; then linked into a probe image whose only roots
are the API functions (`--gc-sections`), with a linker script that keeps each kind of section apart. So:

* sizes: what linking the library into a firmware adds (text, rodata, data, bss, noinit = the arena), libc and
  libgcc routines it calls included;
* stack: the deepest path of frames from each API function through the call graph GCC wrote, the frames of
  libc/libgcc functions excepted (they are listed); unknown (None, with the reason) if a frame is dynamic, a
  call is indirect or recursive;
* externals: the symbols the library leaves undefined (what the firmware's C library and libgcc provide).

The probe also proves the library links on its own: an undefined symbol that libc does not provide fails here.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from elftools.elf.elffile import ELFFile

from .. import child_process
from ..errors import ToolchainError

API_FUNCTIONS = ("edgesdk_default_run", "edgesdk_default_reset", "edgesdk_default_arena_io")
STACK_FLAGS = ("-fstack-usage", "-fcallgraph-info=su")
PARALLEL_COMPILES = 2
ERROR_TEXT_LIMIT = 4000

# Each kind of section in its own output section, so the probe's section sizes are the library's.
PROBE_LINKER_SCRIPT = """\
ENTRY({entry})
SECTIONS
{
    .text : { *(.text .text.*) }
    .rodata : { *(.rodata .rodata.* .srodata .srodata.* .data.rel.ro .data.rel.ro.*) }
    .data : { *(.data .data.* .sdata .sdata.*) }
    .tdata : { *(.tdata .tdata.*) }
    .tbss : { *(.tbss .tbss.*) }
    .bss : { *(.sbss .sbss.* .bss .bss.* COMMON) }
    .noinit (NOLOAD) : { *(.noinit .noinit.*) }
    /DISCARD/ : { *(.note .note.*) *(.eh_frame .eh_frame.*) *(.comment) }
}
"""
SECTION_KINDS = {".text": "text", ".rodata": "rodata", ".data": "data", ".tdata": "data", ".tbss": "bss",
                 ".bss": "bss", ".noinit": "noinit"}


def measure_library(root: Path, sources: list, include_dirs: list, cflags: list, link_flags: list,
                    api_functions: tuple = API_FUNCTIONS) -> dict:
    """Compile `sources` (paths relative to `root`) with `cflags`, link the probe with `link_flags`; return
    {"sizes": {...}, "stack": {...}, "externals": [...]}. Raises ToolchainError if the library does not build
    or does not link on its own. `api_functions`: the model's run, reset and arena_io (edgesdk build --name)."""
    work = Path(tempfile.mkdtemp(prefix="edgesdk-export-measure-"))
    try:
        objects = _compile(root, sources, include_dirs, cflags, work)
        probe = work / "probe.elf"
        script = work / "probe.ld"
        script.write_text(PROBE_LINKER_SCRIPT.replace("{entry}", api_functions[0]))
        keep = [f"-Wl,--undefined={name}" for name in api_functions]
        _run([cflags[0], *link_flags, "-nostartfiles", "-Wl,--gc-sections", f"-T{script}", *keep, "-o", probe,
              *objects, "-lm"], "link")
        return {"sizes": _section_sizes(probe), "arena_alignment": _alignment(probe, ".noinit"),
                "stack": _stack(work, _declared_bounds(root, sources), api_functions), "externals": _externals(objects, probe)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compile(root: Path, sources: list, include_dirs: list, cflags: list, work: Path) -> list:
    includes = [f"-I{root / d}" for d in include_dirs]

    def one(source: str) -> Path:
        obj = work / (source.replace("/", "__").removesuffix(".c") + ".o")  # .su and .ci land beside it
        _run([*cflags, *STACK_FLAGS, *includes, "-c", root / source, "-o", obj], f"compile of {source}")
        return obj

    with ThreadPoolExecutor(PARALLEL_COMPILES) as pool:
        return list(pool.map(one, sources))


def _run(cmd: list, what: str) -> None:
    proc = child_process.run(cmd)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise ToolchainError(f"The exported library failed to build ({what}: {' '.join(map(str, cmd))}):\n"
                             f"{output[-ERROR_TEXT_LIMIT:]}")


def _section_sizes(elf: Path) -> dict:
    sizes = {"text": 0, "rodata": 0, "data": 0, "bss": 0, "noinit": 0}
    with elf.open("rb") as f:
        for section in ELFFile(f).iter_sections():
            kind = SECTION_KINDS.get(section.name)
            if kind is not None and section["sh_flags"] & 0x2:  # SHF_ALLOC
                sizes[kind] += section["sh_size"]
    sizes["flash_bytes"] = sizes["text"] + sizes["rodata"] + sizes["data"]  # .data's initial values live in flash
    sizes["ram_bytes"] = sizes["data"] + sizes["bss"] + sizes["noinit"]
    return sizes


def _alignment(elf: Path, name: str) -> int | None:
    with elf.open("rb") as f:
        section = ELFFile(f).get_section_by_name(name)
        return int(section["sh_addralign"]) if section is not None else None


def _externals(objects: list, probe: Path) -> list:
    """Global symbols the objects use, none of them defines, and the probe kept (the linker's garbage collection
    drops what only unused functions call): what the firmware's libc, libm and libgcc must provide."""
    defined, used = set(), set()
    for path in objects:
        for sym in _symbols(path):
            (used if sym["st_shndx"] == "SHN_UNDEF" else defined).add(sym.name)
    kept = {sym.name for sym in _symbols(probe) if sym["st_shndx"] != "SHN_UNDEF"}
    return sorted((used - defined) & kept)


def _symbols(path) -> list:
    with Path(path).open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        return [sym for sym in (symtab.iter_symbols() if symtab else ())
                if sym.name and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")]


# ---- stack: GCC's call graph (-fcallgraph-info=su: one VCG file per source, <object>.ci) -------------------

_NODE = re.compile(r'node: \{ title: "([^"]*)" label: "([^"]*)"')
_EDGE = re.compile(r'edge: \{ sourcename: "([^"]*)" targetname: "([^"]*)"')
_FRAME = re.compile(r"\\n(\d+) bytes \(([^)]*)\)")


_BOUND = re.compile(r"edgesdk-stack-bound\s+(\w+):\s*(\d+)\s+bytes")


def _declared_bounds(root: Path, sources: list) -> dict:
    """{function: bytes} for the variable-length arrays a kernel declares a bound for, in a comment
    `edgesdk-stack-bound NAME: N bytes` (the compiler refuses every layer that would need more)."""
    bounds = {}
    for source in sources:
        for name, size in _BOUND.findall((root / source).read_text(errors="replace")):
            bounds[name] = int(size)
    return bounds


def _stack(work: Path, bounds: dict | None = None, api_functions: tuple = API_FUNCTIONS) -> dict:
    frames, calls = {}, {}
    for ci in sorted(work.glob("*.ci")):
        text = ci.read_text(errors="replace")
        for title, label in _NODE.findall(text):
            frame = _FRAME.search(label)
            if frame:
                frames[title] = (int(frame.group(1)), frame.group(2))
        for source, target in _EDGE.findall(text):
            calls.setdefault(source, set()).add(target)
    if not frames:
        return {"bytes": None, "reason": "the compiler wrote no call graph"}
    result = {"method": "GCC -fstack-usage -fcallgraph-info=su with the library's default flags: the deepest "
                        "chain of frames from each function (libc and libgcc functions excepted)",
              "functions": {}}
    externals, problems = set(), []
    for root in api_functions:
        if root not in frames:
            problems.append(f"no frame recorded for {root}")
            continue
        depth = _deepest(root, frames, calls, externals, problems, (), {}, bounds or {})
        result["functions"][root] = depth
    if problems:
        return {"bytes": None, "reason": "; ".join(sorted(set(problems))), "method": result["method"]}
    result["bytes"] = max(result["functions"].values())
    result["not_counted"] = sorted(externals)
    return result


def _deepest(name: str, frames: dict, calls: dict, externals: set, problems: list, path: tuple, memo: dict,
             bounds: dict) -> int:
    if name in memo:
        return memo[name]
    if name in path:
        problems.append(f"recursion through {name}")
        return 0
    if name not in frames:
        if "indirect" in name:
            problems.append("an indirect call (function pointer)")
        else:
            externals.add(name)
        return 0
    size, kind = frames[name]
    if kind == "dynamic" and name in bounds:  # GCC cannot bound it; the kernel declares (and the compiler keeps) one
        size += bounds[name]
    elif kind not in ("static", "dynamic,bounded"):
        problems.append(f"{name} has a {kind} frame (alloca or a variable-length array)")
    below = [_deepest(callee, frames, calls, externals, problems, path + (name,), memo, bounds)
             for callee in sorted(calls.get(name, ()))]
    memo[name] = size + max(below, default=0)
    return memo[name]
