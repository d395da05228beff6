"""Cross-compile the firmware: CMake configure + build of edgesdk/firmware/CMakeLists.txt.

build_firmware() checks the toolchain first so a missing compiler is reported with the exact install
command, runs CMake quietly, and on failure shows the compiler's own error lines.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from ..board import Board
from ..dataclass_cache import dataclass
from ..elf import SHF_ALLOC, ElfFile, ElfFormatError
from .. import child_process
from ..errors import EdgesdkError, EnvironmentFailure, MemoryFitError, ToolchainError, UsageError
from ..resources import cache_path, package_path
from . import build_tree

# The CMake project: CMakeLists.txt and the test harness (main.c, startup code), shipped in the package.
CMAKE_PROJECT_DIR = package_path("firmware")
ARTIFACTS = ("firmware.elf", "firmware.bin", "firmware.hex", "firmware.map")
ERROR_TEXT_LIMIT = 6000  # characters of compiler output quoted in an error


def _install_hint(board: Board) -> str:
    packages = board.toolchain.get("debian_packages") or []
    if packages:
        return f"Install it with: sudo apt-get install {' '.join(packages)}"
    return "Install the cross toolchain and picolibc for this board."


def check_toolchain(board: Board) -> None:
    """Raise ToolchainError unless cmake, the cross gcc and picolibc's specs file are available."""
    gcc = board.toolchain["prefix"] + "gcc"
    if shutil.which("cmake") is None:
        raise ToolchainError("CMake is not installed (needed to build the firmware). "
                             "Install it with: sudo apt-get install cmake")
    if shutil.which(gcc) is None:
        raise ToolchainError(f"The cross compiler {gcc} for board {board.name} is not on PATH. {_install_hint(board)}")
    specs = subprocess.run([gcc, "-print-file-name=picolibc.specs"], capture_output=True, text=True)
    if specs.returncode != 0 or not Path(specs.stdout.strip()).is_absolute():
        raise ToolchainError(f"{gcc} is installed but picolibc is not (picolibc.specs not found). "
                             f"{_install_hint(board)}")


def _compiler_errors(output: str) -> str:
    """The useful part of a failed build log: compiler/linker diagnostics, else the tail."""
    lines = output.splitlines()
    interesting = [ln for ln in lines if re.search(r"error|warning|undefined reference|overflow|cannot|note:|ld: ", ln)]
    text = "\n".join(interesting or lines[-40:])
    return text[-ERROR_TEXT_LIMIT:]


ENVIRONMENT_FAILURES = ("No space left on device", "Read-only file system", "Disk quota exceeded")


@dataclass(frozen=True)
class CompilerCache:
    """How CMake routes compiles through ccache (compiler_cache()); no arguments and no environment when off."""

    cmake_args: tuple = ()
    environment: dict | None = None  # without CCACHE_BASEDIR, which depends on the directories: env()

    def env(self, gen_dir: Path, build_dir: Path) -> dict | None:
        """The compiles' environment: paths under the build's own directories are rewritten relative to the
        CMake directory (CCACHE_BASEDIR), which sits at the same place in every stage."""
        if self.environment is None:
            return None
        return {**self.environment, "CCACHE_BASEDIR": os.path.commonpath([gen_dir, build_dir])}


def compiler_cache() -> CompilerCache:
    """ccache when it is installed: identical kernel sources with identical flags are compiled once per machine
    and reused by every later build, whatever its output directory; CMake's own dependency scan replaces the
    compiler's depfiles, whose target names carry absolute paths. EDGESDK_NO_CCACHE=1 turns it off; the
    firmware is the same either way. Asked once per build.

    Depend mode (CCACHE_DEPEND): a compile ccache has not seen (every model source of a new build) runs the
    compiler once, not the preprocessor for the hash and then the compiler; the entry is found by the sources'
    content as in direct mode (which already finds every kernel object). Without it a cold firmware build's
    compiles cost about 25% more CPU (docs/performance.md). ccache turns it off itself for a compile without
    -MD (CMake's Makefile generator here)."""
    ccache = shutil.which("ccache")
    if ccache is None or os.environ.get("EDGESDK_NO_CCACHE"):
        return CompilerCache()
    env = {**os.environ, "CCACHE_DIR": os.environ.get("CCACHE_DIR", str(cache_path("ccache"))),
           "CCACHE_NOHASHDIR": "1", "CCACHE_COMPILERCHECK": "content",
           "CCACHE_DEPEND": os.environ.get("CCACHE_DEPEND", "1")}
    return CompilerCache((f"-DCMAKE_C_COMPILER_LAUNCHER={ccache}", "-DCMAKE_DEPENDS_USE_COMPILER=OFF"), env)


