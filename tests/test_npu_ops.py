"""The NPU's op set beyond the int8 layers (issue 10, part 5): 16x8 layers, TRANSPOSE_CONV, SUB/MINIMUM/MAXIMUM,
pointwise activations through tables, nearest-neighbour resampling and data movement as strided DMA.

Host-level, no firmware: every op of the converter-made corpus (tests/models/ops) that the NPU accepts under a
rounding mode is lowered on its own and run on the NPU's C model (edgesdk.targets.npu.hw.model.run_table) with the
reference's own input for that op, and its output must equal the reference's byte for byte -- LiteRT's
reference kernels for --rounding ref, TFLite Micro for --rounding tflm -- on the cases the references were
checked on (seeded random, all-min, all-max). `NPU_REFUSED` lists, per corpus model, why the NPU leaves an op of
it to the host, and `INT16_NOT_TABULATED` the int16 activations no interpolated table reproduces, so the set of
ops the NPU takes cannot shrink unnoticed. Firmware built with --target npu,c runs on the emulator in
tests/test_op_corpus.py (test_corpus_firmware_bit_exact, slow: one model per op and mode).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import corpus
from edgesdk.aot.executor import Blob
from edgesdk.importer import import_tflite
from edgesdk.ir.rounding import requant_rounding
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import timing as T
from edgesdk.targets.npu.hw.model import board_memory_classes, run_table
from edgesdk.board import load_board
from edgesdk.ops.folding import fold_constants
from edgesdk.targets.c import testing
from edgesdk.targets.npu.region import lower_ops
from edgesdk.targets.npu.supported import NPU_SUPPORT

FLASH, SRAM = 0x20000000, 0x80000000
BOARD_CLASSES = board_memory_classes(load_board("riscv-npu"))
NUMPY = {"int8": np.int8, "int16": np.int16}

# The op types this file is about, and the corpus models of them.
NPU_OP_TYPES = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D", "ADD", "MUL",
                "SUB", "MINIMUM", "MAXIMUM", "TRANSPOSE_CONV", "RESIZE_NEAREST_NEIGHBOR", "RELU", "RELU6",
                "RELU_N1_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "PRELU", "LEAKY_RELU", "ELU", "QUANTIZE", "ABS", "NEG",
                "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "GELU", "RELU_0_TO_1",
                "TRANSPOSE", "CONCATENATION", "PACK", "SPLIT", "SPLIT_V", "UNPACK", "SLICE", "STRIDED_SLICE", "PAD",
                "PADV2", "REVERSE_V2", "MIRROR_PAD", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "BATCH_TO_SPACE_ND",
                "BROADCAST_TO", "RESHAPE", "EXPAND_DIMS", "SQUEEZE")
ENTRIES = [e for e in corpus.entries() if e["mode"] in ("int8", "int16") and e["op"] in NPU_OP_TYPES]
BY_OP = defaultdict(list)
for _entry in ENTRIES:
    BY_OP[_entry["op"]].append(_entry)

# corpus model -> why the NPU leaves its op (of the model's own type) to the host.
NPU_REFUSED = {
    "prelu_full_int8.tflite": "alpha (4, 5) varies along H as well: no table per channel expresses it",
    "slice_dynamic_begin_int8.tflite": "begin is a model input: the slice is known only at run time",
    "slice_dynamic_begin_int16.tflite": "begin is a model input: the slice is known only at run time",
}

# op type -> the rounding modes in which its int16 corpus models stay on the host because TFLite's 513-entry
# interpolated table does not reproduce the host's arithmetic on every input (constraint_int16_table_exact).
INT16_NOT_TABULATED = {"ABS": ("ref", "tflm"), "LEAKY_RELU": ("ref", "tflm"), "LOGISTIC": ("ref", "tflm"),
                       "RELU6": ("ref", "tflm"), "TANH": ("ref", "tflm"), "QUANTIZE": ("ref", "tflm"),
                       "RSQRT": ("tflm",)}


def _expected_refusal(entry, mode: str) -> str:
    """The constraint (or NPU_REFUSED reason) that keeps the corpus model's own op on the host, "" if none."""
    if entry["file"] in NPU_REFUSED:
        return NPU_REFUSED[entry["file"]]
    if entry["mode"] == "int16" and mode in INT16_NOT_TABULATED.get(entry["op"], ()):
        return "constraint_int16_table_exact"
    return ""


