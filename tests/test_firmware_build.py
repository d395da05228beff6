"""Firmware build: board.h/link.ld from board.json, CMake build of the fake model, toolchain errors."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from elftools.elf.elffile import ELFFile

from edgesdk.board import BOARDS_DIR, load_board
from edgesdk.firmware_build.build import CMAKE_PROJECT_DIR
from edgesdk.errors import MemoryFitError, ToolchainError
from edgesdk.firmware_build import build_firmware, flash_bytes, render_board_files, section_sizes

FAKE_MODEL = Path(__file__).resolve().parent / "fixtures" / "fake_model"


@pytest.fixture(scope="module")
def board():
    return load_board("riscv-npu")


def make_gen_dir(path: Path, board) -> Path:
    """A generated-sources directory: the fake model + board files."""
    path.mkdir(parents=True)
    for src in FAKE_MODEL.glob("*.[ch]"):
        shutil.copy(src, path)
    render_board_files(board, path)
    return path


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, board) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("fw")
    return SimpleNamespace(root=root, gen=make_gen_dir(root / "src", board), build=root / "build")


def build_variant(workspace, board, name: str, edit=None) -> Path:
    """Build the fake model, model.c optionally edited, into workspace.root/name.

    All variants share one source path and CMake build directory, so only model.c is recompiled.
    -Werror: the harness, startup, HAL, kernels and model must compile without a single warning.
    """
    text = (FAKE_MODEL / "model.c").read_text()
    (workspace.gen / "model.c").write_text(edit(text) if edit else text)
    return build_firmware(workspace.gen, workspace.root / name, board, werror=True, build_dir=workspace.build)


@pytest.fixture(scope="module")
def firmware(workspace, board) -> Path:
    return build_variant(workspace, board, "ok")


def board_h_macros(path: Path) -> dict:
    macros = {}
    for name, value in re.findall(r"^#define (BOARD_\w+) (.+)$", path.read_text(), re.M):
        macros[name] = value.strip('"') if value.startswith('"') else int(value.rstrip("u"), 0)
    return macros


def symbols(elf: Path) -> dict:
    with elf.open("rb") as f:
        return {s.name: s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols() if s.name}


def sections(elf: Path) -> dict:
    with elf.open("rb") as f:
        return {s.name: (s["sh_type"], s["sh_addr"], s["sh_size"]) for s in ELFFile(f).iter_sections()}


def test_board_h_comes_from_board_json(tmp_path, board):
    render_board_files(board, tmp_path)
    macros = board_h_macros(tmp_path / "board.h")
    assert macros["BOARD_NAME"] == board.name
    assert macros["BOARD_CPU_CLOCK_HZ"] == board.cpu["clock_hz"]
    assert (macros["BOARD_FLASH_BASE"], macros["BOARD_FLASH_SIZE"]) == (board.flash.base, board.flash.size)
    assert (macros["BOARD_SRAM_BASE"], macros["BOARD_SRAM_SIZE"]) == (board.sram.base, board.sram.size)
    assert macros["BOARD_STACK_BYTES"] == board.stack_bytes
    for periph in board.peripherals.values():
        assert macros[f"BOARD_{periph.name.upper()}_BASE"] == periph.base
        assert macros[f"BOARD_{periph.name.upper()}_SIZE"] == periph.size
    assert macros["BOARD_NPU0_IRQ"] == board.peripherals["npu0"].props["irq"]
    assert macros["BOARD_NPU0_CLOCK_HZ"] == board.peripherals["npu0"].props["clock_hz"]


def test_link_ld_follows_a_modified_board(tmp_path, board):
    import dataclasses

    bigger = dataclasses.replace(board, stack_bytes=16384,
                                 memories={**board.memories, "sram": dataclasses.replace(board.sram, size=1 << 20)})
    render_board_files(bigger, tmp_path)
    text = (tmp_path / "link.ld").read_text()
    # The linker's sram region ends where the stack begins (its overflow message is then the exact shortfall).
    assert "LENGTH = 1032192" in text and "ORIGIN(sram) + 1048576" in text and "__stack - 16384" in text
    assert board_h_macros(tmp_path / "board.h")["BOARD_STACK_BYTES"] == 16384


def test_memory_layout(firmware, board):
    syms, secs = symbols(firmware), sections(firmware)
    for name in (".text", ".rodata"):
        assert board.flash.contains(secs[name][1], secs[name][2])
    for name in (".data", ".bss", ".noinit"):
        assert board.sram.contains(secs[name][1], secs[name][2])
    assert secs[".noinit"][0] == "SHT_NOBITS"  # NOLOAD: never written by a loader, never cleared
    noinit_start = secs[".noinit"][1]
    assert noinit_start <= syms["edgesdk_arena"] < noinit_start + secs[".noinit"][2]
    assert syms["edgesdk_arena"] % 16 == 0
    assert syms["__stack"] == board.sram.end
    assert syms["__stack_bottom"] == board.sram.end - board.stack_bytes
    assert board.flash.contains(syms["__data_source"])  # .data initializers are loaded into flash
    with firmware.open("rb") as f:
        elf = ELFFile(f)
        assert elf["e_entry"] == syms["_start"] == board.flash.base  # reset entry first in flash
        loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD" and s["p_filesz"]]
        assert all(board.flash.contains(s["p_paddr"], s["p_filesz"]) for s in loads)


def test_artifacts_and_sizes(firmware, board):
    out = firmware.parent
    sizes = section_sizes(firmware)
    assert sizes["noinit"] == 32  # the fake model's arena
    assert sizes["stack"] == board.stack_bytes
    assert sizes["text"] > 200 and sizes["data"] >= 4 and sizes["bss"] >= 4
    image = flash_bytes(firmware)
    assert sizes["flash_bytes"] == image
    assert image >= sizes["text"] + sizes["rodata"] + sizes["data"]
    binary = (out / "firmware.bin").read_bytes()
    assert image <= len(binary) < image + 64  # raw flash image (only alignment padding added)
    assert (out / "firmware.hex").read_text().startswith(":")
    assert "edgesdk_arena" in (out / "firmware.map").read_text()


def test_sram_overflow_is_a_memory_fit_error(workspace, board):
    def huge_arena(text):
        return text.replace("edgesdk_arena[32]", f"edgesdk_arena[{board.sram.size}]")

    with pytest.raises(MemoryFitError, match="does not fit") as info:
        build_variant(workspace, board, "huge", huge_arena)
    # The exact shortfall: the arena alone is the size of SRAM, so everything else (.data, .bss, the stack) is missing.
    short = int(re.search(r"SRAM is (\d+) bytes short", str(info.value)).group(1))
    assert board.stack_bytes < short < board.stack_bytes + 4096


def test_compile_error_shows_compiler_message(workspace, board):
    with pytest.raises(ToolchainError, match=r"model\.c:\d+:\d+: error"):
        build_variant(workspace, board, "broken", lambda text: text + "\nthis is not C;\n")


def _path_with(tmp_path: Path, tools: dict) -> str:
    """A PATH holding only `tools` ({name: target path or script text})."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, target in tools.items():
        if isinstance(target, Path):
            (bindir / name).symlink_to(target)
        else:
            (bindir / name).write_text(target)
            (bindir / name).chmod(stat.S_IRWXU)
    return str(bindir)


