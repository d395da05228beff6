"""edgesdk tune (edgesdk/tune/): schedules and their JSON, applying a schedule or a tuning log, the search,
and tuned firmware that is bit-exact, reproducible and measures what its log says."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import model_path
from edgesdk.cli import main
from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.partition.partitioner import target_of
from edgesdk.errors import UsageError
from edgesdk.tune import CascadeChoice, Schedule, schedule_of
from edgesdk.tune.log import LOG_FORMAT, LOG_VERSION, file_sha256
from edgesdk.tune.search import Evaluator, Search, output_fingerprint
from edgesdk.tune.tuner import TuneOptions, tune
from modelgen import conv_model

KWS, IC = model_path("kws"), model_path("ic")


@pytest.fixture(scope="module")
def kws_default():
    return compile_model(KWS, BuildOptions(compile_firmware=False))


def _npu_conv_layers(schedule: Schedule) -> list:
    return [layer for layer in schedule.layers if layer.switch("compress_weights") is not None]


def _compressed_layer(compiled) -> int:
    """The first NPU layer whose weights the codec does make smaller (the switch matters there)."""
    from edgesdk.targets.npu.hw.weight_codec import compress_if_smaller

    ops = {op.index: op for op in compiled.graph.ops}
    return next(layer.index for layer in _npu_conv_layers(schedule_of(compiled))
                if compress_if_smaller(ops[layer.index].inputs[1].data.astype(np.int8).tobytes()) is not None)


# -- the schedule and its JSON ------------------------------------------------------------------------------
def test_default_schedule_describes_the_default_build(kws_default):
    schedule = schedule_of(kws_default)
    assert [(layer.index, layer.type, layer.target) for layer in schedule.layers] == \
        [(op.index, op.type, target) for op, target in target_of(kws_default.regions).items()]
    assert schedule.cascades == ()  # KWS: the default keeps every layer whole (the 5 % cycle budget)
    assert all(layer.switch("compress_weights") for layer in _npu_conv_layers(schedule))
    assert all(layer.switch("fc_paired") is None for layer in schedule.layers)  # no FULLY_CONNECTED on the host
    # Each layer's switches are its target's declared ones, with their defaults, stored under the target's name.
    conv = _npu_conv_layers(schedule)[0]
    assert conv.to_json()["switches"] == {"npu": {"compress_weights": True}}


def test_schedule_json_round_trip(kws_default):
    default = schedule_of(kws_default)
    first_conv = _npu_conv_layers(default)[0].index
    edited = (default.with_layer(first_conv, compress_weights=False)
              .with_cascades([CascadeChoice((0, 1, 2), 2)]))
    for schedule in (default, edited):
        back = Schedule.from_json(json.loads(json.dumps(schedule.to_json())))
        assert back == schedule and back.key() == schedule.key()
    assert edited != default and edited.key() != default.key()
    assert edited.differences(default) == [f"op {first_conv} (CONV_2D): compress_weights True -> False",
                                           "cascades: none -> ops [0, 1, 2] in 2-row stripes"]
    with pytest.raises(UsageError, match="malformed"):
        Schedule.from_json({"layers": [{"index": 0, "type": "CONV_2D"}], "cascades": []})
    with pytest.raises(UsageError, match="malformed"):
        Schedule.from_json({"layers": [{"index": 0, "type": "CONV_2D", "target": "npu", "compress_weights": 1}],
                            "cascades": []})
    with pytest.raises(UsageError, match="malformed"):
        Schedule.from_json({"layers": [{"index": 0, "type": "CONV_2D", "target": "npu",
                                        "switches": {"npu": {"compress_weights": "no"}}}], "cascades": []})
    with pytest.raises(UsageError, match="malformed"):
        Schedule.from_json({"layers": [{"index": 0, "type": "CONV_2D", "target": "npu", "switches": [1]}],
                            "cascades": []})


def test_the_first_formats_flat_switches_are_read_as_the_layers_own_targets(kws_default):
    """Version 1 logs wrote a layer's switches as keys of the layer entry; they still apply, to its target."""
    edited = schedule_of(kws_default).with_layer(_compressed_layer(kws_default), compress_weights=False)
    old = edited.to_json()
    for layer in old["layers"]:
        layer.update(layer.pop("switches").get(layer["target"], {}))
    assert any("compress_weights" in layer for layer in old["layers"])
    assert Schedule.from_json(old) == edited


def test_switches_are_kept_per_target(kws_default):
    default = schedule_of(kws_default)
    conv = _npu_conv_layers(default)[0].index
    moved = default.with_layer(conv, compress_weights=False).with_layer(conv, target="c")
    layer = moved.layer(conv)
    assert layer.switch("compress_weights") is None  # the C target's table has no such switch
    assert layer.switches_of("npu") == {"compress_weights": False}  # kept for the NPU, applied only there
    assert Schedule.from_json(moved.to_json()) == moved


