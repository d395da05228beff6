"""Kernel folding (edgesdk/targets/npu/fold.py): every fold of a convolution with few input channels, run on
the C model, equals LiteRT's reference kernels byte for byte, also when the output overlaps the input (as
the memory planner allows); the timing model picks a fold only where it saves cycles."""

from __future__ import annotations

import numpy as np
import pytest
from modelgen import SAME, VALID, conv_model
from test_npu_codegen import BOARD_CLASSES, FLASH, SRAM, Ctx, _bias, _rng_weights, litert_tensors, to_int8

from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.targets.npu import fold
from edgesdk.targets.npu.codegen import conv_fold
from edgesdk.targets.npu.region import lower_ops
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import timing
from edgesdk.targets.npu.hw.model import run_table

SCALES = list(np.linspace(0.001, 0.01, 16, dtype=np.float32))

# name -> (input shape, weights shape OHWI, stride, padding, input zero point, input dtype)
CASES = {
    "spectrogram_rows": ((1, 21, 7, 1), (16, 8, 3, 1), (2, 2), SAME, -3, "int8"),  # KWS-like: H fold
    "rgb_same_stride1": ((1, 9, 12, 3), (16, 3, 3, 3), (1, 1), SAME, 5, "int8"),  # IC-like: edges both sides
    "rgb_same_stride2": ((1, 12, 12, 3), (8, 3, 3, 3), (2, 2), SAME, -7, "int8"),  # VWW-like: right edge only
    "wide_kernel_stride2": ((1, 7, 15, 2), (8, 5, 5, 2), (2, 2), SAME, 11, "int8"),  # edges of two columns
    "rgb_valid": ((1, 8, 10, 3), (8, 3, 3, 3), (1, 1), VALID, 0, "int8"),  # no edges, no scratch
    "uint8_weight_offset": ((1, 10, 9, 1), (8, 4, 4, 1), (1, 2), SAME, 130, "uint8"),
}


def _model(tmp_path, name):
    shape, wshape, stride, padding, zp, dtype = CASES[name]
    weights = _rng_weights(7, wshape, dtype)
    o = wshape[0]
    data = conv_model(shape, weights, _bias(7, o), (0.05, zp), 0.002 if dtype == "uint8" else SCALES[:o],
                      (0.1, 4 if dtype == "int8" else 124), stride=stride, padding=padding, activation="RELU",
                      w_zero_point=140 if dtype == "uint8" else 0, dtype=dtype)
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    op = next(o for o in import_tflite(path).ops if o.type == "CONV_2D")
    return path, op


def _run(op, get_tensor, ctx) -> np.ndarray:
    """Lower `op` in `ctx`, run it on the C model with LiteRT's input, return the output bytes' mismatches."""
    commands = lower_ops([op], ctx)
    return commands, table_mismatches(op, commands, get_tensor, ctx)


def table_mismatches(op, commands, get_tensor, ctx) -> int:
    """Run `commands` (ending in END) on the C model over `ctx`'s weights and an arena holding LiteRT's input
    of `op`; the count of output bytes that differ from LiteRT's output."""
    arena = bytearray(ctx.arena_bytes + 16)
    x, y = op.inputs[0], op.outputs[0]
    data = to_int8(get_tensor(x.id)).tobytes()
    arena[ctx.offsets[x]:ctx.offsets[x] + len(data)] = data
    result = run_table(C.encode(commands), {FLASH: ctx.weights + bytes(16), SRAM: arena}, [FLASH, SRAM],
                       read_only=[FLASH], memory_classes=BOARD_CLASSES)
    assert result.ok, result
    got = np.frombuffer(bytes(arena[ctx.offsets[y]:ctx.offsets[y] + y.nbytes]), np.int8)
    return int(np.count_nonzero(got != to_int8(get_tensor(y.id)).reshape(-1)))


def _forced(monkeypatch, choice):
    monkeypatch.setattr(fold, "choose", lambda *args, **kwargs: choice)


@pytest.mark.parametrize("name", list(CASES))
def test_every_fold_matches_litert(tmp_path, monkeypatch, name):
    path, op = _model(tmp_path, name)
    choices = fold.candidates(op)
    assert choices, f"{name}: no fold applies"
    for choice in choices:
        _forced(monkeypatch, choice)
        for seed in range(2):
            commands, wrong = _run(op, litert_tensors(path, seed), Ctx())
            assert wrong == 0, f"{name} {choice} seed {seed}: {wrong} bytes differ"
            assert any(choice.describe() in c.note or "W taps folded" in c.note for c in commands)


@pytest.mark.parametrize("name", ["rgb_same_stride1", "rgb_same_stride2", "spectrogram_rows"])
def test_folds_are_safe_when_the_output_overlaps_the_input(tmp_path, monkeypatch, name):
    """The planner lets a window op write its output over its input (raster rule): every command of a fold
    that reads the input runs before any command writes over it."""
    path, op = _model(tmp_path, name)
    x, y = op.inputs[0], op.outputs[0]
    for choice in fold.candidates(op):
        _forced(monkeypatch, choice)
        ctx = Ctx(aliases={x: 0, y: 0, "end of the overlapped tensors": max(x.nbytes, y.nbytes)})
        assert _run(op, litert_tensors(path, 0), ctx)[1] == 0, f"{name} {choice}"


