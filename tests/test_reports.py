"""Reports people look at (issue 14): per-layer figures in report.json and `edgesdk build -v`, the measured
profile of `edgesdk run --profile`, and the CLI conventions (-v/-q, progress, default output directory, usage
exit code, .npz inputs, --print-top, strict input shapes). The HTML page is checked in test_report_html.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, model_path

USAGE = 7


def edgesdk(*args, cwd=REPO, env=None):
    environment = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=environment, timeout=900)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


# -- per-layer estimates ---------------------------------------------------------------------------------------

def _compiled_report(model: str, target: str) -> dict:
    """report.json figures of a build without firmware (compile and render only)."""
    from edgesdk.compiler import BuildOptions, compile_model, make_report

    compiled = compile_model(model_path(model), BuildOptions(target=target, compile_firmware=False))
    return make_report(model_path(model), compiled, BuildOptions(target=target), {}, {})


@pytest.mark.parametrize("model, target", [("kws", "npu,dsp,c"), ("ds_cnn_float_io", "npu,c"), ("ad", "c")])
def test_every_op_has_figures_and_the_shares_sum_to_one(model, target):
    report = _compiled_report(model, target)
    layers = report["layers"]
    assert [layer["index"] for layer in layers] == [op["index"] for op in report["ops"]]
    assert all(layer["estimate"]["count"] is not None and layer["estimate"]["lower_bound"] is not None
               for layer in layers)
    assert abs(sum(layer["share"] for layer in layers) - 1.0) < 1e-9
    for layer in layers:
        est = layer["estimate"]
        assert est["kind"] == ("instructions" if est["unit"] == "cpu" else "cycles")
        assert 0 <= est["lower_bound"] <= est["count"], layer  # a lower bound, never above the estimate
        assert min(layer["bytes"].values()) >= 0
    # Per layer, the cost models add up to their regions' estimates (and the NPU's to its tables' cycles).
    for k, region in enumerate(report["estimate"]["regions"]):
        assert sum(layer["estimate"]["count"] for layer in layers if layer["region"] == k) == region["cycles"]
    if "npu" in report["target_reports"]:
        npu_layers = [layer for layer in layers if layer["target"] == "npu"]
        assert sum(layer["estimate"]["count"] for layer in npu_layers) == report["target_reports"]["npu"]["cycles"]


def test_npu_layers_report_the_bytes_their_commands_move():
    """The NPU's per-layer bytes are its commands' (weights compressed where smaller); the host's the graph's."""
    report = _compiled_report("kws", "npu,c")
    conv = next(layer for layer in report["layers"] if layer["type"] == "CONV_2D")
    assert conv["macs"] == 320_000  # 25x5 output x 64 channels x 10x4 filter over 1 input channel
    # Its 10 kernel rows are folded into channels (targets/npu/fold.py): the input is copied once into a
    # padded copy (4 + 49 + 5 rows of 10), which the convolution reads as 25 x 10 windows of 10 rows.
    assert conv["bytes"]["activations_read"] == 49 * 10 + 25 * 10 * 10
    assert conv["bytes"]["activations_written"] == 58 * 10 + 25 * 5 * 64
    softmax = next(layer for layer in report["layers"] if layer["type"] == "SOFTMAX")
    assert softmax["target"] == "c" and softmax["bytes"] == {"activations_read": 12, "activations_written": 12,
                                                              "weights_read": 0}


def test_npu_layers_say_why_their_cycles_exceed_the_bound():
    """Per NPU layer, the loss by cause (targets/npu/bound.py): the command overhead and lane losses add up
    to cycles - bound; the largest cause is named."""
    from edgesdk.targets.npu import bound

    report = _compiled_report("kws", "npu,c")
    npu_layers = [layer for layer in report["layers"] if layer["target"] == "npu" and layer["estimate"]["count"]]
    assert npu_layers
    for layer in npu_layers:
        est = layer["estimate"]
        own = sum(v for cause, v in est["losses"].items() if cause in bound.CAUSES)
        assert own == est["count"] - est["lower_bound"], layer
        assert est["loss"] == max(est["losses"], key=est["losses"].get)
    assert all("losses" not in layer["estimate"] for layer in report["layers"] if layer["target"] == "c")


def test_a_cascade_group_s_stripe_commands_count_for_their_layers():
    """Cascaded layers run as many stripe commands (and row shifts no op made): each counts for its layer, and
    the layers still add up to the NPU table's cycles."""
    from collections import Counter

    from edgesdk.compiler import BuildOptions, compile_model, make_report
    from edgesdk.targets.npu.tables import command_layers
    from edgesdk.tune import CascadeChoice, schedule_of

    default = compile_model(model_path("kws"), BuildOptions(compile_firmware=False))
    schedule = schedule_of(default).with_cascades([CascadeChoice((0, 1, 2), 2)])
    cascaded = compile_model(model_path("kws"), BuildOptions(schedule=schedule, compile_firmware=False))
    table = cascaded.executor.target_data["npu"][0]
    commands = Counter(command_layers(table))
    assert set(commands) <= {op.index for op in table.ops}
    assert min(commands[0], commands[1], commands[2]) > 1 and commands[3] == 1  # stripes, then a whole layer
    layers = make_report(model_path("kws"), cascaded, BuildOptions(), {}, {})["layers"]
    assert sum(layer["estimate"]["count"] for layer in layers if layer["target"] == "npu") == table.cycles
    default_layers = make_report(model_path("kws"), default, BuildOptions(), {}, {})["layers"]
    assert layers[0]["estimate"]["count"] > default_layers[0]["estimate"]["count"]  # many smaller commands cost more


