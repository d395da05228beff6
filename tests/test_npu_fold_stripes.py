"""Kernel folding inside a cascade's stripes (fold.stripe_commands, chosen by stripes._folded_stripe): each row
stripe of a convolution with few input channels, its W taps folded into the channels over the stripe's input
rows (edge columns unfolded, written straight into the output rows), run on the C model, gives LiteRT's
reference output byte for byte; the timing model takes the fold where it saves cycles."""

from __future__ import annotations

import pytest
from test_npu_codegen import Ctx, litert_tensors
from test_npu_fold import CASES, _model, table_mismatches

from edgesdk.targets.npu import fold
from edgesdk.targets.npu.codegen import LOWERINGS
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import timing

W_FOLDS = [name for name in CASES if name != "spectrogram_rows"]  # every case with interior columns to fold


def _stripe(op, conv, first: int, stop: int) -> C.Conv2D:
    """The ordinary command restricted to output rows [first, stop), as stripes.py builds it: the input rows the
    windows read, the leading padding the stripe still has (the trailing padding is implied by the rows)."""
    g = fold.Geometry.of(op)
    x, y = conv.input, conv.output
    top = first * g.stride_h - g.pad_top
    start, end = max(0, top), min(g.h, (stop - 1) * g.stride_h - g.pad_top + g.kh)
    rows = C.TensorDesc(x.region, x.offset + start * x.strides[1], (1, end - start, g.w, g.c), x.strides, x.dtype)
    out = C.TensorDesc(y.region, y.offset + first * y.strides[1], (1, stop - first, g.ow, g.o), y.strides, y.dtype)
    return C.Conv2D(**{**conv.__dict__, "input": rows, "output": out, "pad_top": start - top})


def _stripes(op, ctx, height: int, folded: bool) -> list:
    (conv,) = LOWERINGS["CONV_2D"](op, ctx)
    oh = fold.Geometry.of(op).oh
    commands = []
    for first in range(0, oh, height):
        stripe = _stripe(op, conv, first, min(oh, first + height))
        commands.extend(fold.stripe_commands(op, stripe) if folded else [stripe])
    return commands + [C.End()]


def _mismatches(op, path, commands, ctx, seed) -> int:
    return table_mismatches(op, commands, litert_tensors(path, seed), ctx)


@pytest.mark.parametrize("name", W_FOLDS)
@pytest.mark.parametrize("height", [1, 3])
def test_folded_stripes_match_litert(tmp_path, name, height):
    path, op = _model(tmp_path, name)
    assert fold.Fold("w", False) in fold.candidates(op)
    ctx = Ctx()
    folded = _stripes(op, ctx, height, folded=True)
    assert fold.accepted(folded[:-1])
    assert any(c.weights.shape[2] == 1 and c.weights.shape[3] == op.inputs[1].shape[2] * op.inputs[1].shape[3]
               for c in folded if isinstance(c, C.Conv2D)), "no folded command"
    for seed in range(2):
        assert _mismatches(op, path, folded, ctx, seed) == 0, f"{name} stripes of {height} rows, seed {seed}"


def test_folded_stripes_sum_what_the_unfolded_ones_do(tmp_path):
    """Same outputs as the one-command stripes, whatever the input (no LiteRT: the two lowerings on the C model)."""
    path, op = _model(tmp_path, "rgb_same_stride1")
    ctx = Ctx()
    plain, folded = _stripes(op, ctx, 2, folded=False), _stripes(op, ctx, 2, folded=True)
    assert len(folded) == 3 * (len(plain) - 1) + 1  # interior, left edge, right edge per stripe
    for seed in range(2):
        assert _mismatches(op, path, plain, ctx, seed) == 0 and _mismatches(op, path, folded, ctx, seed) == 0


def test_folding_a_wide_image_s_stripes_saves_cycles(tmp_path):
    """Counted by the timing model (the C model's PERF_CYCLES agree): an RGB 3x3 stride-2 layer like
    MobileNet's first fills 9 of 16 input lanes per kernel row instead of 3 of 16 per tap; in 2-row stripes
    the folded ones cost 13,257 cycles for 16,288 (each stripe re-reads the weights and pays 3 commands)."""
    from modelgen import SAME, conv_model
    from test_npu_codegen import _bias, _rng_weights

    from edgesdk.importer.tflite_importer import import_tflite

    path = tmp_path / "wide.tflite"
    path.write_bytes(conv_model((1, 16, 112, 3), _rng_weights(3, (32, 3, 3, 3)), _bias(3, 32), (0.05, 0), 0.002,
                                (0.1, 0), stride=(2, 2), padding=SAME))
    op = next(o for o in import_tflite(path).ops if o.type == "CONV_2D")
    memory = timing.MemoryMap.for_board(Ctx.board)
    ctx = Ctx()
    plain, folded = (fold.cycles(_stripes(op, ctx, 2, folded=f), memory) for f in (False, True))
    assert folded * 1.2 < plain


def _pair(conv_first: bool):
    """A 3-channel 3x3 SAME convolution (16 outputs) before or after a 3x3 depthwise one, as model bytes: an
    image wide enough that the folded interior saves more than the edge commands' weight fetches cost."""
    from modelgen import ModelBuilder
    from test_cascade import _conv

    m = ModelBuilder()
    x = m.tensor((1, 16, 96, 3), "int8", scale=0.02, zero_point=1)
    if conv_first:
        a = _conv(m, x, (1, 16, 96, 16), 3, seed=5)
        b = _conv(m, a, (1, 16, 96, 16), 3, depthwise=True, seed=6)
    else:
        a = _conv(m, x, (1, 16, 96, 3), 3, depthwise=True, seed=6)
        b = _conv(m, a, (1, 16, 96, 16), 3, seed=5)
    return m.build([x], [b])


@pytest.mark.parametrize("conv_first", [True, False])
def test_only_a_convolution_into_a_stripe_buffer_folds(tmp_path, conv_first):
    """A stripe folds only when the convolution writes one of the group's stripe buffers, which overlap no
    input: its edge columns go straight into the output rows. A group's last op may write over the group's
    input (rule cascade-exact), so its stripes stay one command each."""
    from test_cascade import _model_bytes_file

    from edgesdk.compiler import BuildOptions, compile_model
    from edgesdk.tune.schedule import CascadeChoice, schedule_of

    path = _model_bytes_file(_pair(conv_first))
    options = BuildOptions(target="npu", compile_firmware=False, cascade=False)
    schedule = schedule_of(compile_model(path, options)).with_cascades([CascadeChoice((0, 1), 4)])
    compiled = compile_model(path, BuildOptions(target="npu", compile_firmware=False, schedule=schedule))
    (group,) = compiled.plan.cascades
    convs = [c for t in compiled.executor.target_data["npu"] for c in C.decode(t.data) if isinstance(c, C.Conv2D)]
    folded = [c for c in convs if c.weights.shape == (16, 3, 1, 9)]
    stripes = sum(1 for e in group.schedule().events if getattr(e, "op", None) is compiled.graph.ops[1 - conv_first])
    assert len(folded) == (stripes if conv_first else 0), [c.weights.shape for c in convs]