def generator() -> list:
    """Ninja when it is installed: with a warm compiler cache it builds the firmware in about half the time of
    Make's recursive makefiles (the firmware is the same either way)."""
    return ["-G", "Ninja"] if shutil.which("ninja") else []


def _run(cmd: list, what: str, board: Board, env=None) -> None:
    proc = child_process.run(cmd, env=env)
    if proc.returncode == 0:
        return
    output = proc.stdout + "\n" + proc.stderr
    refused = next((text for text in ENVIRONMENT_FAILURES if text in output), None)
    if refused:
        raise EnvironmentFailure(f"Firmware {what} failed: {refused} (the compiler could not write its files). "
                                 "Free space or use a writable location (-o, $TMPDIR), then build again.")
    if re.search(r"will not fit in region|region `\w+' overflowed|does not fit SRAM", output):
        raise MemoryFitError(memory_fit_message(output, board))
    raise ToolchainError(f"Firmware {what} failed ({' '.join(map(str, cmd))}):\n{_compiler_errors(output)}")


def memory_fit_message(output: str, board: Board) -> str:
    """The linker's verdict on a firmware too large for the board, with exactly how many bytes are missing
    (link.ld ends its sram region where the stack begins, so "region `sram' overflowed by N bytes" is the
    shortfall of .data + .bss + the arena against SRAM minus the stack)."""
    overflows = {name: int(n) for name, n in re.findall(r"region `(\w+)' overflowed by (\d+) bytes?", output)}
    parts = []
    if "sram" in overflows:
        parts.append(f"SRAM is {overflows['sram']} bytes short: .data, .bss and the activation arena need "
                     f"{board.sram.size - board.stack_bytes + overflows['sram']} bytes beside the {board.stack_bytes}-byte "
                     f"stack, and the board has {board.sram.size} bytes of SRAM")
    if "flash" in overflows:
        parts.append(f"flash is {overflows['flash']} bytes short: the image needs "
                     f"{board.image_flash_bytes + overflows['flash']} bytes from {board.reset_address:#x} and the "
                     f"board has {board.image_flash_bytes}")
    if parts:
        return (f"The model does not fit board '{board.name}': {'; '.join(parts)}. Use a smaller model or input, a "
                "smaller stack (stack_bytes in board.json) if the firmware's measured stack use allows it, or a "
                "board with more memory.")
    return (f"The firmware does not fit the memory of board {board.name} (flash {board.image_flash_bytes} B from "
            f"{board.reset_address:#x}, SRAM {board.sram.size} B with a {board.stack_bytes} B stack). Linker says:\n"
            f"{_compiler_errors(output)}")


def build_firmware(gen_dir, out_dir, board: Board, werror: bool = False, build_dir=None) -> Path:
    """Build firmware from the generated sources in gen_dir (with board.h and link.ld) into out_dir.

    CMake works in build_dir (default out_dir/build); firmware.elf/.bin/.hex/.map are copied to out_dir.
    werror=True turns compiler warnings into errors. Returns the path of out_dir/firmware.elf.
    """
    gen_dir, out_dir = _checked_dirs(gen_dir, out_dir, board)
    build_dir = Path(build_dir).resolve() if build_dir else out_dir / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    cache = compiler_cache()
    _configure(gen_dir, build_dir, board, werror, cache)
    _build(gen_dir, build_dir, board, cache)
    return _copy_artifacts(build_dir, out_dir)


