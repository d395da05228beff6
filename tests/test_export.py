"""The export (issue 14): a build's model as a static library that a user links into firmware of their own.

`edgesdk build --export` (or `edgesdk export OUT`) writes OUT/export/<model>/ and <model>.tar. The end-to-end tests
extract the tar outside the repository and, in a clean environment (PATH=/usr/bin:/bin, nothing of edgesdk), build
lib<model>.a with its Makefile, with its CMake project on its own and as a subdirectory of the app's CMake project;
link it into examples/export-app (its own main.c, startup code and linker script for the riscv-npu memory map);
run each app on the built-in emulator and compare every output byte for byte with LiteRT's reference kernels:
KWS for `--target c` and `--target npu,c`, and a stateful model over several inferences with a reset in between.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, model_path
from edgesdk.compiler import BuildOptions, build
from edgesdk.emulator import run_elf
from edgesdk.export import export_build, library_name
from edgesdk.reference import run_reference_sequence
from edgesdk.runner import NUMPY_DTYPES, random_inputs

EXAMPLE_APP = REPO / "examples" / "export-app"
STATE_MODEL = REPO / "tests" / "models" / "state" / "accumulator_int8.tflite"
CLEAN_ENV_PATH = "/usr/bin:/bin"
needs_tools = pytest.mark.skipif(
    any(shutil.which(tool, path=CLEAN_ENV_PATH) is None for tool in ("riscv64-unknown-elf-gcc", "make", "cmake")),
    reason=f"the RISC-V cross compiler, make and cmake must be in {CLEAN_ENV_PATH}")


def _clean_env(home: Path) -> dict:
    """What a user's shell without edgesdk would have: no virtualenv, no PYTHONPATH, no ccache settings."""
    return {"PATH": CLEAN_ENV_PATH, "HOME": str(home), "LANG": "C"}


def _run(cmd: list, cwd: Path, env: dict) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


# ---- layout and metadata (no cross compile) -------------------------------------------------------------

@pytest.fixture(scope="module")
def npu_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "out"
    report = build(model_path("kws"), out, BuildOptions(target="npu,c", compile_firmware=False))
    result = export_build(out, measure=False)
    return out, report, result


def test_export_layout_holds_the_library_and_no_harness(npu_export):
    out, report, result = npu_export
    folder = result.dir
    assert folder == out / "export" / "kws_ref_model" and result.tar == out / "export" / "kws_ref_model.tar"
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    library = [f for f in files if not f.startswith("src/targets/c/")]
    assert library == ["CMakeLists.txt", "Makefile", "README.md", "include/model.h", "metadata.json", "src/board.h",
                       "src/model.c", "src/model_data.c", "src/model_data.h", "src/model_npu.c", "src/model_npu.h",
                       "src/targets/npu/npu_driver.c", "src/targets/npu/npu_driver.h"]
    kernels = {f.rsplit("/", 1)[1] for f in files if f.startswith("src/targets/c/")}
    assert {"edgesdk_softmax.c", "edgesdk_softmax.h"} <= kernels  # KWS's one C layer, and only what it needs:
    assert not any(k.startswith(("edgesdk_conv", "edgesdk_add", "edgesdk_pool")) for k in kernels), sorted(kernels)
    names = {f.rsplit("/", 1)[-1] for f in files}
    for f in files:  # self-contained: every header a file includes with quotes is in the export
        included = re.findall(r'#include "([^"]+)"', (folder / f).read_text()) if f.endswith((".c", ".h")) else []
        assert all(h.rsplit("/", 1)[-1] in names for h in included), (f, included)
    text = "".join((folder / f).read_text() for f in files)
    assert "edgesdk_harness" not in text and "edgesdk_console" not in text  # the test harness stays out
    # Self-contained: nothing points back into the repository or the build directory.
    assert str(REPO) not in text and str(out) not in text
    # The NPU driver's base address: the library's own board.h, each value overridable with -D.
    board_h = (folder / "src" / "board.h").read_text()
    assert "#ifndef BOARD_NPU0_BASE\n#define BOARD_NPU0_BASE 0x40000000u\n#endif" in board_h
    assert "BOARD_UART0" not in board_h and "BOARD_SRAM" not in board_h  # only what the targets drive


