"""Prepare a build for the hardware-in-the-loop suites: OUT/hil/.

A normal build expects a host (the built-in emulator) to write its inputs into the arena and read the
outputs back. Renode and real boards have no such host, so `prepare_hil()` rebuilds the firmware from
OUT/src with the harness options of edgesdk/firmware/edgesdk_harness_io.h: the inputs embedded in flash, the
outputs printed over the UART. It writes, into OUT/hil/:

    firmware.elf (.bin, .hex)  the HIL firmware
    src/                       OUT/src + edgesdk_harness_config.h + edgesdk_harness_io.c (generated)
    input_K.npy                the embedded inputs (seeded random unless given)
    expected_K.npy             the reference outputs for them (LiteRT BUILTIN_REF, or TFLite Micro for a
                               --rounding tflm build)
    variables.py               Robot Framework variables for edgesdk/hil/suites/*.robot (firmware path, platform
                               script, expected UART lines, addresses the error and hang suites patch)
    renode/                    the build's Renode platform (edgesdk/renode/build_platform.py): the board's
                               .resc/.repl with only the peripherals the build uses, and lib/ with the native
                               models of their C# peripherals
    robot/, renode/results/    the suites' results (written by `edgesdk hil`'s runs)

The same OUT/hil/ serves the built-in emulator, Renode and a board flashed with OUT/hil/firmware.elf.
OUT/hil/ is edgesdk's: it carries the output marker and a manifest of what edgesdk wrote, and is replaced as a
whole (staged, like `edgesdk build -o`) only when it holds nothing else; a file of the user's stops it.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..board import build_board
from ..dataclass_cache import dataclass
from ..errors import UsageError
from ..output_dir import MARKER, foreign_files, staged_output, write_manifest
from ..renode.build_platform import BuildPlatform, renode_path, write_build_platform
from ..runner import coerce_input, load_report, random_inputs

HIL_DIRNAME = "hil"
PLATFORM_DIRNAME = "renode"  # OUT/hil/renode: the build's Renode platform and native libraries
BUILTIN_RESULTS = "robot"  # Robot's output of the built-in emulator's runs
RENODE_RESULTS = "renode/results"  # renode-test's results (and the snapshots of failed tests)
OUTPUT_LINE_PREFIX = "edgesdk: output"
# Virtual seconds (Renode's clock: instructions / PerformanceInMips) the suites allow for booting and for
# the inference + printing. The largest shared model needs < 2 M instructions (10 ms at 200 MIPS); a
# hung firmware is declared hung once this much virtual time passes without the expected line.
BOOT_TIMEOUT_S = 1.0
RUN_TIMEOUT_S = 1.0
# The instruction `j .` (jal x0, 0): the hang suite writes it over the model's entry point.
JUMP_TO_SELF = 0x0000006F


@dataclass
class HilBuild:
    build_dir: Path
    hil_dir: Path
    firmware: Path
    variables_file: Path
    model_name: str
    board_name: str
    expected_lines: list
    target_variables: dict  # the build's targets' own suite variables (Target.hil_variables)
    hang_address: int
    platform: BuildPlatform | None = None  # the build's Renode platform (OUT/hil/renode)


def expected_output_line(index: int, output: np.ndarray) -> str:
    """The UART line the HIL harness prints for output `index` (print_outputs in edgesdk/firmware/main.c)."""
    return f"{OUTPUT_LINE_PREFIX} {index} {np.ascontiguousarray(output).tobytes().hex()}"


def prepare_hil(build_dir, inputs: list | None = None, seed: int = 0) -> HilBuild:
    """Build OUT/hil/ for `build_dir` (an `edgesdk build` output) with `inputs` (default: seeded random)."""
    from ..firmware_build.build import build_firmware
    from ..reference import run_reference

    build_dir = Path(build_dir).resolve()
    report = load_report(build_dir)
    src = build_dir / "src"
    if report.get("name"):  # edgesdk build --name: its harness is generated, without the HIL options
        raise UsageError(f"{build_dir} was built with --name {report['name']}: edgesdk hil runs builds without a "
                         "name. Build the model again without --name for the HIL suites.")
    if not (src / "model.h").is_file():
        raise UsageError(f"{build_dir} has no generated sources (src/model.h); rebuild it with 'edgesdk build' "
                         "(the HIL firmware is compiled from them).")
    board = build_board(build_dir, report)
    specs = report["io"]["inputs"]
    if inputs is None:
        inputs = random_inputs(report, seed)
    if len(inputs) != len(specs):
        raise UsageError(f"The model takes {len(specs)} input(s), {len(inputs)} given.")
    inputs = [coerce_input(np.asarray(x), spec, k) for k, (x, spec) in enumerate(zip(inputs, specs))]

    hil_dir = build_dir / HIL_DIRNAME
    check_hil_dir(hil_dir)
    with staged_output(hil_dir) as stage:
        platform = write_build_platform(board, report, stage / PLATFORM_DIRNAME)
        gen = stage / "src"
        shutil.copytree(src, gen)
        write_harness_sources(gen, report, inputs)
        with tempfile.TemporaryDirectory(prefix="edgesdk-hil-cmake-") as cmake_dir:
            firmware = build_firmware(gen, stage, board, build_dir=Path(cmake_dir))

        expected = run_reference(build_dir / "model.tflite", inputs, report["rounding"],
                                 "edgesdk hil (the expected outputs)")
        for k, x in enumerate(inputs):
            np.save(stage / f"input_{k}.npy", x)
        for k, y in enumerate(expected):
            np.save(stage / f"expected_{k}.npy", y)

        symbols = _symbols(firmware)
        hil = HilBuild(
            build_dir=build_dir, hil_dir=hil_dir, firmware=hil_dir / firmware.name,
            variables_file=hil_dir / "variables.py", model_name=_model_name(gen), board_name=board.name,
            expected_lines=[expected_output_line(k, y) for k, y in enumerate(expected)],
            target_variables=_target_variables(report, symbols),
            hang_address=symbols["edgesdk_default_run"], platform=_moved(platform, stage, hil_dir))
        write_variables(hil, hil.platform.resc, stage / "variables.py")
        write_manifest(stage, trees=(BUILTIN_RESULTS, RENODE_RESULTS))
    return hil


def check_hil_dir(hil_dir: Path) -> None:
    """OUT/hil may be replaced: absent, or edgesdk's (marker) holding only what edgesdk wrote (manifest)."""
    if hil_dir.is_symlink() or (hil_dir.exists() and not hil_dir.is_dir()):
        raise UsageError(f"{hil_dir} is not a directory edgesdk made (a symbolic link or a file); edgesdk hil writes "
                         "its firmware and results there. Move it away, then run edgesdk hil again.")
    if not hil_dir.exists() or not any(hil_dir.iterdir()):
        return
    if not (hil_dir / MARKER).is_file():
        raise UsageError(f"{hil_dir} exists and was not written by this edgesdk (it has no {MARKER} file); edgesdk "
                         "hil replaces that directory as a whole, so it only replaces its own. Move your files out "
                         "of it and remove it, then run edgesdk hil again.")
    foreign = foreign_files(hil_dir)
    if foreign:
        shown = ", ".join(str(p.relative_to(hil_dir)) for p in foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise UsageError(f"{hil_dir} holds {len(foreign)} file(s) edgesdk did not write: {shown}. edgesdk hil "
                         "replaces that directory as a whole and never deletes what it did not write: move them "
                         "elsewhere, then run edgesdk hil again. (The native libraries of the Renode peripherals "
                         f"are built for you into {hil_dir / PLATFORM_DIRNAME / 'lib'}; keep libraries of your own "
                         "in a directory of your own on LD_LIBRARY_PATH.)")


def _moved(platform: BuildPlatform, stage: Path, final: Path) -> BuildPlatform:
    """The platform's paths once the stage is in place at `final`."""
    def move(path: Path) -> Path:
        return final / path.relative_to(stage)

    return dataclasses.replace(platform, directory=move(platform.directory), resc=move(platform.resc),
                               repl=move(platform.repl), board_file=move(platform.board_file),
                               library_dir=move(platform.library_dir),
                               libraries=[move(p) for p in platform.libraries])


def write_harness_sources(gen: Path, report: dict, inputs: list) -> None:
    """edgesdk_harness_config.h (options) and edgesdk_harness_io.c (input bytes, arena offsets)."""
    (gen / "edgesdk_harness_config.h").write_text(
        "/* Generated by edgesdk hil: hardware-in-the-loop harness options (edgesdk/firmware/edgesdk_harness_io.h). */\n"
        "#define EDGESDK_HARNESS_EMBEDDED_INPUTS 1\n"
        "#define EDGESDK_HARNESS_PRINT_OUTPUTS 1\n")
    lines = ["/* Generated by edgesdk hil: the embedded inputs and the outputs to print (report.json io). */",
             "#include <stdint.h>", "", '#include "edgesdk_harness_io.h"', ""]
    for k, x in enumerate(inputs):
        lines.append(f"static const uint8_t input_{k}[{x.nbytes}] = {{")
        data = x.tobytes()
        lines += ["    " + ", ".join(f"0x{b:02x}" for b in data[i:i + 16]) + "," for i in range(0, len(data), 16)]
        lines += ["};", ""]
    lines.append("const struct edgesdk_harness_tensor edgesdk_harness_inputs[] = {")
    # a streamed input (--stream-input) has no slot: the harness reads its rows from the embedded bytes
    lines += [f"    {{{s['arena_offset'] or 0}u, {0 if s.get('streamed') else s['bytes']}u, input_{k}}},"
              for k, s in enumerate(report["io"]["inputs"])]
    lines += ["};", f"const uint32_t edgesdk_harness_num_inputs = {len(inputs)}u;", ""]
    lines.append("const struct edgesdk_harness_tensor edgesdk_harness_outputs[] = {")
    lines += [f"    {{{s['arena_offset']}u, {s['bytes']}u, 0}}," for s in report["io"]["outputs"]]
    lines += ["};", f"const uint32_t edgesdk_harness_num_outputs = {len(report['io']['outputs'])}u;", ""]
    (gen / "edgesdk_harness_io.c").write_text("\n".join(lines))


def write_variables(hil: HilBuild, resc: Path, path: Path | None = None) -> None:
    """OUT/hil/variables.py (or `path`): a Robot Framework variable file (plain Python, any Robot version reads
    it). The suites use FIRMWARE and RESC in monitor commands (`@${RESC}`): Renode's path syntax, spaces escaped."""
    values = {
        "FIRMWARE": renode_path(hil.firmware).removeprefix("@"),
        "RESC": renode_path(resc).removeprefix("@"),
        "UART": "sysbus.uart0",
        "BOARD_NAME": hil.board_name,
        "MODEL_NAME": hil.model_name,
        "BANNER": f"edgesdk harness: model {hil.model_name} on {hil.board_name}",
        "EXPECTED_OUTPUT_LINES": hil.expected_lines,
        **hil.target_variables,
        "HANG_ADDRESS": f"{hil.hang_address:#010x}",
        "JUMP_TO_SELF": f"{JUMP_TO_SELF:#010x}",
        "BOOT_TIMEOUT": BOOT_TIMEOUT_S,
        "RUN_TIMEOUT": RUN_TIMEOUT_S,
    }
    text = [f"# Generated by edgesdk hil for {hil.build_dir}: variables of the Robot suites in edgesdk/hil/suites/.", ""]
    text += [f"{name} = {value!r}" for name, value in values.items()]
    (path or hil.variables_file).write_text("\n".join(text) + "\n")


def _target_variables(report: dict, symbols: dict) -> dict:
    """Every installed target's suite variables (e.g. the NPU's table address for its error suite), from its
    section of report.json (empty when the build does not use it)."""
    from ..targets import all_targets

    variables = {}
    for target in all_targets():
        variables.update(target.hil_variables(report.get("target_reports", {}).get(target.name, {}), symbols))
    return variables


def _model_name(gen: Path) -> str:
    for line in (gen / "model.h").read_text().splitlines():
        if line.startswith("#define EDGESDK_MODEL_NAME "):
            return line.split(None, 2)[2].strip().strip('"')
    raise UsageError(f"{gen / 'model.h'} does not define EDGESDK_MODEL_NAME; rebuild with 'edgesdk build'.")


def _symbols(elf_path: Path) -> dict:
    from ..elf import ElfFile

    symbols = {}
    for symbol in ElfFile.read(elf_path).symbols():
        symbols[symbol.name] = symbol.value  # the last of a name, as a dict of the table gave
    return symbols