def build_firmware_reusing(gen_dir, out_dir, board: Board, werror: bool = False, fallback_dir=None) -> Path:
    """build_firmware() in a CMake tree kept between builds (build_tree.py): CMake configures once per board
    and flags, and again only when the set of generated files changes; the firmware is the same. When the
    reuse is off (EDGESDK_NO_BUILD_CACHE=1) or every tree is busy, builds in `fallback_dir` as before."""
    gen_dir, out_dir = _checked_dirs(gen_dir, out_dir, board)
    if os.environ.get("EDGESDK_NO_BUILD_CACHE"):
        return build_firmware(gen_dir, out_dir, board, werror, fallback_dir)
    cache = compiler_cache()
    # The key names the CMake project and board.json by their content, not their paths: every checkout of
    # the same edgesdk (a fresh clone, a worktree) shares the trees, each holding its own copy of both.
    project_digest = build_tree.content_digest(CMAKE_PROJECT_DIR)
    key = build_tree.tree_key([*generator(), project_digest, werror, *cache.cmake_args],
                              shutil.which(board.toolchain["prefix"] + "gcc"), board.path)
    with build_tree.reusable_tree(key, build_tree.file_list(gen_dir)) as tree:
        if tree is None:
            return build_firmware(gen_dir, out_dir, board, werror, fallback_dir)
        configured = build_tree.configured_files(tree)
        build_tree.invalidate(tree)  # trusted again only once this build succeeds
        if configured is None:  # new, or left half-way by a killed or failed build
            shutil.rmtree(tree, ignore_errors=True)
        sources, build_dir = tree / build_tree.SOURCES, tree / build_tree.CMAKE_DIR
        project, board_json = tree / build_tree.PROJECT, tree / build_tree.BOARD_JSON
        try:
            files = build_tree.sync_sources(gen_dir, sources)
            build_tree.sync_sources(CMAKE_PROJECT_DIR, project)
            build_tree.sync_file(board.path, board_json)
        except OSError:  # the cache's disk is full or read-only: build as without it
            return build_firmware(gen_dir, out_dir, board, werror, fallback_dir)
        if files != configured or not build_dir.is_dir():
            build_dir.mkdir(parents=True, exist_ok=True)
            _configure(sources, build_dir, board, werror, cache, project, board_json)
        try:
            _build(sources, build_dir, board, cache)
        except EdgesdkError:  # the compiler's or linker's verdict (the tree itself is sound): keep it
            build_tree.mark_configured(tree, files)
            raise
        elf = _copy_artifacts(build_dir, out_dir)
        build_tree.mark_configured(tree, files)
        return elf


def _checked_dirs(gen_dir, out_dir, board: Board) -> tuple:
    gen_dir, out_dir = Path(gen_dir).resolve(), Path(out_dir).resolve()
    # a firmware of named models (edgesdk build --name) has NAME_model.h and its harness main instead of model.h
    model = "edgesdk_harness_main.c" if (gen_dir / "edgesdk_harness_main.c").is_file() else "model.h"
    for required in (model, "board.h", "link.ld"):
        if not (gen_dir / required).is_file():
            raise UsageError(f"{gen_dir / required} is missing: {gen_dir} is not a generated sources directory "
                             "(run 'edgesdk build' to create it).")
    check_toolchain(board)
    out_dir.mkdir(parents=True, exist_ok=True)
    return gen_dir, out_dir


def _configure(gen_dir: Path, build_dir: Path, board: Board, werror: bool, cache: CompilerCache,
               project: Path = CMAKE_PROJECT_DIR, board_json: Path | None = None) -> None:
    """CMake's configure step of `project` (the package's CMake project, or a kept tree's copy of it)."""
    board_json = (board_json or board.path).resolve()
    _run(["cmake", *generator(), "-S", project, "-B", build_dir, f"-DEDGESDK_GEN_DIR={gen_dir}",
          f"-DEDGESDK_BOARD_JSON={board_json}", f"-DEDGESDK_WERROR={'ON' if werror else 'OFF'}",
          *cache.cmake_args], "configuration", board, cache.env(gen_dir, build_dir))


def _build(gen_dir: Path, build_dir: Path, board: Board, cache: CompilerCache) -> None:
    _run(["cmake", "--build", build_dir, "--parallel"], "build", board, cache.env(gen_dir, build_dir))


def _copy_artifacts(build_dir: Path, out_dir: Path) -> Path:
    for name in ARTIFACTS:
        shutil.copy2(build_dir / name, out_dir / name)
    return out_dir / "firmware.elf"


# ---- Sizes ----------------------------------------------------------------------------------------

SECTION_GROUPS = {
    "text": (".text",),
    "rodata": (".rodata",),
    "data": (".data", ".tdata"),
    "bss": (".bss", ".tbss"),
    "noinit": (".noinit",),
    "stack": (".stack",),
}


def section_sizes(elf) -> dict:
    """Bytes per kind of section: text, rodata, data, bss, noinit (the arena), stack, plus flash_bytes
    (the whole flash image, see flash_bytes())."""
    sizes = dict.fromkeys(SECTION_GROUPS, 0)
    image = _read(elf)
    for section in image.sections():
        if not section.flags & SHF_ALLOC:  # skip debug info, symbols, ...
            continue
        for group, prefixes in SECTION_GROUPS.items():
            if any(section.name == p or section.name.startswith(p + ".") for p in prefixes):
                sizes[group] += section.size
    sizes["flash_bytes"] = image.loaded_bytes()
    return sizes


def flash_bytes(elf) -> int:
    """Bytes the image occupies in flash: all loadable contents (code, constants, .data initializers)."""
    return _read(elf).loaded_bytes()


def _read(elf) -> ElfFile:
    try:
        return ElfFile.read(elf)
    except ElfFormatError as exc:
        raise ToolchainError(f"The linker's output {elf} is not an ELF file edgesdk can read ({exc}).") from None
