"""The target plugin API (edgesdk/targets/api.py) and the out-of-tree example target in examples/.

The example package (examples/edgesdk-lutaccel, target "lut": a lookup-table engine for int8 activations)
is pip-installed into a scratch directory that only the subprocesses below see, then discovered through
its entry point and used in a real build that runs bit-exact on the emulator - what a vendor's user does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgesdk import targets as registry
from edgesdk.errors import EmulatorError, UsageError
from edgesdk.targets.api import DeviceFault, EmulatedDevice, PeripheralModel, RegionCode, Target

import edgesdk
import modelgen
from venvtools import clean_env, make_venv, pip_build_isolation

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "edgesdk-lutaccel"
GUIDE = REPO / "docs" / "porting-a-new-accelerator.md"


# -- registry and API -----------------------------------------------------------------------------------
def test_builtin_targets_are_plugins_with_every_part():
    for name in ("npu", "c"):
        target = registry.get_target(name)
        assert isinstance(target, Target) and target.name == name
        assert target.support.ops, name
        assert target.firmware_sources() and all(Path(p).is_file() for p in target.firmware_sources())
    npu = registry.get_target("npu")
    assert [m.type for m in npu.peripherals()] == ["edgesdk-npu1"]
    assert registry.peripheral_model("edgesdk-npu1").renode_type == "Edgesdk.Npu1"


def test_builtins_are_registered_as_entry_points():
    from importlib import metadata

    names = {ep.name: ep.value for ep in metadata.entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert names.get("npu") == "edgesdk.targets.npu:TARGET"
    assert names.get("c") == "edgesdk.targets.c:TARGET"


class _Loader:
    def __init__(self, obj):
        self.obj = obj

    def __call__(self):
        if isinstance(self.obj, Exception):
            raise self.obj
        return self.obj


class _Named(Target):
    name = "other"
    support = object()


@pytest.mark.parametrize("obj, fragment", [
    (ImportError("No module named 'vendor_npu'"), "failed to load: ImportError"),
    ("not a target", "is a str, not an edgesdk.targets.api.Target"),
    (_Named(), "calls itself 'other'"),
    (type("NoOps", (Target,), {"name": "broken"})(), "declares no supported ops"),
])
def test_a_broken_plugin_is_named_not_a_traceback(monkeypatch, obj, fragment):
    fake = dict(registry._registry())
    fake["broken"] = ("vendor_pkg:TARGET", _Loader(obj))
    monkeypatch.setattr(registry, "_registry", lambda: fake)
    registry.get_target.cache_clear()
    try:
        with pytest.raises(registry.PluginError) as err:
            registry.get_target("broken")
        assert fragment in str(err.value) and "vendor_pkg:TARGET" in str(err.value)
        assert "broken" not in [t.name for t in registry.all_targets()]  # skipped, the others still load
        assert {"npu", "c"} <= {t.name for t in registry.all_targets()}
    finally:
        registry.get_target.cache_clear()


def test_unknown_target_and_missing_hardware_are_usage_errors():
    from edgesdk.board import load_board

    board = load_board("riscv-npu")
    with pytest.raises(UsageError, match="Unknown target 'vendorx'.*pip-installed"):
        registry.parse_target_list("vendorx,c", board)

    class NeedsWidget(Target):
        name = "widget"
        peripheral_types = ("acme-widget",)

    with pytest.raises(UsageError, match="no peripheral of type acme-widget"):
        NeedsWidget().check_board(board)


def test_region_code_blocks_in_order():
    code = RegionCode().add("layer 1", "a();").add("layer 2", "b();")
    assert code.blocks == [("layer 1", "a();"), ("layer 2", "b();")]


# -- Python peripheral models on the emulator -------------------------------------------------------------
def test_guest_bus_bounds_and_read_only_flash():
    from edgesdk.emulator.devices import GuestBus

    flash, sram = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
    bus = GuestBus([("flash", 0x1000, flash, False), ("sram", 0x2000, sram, True)])
    bus.write(0x2000 + 60, b"\x01\x02\x03\x04")
    assert bus.read(0x2000 + 60, 4) == b"\x01\x02\x03\x04"
    with pytest.raises(DeviceFault, match="outside every memory"):
        bus.view(0x2000 + 61, 4)
    with pytest.raises(DeviceFault, match="read-only flash"):
        bus.view(0x1000, 4, write=True)


def test_a_faulting_python_peripheral_stops_the_firmware_with_its_message(tmp_path, monkeypatch):
    """A model that raises (a DMA outside memory, a model bug) stops the CPU; the run names the peripheral."""
    from edgesdk.board import load_board
    from edgesdk.emulator.machine import run_elf
    from edgesdk.firmware_build import build_firmware, render_board_files

    class Exploding(EmulatedDevice):
        def read(self, offset, size):
            raise DeviceFault(f"register {offset:#x} is write-only")

        def write(self, offset, size, value):
            pass

    board = _board_with_widget(tmp_path, load_board("riscv-npu"))
    monkeypatch.setattr(registry, "peripheral_model",
                        lambda t: PeripheralModel("acme-widget", "Acme.Widget", lambda p, b: Exploding()) if t == "acme-widget" else None)
    gen = tmp_path / "gen"
    render_board_files(board, gen)
    (gen / "model.h").write_text("#include <stdint.h>\n")
    (gen / "model.c").write_text(
        '#include <stdint.h>\n#include "board.h"\n'
        "int32_t widget_peek(void);\n"
        "int32_t widget_peek(void) { return (int32_t)*(volatile uint32_t *)(uintptr_t)(BOARD_WIDGET0_BASE + 8u); }\n")
    elf = _harness_elf(gen, tmp_path, board, build_firmware)
    with pytest.raises(EmulatorError, match="peripheral widget0: the read of 4 bytes at offset 0x8 rejected: register 0x8 is write-only"):
        run_elf(elf, board)


def _board_with_widget(tmp_path, base_board):
    data = json.loads(base_board.path.read_text())
    data["name"] = "widget-board"
    data["peripherals"]["widget0"] = {"type": "acme-widget", "base": "0x40008000", "size": 4096}
    folder = tmp_path / "boards" / "widget-board"
    folder.mkdir(parents=True)
    (folder / "board.json").write_text(json.dumps(data))
    from edgesdk.board import load_board
    return load_board(str(folder))


def _harness_elf(gen, tmp_path, board, build_firmware):
    """A firmware whose main calls widget_peek() (the harness in firmware/ needs a generated model)."""
    (gen / "model.h").write_text(
        "#include <stdint.h>\n#define EDGESDK_DEFAULT_ARENA_BYTES 16u\n#define EDGESDK_OK 0\n"
        "#define EDGESDK_ERR_ARENA_CORRUPT (-5)\n"
        "struct edgesdk_default_inputs { int8_t *x; };\nstruct edgesdk_default_outputs { int8_t *y; };\n"
        "extern uint8_t edgesdk_arena[EDGESDK_DEFAULT_ARENA_BYTES];\n"
        "void edgesdk_default_arena_io(struct edgesdk_default_inputs *i, struct edgesdk_default_outputs *o);\n"
        "int32_t edgesdk_default_run(const struct edgesdk_default_inputs *i, struct edgesdk_default_outputs *o);\n"
        "void edgesdk_default_reset(void);\n")
    (gen / "model.c").write_text(
        (gen / "model.c").read_text() +
        '#include "model.h"\nuint8_t edgesdk_arena[EDGESDK_DEFAULT_ARENA_BYTES] __attribute__((section(".noinit")));\n'
        "void edgesdk_default_arena_io(struct edgesdk_default_inputs *i, struct edgesdk_default_outputs *o)\n"
        "{ i->x = (int8_t *)edgesdk_arena; o->y = (int8_t *)edgesdk_arena; }\n"
        "int32_t edgesdk_default_run(const struct edgesdk_default_inputs *i, struct edgesdk_default_outputs *o)\n"
        "{ (void)i; (void)o; return widget_peek(); }\nvoid edgesdk_default_reset(void) {}\n")
    return build_firmware(gen, tmp_path / "out", board, werror=True, build_dir=tmp_path / "build")


# -- the out-of-tree example target, installed with pip -------------------------------------------------------
@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    """Environment for subprocesses in which examples/edgesdk-lutaccel is pip-installed (and nothing else
    changed): `pip install --target DIR`, then DIR on PYTHONPATH."""
    site = tmp_path_factory.mktemp("plugin-site")
    source = copy_example(tmp_path_factory.mktemp("plugin-src"))  # pip builds in the source tree: not in ours
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *pip_build_isolation(),
                           "--target", str(site), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def copy_example(dest_dir: Path) -> Path:
    import shutil

    dest = dest_dir / EXAMPLE.name
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return dest


def _edgesdk(env, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True, env=env)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def activation_chain_model() -> bytes:
    """input -> CONV_2D (NPU) -> LOGISTIC -> CONV_2D -> TANH -> RELU6 -> FULLY_CONNECTED -> RELU: a mix of layers
    for the NPU and activations for the LUT-1."""
    rng = np.random.default_rng(7)
    m = modelgen.ModelBuilder()
    q = (0.05, -3)
    x = m.tensor((1, 8, 8, 4), "int8", *q)

    def conv(src, src_q, out_c, out_q):
        w = m.const(rng.integers(-127, 128, (out_c, 3, 3, 4 if src == x else 8)).astype(np.int8), "int8", scale=0.01, zero_point=0)
        b = m.const(rng.integers(-500, 500, out_c).astype(np.int32), "int32", scale=src_q[0] * 0.01, zero_point=0)
        y = m.tensor((1, 8, 8, out_c), "int8", *out_q)
        m.op("CONV_2D", [src, w, b], [y], "Conv2DOptions", Padding=modelgen.SAME, StrideH=1, StrideW=1,
             DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=0)
        return y

    c1 = conv(x, q, 8, (0.08, 5))
    s1 = m.tensor((1, 8, 8, 8), "int8", 1 / 256, -128)
    m.op("LOGISTIC", [c1], [s1])
    c2 = conv(s1, (1 / 256, -128), 8, (0.06, -2))
    t2 = m.tensor((1, 8, 8, 8), "int8", 1 / 128, 0)
    m.op("TANH", [c2], [t2])
    r2 = m.tensor((1, 8, 8, 8), "int8", 0.03, -100)
    m.op("RELU6", [t2], [r2])
    fw = m.const(rng.integers(-127, 128, (10, 512)).astype(np.int8), "int8", scale=0.004, zero_point=0)
    fb = m.const(rng.integers(-300, 300, 10).astype(np.int32), "int32", scale=0.03 * 0.004, zero_point=0)
    f = m.tensor((1, 10), "int8", 0.1, 4)
    m.op("FULLY_CONNECTED", [r2, fw, fb], [f], "FullyConnectedOptions", FusedActivationFunction=0)
    y = m.tensor((1, 10), "int8", 0.07, -20)
    m.op("RELU", [f], [y])
    return m.build([x], [y])


def test_example_target_is_discovered(plugin_env):
    out = _edgesdk(plugin_env, "inspect", "--list-targets", "--board", "riscv-npu-lut", "--json").stdout
    rows = {r["name"]: r for r in json.loads(out)["targets"]}
    assert rows["lut"]["origin"] == "edgesdk_lutaccel:TARGET" and rows["lut"]["usable_on_board"]
    assert rows["lut"]["peripheral_types"] == ["vendorx-lut1"]
    ops = _edgesdk(plugin_env, "inspect", "--list-ops", "--board", "riscv-npu-lut", "--target", "lut,c").stdout
    assert "constraint_per_tensor_quantization" in ops
    # On a board without the LUT-1, asking for it is a clear error; the rest of edgesdk is unaffected.
    proc = _edgesdk(plugin_env, "inspect", "--list-ops", "--target", "lut,c", check=False)
    assert proc.returncode == 7 and "no peripheral of type vendorx-lut1" in proc.stderr


def test_example_target_build_runs_bit_exact(plugin_env, tmp_path):
    model = tmp_path / "activations.tflite"
    model.write_bytes(activation_chain_model())
    out = tmp_path / "build"
    built = _edgesdk(plugin_env, "build", model, "-o", out, "--board", "riscv-npu-lut", "--target", "lut,npu,c", "--werror")
    report = json.loads((out / "report.json").read_text())
    # Its report section, its summary line and its part of the safety proof.
    assert report["target_reports"]["lut"]["cycles"] == 451 and report["target_reports"]["lut"]["tables"] == 4
    assert "lut: 451 cycles (estimate) in 4 job(s) of 3 job list(s); 4 distinct table(s), 1024 B" in built.stdout
    assert report["verified"]["lut_jobs"] == 4
    assert (out / "src" / "model_lut.c").is_file()
    placed = {op["type"]: op["target"] for op in report["ops"]}
    assert placed == {"CONV_2D": "npu", "LOGISTIC": "lut", "TANH": "lut", "RELU6": "lut", "FULLY_CONNECTED": "npu", "RELU": "lut"}
    assert [r["target"] for r in report["regions"]] == ["npu", "lut", "npu", "lut", "npu", "lut"]
    lut_estimates = [r for r in report["estimate"]["regions"] if r["target"] == "lut"]
    assert [r["cycles"] for r in lut_estimates] == [16 + 128, 16 + 128 + 16 + 128, 16 + 3]
    assert (out / "src" / "targets" / "lut" / "lutaccel.c").is_file()
    run = json.loads(_edgesdk(plugin_env, "run", out, "--random-input", "0", "--check", "--json", "--profile").stdout)
    assert run["reference"]["bit_exact"], run
    # Both native models in one emulator, each counting its own cycles: the LUT-1's (the plugin's C model)
    # and the NPU's, equal to the NPU target's estimate (its timing model is the C model's).
    assert run["peripherals"]["lut0"] == {"cycles": 16 + 128 + 16 + 128 + 16 + 128 + 16 + 3, "runs": 4}
    npu = run["peripherals"]["npu0"]
    assert npu["cycles"] == report["target_reports"]["npu"]["cycles"] > 0 and npu["starts"] == 3
    assert set(run["peripherals"]) == {"lut0", "npu0"}
    assert run["peripheral_cycles"] == {"lut0": 451, "npu0": npu["cycles"]}
    # The profile treats the plugin's peripheral exactly as the NPU: both models report their commands, so both
    # get their cycles per block and per layer (each layer's equal to its estimate), adding up to the run's.
    profile = run["profile"]
    assert profile["peripheral_cycles"] == run["peripheral_cycles"]
    for peripheral, target in (("lut0", "lut"), ("npu0", "npu")):
        layers = [layer for layer in profile["layers"] if layer["target"] == target]
        assert [layer["peripheral_cycles"] for layer in layers] == [{peripheral: layer["estimate"]["count"]}
                                                                    for layer in layers]
        assert sum(layer["estimate"]["count"] for layer in layers) == run["peripheral_cycles"][peripheral]
    assert [layer["peripheral_cycles"]["lut0"] for layer in profile["layers"] if layer["target"] == "lut"] == [
        16 + 128, 16 + 128, 16 + 128, 16 + 3]
    html = (out / "run" / "report.html").read_text()
    assert "measured lut0 cycles" in html and "measured npu0 cycles" in html and "NPU cycles" not in html
    text = _edgesdk(plugin_env, "run", out, "--random-input", "0", "--profile").stdout
    npu_line = next(line for line in text.splitlines() if line.startswith("npu0: "))
    assert "lut0: cycles 451, runs 4" in text and f" cycles {npu['cycles']}, " in npu_line
    header = next(line for line in text.splitlines() if line.startswith("layer "))
    assert "lut0 cycles" in header and "npu0 cycles" in header
    assert "npu cycles" not in text.lower() and "dsp0" not in text  # per peripheral, only those the build uses


def test_example_target_follows_priority(plugin_env, tmp_path):
    """With 'lut' last the activations never reach it (NPU-1 takes them as TABLE commands, the host core
    whatever the NPU refuses), and the result is the same."""
    model = tmp_path / "activations.tflite"
    model.write_bytes(activation_chain_model())
    out = tmp_path / "build_c_first"
    _edgesdk(plugin_env, "build", model, "-o", out, "--board", "riscv-npu-lut", "--target", "npu,c,lut")
    report = json.loads((out / "report.json").read_text())
    targets = {op["target"] for op in report["ops"]}
    assert "npu" in targets and targets <= {"npu", "c"}
    run = json.loads(_edgesdk(plugin_env, "run", out, "--random-input", "1", "--check", "--json").stdout)
    assert run["reference"]["bit_exact"] and "lut0" not in run["peripherals"] and run["peripherals"]["npu0"]["cycles"]


def guide_commands() -> list:
    """The shell commands of the guide's "Try the example" block."""
    text = GUIDE.read_text()
    section = text[text.index("## 1. Try the example"):text.index("## 2.")]
    block = section[section.index("```sh") + len("```sh"):]
    return [line.strip() for line in block[:block.index("```")].splitlines() if line.strip()]


