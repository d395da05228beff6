"""Several models in one firmware (`edgesdk build --name`): real models built with different names link into one
image, whose harness runs each on the emulator, bit-exact with the reference; and two exported libraries of
named models link into an application of their own (examples/export-app/two_models.c)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from conftest import REPO, model_path
from edgesdk.compiler import BuildOptions, build
from edgesdk.elf import ElfFile
from edgesdk.emulator import elf_symbol, run_elf
from edgesdk.cli import main
from edgesdk.image import load_image, run_image
from edgesdk.reference import run_reference
from edgesdk.run_io import NUMPY_DTYPES
from edgesdk.runner import random_inputs

EXAMPLE_APP = REPO / "examples" / "export-app"


def _defined(elf) -> dict:
    """{symbol name: how many times the ELF defines it}."""
    counts: dict = {}
    for symbol in ElfFile(elf.read_bytes()).symbols():
        if symbol.shndx != 0 and symbol.name:
            counts[symbol.name] = counts.get(symbol.name, 0) + 1
    return counts


@pytest.mark.slow
def test_four_named_models_in_one_firmware_are_bit_exact(tmp_path, capsys):
    """KWS on the NPU and the CPU, KWS on the CPU alone, the anomaly detector on the CPU, KWS on the DSP and the CPU: four
    arenas, four sets of weights, the NPU's command tables and the DSP's graph each prefixed, and the kernels
    the CPU builds share (softmax, fully connected) linked once. Each named build also builds its own firmware,
    but the last (sources only: the image needs no more)."""
    builds = {"kws": (model_path("kws"), "npu,c"), "anomaly": (model_path("ad"), "c"), "kws_cpu": (model_path("kws"), "c"),
              "kws_dsp": (model_path("kws"), "dsp,c")}
    reports = {}
    for name, (model, target) in builds.items():
        options = BuildOptions(target=target, name=name, werror=True, compile_firmware=name != "kws_dsp")
        reports[name] = build(model, tmp_path / name, options)
        assert reports[name]["name"] == name
    assert main(["link", *(str(tmp_path / name) for name in builds), "-o", str(tmp_path / "image"), "--werror",
                 "-q"]) == 0  # edgesdk link: edgesdk.image.link_builds
    image = load_image(tmp_path / "image")
    assert [m["name"] for m in image["models"]] == list(builds)

    elf = tmp_path / "image" / "firmware.elf"
    defined = _defined(elf)
    for name in builds:
        for symbol in ("run", "reset", "arena_io", "arena", "arena_block"):
            assert defined.get(f"edgesdk_{name}_{symbol}") == 1, (name, symbol)
    assert not any(s.startswith("edgesdk_default_") or s == "edgesdk_arena" for s in defined)
    assert defined.get("edgesdk_softmax_s8") == 1  # called by all three models' code, linked once
    assert any(s.startswith("edgesdk_kws__npu_table_") for s in defined)
    assert any(s.startswith("edgesdk_kws_dsp__") for s in defined)  # its serialized graph, its weights
    kernel_files = sorted(p.name for p in (tmp_path / "image" / "src" / "targets").rglob("*.c"))
    assert kernel_files == sorted(set(kernel_files))

    for seed in (0, 1):
        inputs = {name: random_inputs(reports[name], seed) for name in builds}
        run = run_image(tmp_path / "image", inputs)
        assert run.exit_code == 0 and run.statuses == {name: 0 for name in builds}, run.uart
        assert "models kws, anomaly, kws_cpu, kws_dsp" in run.uart
        assert run.peripheral_stats["npu0"]["cycles"] > 0  # the kws model's layers ran on the NPU
        assert run.peripheral_stats["dsp0"]["cycles"] > 0  # and kws_dsp's on the DSP
        for name, (model, _) in builds.items():
            want = run_reference(model, inputs[name], "ref")
            assert len(run.outputs[name]) == len(want)
            for k, (got, expected) in enumerate(zip(run.outputs[name], want)):
                assert np.array_equal(got, expected), f"seed {seed}: model {name} output {k} differs"

    # edgesdk run IMAGE --check: each model checked against its own build's model and reference
    assert main(["run", str(tmp_path / "image"), "--random-input", "2", "--check", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["exit_code"] == 0 and list(summary["models"]) == list(builds)
    for name, model in summary["models"].items():
        assert model["status"] == 0 and model["reference"]["bit_exact"], name
        saved = np.load(tmp_path / "image" / "run" / name / "output_0.npy")
        assert saved.reshape(-1).tolist() == model["outputs"][0]["values"]
    assert set(summary["peripherals"]) == {"npu0", "dsp0"}  # those the models use


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None or shutil.which("make") is None,
                    reason="the RISC-V cross compiler and make are needed")
def test_two_exported_libraries_link_into_one_application(tmp_path):
    """The user's side: libkws.a and libanomaly.a, both holding the fully connected kernel, link with the
    application of examples/export-app/two_models.c (both headers in one file, -Werror); each model's outputs,
    left in its arena, equal the reference."""
    models = {"kws": model_path("kws"), "anomaly": model_path("ad")}
    meta, libs, includes = {}, [], []
    for name, model in models.items():
        # no firmware image of its own: the exports are linked into the application below
        report = build(model, tmp_path / name, BuildOptions(target="c", name=name, export=True,
                                                            compile_firmware=False))
        folder = tmp_path / name / report["export"]["dir"]
        meta[name] = json.loads((folder / "metadata.json").read_text())
        assert meta[name]["api"]["run"] == f"edgesdk_{name}_run" and report["export"]["library"] == f"lib{name}.a"
        subprocess.run(["make", "-C", folder], check=True, capture_output=True)
        libs.append(folder / f"lib{name}.a")
        includes.append(f"-I{folder / 'include'}")
    kernel = "src/targets/c/edgesdk_fully_connected.c"
    assert all(kernel in m["library"]["sources"] for m in meta.values())  # the same kernel in both libraries

    app = tmp_path / "app.elf"
    flags = ["-march=rv32imac_zicsr", "-mabi=ilp32", "--specs=picolibc.specs", "-std=c11", "-O2", "-Wall", "-Wextra",
             "-Werror", "-ffunction-sections", "-fdata-sections"]
    objects = []
    for source in ("two_models.c", "platform.c"):
        obj = tmp_path / source.replace(".c", ".o")
        subprocess.run(["riscv64-unknown-elf-gcc", *flags, *includes, f"-I{EXAMPLE_APP}", "-c", EXAMPLE_APP / source,
                        "-o", obj], check=True, capture_output=True, text=True)
        objects.append(obj)
    link = subprocess.run(["riscv64-unknown-elf-gcc", "-march=rv32imac", "-mabi=ilp32", "--specs=picolibc.specs",
                           "-nostartfiles", "-Wl,--gc-sections", "-T", EXAMPLE_APP / "riscv-npu.ld", "-o", app,
                           *objects, *libs, "-lm"], capture_output=True, text=True)
    assert link.returncode == 0, link.stderr  # no duplicate kernel, weight or arena symbol

    writes, reads, inputs = [], [], {}
    for seed, name in enumerate(models):
        arena = elf_symbol(app, meta[name]["memory"]["arena"]["symbol"])
        inputs[name] = random_inputs({"io": {"inputs": meta[name]["inputs"]}}, seed)
        writes += [(arena + t["arena_offset"], x.tobytes()) for t, x in zip(meta[name]["inputs"], inputs[name])]
        reads += [(name, t, arena + t["arena_offset"]) for t in meta[name]["outputs"]]
    result = run_elf(app, "riscv-npu", writes=writes, reads=[(a, t["bytes"]) for _, t, a in reads])
    assert result.exit_code == 0 and "app: both models ran" in result.uart, result.uart
    got = {name: [] for name in models}
    for (name, spec, _), raw in zip(reads, result.reads):
        got[name].append(np.frombuffer(raw, NUMPY_DTYPES[spec["dtype"]]).reshape(spec["shape"]))
    for name, model in models.items():
        for k, (have, want) in enumerate(zip(got[name], run_reference(model, inputs[name], "ref"))):
            assert np.array_equal(have, want), f"{name} output {k}"