def test_the_default_per_layer_estimate_asks_the_region_estimate_per_op():
    """A plugin without estimate_layers gets one from its `estimate`, op by op."""
    from edgesdk.partition.partitioner import Region
    from edgesdk.targets.api import RegionEstimate, Target

    class Counting(Target):
        def estimate(self, region, board, model=None):
            return RegionEstimate(sum(10 * (op.index + 1) for op in region.ops), 0, "lut0")

    class Op:
        def __init__(self, index):
            self.index = index

    layers = Counting().estimate_layers(Region("lut", [Op(0), Op(1), Op(2)]), board=None)
    assert [(e.op_index, e.count, e.lower_bound) for e in layers] == [(0, 10, None), (1, 20, None), (2, 30, None)]


# -- profile attribution -----------------------------------------------------------------------------------------

def test_profile_attribution_adds_up_exactly():
    """Synthetic marks: block boundaries, two blocks marked at one address, the executor before and after, two
    inferences, and cycles of three peripherals: "acc0" runs one table of four commands per visit of block 1,
    "lut0" two runs of one command each per visit of block 3 (both traced per command), "vec0" (untraced) only
    counts its cycles. Each peripheral gets its own column, named as the board names it; none is special."""
    from edgesdk.report.profile import build_profile
    from edgesdk.report.tables import profile_table

    report = {"steps": [{"target": "c", "layers": [0], "commands": None},
                        {"target": "acc", "layers": [1, 2], "commands": [1, 1, 2, 2]},
                        {"target": "c", "layers": [3], "commands": None},
                        {"target": "lut", "layers": [4, 5], "commands": [4, 5]},
                        {"target": "vec", "layers": [6], "commands": None}],
              "layers": [], "ops": [{"index": k, "type": "OP"} for k in range(7)]}

    def counters(inference, vec=0):
        return {"vec0": {"cycles": 7 * inference + vec}, "acc0": {"cycles": 0}, "lut0": {"cycles": 0}}

    def runs(acc, lut):
        return {"acc0": acc, "lut0": lut}

    events = []
    for base, k in ((1000, 0), (5000, 1)):  # the harness marks: 1000 .. 1900 and 5000 .. 5900
        events += [(0x10, base + 20, [0], runs(k, 2 * k), counters(k)),  # block 0 starts
                   (0x20, base + 120, [1], runs(k, 2 * k), counters(k)),  # block 1 (one acc0 run)
                   (0x30, base + 300, [2, 3], runs(k + 1, 2 * k), counters(k)),  # block 2 is empty: 3 starts there
                   (0x40, base + 305, [4], runs(k + 1, 2 * k + 2), counters(k)),  # block 3: two lut0 runs
                   (0x50, base + 310, [5], runs(k + 1, 2 * k + 2), counters(k, 7))]  # the end mark (5 blocks)
    observed = {"events": events, "marks": [1000, 1900, 5000, 5900],
                "traces": {"acc0": [(0, 0, 100), (0, 1, 5), (0, 2, 40), (0, 3, 9), (1, 0, 100), (1, 1, 5),
                                    (1, 2, 41), (1, 3, 9)],
                           "lut0": [(0, 0, 30), (1, 0, 50), (2, 0, 31), (3, 0, 50)]},
                "runs": runs(2, 4), "peripherals": counters(2)}
    profile = build_profile(report, observed, {"acc0", "lut0", "vec0"})
    steps = profile["steps"]
    assert [s["instructions"] for s in steps] == [2 * 100, 2 * 180, 0, 2 * 5, 2 * 5]
    assert profile["executor_instructions"] == {"before": 2 * 20, "after": 2 * 590}
    assert profile["inference_instructions"] == 1800 == sum(s["instructions"] for s in steps) + 40 + 1180
    assert [s["peripheral_cycles"] for s in steps] == [{}, {"acc0": 309}, {}, {"lut0": 161}, {"vec0": 14}]
    assert profile["peripheral_cycles"] == {"acc0": 309, "lut0": 161, "vec0": 14}
    assert steps[1]["layer_cycles"] == {"acc0": {1: 210, 2: 99}}
    assert steps[3]["layer_cycles"] == {"lut0": {4: 61, 5: 100}}  # the k-th run of the visit: its k-th command
    assert steps[4]["peripherals"]["vec0"] == {"cycles": 14}
    by_layer = {layer["index"]: layer for layer in profile["layers"]}
    assert by_layer[0]["instructions"] == 200 and by_layer[1]["instructions"] is None  # block of two layers
    assert [by_layer[k]["peripheral_cycles"] for k in range(7)] == [
        {}, {"acc0": 210}, {"acc0": 99}, {}, {"lut0": 61}, {"lut0": 100}, {"vec0": 14}]
    table = "\n".join(profile_table(profile))
    header = next(line for line in table.splitlines() if line.startswith("layer"))
    assert header.split()[5:11] == ["acc0", "cycles", "lut0", "cycles", "vec0", "cycles"]
    total = next(line for line in table.splitlines() if line.startswith("total"))
    assert total.split()[1:] == ["1,800", "309", "161", "14"]
    # Only the peripherals the build uses: one it does not use gets no column, even if it counted.
    assert build_profile(report, observed, {"acc0"})["peripheral_cycles"] == {"acc0": 309}