class NpuContext:
    """The codegen context of one NPU region run on the C model: a weights blob, every activation in its own
    arena slot, the rounding the build's mode uses."""

    plan = None  # no cascade groups

    def __init__(self, mode: str):
        self.rounding_mode = mode
        self.weights = Blob("npu_weights", "edgesdk_npu_weights")
        self.offsets, self.arena_bytes = {}, 0

    def arena_offset(self, t) -> int:
        if t not in self.offsets:
            self.offsets[t] = self.arena_bytes
            self.arena_bytes += (max(t.nbytes, 1) + 15) // 16 * 16
        return self.offsets[t]

    def blob(self, name: str):
        return self.weights

    def rounding_for(self, op) -> str:
        return requant_rounding(op, self.rounding_mode)

    def layer_choice(self, op, name: str, default: bool) -> bool:
        return default

    board = load_board("riscv-npu")  # the timing model prices folded convolutions (fold.py) with its memories

    def scratch_offset(self, op) -> int:
        """The op's scratch (NpuTarget.scratch_bytes) in an arena slot of its own."""
        from edgesdk.targets.npu import fold
        from edgesdk.targets.npu.codegen import conv_fold

        if op not in self.offsets:
            self.offsets[op] = self.arena_bytes
            self.arena_bytes += (fold.scratch_bytes(op, conv_fold(op, self)[0]) + 15) // 16 * 16
        return self.offsets[op]


def run_on_npu(ops, values: dict, mode: str) -> tuple:
    """Lower `ops` as one NPU region and run it on the C model. `values`: input tensor -> array.
    Returns ({output tensor: array}, RunResult, commands)."""
    ctx = NpuContext(mode)
    commands = lower_ops(ops, ctx)  # checks the NPU's constraints for ctx.rounding_mode
    arena = bytearray(ctx.arena_bytes + 16)
    for t, v in values.items():
        data = np.ascontiguousarray(np.asarray(v).astype(NUMPY[t.dtype])).tobytes()
        arena[ctx.offsets[t]:ctx.offsets[t] + len(data)] = data
    result = run_table(C.encode(commands), {FLASH: ctx.weights.data + bytes(16), SRAM: arena}, [FLASH, SRAM],
                       read_only=[FLASH], memory_classes=BOARD_CLASSES)
    outputs = {}
    for op in ops:
        for t in op.outputs:
            raw = bytes(arena[ctx.offsets[t]:ctx.offsets[t] + t.nbytes])
            outputs[t] = np.frombuffer(raw, NUMPY[t.dtype]).reshape(t.shape)
    return outputs, result, commands


def npu_ops(graph, mode: str) -> tuple:
    """(ops the NPU accepts under `mode`, {op: why not} for the others)."""
    accepted, refused = [], {}
    for op in graph.ops:
        ok, reason = NPU_SUPPORT.check(op, (mode,))
        if ok:
            accepted.append(op)
        else:
            refused[op] = reason
    return accepted, refused


def _graph(entry):
    graph = import_tflite(corpus.CORPUS / entry["file"])
    fold_constants(graph)
    return graph


def _mismatches(entry, graph, ops, mode: str) -> list:
    cases = [(case, corpus.case_inputs(entry, case, 0)) for case in corpus.CASES]
    return npu_mismatches(corpus.CORPUS / entry["file"], graph, ops, mode, cases)