FIRST_LAYERS = {"kws": fold.Fold("h", True), "vww": fold.Fold("w", False), "ic": fold.Fold("w", False)}


@pytest.mark.parametrize("name", sorted(FIRST_LAYERS))
def test_the_timing_model_picks_the_fold_of_each_first_layer(models_dir, name):
    """On the riscv-npu board's memories: the KWS spectrogram (1 channel) folds its 10 kernel rows over a
    padded copy of 580 bytes; the RGB layers fold their 3 kernel columns over the input itself (VWW's input
    is 27 KiB: a copy would cost arena bytes and as many cycles as it saves)."""
    from conftest import SHARED_MODELS

    op = import_tflite(models_dir / SHARED_MODELS[name]).ops[0]
    assert conv_fold(op, Ctx())[0] == FIRST_LAYERS[name]


def test_no_fold_for_full_input_lanes(tmp_path):
    path = tmp_path / "wide.tflite"
    path.write_bytes(conv_model((1, 8, 8, 16), _rng_weights(1, (8, 3, 3, 16)), _bias(1, 8), (0.05, 0), 0.002,
                                (0.1, 0)))
    op = next(o for o in import_tflite(path).ops if o.type == "CONV_2D")
    assert fold.candidates(op) == [] and conv_fold(op, Ctx())[0] is None
    assert [type(c) for c in lower_ops([op], Ctx())] == [C.Conv2D, C.End]


def test_a_fold_without_edges_needs_no_scratch_and_one_command(tmp_path, monkeypatch):
    _, op = _model(tmp_path, "rgb_valid")
    _forced(monkeypatch, fold.Fold("w", False))
    commands = lower_ops([op], Ctx())
    assert [type(c) for c in commands] == [C.Conv2D, C.End]
    assert commands[0].input.shape[3] == 9 and commands[0].weights.shape == (8, 3, 1, 9)
    assert fold.scratch_bytes(op, fold.Fold("w", False)) == 0


def test_folding_cuts_the_cycles_of_a_one_channel_layer(tmp_path, monkeypatch):
    """Counted by the timing model (the C model's PERF_CYCLES agree): the KWS-like layer's MAC array fills
    3 of 16 input lanes instead of 1, the weights' flash fetch bounds it then."""
    _, op = _model(tmp_path, "spectrogram_rows")
    memory = timing.MemoryMap.for_board(Ctx.board)
    folded = fold.cycles(lower_ops([op], Ctx()), memory)
    _forced(monkeypatch, None)
    plain = fold.cycles(lower_ops([op], Ctx()), memory)
    assert folded * 2 < plain


def test_a_view_beyond_the_npu_s_operand_limit_is_not_folded(tmp_path):
    """A 1024x1024 RGB image read as 9-channel windows would be a 9 MiB operand (the NPU takes 4 MiB): the
    NPU's static pass refuses the folded command, so the plain one stays."""
    path = tmp_path / "big.tflite"
    path.write_bytes(conv_model((1, 1024, 1024, 3), _rng_weights(1, (8, 3, 3, 3)), _bias(1, 8), (0.05, 0), 0.002,
                                (0.1, 0), stride=(2, 2), padding=VALID))
    op = next(o for o in import_tflite(path).ops if o.type == "CONV_2D")
    assert fold.candidates(op) and conv_fold(op, Ctx())[0] is None


def test_a_cascade_over_a_foldable_convolution_pays_for_the_fold_it_loses(models_dir):
    """HAR's first convolution (1 channel, 2x2 VALID) folds without scratch op by op; in stripes with the pooling
    after it, it folds too where that saves cycles (stripes._folded_stripe: 16-row stripes do, the flash fetch
    of the weights bounds 4-row ones). The cascade search prices the group against the layers an op-by-op build
    runs, folded: in 16-row stripes +37 % NPU cycles of those two layers (12,719 for 9,312; +61 %, 14,976,
    unfolded), but under 1.3 % of the model's.
    The default budget is the model's (5 % of its NPU cycles), so the default build takes the group, at the
    stripe height that gives the smallest arena within it (4 rows: 7,952 B for +4.6 %, 23,296 B op by op)."""
    from conftest import SHARED_MODELS
    from edgesdk.aot.cascade import DEFAULT_MODEL_INCREASE, Striping, model_cycles
    from edgesdk.compiler import BuildOptions, compile_model

    compiled = compile_model(models_dir / SHARED_MODELS["har"], BuildOptions(compile_firmware=False))
    graph = compiled.graph
    first = graph.ops[0]
    assert fold.candidates(first)
    striping = Striping(compiled.regions, compiled.codegen_options)
    striped, whole = striping.costs(striping.group(tuple(graph.ops[0:2]), 16, 0, graph))["npu"]
    model = model_cycles(graph, compiled.regions, striping)["npu"]
    assert whole * 1.3 < striped < whole * 1.4 and striped - whole < 0.02 * model
    (group,) = compiled.plan.cascades
    assert group.ops == tuple(graph.ops[0:2]) and group.stripe_height == 4
    extra = striping.extra([group])["npu"]
    assert 0 < extra <= DEFAULT_MODEL_INCREASE * model
    assert compiled.plan.arena_bytes < compiled.memory_problem.plan().arena_bytes
    assert not compiled.plan.scratch