def test_tar_is_the_folder_and_reproducible(npu_export):
    out, _, result = npu_export
    with tarfile.open(result.tar) as tar:
        members = {m.name: m for m in tar.getmembers()}
        for path in result.dir.rglob("*"):
            if path.is_file():
                member = members[f"kws_ref_model/{path.relative_to(result.dir)}"]
                assert tar.extractfile(member).read() == path.read_bytes()
                assert member.mtime == 0 and member.uid == 0 and member.uname == ""
    first = result.tar.read_bytes()
    again = export_build(out, measure=False)  # replaces the earlier export
    assert again.tar.read_bytes() == first and not list(out.glob(".export.*"))


def test_metadata_describes_memory_tensors_state_errors_and_toolchain(npu_export):
    out, report, result = npu_export
    meta = json.loads((result.dir / "metadata.json").read_text())
    assert meta == result.metadata
    assert meta["format"] == "edgesdk-model-library" and meta["model"]["sha256"] == report["model_sha256"]
    assert meta["library"]["file"] == "libkws_ref_model.a"
    arena = meta["memory"]["arena"]
    assert arena == {"symbol": "edgesdk_arena", "section": ".noinit", "memory": "ram", "bytes": 11840,
                     "guard_bytes": 32, "alignment": 16, "zeroed_at_boot": False}
    constants = meta["memory"]["constants"]
    npu_tables = report["target_reports"]["npu"]["table_bytes"]
    assert constants["bytes"] == report["memory"]["weights_bytes"] + npu_tables == report["memory"]["constants_bytes"]
    assert meta["memory"]["stack"]["bytes"] is None and "--no-measure" in meta["memory"]["stack"]["reason"]
    (x,), (y,) = meta["inputs"], meta["outputs"]
    assert x == {"name": "input_1", "c_name": "input_1", "dtype": "int8", "c_type": "int8_t", "shape": [1, 49, 10, 1],
                 "bytes": 490, "arena_offset": report["io"]["inputs"][0]["arena_offset"],
                 "quantization": {"scale": [pytest.approx(0.5847029)], "zero_point": [83]}}
    assert y["bytes"] == 12 and y["quantization"]["zero_point"] == [-128]
    assert meta["state"] == {"bytes": 0, "reset_function": "edgesdk_default_reset", "buffers": []}
    codes = {c["name"]: c["value"] for c in meta["api"]["status_codes"]}
    assert codes == {"EDGESDK_OK": 0, "EDGESDK_ERR_NPU": -1, "EDGESDK_ERR_NPU_TIMEOUT": -2, "EDGESDK_ERR_NPU_ID": -3,
                     "EDGESDK_ERR_ARENA_CORRUPT": -5}
    assert [t["name"] for t in meta["targets"]] == ["npu", "c"]
    (npu0,) = meta["targets"][0]["peripherals"]
    assert npu0["name"] == "npu0" and npu0["base"] == "0x40000000" and npu0["base_macro"] == "BOARD_NPU0_BASE"
    assert meta["targets"][1]["peripherals"] == []
    tools = meta["toolchain"]
    assert tools["prefix"] == "riscv64-unknown-elf-" and tools["arch_flags"] == ["-march=rv32imac_zicsr", "-mabi=ilp32"]
    assert tools["link_arch_flags"] == ["-march=rv32imac", "-mabi=ilp32"] and "-O2" in tools["cflags"]
    # model.h names the same codes: the public API and the metadata agree.
    header = (result.dir / "include" / "model.h").read_text()
    for name, value in codes.items():
        assert re.search(rf"#define {name} \(?{value}\)?\n", header), name


def test_model_h_documents_only_the_build_targets_errors_and_the_state(tmp_path):
    out = tmp_path / "acc"
    build(STATE_MODEL, out, BuildOptions(target="c", compile_firmware=False))
    header = (out / "src" / "model.h").read_text()
    assert "EDGESDK_ERR_NPU" not in header and "#define EDGESDK_ERR_ARENA_CORRUPT (-5)" in header
    assert "keeps EDGESDK_DEFAULT_STATE_BYTES bytes of state" in header and "'Variable': 32 bytes" in header
    assert "Re-entrancy: none" in header and "section \".noinit\"" in header
    meta = export_build(out, measure=False).metadata
    assert meta["state"]["bytes"] == 32 and meta["state"]["buffers"][0]["bytes"] == 32
    assert not (out / "export" / "accumulator_int8" / "src" / "board.h").exists()  # no driver needs one