def npu_mismatches(path, graph, ops, mode: str, cases) -> list:
    """Each op of `ops` run alone on the NPU model with the reference's own inputs, for every (name, model
    inputs) case: the differences from the reference's outputs and from the timing model, as messages."""
    problems = []
    memory = T.MemoryMap.for_addresses([(b, s, T.MemoryClass(k, bw)) for b, s, k, bw in BOARD_CLASSES], [FLASH, SRAM])
    for case, model_inputs in cases:
        ref = testing.reference_tensors(path, model_inputs, mode)
        for op in ops:
            inputs = {t: testing.ir_value(t, graph, ref) for t in dict.fromkeys(op.inputs)
                      if t is not None and not t.is_const}
            if any(v is None for v in inputs.values()):
                continue
            outputs, result, commands = run_on_npu([op], inputs, mode)
            where = f"{path.name} [{mode} {case}] {op.location}"
            if not result.ok:
                problems.append(f"{where}: the NPU stopped: {result}")
                continue
            if T.table_cost(commands, memory).cycles != result.cycles:
                problems.append(f"{where}: the timing model says {T.table_cost(commands, memory).cycles} cycles, "
                                f"the C model {result.cycles}")
            for y in op.outputs:
                want = testing.ir_value(y, graph, ref)
                differ = np.count_nonzero(np.asarray(want).reshape(-1) != outputs[y].reshape(-1))
                if differ:
                    problems.append(f"{where} '{y.name}': {differ} of {y.num_elements} values differ")
    return problems


@pytest.mark.parametrize("mode", ["ref", "tflm"])
@pytest.mark.parametrize("op_type", sorted(BY_OP))
def test_corpus_ops_on_the_npu_match_the_reference(op_type, mode):
    eligible = [e for e in BY_OP[op_type] if not corpus.expected_unsupported(e) and corpus.reference_ok(e, mode)]
    if not eligible:  # e.g. an op type the op layer does not define yet (tests/corpus.py NOT_YET)
        pytest.skip(f"no {op_type} corpus model runs on edgesdk and the {mode} reference yet")
    checked, problems = 0, []
    for entry in eligible:
        graph = _graph(entry)
        accepted, refused = npu_ops(graph, mode)
        own = [op for op in graph.ops if op.type == op_type]
        expected = _expected_refusal(entry, mode)
        if expected:
            assert any(op in refused for op in own), \
                f"{entry['file']} runs on the NPU now: update NPU_REFUSED or INT16_NOT_TABULATED"
            assert entry["file"] in NPU_REFUSED or all(refused[op].startswith(expected) for op in own if op in refused)
        else:
            problems += [f"{entry['file']} {op.location} refused: {refused[op]}" for op in own if op in refused]
        problems += _mismatches(entry, graph, accepted, mode)
        checked += len([op for op in accepted if op.type == op_type])
    assert not problems, "\n".join(problems[:40])
    assert checked > 0, f"no {op_type} model of the corpus runs on the NPU under --rounding {mode}"


def test_int16_layers_run_in_cascade_stripes():
    """A 16x8 conv -> depthwise -> 1x1 conv chain (the corpus' int16 keyword-spotting CNN) run in row stripes
    of several heights: the striped table's output equals LiteRT's, like the unstriped one's."""
    from edgesdk.aot.executor import build_executor
    from edgesdk.aot.memory_plan import plan_memory
    from edgesdk.ops.stripes import CascadeGroup, chain_ok
    from edgesdk.partition.partitioner import partition
    from edgesdk.targets import parse_target_list
    from edgesdk.targets.api import CodegenOptions

    path = corpus.CORPUS / "net_kws_cnn_int16.tflite"
    entry = next(e for e in corpus.entries() if e["file"] == path.name)
    graph, board = import_tflite(path), load_board("riscv-npu")
    regions = partition(graph, parse_target_list("npu,c", board))
    chain = tuple(graph.ops[0:3])
    assert chain_ok(chain, graph) and all(op.outputs[0].dtype == "int16" for op in chain)
    inputs = corpus.case_inputs(entry, "seed0", 0)
    want = testing.reference_tensors(path, inputs, "ref")[chain[-1].outputs[0].id]
    for height in (1, 3, 8, 25):
        groups = [CascadeGroup(chain, height, 0)] if height < 25 else []
        plan = plan_memory(graph, cascades=groups)
        model = build_executor(graph, regions, plan, CodegenOptions("ref", board))
        arena = bytearray(plan.arena_bytes + 16)
        x, y = graph.inputs[0], chain[-1].outputs[0]
        arena[plan.offset(x):plan.offset(x) + x.nbytes] = inputs[0].astype(np.int16).tobytes()
        table = model.target_data["npu"][0]
        assert [op.index for op in table.ops] == [0, 1, 2]
        result = run_table(table.data, {FLASH: bytearray(model.blobs["npu_weights"].data) + bytes(16), SRAM: arena},
                           [FLASH, SRAM], read_only=[FLASH], memory_classes=BOARD_CLASSES)
        assert result.ok, result
        got = np.frombuffer(bytes(arena[plan.offset(y):plan.offset(y) + y.nbytes]), np.int16).reshape(y.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"stripe height {height}")
        if groups:  # it really ran in stripes
            assert sum("rows" in c.note for c in table.commands) >= groups[0].schedule().stripes