def test_committed_example_model_is_the_one_this_file_builds():
    assert (EXAMPLE / "models" / "activations.tflite").read_bytes() == activation_chain_model()


def test_guide_commands_work_as_written(tmp_path):
    """docs/porting-a-new-accelerator.md, section 1, run line by line in a fresh virtual environment that
    sees the edgesdk under test and the packages of the environment running the tests (tests/venvtools.py:
    also when that environment is itself a virtualenv), from a directory laid out like a checkout."""
    venv = tmp_path / "venv"
    make_venv(venv, extra_paths=[Path(edgesdk.__file__).resolve().parents[1]])
    work = tmp_path / "checkout"
    copy_example(work / "examples")
    env = clean_env(venv)
    commands = guide_commands()
    assert commands[0].startswith("pip install") and commands[-1].startswith("edgesdk run")
    outputs = []
    for command in commands:
        argv = command.split()
        if argv[0] == "edgesdk":  # the console script of the edgesdk the venv sees
            argv = ["python", "-m", "edgesdk"] + argv[1:]
        proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        outputs.append(proc.stdout)
    assert "lut: VendorX LUT-1" in outputs[1] and "[edgesdk_lutaccel:TARGET]" in outputs[1]
    assert "reference (LiteRT BUILTIN_REF): bit-exact" in outputs[-1]
    assert "lut0: cycles 451, runs 4" in outputs[-1]  # 3 x (16 + 512/4) + (16 + ceil(10/4))