# -- the CLI on real models --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kws_npu(tmp_path_factory):
    out = tmp_path_factory.mktemp("kws") / "out"
    proc = edgesdk("build", model_path("kws"), "--target", "npu,dsp,c", "-o", out, "-v")
    assert proc.returncode == 0, proc.stderr
    return out, proc


@pytest.fixture(scope="module")
def hello_c(tmp_path_factory):
    out = tmp_path_factory.mktemp("hello") / "out"
    proc = edgesdk("build", model_path("hello_world"), "--target", "c", "-o", out, "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""  # -q: nothing but errors and warnings
    return out


@pytest.mark.slow
def test_build_verbose_prints_the_per_layer_table_and_progress(kws_npu):
    out, proc = kws_npu
    report = json.loads((out / "report.json").read_text())
    assert "per layer (estimates; -v):" in proc.stdout
    for layer in report["layers"]:  # one row per layer, with its share
        assert any(line.split()[:3] == [str(layer["index"]), layer["type"], layer["target"]] and
                   line.rstrip().endswith(f"{100 * layer['share']:.1f}") for line in proc.stdout.splitlines())
    progress = [line for line in proc.stderr.splitlines() if line.startswith("edgesdk: ")]
    assert any("compiling kws_ref_model.tflite" in line for line in progress)
    assert any("cross-compiling the firmware" in line for line in progress)
    assert f"report: {out / 'report.html'}" in proc.stdout


@pytest.mark.slow
def test_run_profile_adds_up_to_the_inference_exactly(kws_npu, tmp_path):
    out, _ = kws_npu
    plain = json.loads(edgesdk("run", out, "--random-input", "5", "--json", "--output-dir", tmp_path / "a").stdout)
    proc = edgesdk("run", out, "--random-input", "5", "--json", "--profile", "--output-dir", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    profile = result["profile"]
    # The marks cost nothing: the profiled run counts what the plain run counts.
    assert result["inference_instructions"] == plain["inference_instructions"] == profile["inference_instructions"]
    blocks = sum(step["instructions"] for step in profile["steps"])
    assert blocks + sum(profile["executor_instructions"].values()) == profile["inference_instructions"]
    assert profile["peripheral_cycles"] == result["peripheral_cycles"] == plain["peripheral_cycles"]
    assert set(result["peripheral_cycles"]) == {"npu0", "dsp0"} and result["peripheral_cycles"]["npu0"] > 0
    assert sum(layer["peripheral_cycles"].get("npu0", 0) for layer in profile["layers"]) == result["peripheral_cycles"]["npu0"]
    # The NPU model's cycles are the timing model's, so measured equals estimated, layer by layer.
    for layer in profile["layers"]:
        if layer["target"] == "npu":
            assert layer["peripheral_cycles"] == {"npu0": layer["estimate"]["count"]}, layer
    dsp = [step for step in profile["steps"] if step["target"] == "dsp"]  # the SOFTMAX
    assert dsp and sum(step["peripherals"]["dsp0"]["cycles"] for step in dsp) == result["peripherals"]["dsp0"]["cycles"]
    assert json.loads((tmp_path / "b" / "profile.json").read_text())["steps"] == profile["steps"]
    assert (tmp_path / "b" / "report.html").read_text().count("<svg") >= 3


@pytest.mark.slow
def test_run_profile_of_a_cpu_build_is_per_layer_and_sums_over_steps(hello_c, tmp_path):
    proc = edgesdk("run", hello_c, "--random-input", "1", "--steps", "3", "--profile", "--json",
                   "--output-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    profile = result["profile"]
    assert profile["inferences"] == 3
    assert profile["inference_instructions"] == sum(result["step_instructions"])
    layers = profile["layers"]
    assert all(layer["instructions"] > 0 for layer in layers)  # one block per host layer
    assert (sum(layer["instructions"] for layer in layers) + sum(profile["executor_instructions"].values())
            == profile["inference_instructions"])
    text = edgesdk("run", hello_c, "--random-input", "1", "--profile", "--output-dir", tmp_path).stdout
    assert "profile (measured on the built-in emulator; one inference):" in text
    assert "executor  before the first block" in text


@pytest.mark.slow
def test_run_inputs_npz_print_top_and_strict_shapes(hello_c, tmp_path):
    spec = json.loads((hello_c / "report.json").read_text())["io"]["inputs"][0]
    x = np.array([[37]], dtype=np.int8).reshape(spec["shape"])
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "by_name.npz", **{spec["name"]: x})
    np.savez(tmp_path / "in_order.npz", x)
    outputs = []
    for given in ("x.npy", "by_name.npz", "in_order.npz"):
        proc = edgesdk("run", hello_c, "--input", tmp_path / given, "--json", "--print-top", "1",
                       "--output-dir", tmp_path / given.replace(".", "_"))
        assert proc.returncode == 0, proc.stderr
        outputs.append(json.loads(proc.stdout)["outputs"][0]["values"])
    assert outputs[0] == outputs[1] == outputs[2]
    top = json.loads(proc.stdout)["top"][0]
    assert len(top) == 1 and top[0]["value"] == max(outputs[0]) and "real" in top[0]
    text = edgesdk("run", hello_c, "--input", tmp_path / "x.npy", "--print-top", "1", "--output-dir", tmp_path).stdout
    assert f"  top 1: index 0: {outputs[0][0]} (real " in text
    # A wrong name, a wrong shape of the right size, a wrong size: usage errors that say what is expected.
    np.savez(tmp_path / "wrong.npz", nope=x)
    proc = edgesdk("run", hello_c, "--input", tmp_path / "wrong.npz")
    assert proc.returncode == USAGE and f"the model's inputs are {spec['name']}" in proc.stderr
    np.save(tmp_path / "flat.npy", x.reshape(-1))
    proc = edgesdk("run", hello_c, "--input", tmp_path / "flat.npy")
    assert proc.returncode == USAGE and f"must have shape {spec['shape']}" in proc.stderr
    assert "right number of elements" in proc.stderr
    proc = edgesdk("run", hello_c, "--input", tmp_path / "x.npy", "--print-top", "0")
    assert proc.returncode == USAGE and "--print-top must be at least 1" in proc.stderr


# -- CLI conventions (no firmware) -------------------------------------------------------------------------------

def test_usage_errors_exit_with_the_documented_code(tmp_path):
    for args in (["build"], ["run"], ["build", model_path("hello_world"), "--rounding", "nearest"],
                 ["run", tmp_path, "--bogus"], ["build", model_path("hello_world"), "-v", "-q"], ["frobnicate"]):
        proc = edgesdk(*args)
        assert proc.returncode == USAGE, (args, proc.returncode, proc.stderr)
        assert "edgesdk: error:" in proc.stderr and "usage:" in proc.stderr


def test_default_output_directory_and_its_safety(tmp_path):
    model = tmp_path / "tiny.tflite"
    model.write_bytes(model_path("hello_world").read_bytes())
    proc = edgesdk("build", model, "--no-firmware", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "edgesdk-out" / "tiny"
    assert "edgesdk: no -o given: writing edgesdk-out/tiny" in proc.stderr
    assert (out / "report.json").is_file() and (out / "report.html").is_file()
    assert edgesdk("build", model, "--no-firmware", "-q", cwd=tmp_path).returncode == 0  # its own output: replaced
    mine = tmp_path / "elsewhere"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    (tmp_path / "edgesdk-out" / "notes").symlink_to(mine, target_is_directory=True)
    notes_model = tmp_path / "notes.tflite"
    notes_model.write_bytes(model.read_bytes())
    proc = edgesdk("build", notes_model, "--no-firmware", cwd=tmp_path)  # edgesdk-out/notes is a link: refused
    assert proc.returncode == USAGE and "symbolic link" in proc.stderr
    assert (mine / "notes.txt").read_text() == "mine"


def test_quiet_build_prints_nothing_and_normal_build_shows_progress(tmp_path):
    quiet = edgesdk("build", model_path("hello_world"), "--no-firmware", "-q", "-o", tmp_path / "q")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    normal = edgesdk("build", model_path("hello_world"), "--no-firmware", "-o", tmp_path / "n")
    steps = [line for line in normal.stderr.splitlines() if line.startswith("edgesdk: ")]
    assert steps[0].startswith("edgesdk: compiling hello_world_int8.tflite") and len(steps) >= 3, normal.stderr
    assert "edgesdk build: hello_world_int8.tflite ->" in normal.stdout


def test_top_values_are_largest_first_with_real_values():
    from edgesdk.cli import top_values

    y = np.array([[3, -7, 9, 9, 0]], dtype=np.int8)
    top = top_values(y, {"quant": {"scale": [0.5], "zero_point": [1]}}, 3)
    assert top == [{"index": 2, "value": 9, "real": 4.0}, {"index": 3, "value": 9, "real": 4.0},
                   {"index": 0, "value": 3, "real": 1.0}]
    assert top_values(np.array([1.5, 2.5], np.float32), {"quant": None}, 5) == [{"index": 1, "value": 2.5},
                                                                                {"index": 0, "value": 1.5}]


def test_tune_and_hil_say_what_they_do_on_stderr(tmp_path):
    log = tmp_path / "log.json"
    proc = edgesdk("tune", model_path("hello_world"), "--verify", "0", "--seconds", "5", "-o", log)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("edgesdk: ")]
    assert lines[0] == ("edgesdk: tuning hello_world_int8.tflite: search budget 5 s, then 0 candidate(s) built and "
                        "run on the emulator"), lines
    assert any(line.startswith("edgesdk: tune: baseline (default build):") for line in lines)
    assert any(line.startswith("edgesdk: tune: search:") for line in lines)
    assert json.loads(log.read_text())["search"]["seconds"] == 5
    quiet = edgesdk("tune", model_path("hello_world"), "--verify", "0", "--seconds", "5", "-o", log, "-q")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    proc = edgesdk("hil", tmp_path / "no-build")
    assert proc.returncode == USAGE and "not an edgesdk build directory" in proc.stderr


def test_tune_stops_its_search_at_the_budget(monkeypatch):
    """The search budget counts on a clock that advances one second per candidate evaluated (no wall-clock
    dependence): a 5 s budget evaluates the candidates started at 0 .. 5 s, and the log and progress say the
    budget stopped it (unbudgeted, the SRAM search on KWS evaluates many more)."""
    import edgesdk.tune.search as search_module
    from edgesdk.tune.tuner import TuneOptions, tune

    clock = {"now": 0.0, "evaluations": 0}

    class FakeTime:
        @staticmethod
        def monotonic():
            return clock["now"]

    real_evaluate = search_module.Search.evaluate

    def evaluate(self, schedule):
        result = real_evaluate(self, schedule)  # raises OutOfTime past the deadline, before any work
        clock["now"] += 1.0
        clock["evaluations"] += 1
        return result

    monkeypatch.setattr(search_module, "time", FakeTime)
    monkeypatch.setattr(search_module.Search, "evaluate", evaluate)
    said = []
    log = tune(model_path("kws"), TuneOptions(objective="sram", verify=0, seconds=5), said.append)
    assert clock["evaluations"] == 6 and clock["now"] == 6.0
    assert log["search"]["complete"] is False and log["search"]["seconds"] == 5
    assert any(line.startswith("search:") and "(stopped by the time budget)" in line for line in said), said