# -- hand-made models: what the corpus lacks ----------------------------------------------------------------------
def _model(tmp_path, name: str, data: bytes):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    graph = import_tflite(path)
    fold_constants(graph)
    return path, graph


def _random_cases(rng, graph, count: int = 2) -> list:
    """Seeded random inputs and the all-min / all-max ones for a model's int8/int16 inputs."""
    dtypes = [NUMPY[t.dtype] for t in graph.inputs]
    cases = [(f"random{k}", [rng.integers(np.iinfo(d).min, np.iinfo(d).max + 1, t.shape).astype(d)
                             for t, d in zip(graph.inputs, dtypes)]) for k in range(count)]
    for name, pick in (("min", "min"), ("max", "max")):
        cases.append((name, [np.full(t.shape, getattr(np.iinfo(d), pick), d) for t, d in zip(graph.inputs, dtypes)]))
    return cases


@pytest.mark.parametrize("op_type", ["ADD", "SUB", "MUL"])
def test_int16_elementwise_on_random_quantizations(tmp_path, op_type):
    from test_ops_elementwise import ACT, binary

    rng = np.random.default_rng(61)
    problems = []
    for k in range(6):
        scales = [float(rng.uniform(1e-5, 1e-3)) for _ in range(3)]
        if op_type == "MUL":
            scales[2] = float(scales[0] * scales[1] * rng.uniform(500, 40000))
        shapes = [((2, 3, 4), (2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,), (2, 3, 4)), ((3, 1), (1, 5), (3, 5))][k % 3]
        fields = {"FusedActivationFunction": ACT[["NONE", "RELU", "RELU6", "RELU_N1_TO_1"][k % 4]]}
        if op_type != "MUL":
            fields["PotScaleInt16"] = False
        path, graph = _model(tmp_path, f"{op_type}{k}", binary(op_type, *shapes, "int16", (scales[0], 0), (scales[1], 0),
                                                             (scales[2], 0), **fields))
        for mode in ("ref", "tflm"):
            accepted, refused = npu_ops(graph, mode)
            assert accepted == graph.ops, refused
            problems += npu_mismatches(path, graph, accepted, mode, _random_cases(rng, graph))
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("op_type", ["ADD", "SUB"])
def test_litert_power_of_two_int16_path_stays_on_the_host_in_ref_builds(tmp_path, op_type):
    """LiteRT's pot_scale_int16 arithmetic is not the NPU's: --rounding ref builds leave the op to the host;
    --rounding tflm builds (TFLite Micro takes the general path) run it on the NPU, bit-exact."""
    from test_ops_elementwise import ACT, binary
    from edgesdk.compiler import BuildOptions, compile_model

    shape = (4, 33)
    path, graph = _model(tmp_path, "pot", binary(op_type, shape, shape, shape, "int16", (2.0 ** -15, 0), (2.0 ** -12, 0),
                                                 (2.0 ** -12, 0), FusedActivationFunction=ACT["NONE"],
                                                 PotScaleInt16=True))
    _, refused = npu_ops(graph, "ref")
    assert refused[graph.ops[0]].startswith("constraint_add_general_path")
    assert compile_model(path, BuildOptions(target="npu,c", rounding="ref")).regions[0].target == "c"
    accepted, _ = npu_ops(graph, "tflm")
    assert accepted == graph.ops
    assert compile_model(path, BuildOptions(target="npu,c", rounding="tflm")).regions[0].target == "npu"
    assert not npu_mismatches(path, graph, accepted, "tflm", _random_cases(np.random.default_rng(62), graph))


def _hand_made_layer_models() -> dict:
    """tests/test_ops_conv.py's hand-made layer models that are not float32: name -> (bytes, reference modes)."""
    from test_ops_conv import ALL_MODELS

    return {name: value for name, value in ALL_MODELS.items() if "f32" not in name}