def test_missing_cross_compiler_names_packages(tmp_path, board, monkeypatch):
    monkeypatch.setenv("PATH", _path_with(tmp_path, {"cmake": Path(shutil.which("cmake"))}))
    with pytest.raises(ToolchainError) as err:
        build_firmware(make_gen_dir(tmp_path / "src", board), tmp_path / "out", board)
    message = str(err.value)
    assert "riscv64-unknown-elf-gcc" in message
    assert "apt-get install " + " ".join(board.toolchain["debian_packages"]) in message


def test_missing_picolibc_is_reported(tmp_path, board, monkeypatch):
    fake_gcc = "#!/bin/sh\necho picolibc.specs\n"  # what gcc prints when it cannot find the file
    monkeypatch.setenv("PATH", _path_with(tmp_path, {"cmake": Path(shutil.which("cmake")),
                                                     "riscv64-unknown-elf-gcc": fake_gcc}))
    with pytest.raises(ToolchainError, match="picolibc-riscv64-unknown-elf"):
        build_firmware(make_gen_dir(tmp_path / "src", board), tmp_path / "out", board)


def test_documented_hand_build(tmp_path, board):
    """The cmake commands in edgesdk/firmware/CMakeLists.txt's header comment work as written, from a
    directory that is not the project's."""
    header = (CMAKE_PROJECT_DIR / "CMakeLists.txt").read_text().split("cmake_minimum_required")[0]
    assert "-DEDGESDK_GEN_DIR=<OUT>/src" in header and "cmake --build <OUT>/build" in header
    gen = make_gen_dir(tmp_path / "src", board)
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(CMAKE_PROJECT_DIR), "-B", str(build), f"-DEDGESDK_GEN_DIR={gen}",
                    f"-DEDGESDK_BOARD_JSON={BOARDS_DIR / 'riscv-npu' / 'board.json'}"], cwd=tmp_path,
                   check=True, capture_output=True)
    result = subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, text=True)
    assert ".noinit" in result.stdout  # the size summary is printed
    for name in ("firmware.elf", "firmware.bin", "firmware.hex"):
        assert (build / name).is_file()