def test_export_command_on_an_existing_build(tmp_path):
    out = tmp_path / "out"
    build(STATE_MODEL, out, BuildOptions(target="c", compile_firmware=False))
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "export", str(out), "--no-measure"], capture_output=True,
                          text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "export/accumulator_int8.tar" in proc.stdout and (out / "export" / "accumulator_int8.tar").is_file()
    bad = subprocess.run([sys.executable, "-m", "edgesdk", "export", str(tmp_path)], capture_output=True, text=True,
                         cwd=REPO, timeout=600)
    assert bad.returncode == 7 and "not an edgesdk build directory" in bad.stderr and "Traceback" not in bad.stderr


def test_targets_error_codes_are_their_drivers_codes():
    """model.h's EDGESDK_ERR_* for the NPU and the DSP are the values their drivers return (npu_driver.h,
    edgesdk_dsp_runtime.h), every one the generated code can pass on."""
    from edgesdk.targets import get_target

    def defines(path, prefix):
        return {name: int(value) for name, value in re.findall(rf"#define ({prefix}\w+) \((-\d+)\)", path.read_text())}

    npu = defines(REPO / "edgesdk" / "targets" / "npu" / "hal" / "npu_driver.h", "EDGESDK_NPU_ERR_")
    assert {value: name for name, value, _ in get_target("npu").error_codes} == {
        npu["EDGESDK_NPU_ERR_STATUS"]: "NPU", npu["EDGESDK_NPU_ERR_TIMEOUT"]: "NPU_TIMEOUT",
        npu["EDGESDK_NPU_ERR_ID"]: "NPU_ID"}  # EDGESDK_NPU_ERR_ARGS: the generated code always passes 2 regions
    dsp = defines(REPO / "edgesdk" / "targets" / "dsp" / "runtime" / "edgesdk_dsp_runtime.h", "EDGESDK_DSP_ERR_")
    assert {f"EDGESDK_{name.replace('DSP_', 'DSP_ERR_', 1)}": value
            for name, value, _ in get_target("dsp").error_codes} == dsp


def test_library_name_is_a_c_identifier():
    assert library_name("kws_ref_model") == "kws_ref_model"
    assert library_name("my model-v2.1") == "my_model_v2_1" and library_name("3d") == "m_3d"


# ---- end to end: extract, build with make and CMake, link an app of its own, run, compare ---------------

# (model, targets, inferences, reset every, whether the build also makes its own firmware image: the export is
# the same either way and the app does not use it, so only the small model's build pays for one)
CASES = {
    "kws-c": (model_path("kws"), "c", 2, 0, False),
    "kws-npu": (model_path("kws"), "npu,c", 2, 0, False),
    "stateful-c": (STATE_MODEL, "c", 6, 3, True),  # 6 inferences, a new sequence (reset) before the 4th
}