# -- every hook of the plugin API, used by the example (in this process) ------------------------------------
@pytest.fixture
def lut(monkeypatch):
    """The example's target registered in this process (as its entry point would), for the compiler's passes
    and the proof without a firmware build; yields the target object."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in [m for m in sys.modules if m.startswith("edgesdk_lutaccel")]:
        monkeypatch.delitem(sys.modules, name)
    import edgesdk_lutaccel

    fake = dict(registry._registry())
    fake["lut"] = ("edgesdk_lutaccel:TARGET", lambda: edgesdk_lutaccel.TARGET)
    monkeypatch.setattr(registry, "_registry", lambda: fake)
    registry.get_target.cache_clear()
    yield edgesdk_lutaccel.TARGET
    registry.get_target.cache_clear()


def _compile(tmp_path, model_bytes, target="lut,npu,c", **options):
    from edgesdk.compiler import BuildOptions, compile_model

    model = tmp_path / "model.tflite"
    model.write_bytes(model_bytes)
    return compile_model(model, BuildOptions(board="riscv-npu-lut", target=target, compile_firmware=False, **options))


def _lut_jobs(compiled):
    return [job for jl in compiled.executor.target_data["lut"].job_lists for job in jl.jobs]


def relu_twice_model() -> bytes:
    """input -> RELU -> RELU, both with the same quantization: one table serves both layers."""
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 64), "int8", 0.05, -3)
    a = m.tensor((1, 64), "int8", 0.05, -3)
    y = m.tensor((1, 64), "int8", 0.05, -3)
    m.op("RELU", [x], [a])
    m.op("RELU", [a], [y])
    return m.build([x], [y])


def test_example_tables_live_in_one_named_blob_shared_between_layers(lut, tmp_path):
    compiled = _compile(tmp_path, relu_twice_model())
    blob = compiled.executor.blobs["lut_tables"]
    jobs = _lut_jobs(compiled)
    assert blob.symbol == "edgesdk_lut_tables" and len(blob.data) == 256  # one table, not one per layer
    assert [job.table_offset for job in jobs] == [0, 0]
    assert compiled.executor.consts == []  # no per-op constant arrays
    chain = _compile(tmp_path, activation_chain_model())
    assert [j.table_offset for j in _lut_jobs(chain)] == [0, 256, 512, 768]
    assert len(chain.executor.blobs["lut_tables"].data) == 4 * 256


def test_example_renders_its_own_templates(lut, tmp_path):
    from edgesdk.aot.render import render_sources

    compiled = _compile(tmp_path, activation_chain_model())
    paths = {p.name: p for p in render_sources(compiled.executor, tmp_path / "src", source="model.tflite",
                                               board="riscv-npu-lut", rounding="ref")}
    text = paths["model_lut.c"].read_text()
    assert "const struct lutaccel_job edgesdk_lut_jobs_1[2] = {" in text
    assert "/* layer 4: RELU6 -> 't9' */" in text and "4 distinct table(s), 1024 bytes" in text
    assert "extern const struct lutaccel_job edgesdk_lut_jobs_2[1];" in paths["model_lut.h"].read_text()
    assert "lutaccel_run_jobs(edgesdk_lut_tables, edgesdk_arena, edgesdk_lut_jobs_0, 1u);" in paths["model.c"].read_text()
    assert "edgesdk_lut_tables" in paths["model_data.c"].read_text()
    # Its flash: the job lists it renders (24 bytes per job); the blob is counted by the core with every blob.
    assert lut.flash_bytes(compiled.executor) == 4 * 24
    assert [lut.flash_lower_bound(r) for r in compiled.regions if r.target == "lut"] == [24, 48, 24]


@pytest.mark.parametrize("tamper, message", [
    (lambda job, blob: setattr(job, "table_offset", blob - 100), "is not a word-aligned 256-byte entry"),
    (lambda job, blob: setattr(job, "table_offset", blob), "is not a word-aligned 256-byte entry"),
    (lambda job, blob: setattr(job, "src_offset", job.src_offset + 8), "reads arena bytes"),
    (lambda job, blob: setattr(job, "dst_offset", 10_000), "writes arena bytes 10000..10511"),
    (lambda job, blob: setattr(job, "length", job.length + 1), "is not the layer's 512 elements"),
])
def test_example_proof_refuses_a_tampered_build(lut, tmp_path, tamper, message):
    from edgesdk.verify import VerificationError, verify_build

    compiled = _compile(tmp_path, activation_chain_model())
    assert verify_build(compiled)["lut_jobs"] == 4  # the untampered build: every job proven
    job = _lut_jobs(compiled)[1]  # layer 3, TANH
    tamper(job, len(compiled.executor.blobs["lut_tables"].data))
    with pytest.raises(VerificationError, match=rf"LUT-1 job list 1 job 0 \(layer 3\).*{message}"):
        verify_build(compiled)


def test_example_in_place_rule_applies_to_its_own_ops_only(lut, tmp_path, monkeypatch):
    """The LUT-1 says "exact" for its layers; the planner asks it for those layers only and uses the rule
    (outputs over their inputs); without the rule its layers get no overlap permission, the NPU's keep theirs."""
    asked = []
    original = type(lut).in_place
    monkeypatch.setattr(type(lut), "in_place", lambda self, op, x: asked.append(op) or original(self, op, x))
    compiled = _compile(tmp_path, activation_chain_model())
    lut_ops = [op for r in compiled.regions if r.target == "lut" for op in r.ops]
    assert asked and set(asked) <= set(lut_ops)
    used = {o.op.index: o.distance for o in compiled.plan.in_place()}
    assert {1, 3, 4} <= set(used) and all(used[i] is None for i in (1, 3, 4))  # exact: same offset
    assert all(job.src_offset == job.dst_offset for job in _lut_jobs(compiled)[:3])
    lut_indices = {op.index for op in lut_ops}
    permitted = lambda c: {(o.op.index, o.distance) for o in c.plan.overlaps}
    npu_permitted = {p for p in permitted(compiled) if p[0] not in lut_indices}
    assert npu_permitted  # the NPU's convolutions and FC have their raster permissions

    monkeypatch.setattr(type(lut), "in_place", lambda self, op, x: None)
    without = _compile(tmp_path, activation_chain_model())
    assert not {i for i, _ in permitted(without)} & lut_indices
    assert {p for p in permitted(without) if p[0] not in lut_indices} == npu_permitted
    # On the host core the same activations follow the C target's own rule, not the LUT-1's.
    asked.clear()
    monkeypatch.setattr(type(lut), "in_place", lambda self, op, x: asked.append(op) or original(self, op, x))
    _compile(tmp_path, activation_chain_model(), target="npu,c,lut")
    assert asked == []