def test_out_src_holds_only_the_kernels_the_model_calls(tmp_path):
    """OUT/src/targets/c holds the kernel sources of the ops the build runs on the host and the headers they
    include, not the whole library (issue 11: only what the firmware uses)."""
    from conftest import model_path
    from edgesdk.compiler import BuildOptions, build

    build(model_path("hello_world"), tmp_path / "fc", BuildOptions(target="c", compile_firmware=False))
    kernels = {p.name for p in (tmp_path / "fc" / "src" / "targets" / "c").iterdir()}
    assert {"edgesdk_fully_connected.c", "edgesdk_fully_connected_blocked.c", "edgesdk_arith.h"} <= kernels
    assert not kernels & {"edgesdk_conv2d.c", "edgesdk_softmax.c", "edgesdk_add.c", "edgesdk_kernels.h"}
    model_c = (tmp_path / "fc" / "src" / "model.c").read_text()
    assert '#include "edgesdk_fully_connected.h"' in model_c and "edgesdk_conv2d.h" not in model_c


@pytest.mark.skipif(shutil.which("ccache") is None or shutil.which("riscv64-unknown-elf-gcc") is None,
                    reason="ccache or the RISC-V cross compiler is not installed")
def test_a_second_build_reuses_every_object_and_gives_the_same_firmware(tmp_path, monkeypatch):
    """Kernel objects are compiled once per machine (ccache, edgesdk/firmware_build/build.py) and reused by
    builds into other directories; the firmware is byte for byte the one an uncached build makes."""
    from conftest import model_path
    from edgesdk.compiler import BuildOptions, build

    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EDGESDK_NO_BUILD_CACHE", "1")  # a fresh CMake directory per build: ccache alone

    def stats() -> dict:
        env = {**os.environ, "CCACHE_DIR": str(tmp_path / "cache" / "ccache")}
        text = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, env=env).stdout
        return {k: int(v) for k, v in (line.split("\t") for line in text.splitlines() if "\t" in line)}

    build(model_path("hello_world"), tmp_path / "a" / "out", BuildOptions(target="c"))
    first = stats()
    build(model_path("hello_world"), tmp_path / "b" / "c" / "out", BuildOptions(target="c"))
    second = stats()
    compiles = first["cache_miss"]
    assert compiles > 0 and second["cache_miss"] == compiles  # no new compile ...
    assert second["direct_cache_hit"] - first.get("direct_cache_hit", 0) == compiles  # ... every object reused
    monkeypatch.setenv("EDGESDK_NO_CCACHE", "1")
    build(model_path("hello_world"), tmp_path / "plain", BuildOptions(target="c"))
    elf = (tmp_path / "a" / "out" / "firmware.elf").read_bytes()
    assert (tmp_path / "b" / "c" / "out" / "firmware.elf").read_bytes() == elf
    assert (tmp_path / "plain" / "firmware.elf").read_bytes() == elf


def test_output_and_build_directories_may_contain_commas_and_spaces(workspace, board):
    """`-o "runs/npu,c"` is a natural name (a target list); the linker options must not split such paths."""
    text = (FAKE_MODEL / "model.c").read_text()
    (workspace.gen / "model.c").write_text(text)
    out = workspace.root / "out npu,c"
    elf = build_firmware(workspace.gen, out, board, werror=True, build_dir=workspace.root / "cmake npu,c")
    assert elf == out / "firmware.elf" and elf.is_file()
    assert (out / "firmware.map").read_text().strip()