def test_applying_the_default_schedule_reproduces_the_default_build(kws_default):
    applied = compile_model(KWS, BuildOptions(schedule=schedule_of(kws_default)))
    assert output_fingerprint(applied) == output_fingerprint(kws_default)


def test_applying_a_schedule_is_deterministic_and_does_what_it_says(kws_default):
    default = schedule_of(kws_default)
    layer = _compressed_layer(kws_default)
    schedule = default.with_layer(layer, compress_weights=False).with_cascades([CascadeChoice((0, 1, 2), 2)])
    a, b = (compile_model(KWS, BuildOptions(schedule=schedule)) for _ in range(2))
    assert output_fingerprint(a) == output_fingerprint(b) != output_fingerprint(kws_default)
    assert schedule_of(a) == schedule
    assert [(tuple(op.index for op in g.ops), g.stripe_height) for g in a.plan.cascades] == [((0, 1, 2), 2)]
    assert a.plan.arena_bytes < kws_default.plan.arena_bytes  # the group the 5 % budget rejects: 10,880 B
    dense = compile_model(KWS, BuildOptions(schedule=default.with_layer(layer, compress_weights=False)))
    assert sum(t.cycles for t in dense.executor.target_data["npu"]) > sum(t.cycles for t in kws_default.executor.target_data["npu"])
    compressed = [sum(label.endswith("(compressed)") for _, _, label in c.executor.blobs["npu_weights"].labels)
                  for c in (kws_default, dense)]
    assert compressed[1] == compressed[0] - 1


def test_a_schedule_the_build_cannot_follow_is_refused(kws_default):
    default = schedule_of(kws_default)
    softmax = next(layer.index for layer in default.layers if layer.type == "SOFTMAX")
    with pytest.raises(UsageError, match="cannot run it"):
        compile_model(KWS, BuildOptions(schedule=default.with_layer(softmax, target="npu")))
    with pytest.raises(UsageError, match="not in the target list"):
        compile_model(KWS, BuildOptions(schedule=default.with_layer(softmax, target="dsp")))
    with pytest.raises(UsageError, match="not a chain"):  # a group must be consecutive NPU layers
        compile_model(KWS, BuildOptions(schedule=default.with_cascades([CascadeChoice((0, 2), 1)])))
    with pytest.raises(UsageError, match="stripe height"):
        compile_model(KWS, BuildOptions(schedule=default.with_cascades([CascadeChoice((0, 1, 2), 0)])))
    with pytest.raises(UsageError, match="does not describe this model"):
        compile_model(IC, BuildOptions(schedule=default))


# -- tuning logs --------------------------------------------------------------------------------------------
def _write_log(path: Path, compiled, model, **overrides) -> Path:
    log = {"format": LOG_FORMAT, "format_version": LOG_VERSION, "model": Path(model).name,
           "model_sha256": file_sha256(model), "board": compiled.board.name, "targets": compiled.targets,
           "rounding": "ref", "objective": "sram", "schedule": schedule_of(compiled).to_json()}
    log.update(overrides)
    path.write_text(json.dumps(log))
    return path


def test_a_log_for_another_model_board_or_target_list_is_refused(kws_default, tmp_path, capsys):
    good = _write_log(tmp_path / "kws.json", kws_default, KWS)
    applied = compile_model(KWS, BuildOptions(tuning_log=str(good)))
    assert output_fingerprint(applied) == output_fingerprint(kws_default)
    assert applied.schedule.origin == {"log": str(good), "log_sha256": file_sha256(good)}

    with pytest.raises(UsageError, match=r"model_sha256.*re-run 'edgesdk tune"):
        compile_model(IC, BuildOptions(tuning_log=str(good)))
    with pytest.raises(UsageError, match=r"targets .*\['npu', 'c'\].*\['npu', 'dsp', 'c'\].*re-run"):
        compile_model(KWS, BuildOptions(target="npu,dsp,c", tuning_log=str(good)))
    with pytest.raises(UsageError, match="rounding 'ref'.*'tflm'"):
        compile_model(KWS, BuildOptions(rounding="tflm", tuning_log=str(good)))
    other_board = _write_log(tmp_path / "board.json", kws_default, KWS, board="another-board")
    with pytest.raises(UsageError, match="board 'another-board'.*'riscv-npu'"):
        compile_model(KWS, BuildOptions(tuning_log=str(other_board)))
    first = schedule_of(kws_default).to_json()  # a version 1 log: the switches flat in each layer entry
    for layer in first["layers"]:
        layer.update(layer.pop("switches").get(layer["target"], {}))
    v1 = _write_log(tmp_path / "v1.json", kws_default, KWS, format_version=1, schedule=first)
    assert output_fingerprint(compile_model(KWS, BuildOptions(tuning_log=str(v1)))) == output_fingerprint(kws_default)
    old = _write_log(tmp_path / "old.json", kws_default, KWS, format_version=LOG_VERSION + 1)
    with pytest.raises(UsageError, match="format version"):
        compile_model(KWS, BuildOptions(tuning_log=str(old)))

    # On the command line: one paragraph, the usage exit code, nothing written.
    out = tmp_path / "ic_build"
    assert main(["build", str(IC), "--tuning-log", str(good), "--no-firmware", "-o", str(out)]) == 7
    err = capsys.readouterr().err
    assert "edgesdk: error: Tuning log" in err and "re-run 'edgesdk tune" in err and not out.exists()
    assert main(["build", str(KWS), "--tuning-log", str(good), "--no-cascade", "--no-firmware", "-o", str(out)]) == 7