def test_example_layer_switch_goes_through_a_schedule(lut, tmp_path):
    from edgesdk.tune.schedule import Schedule, schedule_of

    default = _compile(tmp_path, activation_chain_model())
    schedule = schedule_of(default)
    assert schedule.switch(3, "dma_table") is False and schedule.switch(0, "dma_table") is None
    assert not any(job.dma_table for job in _lut_jobs(default))
    tuned = Schedule.from_json(schedule.with_layer(3, dma_table=True).to_json())  # as a tuning log carries it
    assert tuned.differences(schedule) == ["op 3 (TANH): dma_table False -> True"]
    compiled = _compile(tmp_path, activation_chain_model(), schedule=tuned)
    assert [job.dma_table for job in _lut_jobs(compiled)] == [False, True, False, False]
    assert schedule_of(compiled).switch(3, "dma_table") is True
    report = lut.report(compiled.executor)
    assert report["dma_table_layers"] == [3] and report["cycles"] == lut.report(default.executor)["cycles"] + 64
    assert [e.cycles for e in compiled.executor.region_estimates if e and e.unit == "lut0"] == [144, 288 + 64, 19]


def test_tune_searches_the_example_switch(lut, tmp_path):
    """`edgesdk tune` knows no switch by name: the LUT-1's own dma_table is a coordinate of the search, and
    flipping it is a candidate whose predicted LUT-1 cycles are 64 higher."""
    from edgesdk.tune.search import Evaluator, Search

    model = tmp_path / "activations.tflite"
    model.write_bytes(activation_chain_model())
    evaluator = Evaluator(model, "riscv-npu-lut", ["lut", "npu", "c"], "ref")
    default = evaluator.evaluate(None)
    search = Search(evaluator, "latency", seed=0, seconds=60)
    coordinates = search.coordinates(default.schedule, search._accepting_targets(default))
    assert ("switch", 3, "dma_table") in coordinates
    assert {c[2] for c in coordinates if c[0] == "switch"} <= {"dma_table", "compress_weights", "fc_paired"}
    flipped, = search._alternatives(default.schedule, ("switch", 3, "dma_table"), {})
    assert flipped.layer(3).to_json()["switches"] == {"lut": {"dma_table": True}}
    candidate = evaluator.evaluate(flipped)
    assert candidate.figures.cycles["lut0"] == default.figures.cycles["lut0"] + 64