@pytest.fixture
def cmake_calls(tmp_path, monkeypatch) -> list:
    """The CMake steps the firmware builds of a test run ("configuration" or "build"), with a cache of their own."""
    from edgesdk.firmware_build import build as build_module

    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path / "cache"))
    calls, run = [], build_module._run

    def counting(cmd, what, board, env=None):
        calls.append(what)
        return run(cmd, what, board, env)

    monkeypatch.setattr(build_module, "_run", counting)
    return calls


@pytest.mark.slow
def test_an_unchanged_project_is_not_reconfigured(tmp_path, board, cmake_calls, monkeypatch):
    """edgesdk build keeps its configured CMake tree (firmware_build/build_tree.py): CMake configures once per
    board and flags, and again only when the set of generated files changes; the firmware is the one a fresh
    build directory gives. A build asks for the compiler cache once."""
    from edgesdk.firmware_build import build as build_module
    from edgesdk.firmware_build.build import build_firmware_reusing

    asked, compiler_cache = [], build_module.compiler_cache
    monkeypatch.setattr(build_module, "compiler_cache", lambda: asked.append(1) or compiler_cache())

    def build(name: str, edit=None, extra: str | None = None) -> bytes:
        gen = make_gen_dir(tmp_path / name / "src", board)  # a new path each time, as each build's stage
        if edit:
            (gen / "model.c").write_text(edit((gen / "model.c").read_text()))
        if extra:
            (gen / "extra.c").write_text(extra)
        cmake_calls.clear()
        asked.clear()
        elf = build_firmware_reusing(gen, tmp_path / name, board, werror=True, fallback_dir=tmp_path / name / "cmake")
        assert len(asked) == 1
        return elf.read_bytes()

    first = build("first")
    assert cmake_calls == ["configuration", "build"]
    assert build("again") == first and cmake_calls == ["build"]  # same sources elsewhere: no configure
    edited = build("edited", lambda text: text.replace("increments_table[2] = {0, 1}", "increments_table[2] = {0, 2}"))
    assert edited != first and cmake_calls == ["build"]  # a changed file: rebuilt, not reconfigured
    with pytest.raises(MemoryFitError):  # the linker's verdict leaves the tree sound: kept
        build("huge", lambda text: text.replace("edgesdk_arena[32]", f"edgesdk_arena[{board.sram.size}]"))
    assert build("after") == first and cmake_calls == ["build"]
    extra = "int edgesdk_test_extra_function(void) { return 1; }\n"
    more = build("more files", extra=extra)
    assert cmake_calls == ["configuration", "build"]  # CMakeLists globs the sources: new files, another tree
    # Two models' file sets alternating (different kernels): each finds the tree configured for its files.
    assert build("back") == first and cmake_calls == ["build"]
    assert build("more again", extra=extra) == more and cmake_calls == ["build"]

    plain = build_firmware(make_gen_dir(tmp_path / "plain" / "src", board), tmp_path / "plain", board, werror=True)
    assert plain.read_bytes() == first


@pytest.mark.slow
def test_another_checkout_reuses_the_configured_tree(tmp_path, board, cmake_calls, monkeypatch):
    """Kept trees are keyed by the CMake project's and board.json's content, not their paths: a build from
    another checkout of the same edgesdk (a fresh clone, a worktree) needs no configure step, even once the
    first checkout is gone, and gives the same firmware; a changed CMake project is another tree."""
    from edgesdk.firmware_build import build as build_module
    from edgesdk.firmware_build.build import build_firmware_reusing

    def checkout(name: str):
        """A copy of the package's CMake project and of board.json, as another checkout has them."""
        shutil.copytree(CMAKE_PROJECT_DIR, tmp_path / name / "firmware")
        shutil.copy(board.path, tmp_path / name / "board.json")
        monkeypatch.setattr(build_module, "CMAKE_PROJECT_DIR", tmp_path / name / "firmware")
        return load_board(str(tmp_path / name / "board.json"))

    def build(name: str, checkout_board) -> bytes:
        cmake_calls.clear()
        gen = make_gen_dir(tmp_path / name / "src", checkout_board)
        return build_firmware_reusing(gen, tmp_path / name, checkout_board, werror=True).read_bytes()

    first = build("first", checkout("one"))
    assert cmake_calls == ["configuration", "build"]
    two = checkout("two")
    shutil.rmtree(tmp_path / "one")
    assert build("second", two) == first and cmake_calls == ["build"]
    with open(tmp_path / "two" / "firmware" / "CMakeLists.txt", "a") as f:
        f.write("# another edgesdk\n")
    assert build("third", two) == first and cmake_calls == ["configuration", "build"]