# -- the search ---------------------------------------------------------------------------------------------
def _small_conv_model(path: Path) -> Path:
    rng = np.random.default_rng(3)
    weights = rng.integers(-127, 128, (16, 3, 3, 8)).astype(np.int8)
    bias = rng.integers(-500, 500, 16).astype(np.int32)
    path.write_bytes(conv_model((1, 12, 12, 8), weights, bias, (0.05, -3), 0.02, (0.1, 2)))
    return path


def test_moving_an_op_changes_the_estimate_and_the_search_moves_it_back(tmp_path):
    model = _small_conv_model(tmp_path / "conv.tflite")
    evaluator = Evaluator(model, "riscv-npu", ["npu", "c"], "ref")
    default = evaluator.evaluate(None)
    assert [layer.target for layer in default.schedule.layers] == ["npu"]
    on_cpu = evaluator.evaluate(default.schedule.with_layer(0, target="c"))
    assert [layer.target for layer in on_cpu.schedule.layers] == ["c"]
    assert set(default.figures.cycles) == {"npu0"} and set(on_cpu.figures.cycles) == {"cpu"}  # RegionEstimate.unit: the instance
    # 16 x 8 x 9 MACs per pixel: 128 MACs per NPU cycle at 500 MHz against ~3.5 instructions per MAC at 200 MHz.
    assert on_cpu.figures.latency_us > 20 * default.figures.latency_us
    back = Search(evaluator, "latency", seed=0, seconds=60).run(on_cpu)
    assert back.schedule == default.schedule


def test_the_sram_search_is_deterministic_and_beats_the_default_arena():
    options = TuneOptions(objective="sram", verify=0, seconds=120)
    first, second = tune(KWS, options), tune(KWS, options)
    assert first["search"]["complete"] and second["search"]["complete"]
    assert first["schedule"] == second["schedule"]
    assert first["search"]["evaluations"] == second["search"]["evaluations"]
    chosen, baseline = first["chosen"]["predicted"], first["baseline"]["predicted"]
    assert chosen["arena_bytes"] < baseline["arena_bytes"] and chosen["fits"]
    assert any(change.startswith("cascades:") for change in first["chosen"]["changes"])
    assert first["chosen"]["measured"] is None  # --verify 0: nothing run on the emulator


# -- tuned firmware -----------------------------------------------------------------------------------------
def _tree_digest(directory: Path) -> dict:
    skip = ("report.json", "firmware.map", "memory_timeline.svg")
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name not in skip}


@pytest.mark.slow  # one tune run with one firmware, two builds, one emulator run
@pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None, reason="RISC-V cross compiler not installed")
def test_tuned_kws_is_smaller_bit_exact_reproducible_and_measures_as_logged(tmp_path, capsys):
    log_path = tmp_path / "kws_sram.json"
    assert main(["tune", str(KWS), "--objective", "sram", "--verify", "1", "--seconds", "60",
                 "-o", str(log_path)]) == 0
    log = json.loads(log_path.read_text())
    chosen = log["chosen"]
    assert chosen["predicted"]["arena_bytes"] < log["baseline"]["predicted"]["arena_bytes"]
    assert chosen["measured"]["bit_exact"] and chosen["measured"]["arena_bytes"] == chosen["predicted"]["arena_bytes"]

    outs = [tmp_path / "a", tmp_path / "elsewhere" / "b"]
    for out in outs:
        assert main(["build", str(KWS), "--tuning-log", str(log_path), "-o", str(out)]) == 0
    assert _tree_digest(outs[0]) == _tree_digest(outs[1])  # the log is applied deterministically
    report = json.loads((outs[0] / "report.json").read_text())
    assert report["tuning"] == {"log": str(log_path), "log_sha256": file_sha256(log_path),
                                "schedule": log["schedule"]}
    assert report["memory"]["arena_bytes"] == chosen["measured"]["arena_bytes"]
    assert report["memory"]["flash_bytes"] == chosen["measured"]["flash_bytes"]

    capsys.readouterr()
    assert main(["run", str(outs[1]), "--random-input", "0", "--check", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["reference"]["bit_exact"]
    assert run["peripheral_cycles"]["npu0"] == chosen["measured"]["cycles"]["npu0"]
    assert run["inference_instructions"] == chosen["measured"]["cycles"]["cpu"]