def test_example_report_and_summary(lut, tmp_path):
    compiled = _compile(tmp_path, activation_chain_model())
    section = lut.report(compiled.executor)
    assert section == {"cycles": 451, "jobs": 4, "tables": 4, "table_bytes": 1024, "dma_table_layers": [],
                       "job_lists": [{"symbol": "edgesdk_lut_jobs_0", "layers": [1], "cycles": 144},
                                     {"symbol": "edgesdk_lut_jobs_1", "layers": [3, 4], "cycles": 288},
                                     {"symbol": "edgesdk_lut_jobs_2", "layers": [6], "cycles": 19}]}
    assert lut.summary(section) == ["lut: 451 cycles (estimate) in 4 job(s) of 3 job list(s); 4 distinct table(s), 1024 B"]
    assert lut.summary({}) == []  # a build without LUT-1 layers prints nothing for it


def test_example_describes_its_failure():
    sys.path.insert(0, str(EXAMPLE))
    try:
        from edgesdk_lutaccel import TARGET
    finally:
        sys.path.remove(str(EXAMPLE))
    assert "lut_error=" in TARGET.harness_failure() and TARGET.harness_includes == ("lutaccel.h",)
    assert TARGET.describe_failure("run failed: status -22 lut_error=-22 lut_layer=3\n") == (
        "The VendorX LUT-1 failed at layer 3: the LUT-1 could not read its input or table, or write its output "
        "(a bus error) (hal/lutaccel.h lists the codes).")
    assert TARGET.describe_failure("run failed: status -1 npu_error=3 npu_command=2") is None