# hand-made model -> why the NPU leaves its layer to the host (the constraint that says so)
HAND_MADE_REFUSED = {
    "conv16_int32_bias": "constraint_bias",  # quantized_bias_type INT32: TFLite accumulates in int32
    "conv16_int32_wraps": "constraint_bias",
    "conv16_no_bias_int32_type": "constraint_bias",
    "fc16_int32_bias": "constraint_bias",
    "fc16_int32_type_no_bias": "constraint_bias",
    "tconv_s16_no_bias_int32_type": "constraint_bias",
    "conv16_grouped": "constraint_not_grouped",
}


@pytest.mark.parametrize("name", sorted(_hand_made_layer_models()))
def test_hand_made_layers_on_the_npu(name, tmp_path):
    from test_ops_conv import case_inputs

    data, modes = _hand_made_layer_models()[name]
    path, graph = _model(tmp_path, name, data)
    problems = []
    for mode in modes:
        accepted, refused = npu_ops(graph, mode)
        if name in HAND_MADE_REFUSED:
            assert any(reason.startswith(HAND_MADE_REFUSED[name]) for reason in refused.values()), refused
        else:
            assert not refused or all(op.type not in NPU_OP_TYPES for op in refused), refused
        problems += npu_mismatches(path, graph, accepted, mode, case_inputs(path))
    assert not problems, "\n".join(problems[:20])


# -- pointwise activations as tables ------------------------------------------------------------------------------
def test_int16_tables_are_used_only_where_the_interpolation_is_exact(tmp_path):
    """16x8 PRELU: with alpha 1 and equal scales both sides are the identity, which the 513-entry table reproduces
    (the NPU runs it, bit-exact); with alpha 0.25 the negative side's rounding is not linear on the 128-code
    grid, and the NPU leaves the op to the host, naming the rule."""
    from test_ops_elementwise import prelu_model

    exact = prelu_model((2, 3, 4), (4,), "int16", (1 / 2048, 0), (1 / 64, 0), (1 / 2048, 0), np.full(4, 64, np.int8))
    path, graph = _model(tmp_path, "prelu_identity", exact)
    for mode in ("ref", "tflm"):
        accepted, refused = npu_ops(graph, mode)
        assert accepted == graph.ops, refused
        assert not npu_mismatches(path, graph, accepted, mode, _random_cases(np.random.default_rng(70), graph))
    quarter = prelu_model((2, 3, 4), (4,), "int16", (1 / 2048, 0), (1 / 256, 0), (1 / 2048, 0), np.full(4, 64, np.int8))
    _, graph = _model(tmp_path, "prelu_quarter", quarter)
    _, refused = npu_ops(graph, "ref")
    assert refused[graph.ops[0]].startswith("constraint_int16_table_exact"), refused


def test_int8_tables_hold_the_reference_of_the_build_mode(tmp_path):
    """LiteRT's RELU6 requantizes to the output's quantization, TFLite Micro's clamps the input bytes: the NPU's
    table follows the build's mode, and the two tables differ (so the corpus test would notice the wrong one)."""
    from edgesdk.targets.npu import pointwise

    entry = next(e for e in corpus.entries() if e["op"] == "RELU6" and e["mode"] == "int8")
    op = next(op for op in _graph(entry).ops if op.type == "RELU6")
    (ref_table, count), (tflm_table, _) = pointwise.tables(op, "ref"), pointwise.tables(op, "tflm")
    assert count == 1 and ref_table.size == 256 and not np.array_equal(ref_table, tflm_table)


def test_prelu_gets_one_table_per_channel():
    entry = next(e for e in corpus.entries() if e["file"] == "prelu_channel_int8.tflite")
    op = next(op for op in _graph(entry).ops if op.type == "PRELU")
    outputs = run_on_npu([op], {op.inputs[0]: np.zeros(op.inputs[0].shape, np.int8)}, "ref")[2]
    table = outputs[0]
    assert isinstance(table, C.Table) and table.table_count == op.inputs[0].shape[-1] > 1