@needs_tools
@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_exported_library_in_an_app_of_its_own_is_bit_exact(tmp_path, case):
    model, targets, steps, reset_every, firmware = CASES[case]
    out = tmp_path / "out"
    report = build(model, out, BuildOptions(target=targets, export=True, compile_firmware=firmware))
    lib = report["export"]["library"].removeprefix("lib").removesuffix(".a")
    meta = json.loads((out / report["export"]["dir"] / "metadata.json").read_text())
    assert meta["memory"]["stack"]["bytes"] > 0 and meta["memory"]["library"]["flash_bytes"] > 0

    # Outside the repository and the build: the tar, and a copy of the example app.
    user = tmp_path / "user"
    user.mkdir()
    with tarfile.open(out / report["export"]["tar"]) as tar:
        tar.extractall(user, filter="data")
    shutil.copytree(EXAMPLE_APP, user / "app")
    model_dir = user / lib
    inputs = [random_inputs(report, seed) for seed in range(steps)]
    (user / "inputs.bin").write_bytes(b"".join(x.tobytes() for step in inputs for x in step))
    env = _clean_env(user)

    # 1. The library's Makefile (called by the app's), then the app.
    _run(["make", "-C", user / "app", f"MODEL_DIR={model_dir}", f"INPUTS={user / 'inputs.bin'}",
          f"RESET_EVERY={reset_every}", "BUILD_DIR=build-make"], user, env)
    assert (model_dir / f"lib{lib}.a").is_file()
    # 2. The library's CMake project, linked into the same app.
    _run(["cmake", "-S", model_dir, "-B", user / "lib-cmake"], user, env)
    _run(["cmake", "--build", user / "lib-cmake"], user, env)
    _run(["make", "-C", user / "app", f"MODEL_DIR={model_dir}", f"MODEL_LIB={user / 'lib-cmake' / f'lib{lib}.a'}",
          f"INPUTS={user / 'inputs.bin'}", f"RESET_EVERY={reset_every}", "BUILD_DIR=build-cmake"], user, env)
    # 3. The app's own CMake project, with the library folder as a subdirectory.
    _run(["cmake", "-S", user / "app", "-B", user / "app" / "build-subdir", f"-DMODEL_DIR={model_dir}",
          f"-DINPUTS={user / 'inputs.bin'}", f"-DRESET_EVERY={reset_every}"], user, env)
    _run(["cmake", "--build", user / "app" / "build-subdir"], user, env)

    expected = []
    for start in range(0, steps, reset_every or steps):  # the reference restarts where the app resets
        expected += run_reference_sequence(out / "model.tflite", inputs[start:start + (reset_every or steps)], "ref")
    for build_dir in ("build-make", "build-cmake", "build-subdir"):
        result = run_elf(user / "app" / build_dir / "app.elf", "riscv-npu", timeout_s=600)
        assert result.exit_code == 0, result.uart
        got = _outputs(result.uart, meta["outputs"], steps)
        for step in range(steps):
            for k, want in enumerate(expected[step]):
                assert np.array_equal(got[step][k], np.asarray(want).reshape(got[step][k].shape)), (build_dir, step, k)
        assert result.uart.count("app: reset") == ((steps - 1) // reset_every if reset_every else 0)
        assert bool(result.peripheral_stats["npu0"]["cycles"]) == targets.startswith("npu")  # the npu,c library's tables ran
        # The static stack figure bounds what the library used (the app adds its own frames and memcpy's).
        assert result.stack_bytes_used <= meta["memory"]["stack"]["bytes"] + 512, result.stack_bytes_used
    if reset_every:  # the state mattered: the sequence differs from running each step from a fresh state
        fresh = run_reference_sequence(out / "model.tflite", [inputs[1]], "ref")[0]
        assert not all(np.array_equal(a, b) for a, b in zip(fresh, expected[1]))


def _outputs(uart: str, specs: list, steps: int) -> list:
    """The app's 'app: step S output K <hex>' lines, decoded with the metadata's dtypes and shapes."""
    found = {(int(s), int(k)): bytes.fromhex(h) for s, k, h in re.findall(r"app: step (\d+) output (\d+) ([0-9a-f]*)", uart)}
    assert sorted(found) == [(s, k) for s in range(steps) for k in range(len(specs))], uart
    return [[np.frombuffer(found[s, k], NUMPY_DTYPES[spec["dtype"]]).reshape(spec["shape"])
             for k, spec in enumerate(specs)] for s in range(steps)]


def test_stack_measure_adds_a_kernels_declared_bound_to_a_dynamic_frame():
    """GCC marks a variable-length array's frame "dynamic"; a kernel that declares a bound (the compiler keeps its
    layers within it) is measured with it, any other dynamic frame leaves the stack unmeasured, with the reason."""
    from edgesdk.export import measure

    bounds = measure._declared_bounds(REPO / "edgesdk" / "kernels", ["edgesdk_conv2d_paired.c"])
    assert bounds == {"edgesdk_conv2d_s8_paired": 2048}
    frames = {"api": (32, "static"), "edgesdk_conv2d_s8_paired": (352, "dynamic")}
    calls = {"api": {"edgesdk_conv2d_s8_paired"}}
    problems = []
    assert measure._deepest("api", frames, calls, set(), problems, (), {}, bounds) == 32 + 352 + 2048
    assert problems == []
    measure._deepest("api", frames, calls, set(), problems, (), {}, {})
    assert problems and "dynamic frame" in problems[0]


def test_readme_names_what_each_used_target_keeps_in_flash():
    """The README's constants sentence comes from the targets (Target.flash_data), not from a built-in name."""
    from edgesdk.export import _constants_what

    assert _constants_what(["c"]) == "weights"
    assert _constants_what(["npu", "c"]) == "weights and command tables"
    assert _constants_what(["npu", "dsp", "c"]) == "weights, command tables and serialized subgraphs"