@pytest.mark.slow
def test_a_tree_left_half_way_or_busy_is_not_trusted(tmp_path, board, cmake_calls, monkeypatch):
    from edgesdk.firmware_build import build_tree
    from edgesdk.firmware_build.build import build_firmware_reusing

    gen = make_gen_dir(tmp_path / "src", board)
    first = build_firmware_reusing(gen, tmp_path / "a", board).read_bytes()
    (tree,) = [p for p in build_tree.cache_root().iterdir() if p.is_dir()]
    build_tree.invalidate(tree)  # as a build killed during CMake leaves it
    cmake_calls.clear()
    assert build_firmware_reusing(gen, tmp_path / "b", board).read_bytes() == first
    assert cmake_calls == ["configuration", "build"] and build_tree.configured_files(tree)

    key = tree.name.rsplit("-", 1)[0]
    monkeypatch.delenv(build_tree.SLOTS_VARIABLE, raising=False)  # the user's default (the test session raises it)
    with contextlib.ExitStack() as others:  # as many builds at work as there are trees
        held = [others.enter_context(build_tree.reusable_tree(key)) for _ in range(build_tree.DEFAULT_SLOTS)]
        assert sorted(t.name for t in held) == [f"{key}-{slot}" for slot in range(build_tree.DEFAULT_SLOTS)]
        cmake_calls.clear()
        fallback = tmp_path / "c" / "cmake"
        assert build_firmware_reusing(gen, tmp_path / "c", board, fallback_dir=fallback).read_bytes() == first
        assert cmake_calls == ["configuration", "build"] and (fallback / "CMakeCache.txt").is_file()

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(build_tree, "sync_sources", full_disk)  # the cache's disk full: built as without it
    cmake_calls.clear()
    assert build_firmware_reusing(gen, tmp_path / "e", board, fallback_dir=tmp_path / "e" / "cmake").read_bytes() == first
    assert cmake_calls == ["configuration", "build"] and (tmp_path / "e" / "cmake" / "CMakeCache.txt").is_file()

    monkeypatch.setenv("EDGESDK_NO_BUILD_CACHE", "1")
    cmake_calls.clear()
    build_firmware_reusing(gen, tmp_path / "d", board, fallback_dir=tmp_path / "d" / "cmake")
    assert cmake_calls == ["configuration", "build"] and (tmp_path / "d" / "cmake" / "CMakeCache.txt").is_file()



@pytest.mark.slow
def test_builds_cycling_through_more_kernel_sets_than_the_default_trees_configure_each_set_once(
        tmp_path, board, cmake_calls, monkeypatch):
    """Models cycling through five file sets (as the op corpus cycles through its ops' kernels, session after
    session): with the default four trees least-recently-used eviction drops the tree the next build needs, so
    every build re-configures; with EDGESDK_BUILD_TREES=5 (tests/conftest.py raises it) each set configures
    once and the second round only builds. The firmware is the one a fresh build directory gives."""
    from edgesdk.firmware_build import build_tree
    from edgesdk.firmware_build.build import build_firmware_reusing

    def round_of_builds(name: str) -> tuple:
        """(configures, firmware per set) of one build of each of the five sets, in order."""
        cmake_calls.clear()
        firmware = []
        for kernel_set in range(5):
            gen = make_gen_dir(tmp_path / name / str(kernel_set) / "src", board)
            (gen / f"kernel_{kernel_set}.c").write_text(f"int edgesdk_test_kernel_{kernel_set}(void) {{ return 1; }}\n")
            out = gen.parent
            firmware.append(build_firmware_reusing(gen, out, board, fallback_dir=out / "cmake").read_bytes())
        return cmake_calls.count("configuration"), firmware

    monkeypatch.setenv(build_tree.SLOTS_VARIABLE, str(build_tree.DEFAULT_SLOTS))
    assert round_of_builds("default")[0] == 5
    assert round_of_builds("default again")[0] == 5  # the cycle is longer than the trees: nothing reused

    monkeypatch.setenv(build_tree.SLOTS_VARIABLE, "5")
    assert round_of_builds("five trees")[0] == 1  # the four trees left configured for sets 1-4 are kept
    configures, firmware = round_of_builds("five trees again")
    assert configures == 0

    fresh = tmp_path / "fresh" / "src"
    make_gen_dir(fresh, board)
    (fresh / "kernel_3.c").write_text("int edgesdk_test_kernel_3(void) { return 1; }\n")
    assert build_firmware(fresh, fresh.parent, board).read_bytes() == firmware[3]