def _lut_board(tmp_path, **changes):
    from edgesdk.board import load_board

    data = json.loads((EXAMPLE / "edgesdk_lutaccel" / "boards" / "riscv-npu-lut" / "board.json").read_text())
    data["name"] = "lut-variant"
    data["peripherals"]["lut0"].update(changes)
    folder = tmp_path / "boards" / "lut-variant"
    folder.mkdir(parents=True)
    (folder / "board.json").write_text(json.dumps(data))
    return load_board(str(folder))


@pytest.mark.parametrize("changes, message", [
    ({"size": 256}, r"maps 256 bytes, but the LUT-1's registers and table take 0x200"),
    ({"lookups_per_cycle": "4"}, r"needs 'lookups_per_cycle' as a positive integer \(it has '4'\)"),
    ({"startup_cycles": 0}, r"needs 'startup_cycles' as a positive integer"),
])
def test_example_check_board_reads_its_peripheral_entry(lut, tmp_path, changes, message):
    board = _lut_board(tmp_path, **changes)
    with pytest.raises(UsageError, match=message):
        lut.check_board(board)


def test_example_timing_comes_from_the_board_entry(lut, tmp_path):
    """The cost model and the emulator's model read the board file's figures for its LUT-1."""
    from edgesdk.partition.partitioner import Region

    board = _lut_board(tmp_path, lookups_per_cycle=8, startup_cycles=4)
    lut.check_board(board)
    relu = Region("lut", [op for op in _compile(tmp_path, relu_twice_model()).graph.ops])
    assert lut.estimate(relu, board).cycles == 2 * (4 + 64 // 8)
    spec = lut.peripherals()[0].create(board.peripherals["lut0"], board)
    assert spec.settings == (8, 4, 4)  # lookups_per_cycle, startup_cycles, table_dma_bytes_per_cycle


def test_example_native_model_links_beside_the_npu(lut):
    """The riscv-npu-lut board's two native models go into one emulator library, each with its own symbols."""
    from edgesdk.board import load_board
    from edgesdk.emulator.machine import native_library, native_peripherals

    found = native_peripherals(load_board("riscv-npu-lut"))
    assert [(periph.name, spec.symbol_prefix) for periph, spec in found] == [("npu0", "npu"), ("lut0", "lut1")]
    lib = native_library([spec for _, spec in found])
    assert all(hasattr(lib, f"{prefix}_{name}") for prefix in ("npu", "lut1")
               for name in ("create", "destroy", "set_bus", "reg_read", "reg_write"))


@pytest.mark.slow
def test_example_device_fault_is_reported_with_its_layer(lut, tmp_path, monkeypatch):
    """A LUT-1 whose bus refuses writes to the arena: the run fails with the driver's status, the harness
    prints the LUT-1's error and layer (Target.harness_failure), the runner explains them (describe_failure)."""
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.runner import failure_message, random_inputs, run_inference
    from edgesdk_lutaccel.device import Lut1Device

    class RefusingBus:
        def __init__(self, bus):
            self.bus = bus

        def view(self, address, length, write=False):
            if write:
                raise DeviceFault(f"write of {length} bytes at {address:#x} refused")
            return self.bus.view(address, length)

    class FaultyLut(Lut1Device):
        def attach(self, bus):
            super().attach(RefusingBus(bus))

    monkeypatch.setattr(lut, "peripherals", lambda: [PeripheralModel("vendorx-lut1", "VendorX.Lut1", lambda p, b: FaultyLut())])
    model = tmp_path / "activations.tflite"
    model.write_bytes(activation_chain_model())
    out = tmp_path / "build"
    report = build(model, out, BuildOptions(board="riscv-npu-lut", target="lut,npu,c", werror=True))
    assert "LUT_BUS" in (out / "src" / "model.h").read_text()  # its error_codes, named for the firmware
    result = run_inference(out, random_inputs(report, 0))
    assert result.exit_code != 0 and "lut_error=-22 lut_layer=1" in result.uart
    assert "The VendorX LUT-1 failed at layer 1: the LUT-1 could not read its input or table, or write its " \
           "output (a bus error)" in failure_message(result)


@pytest.mark.slow
def test_example_dma_table_schedule_runs_bit_exact(lut, plugin_env, tmp_path):
    """A tuning log that switches layer 3's table to the LUT-1's own DMA: built and run through the CLI, the
    device spends 64 more cycles on that layer and the output is still LiteRT's."""
    from edgesdk.tune.log import LOG_FORMAT, LOG_VERSION, file_sha256
    from edgesdk.tune.schedule import schedule_of

    model = tmp_path / "activations.tflite"
    model.write_bytes(activation_chain_model())
    schedule = schedule_of(_compile(tmp_path, activation_chain_model())).with_layer(3, dma_table=True)
    log = tmp_path / "tuning.json"
    log.write_text(json.dumps({"format": LOG_FORMAT, "format_version": LOG_VERSION, "model": model.name,
                               "model_sha256": file_sha256(model), "board": "riscv-npu-lut",
                               "targets": ["lut", "npu", "c"], "rounding": "ref", "schedule": schedule.to_json()}))
    out = tmp_path / "build"
    _edgesdk(plugin_env, "build", model, "-o", out, "--board", "riscv-npu-lut", "--target", "lut,npu,c",
             "--tuning-log", log, "--werror")
    assert json.loads((out / "report.json").read_text())["target_reports"]["lut"]["dma_table_layers"] == [3]
    assert "LUTACCEL_JOB_DMA_TABLE" in (out / "src" / "model_lut.c").read_text()
    run = json.loads(_edgesdk(plugin_env, "run", out, "--random-input", "2", "--check", "--json").stdout)
    assert run["reference"]["bit_exact"], run
    assert run["peripherals"]["lut0"] == {"cycles": 451 + 64, "runs": 4}


def test_plugin_relates_its_repl_attributes_to_board_json(lut, monkeypatch):
    """PeripheralModel.repl_attributes: what a plugin's .repl entry says beyond base, size and IRQ is the plugin's
    to define; the core checks it against board.json, scaffolds it and gives the emulator's machine its
    properties, exactly as it does for the NPU's windows and bandwidths."""
    from edgesdk.board import load_board
    from edgesdk.renode.platform import check_against_board, platform_board, repl_path, scaffold_repl
    from edgesdk.renode.repl import parse_repl
    from edgesdk.targets.api import ReplAttributes
    from edgesdk_lutaccel import native_model

    class LookupRate(ReplAttributes):
        def expected(self, peripheral, board):
            return {"lookupsPerCycle": peripheral.props["lookups_per_cycle"]}

        def props(self, attributes):
            return {"lookups_per_cycle": attributes["lookupsPerCycle"]} if "lookupsPerCycle" in attributes else {}

    model = PeripheralModel("vendorx-lut1", "VendorX.Lut1", native_model, native=True, repl_attributes=LookupRate())
    monkeypatch.setattr(lut, "peripherals", lambda: [model])
    board = load_board("riscv-npu-lut")
    text = repl_path(board).read_text()
    assert "'lut0' has lookupsPerCycle: None in the .repl but board.json gives 4" in \
        check_against_board(parse_repl(text), board)
    entry = "lut0: VendorX.Lut1 @ sysbus <0x40002000, +0x1000>"
    described = parse_repl(text.replace(entry, entry + "\n    lookupsPerCycle: 4\n    IRQ -> plic@5"))
    assert check_against_board(described, board) == []
    assert platform_board(described).peripherals["lut0"].props == {"lookups_per_cycle": 4, "irq": 5}
    scaffold = scaffold_repl(board)
    assert scaffold.entries["lut0"].attributes == {"lookupsPerCycle": 4}
    assert check_against_board(scaffold, board) == []


def test_example_names_its_flash_data_for_the_export_readme(lut):
    from edgesdk.export import _constants_what

    assert _constants_what(["lut", "npu", "c"]) == "weights, lookup tables with their job lists and command tables"