# -- data movement: the decomposition itself ----------------------------------------------------------------------
def _random_maps(rng) -> list:
    """AxisMaps the op layer builds, of ranks up to 6: transposes, strided slices with negative steps, pads,
    mirror-like maps (reflected runs) and a long dimension."""
    from edgesdk.ops import axis_map as A

    maps = []
    for _ in range(12):
        rank = int(rng.integers(1, 7))
        shape = tuple(int(d) for d in rng.integers(1, 5, rank))
        maps.append(A.transpose(shape, list(rng.permutation(rank))))
        starts = [int(rng.integers(0, n)) for n in shape]
        steps = [int(rng.choice([-2, -1, 1, 2, 3])) for _ in shape]
        counts = [max(1, (s + 1 if st < 0 else n - s) // abs(st)) for n, s, st in zip(shape, starts, steps)]
        maps.append(A.strided(shape, starts, counts, steps))
        pads = rng.integers(0, 3, (rank, 2))
        maps.append(A.padded(shape, pads[:, 0], pads[:, 1], 7))
    reflect = ((2, 1, 0, 1, 2, 1),)  # runs of steps -1, +1, -1 along one dimension
    maps.append(A.AxisMap((3,), (6,), reflect))
    maps.append(A.identity((3, 70000)))  # a merged run of 210000 elements: split into two descriptor dimensions
    return maps


def test_strided_copies_move_what_the_axis_maps_say():
    from edgesdk.targets.npu import movement
    from edgesdk.targets.npu.codegen import _copies

    rng = np.random.default_rng(80)
    for axis_map in _random_maps(rng):
        for dtype in ("int8", "int16"):
            x = rng.integers(-100, 100, axis_map.in_shape).astype(NUMPY[dtype])
            want = axis_map.apply(x)
            out_off = (x.nbytes + 15) // 16 * 16
            arena = bytearray(out_off + want.nbytes + 16)
            arena[:x.nbytes] = x.tobytes()
            ctx = NpuContext("ref")
            fill, boxes = movement.map_boxes(axis_map)
            commands = []
            if fill:
                pad = (0, ctx.weights.add(np.asarray([axis_map.pad_value], NUMPY[dtype]).tobytes(), 2))
                commands += _copies(movement.fill_box(axis_map.out_shape), pad, out_off, dtype, "fill")
            for box in boxes:
                commands += _copies(box, (1, 0), out_off, dtype, "copy")
            assert len(commands) == movement.command_count(boxes, fill, axis_map.out_shape) <= movement.MAX_COMMANDS
            result = run_table(C.encode(commands + [C.End()]), {FLASH: ctx.weights.data + bytes(16), SRAM: arena},
                               [FLASH, SRAM], read_only=[FLASH])
            assert result.ok, result
            got = np.frombuffer(bytes(arena[out_off:out_off + want.nbytes]), NUMPY[dtype]).reshape(want.shape)
            np.testing.assert_array_equal(got, want, err_msg=f"{axis_map.in_shape} -> {axis_map.out_shape}")


# -- the shared int16 model on the emulator --------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ref", "tflm"])
def test_shared_int16_keyword_spotting_model_runs_on_the_npu_bit_exact(mode, tmp_path):
    """The shared 16x8 DS-CNN (arm_ml_zoo/ds_cnn_s_int16.tflite), every layer but SOFTMAX on NPU-1: the output on
    the emulator equals the reference of the build's mode on seeds 0-2, and the NPU's cycle counter equals the
    timing model's figure in the report."""
    from conftest import MODELS_DIR
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.reference import run_reference
    from edgesdk.runner import random_inputs, run_inference

    path = MODELS_DIR / "arm_ml_zoo" / "ds_cnn_s_int16.tflite"
    report = build(path, tmp_path / "fw", BuildOptions(target="npu,c", rounding=mode))
    assert [op["type"] for op in report["ops"] if op["target"] != "npu"] == ["SOFTMAX"], report["ops"]
    for seed in range(3):
        inputs = random_inputs(report, seed)
        result = run_inference(tmp_path / "fw", inputs)
        assert result.exit_code == 0 and result.cycles_of("npu") == report["target_reports"]["npu"]["cycles"]
        for want, got in zip(run_reference(path, inputs, mode), result.outputs):
            np.testing.assert_array_equal(np.asarray(got).reshape(-1), np.asarray(want).reshape(-1), err_msg=f"seed {seed}")