def test_the_tree_count_setting_is_checked(monkeypatch):
    from edgesdk.errors import UsageError
    from edgesdk.firmware_build import build_tree

    monkeypatch.delenv(build_tree.SLOTS_VARIABLE, raising=False)
    assert build_tree.slots() == build_tree.DEFAULT_SLOTS
    monkeypatch.setenv(build_tree.SLOTS_VARIABLE, " 12 ")
    assert build_tree.slots() == 12
    for bad in ("0", "-3", "many", "2.5"):
        monkeypatch.setenv(build_tree.SLOTS_VARIABLE, bad)
        with pytest.raises(UsageError, match="EDGESDK_BUILD_TREES"):
            build_tree.slots()

def test_compiled_templates_are_kept_between_builds(tmp_path, board, monkeypatch):
    """Jinja's compiled templates are cached ($EDGESDK_CACHE/jinja): a second render compiles no template and
    writes the same text; an edited template is compiled again."""
    import jinja2

    from edgesdk.resources import template_bytecode_cache

    monkeypatch.setenv("EDGESDK_CACHE", str(tmp_path / "cache"))
    compiles = []
    compile_template = jinja2.Environment.compile

    def counting(self, source, *args, **kwargs):
        compiles.append(source)
        return compile_template(self, source, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    render_board_files(board, tmp_path / "a")
    assert compiles and any((tmp_path / "cache" / "jinja").iterdir())
    compiles.clear()
    render_board_files(board, tmp_path / "b")
    assert compiles == []
    for name in ("board.h", "link.ld"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()

    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.j2").write_text("one {{ x }}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)), bytecode_cache=template_bytecode_cache())
    assert env.get_template("t.j2").render(x=1) == "one 1"
    (templates / "t.j2").write_text("two {{ x }}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)), bytecode_cache=template_bytecode_cache())
    assert env.get_template("t.j2").render(x=1) == "two 1"


def test_section_sizes_read_as_pyelftools_reads_them(firmware, tmp_path):
    """section_sizes() reads the ELF tables with struct (pyelftools' import costs more than a warm link): the
    same figures as pyelftools, on the firmware (ELF32) and on this machine's Python (ELF64); a file that is
    not ELF is a clear error."""
    import sys

    from edgesdk.firmware_build.build import SECTION_GROUPS

    for elf in (firmware, Path(sys.executable).resolve()):
        expected = dict.fromkeys(SECTION_GROUPS, 0)
        with open(elf, "rb") as f:
            image = ELFFile(f)
            for section in image.iter_sections():
                for group, prefixes in SECTION_GROUPS.items():
                    if section["sh_flags"] & 0x2 and any(section.name == p or section.name.startswith(p + ".")
                                                         for p in prefixes):
                        expected[group] += section["sh_size"]
            expected["flash_bytes"] = sum(s["p_filesz"] for s in image.iter_segments() if s["p_type"] == "PT_LOAD")
        assert section_sizes(elf) == expected and flash_bytes(elf) == expected["flash_bytes"]
    assert section_sizes(firmware)["text"] > 0
    (tmp_path / "not.elf").write_bytes(b"MZ" + bytes(100))
    with pytest.raises(ToolchainError, match="not an ELF"):
        section_sizes(tmp_path / "not.elf")
