"""NPU codegen and op support: lowered commands run on the C model must equal LiteRT's reference kernels
(BUILTIN_REF) byte for byte, layer by layer on the real models and on single-op models built here.

Rounding field per op type for `--rounding ref` (edgesdk.ir.rounding.requant_rounding, checked here):
CONV_2D, DEPTHWISE_CONV_2D, ADD, MUL -> double; FULLY_CONNECTED -> fp64 (round(acc * double scale), int8
and uint8 alike; single rounding agrees on every real layer but not on crafted ones). AVERAGE_POOL_2D from
uint8 models needs the floor-rounding flag.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from conftest import SHARED_MODELS
from modelgen import SAME, VALID, binary_model, concatenation_model, conv_model, depthwise_model, \
    fully_connected_model, pool_model, reshape_model

from edgesdk.errors import UnsupportedOpError
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.ir.graph import Op, QuantParams, Tensor
from edgesdk.ir.rounding import requant_rounding
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.npu.hw import timing as T
from edgesdk.targets.npu.hw.model import run_table
from edgesdk.partition.target import constraint_rule
from edgesdk.targets.npu import fold
from edgesdk.targets.npu.codegen import conv_fold
from edgesdk.targets.npu.region import lower_ops
from edgesdk.aot.executor import Blob
from edgesdk.targets.npu.supported import NPU_SUPPORT

from edgesdk.board import load_board as _load_board  # noqa: E402
from edgesdk.targets.npu.hw.model import board_memory_classes as _board_memory_classes  # noqa: E402

BOARD_CLASSES = _board_memory_classes(_load_board("riscv-npu"))  # the NPU's view of riscv-npu's memories

FLASH, SRAM = 0x20000000, 0x80000000
NOT_FOR_NPU = {"SOFTMAX", "QUANTIZE", "DEQUANTIZE"}


def ref_rounding(op) -> str:
    return requant_rounding(op, "ref")


class Ctx:
    """The codegen context as the compiler provides it: a weights blob, a (non-aliasing) arena plan."""

    plan = None  # no memory plan, hence no cascade groups
    rounding_mode = "ref"
    compress_weights = True  # a test sets False for dense weight streams (as a schedule switch would)

    def layer_choice(self, op, name, default):
        return self.compress_weights if name == "compress_weights" else default

    def __init__(self, rounding=ref_rounding, aliases=None):
        self.weights_blob = Blob("npu_weights", "edgesdk_npu_weights")
        self.offsets = dict(aliases or {})
        self.arena_bytes = max([0] + [o + 16 for o in self.offsets.values()])
        self.rounding = rounding

    def arena_offset(self, t) -> int:
        if t not in self.offsets:
            self.offsets[t] = self.arena_bytes
            self.arena_bytes += (t.nbytes + 15) // 16 * 16
        return self.offsets[t]

    @property
    def weights(self) -> bytearray:
        return self.weights_blob.data

    def blob(self, name: str):
        assert name == "npu_weights"
        return self.weights_blob

    def rounding_for(self, op) -> str:
        return self.rounding(op) if callable(self.rounding) else self.rounding

    board = _load_board("riscv-npu")  # the timing model prices folded layouts (fold.py) with its memories

    def scratch_offset(self, op) -> int:
        """Scratch after everything placed so far, as large as NpuTarget.scratch_bytes asks for the op."""
        key = ("scratch", op)
        if key not in self.offsets:
            size = fold.scratch_bytes(op, conv_fold(op, self)[0])
            self.offsets[key] = self.arena_bytes
            self.arena_bytes += (size + 15) // 16 * 16
        return self.offsets[key]


def to_int8(a) -> np.ndarray:
    a = np.asarray(a)
    return (a.astype(np.int16) - 128).astype(np.int8) if a.dtype == np.uint8 else a.astype(np.int8)


def run_region(ops, values: dict, rounding=ref_rounding):
    """Lower `ops` as one NPU region, run it on the C model; `values`: tensor -> int8 array for inputs.

    Returns ({tensor: int8 output array}, RunResult, commands, ctx)."""
    ctx = Ctx(rounding)
    commands = lower_ops(ops, ctx)
    arena = bytearray(ctx.arena_bytes + 16)
    for t, v in values.items():
        off = ctx.arena_offset(t)
        data = to_int8(v).tobytes()
        arena[off:off + len(data)] = data
    result = run_table(C.encode(commands), {FLASH: ctx.weights + bytes(16), SRAM: arena}, [FLASH, SRAM], read_only=[FLASH], memory_classes=BOARD_CLASSES)
    outputs = {t: np.frombuffer(bytes(arena[ctx.offsets[t]:ctx.offsets[t] + t.nbytes]), np.int8).reshape(t.shape)
               for op in ops for t in op.outputs}
    return outputs, result, commands, ctx


def litert_tensors(path, seed: int = 0):
    """Run LiteRT's reference kernels on random input; return a function tensor id -> value."""
    it = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in it.get_input_details():
        if d["dtype"] == np.float32:
            it.set_tensor(d["index"], rng.standard_normal(d["shape"]).astype(np.float32))
        else:
            info = np.iinfo(d["dtype"])
            it.set_tensor(d["index"], rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
    it.invoke()
    return it.get_tensor


def check_op_against_litert(op, get_tensor, rounding=ref_rounding) -> int:
    """Number of output bytes where the lowered op differs from LiteRT's output for the same input."""
    inputs = {t: get_tensor(t.id) for t in op.inputs if t is not None and not t.is_const}
    outputs, result, _, _ = run_region([op], inputs, rounding)
    assert result.ok, f"{op.location}: {result}"
    y = op.outputs[0]
    return int(np.sum(outputs[y].reshape(-1) != to_int8(get_tensor(y.id)).reshape(-1)))


# The shared models whose layers the NPU runs: every one but the int16 keyword spotter (int8 activations only).
NPU_MODELS = {name: rel for name, rel in SHARED_MODELS.items() if name != "ds_cnn_int16"}


@pytest.fixture(scope="module")
def model_runs(models_dir):
    """name -> (graph, LiteRT tensor getter) for every shared model the NPU runs."""
    return {name: (import_tflite(models_dir / rel), litert_tensors(models_dir / rel)) for name, rel in NPU_MODELS.items()}


# -- real model layers ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(NPU_MODELS))
def test_every_npu_layer_of_real_models_matches_litert(model_runs, name):
    graph, get_tensor = model_runs[name]
    checked = 0
    for op in graph.ops:
        if op.type in NOT_FOR_NPU:
            continue
        ok, reason = NPU_SUPPORT.check(op)
        assert ok, f"{name} {op.location}: {reason}"
        assert check_op_against_litert(op, get_tensor) == 0, f"{name} {op.location} differs from LiteRT"
        checked += 1
    assert checked > 0


def test_rounding_field_per_op_type_matches_litert_reference(model_runs):
    """The table in this module's docstring: the reference rounding matches every layer, another one not."""
    expected = {"CONV_2D": ("double", "single"), "DEPTHWISE_CONV_2D": ("double", "single"),
                "FULLY_CONNECTED": ("fp64", "double")}  # op type -> (matching rounding, a non-matching one)
    mismatching_layers = {}  # (op type, rounding) -> number of layers with any differing byte
    for graph, get_tensor in model_runs.values():
        for op in graph.ops:
            if op.type in expected:
                assert ref_rounding(op) == expected[op.type][0]
                for rounding in expected[op.type]:
                    bad = check_op_against_litert(op, get_tensor, rounding) > 0
                    key = (op.type, rounding)
                    mismatching_layers[key] = mismatching_layers.get(key, 0) + int(bad)
    for op_type, (ref, other) in expected.items():
        assert mismatching_layers[(op_type, ref)] == 0
        assert mismatching_layers[(op_type, other)] > 0, f"{op_type}: {other} rounding also matches everywhere"


# (input scale, weight scale, output scale, accumulator) where round(acc * double scale) differs from the
# 31-bit-multiplier roundings: LiteRT's reference FULLY_CONNECTED takes the double path.
FC_FP64_CASES = [
    (0.00859007053077221, 0.004835354629904032, 0.06562062352895737, -135077),
    (0.0026538518723100424, 0.0031765776220709085, 0.1997121423482895, -2665145),
    (0.007841423153877258, 0.0062552560120821, 0.1893671602010727, -364835),
    (0.0017555536469444633, 0.0007218899554573, 0.18158072233200073, -12966812),
    (0.5, 0.015625, 0.0625, -12),  # dyadic scale 1/8: -1.5 exactly; halves away from zero -> -2
]


def test_fully_connected_fp64_rounding_matches_litert_on_crafted_cases(tmp_path):
    single_mismatches = 0
    for i, (s_in, s_w, s_out, acc) in enumerate(FC_FP64_CASES):
        path = tmp_path / f"fc{i}.tflite"
        path.write_bytes(fully_connected_model(1, np.ones((1, 1), np.int8), np.array([acc]), (s_in, 0), s_w, (s_out, 0)))
        op = next(o for o in import_tflite(path).ops if o.type == "FULLY_CONNECTED")
        it = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                         experimental_preserve_all_tensors=True)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], np.zeros((1, 1), np.int8))  # acc = bias
        it.invoke()
        assert check_op_against_litert(op, it.get_tensor, "fp64") == 0, FC_FP64_CASES[i]
        single_mismatches += check_op_against_litert(op, it.get_tensor, "single")
    assert single_mismatches >= 4


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad", "mobilenet_uint8"])
def test_whole_npu_region_matches_litert(model_runs, name):
    """The longest run of NPU ops as one command table; its last output equals LiteRT's."""
    graph, get_tensor = model_runs[name]
    region = []
    for op in graph.ops:
        if op.type in NOT_FOR_NPU:
            if len(region) > 1:
                break
            region = []
        else:
            region.append(op)
    produced = {t for op in region for t in op.outputs}
    inputs = {t: get_tensor(t.id) for op in region for t in op.inputs
              if t is not None and not t.is_const and t not in produced}
    outputs, result, commands, ctx = run_region(region, inputs)
    assert result.ok, result
    last = region[-1].outputs[0]
    np.testing.assert_array_equal(outputs[last].reshape(-1), to_int8(get_tensor(last.id)).reshape(-1))
    cost = T.table_cost(commands, T.MemoryMap.for_addresses(
        [(FLASH, 1 << 22, T.MemoryClass(1, 256)), (SRAM, 1 << 19, T.MemoryClass(0, 2048))], [FLASH, SRAM]))
    assert cost.cycles == result.cycles and cost.lower_bound_cycles < cost.cycles
    assert isinstance(commands[-1], C.End) and sum(isinstance(c, C.End) for c in commands) == 1


# -- single-op models (ops or variants the real models lack) ----------------------------------------------------
def _rng_weights(seed, shape, dtype="int8"):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, shape).astype(np.uint8) if dtype == "uint8" else rng.integers(-127, 128, shape).astype(np.int8)


def _bias(seed, n):
    return np.random.default_rng(seed).integers(-3000, 3000, n)


SINGLE_OP_MODELS = {
    "mul": lambda: binary_model("MUL", (1, 8, 8, 16), (1, 8, 8, 16), (1, 8, 8, 16), (0.07, 3), (0.031, -5), (0.09, -2), "RELU6"),
    "mul_broadcast_vector": lambda: binary_model("MUL", (1, 8, 8, 16), (16,), (1, 8, 8, 16), (0.07, 3), (0.031, -5), (0.02, -2)),
    "mul_uint8": lambda: binary_model("MUL", (1, 4, 8, 16), (1, 4, 8, 16), (1, 4, 8, 16), (0.07, 131), (0.031, 120), (0.09, 128), dtype="uint8"),
    "add_broadcast_channels": lambda: binary_model("ADD", (1, 8, 8, 16), (1, 1, 1, 16), (1, 8, 8, 16), (0.07, 3), (0.031, -5), (0.05, -2)),
    "add_broadcast_both": lambda: binary_model("ADD", (1, 1, 8, 1), (1, 8, 1, 16), (1, 8, 8, 16), (0.02, 3), (0.031, -5), (0.05, -2)),
    "add_uint8_relu": lambda: binary_model("ADD", (1, 8, 8, 16), (1, 8, 8, 16), (1, 8, 8, 16), (0.07, 131), (0.031, 120), (0.09, 128), "RELU", dtype="uint8"),
    "max_pool_same": lambda: pool_model("MAX_POOL_2D", (1, 9, 9, 16), (3, 3), (2, 2), SAME, (0.05, -3), activation="RELU"),
    "avg_pool_same": lambda: pool_model("AVERAGE_POOL_2D", (1, 9, 9, 16), (2, 2), (2, 2), SAME, (0.05, -3)),
    "avg_pool_uint8_same": lambda: pool_model("AVERAGE_POOL_2D", (1, 9, 9, 16), (2, 2), (2, 2), SAME, (0.05, 120), dtype="uint8"),
    "conv_dilated_strided": lambda: conv_model((1, 11, 11, 5), _rng_weights(1, (8, 3, 3, 5)), _bias(1, 8), (0.05, -3),
                                               list(np.linspace(0.001, 0.01, 8, dtype=np.float32)), (0.1, 4), stride=(2, 1), dilation=(2, 3)),
    "conv_uint8_weight_offset": lambda: conv_model((1, 12, 12, 16), _rng_weights(2, (32, 3, 3, 16), "uint8"), _bias(2, 32), (0.05, 130),
                                                   0.002, (0.1, 124), stride=(2, 2), w_zero_point=140, dtype="uint8"),
    "depthwise_multiplier": lambda: depthwise_model((1, 9, 9, 4), _rng_weights(3, (1, 3, 3, 12)), _bias(3, 12), (0.05, -3),
                                                    list(np.linspace(0.001, 0.01, 12, dtype=np.float32)), (0.1, 4), depth_multiplier=3, stride=(2, 2)),
    "depthwise_uint8_valid": lambda: depthwise_model((1, 12, 12, 16), _rng_weights(4, (1, 3, 3, 16), "uint8"), _bias(4, 16), (0.05, 130),
                                                     0.003, (0.1, 124), padding=VALID, w_zero_point=140, dtype="uint8"),
    "fc_batch_no_bias": lambda: fully_connected_model(3, _rng_weights(5, (64, 200)), None, (0.05, -3), 0.002, (0.1, 4), "RELU"),
    "fc_uint8": lambda: fully_connected_model(4, _rng_weights(6, (64, 200), "uint8"), _bias(6, 64), (0.05, 130), 0.001, (0.1, 124),
                                              w_zero_point=140, dtype="uint8"),
    "concat_channels": lambda: concatenation_model([(1, 4, 4, 3), (1, 4, 4, 5)], 3, [(0.05, 1), (0.05, 1)], (0.05, 1)),
    "concat_rows": lambda: concatenation_model([(1, 4, 4, 3), (1, 2, 4, 3)], 1, [(0.05, 1), (0.05, 1)], (0.05, 1)),
    "reshape": lambda: reshape_model((1, 4, 4, 3), (1, 48), (0.05, 1)),
}


@pytest.mark.parametrize("name", list(SINGLE_OP_MODELS))
def test_single_op_models_match_litert(tmp_path, name):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(SINGLE_OP_MODELS[name]())
    graph = import_tflite(path)
    op = next(o for o in graph.ops if o.type != "QUANTIZE")
    for seed in range(3):
        assert check_op_against_litert(op, litert_tensors(path, seed)) == 0, f"seed {seed}"


def test_uint8_average_pool_uses_floor_rounding(tmp_path):
    path = tmp_path / "avg.tflite"
    path.write_bytes(SINGLE_OP_MODELS["avg_pool_uint8_same"]())
    op = next(o for o in import_tflite(path).ops if o.type == "AVERAGE_POOL_2D")
    commands = lower_ops([op], Ctx())
    assert commands[0].floor_rounding and commands[0].opcode == C.AvgPool2D.opcode
    commands[0].floor_rounding = False  # the int8 rule would differ from TFLite's uint8 kernel
    get_tensor = litert_tensors(path)
    ctx = Ctx()
    lower_ops([op], ctx)
    arena = bytearray(ctx.arena_bytes)
    x = to_int8(get_tensor(op.inputs[0].id)).tobytes()
    arena[ctx.offsets[op.inputs[0]]:ctx.offsets[op.inputs[0]] + len(x)] = x
    assert run_table(C.encode(commands), {FLASH: ctx.weights + bytes(16), SRAM: arena}, [FLASH, SRAM], memory_classes=BOARD_CLASSES).ok
    y = op.outputs[0]
    got = np.frombuffer(bytes(arena[ctx.offsets[y]:ctx.offsets[y] + y.nbytes]), np.int8)
    assert np.any(got != to_int8(get_tensor(y.id)).reshape(-1))


# -- lowering details ------------------------------------------------------------------------------------------
def _tensor(tid, shape, scale=0.05, zp=0, dtype="int8", data=None, per_channel=None):
    scales = np.asarray(per_channel if per_channel is not None else [scale], np.float32)
    return Tensor(tid, f"t{tid}", tuple(shape), dtype, QuantParams(scales, np.full(scales.size, zp, np.int64), 0), data)


def test_reshape_is_free_when_the_planner_aliases():
    x, y = _tensor(0, (1, 4, 4, 3)), _tensor(1, (1, 48))
    op = Op(0, "RESHAPE", [x, None], [y])
    assert lower_ops([op], Ctx(aliases={x: 0, y: 0})) == [C.End()]
    copy = lower_ops([op], Ctx())
    assert isinstance(copy[0], C.DmaCopy) and copy[0].src.compact_bytes == 48


def test_fp64_lowering_stores_double_scales_and_is_conv_only():
    x, y = _tensor(0, (1, 8), zp=-3), _tensor(1, (1, 4), scale=0.1, zp=5)
    w = _tensor(2, (4, 8), data=np.ones((4, 8), np.int8), scale=0.02)
    op = Op(3, "FULLY_CONNECTED", [x, w, None], [y], {"activation": "NONE", "keep_num_dims": False})
    ctx = Ctx(rounding="fp64")
    fc = lower_ops([op], ctx)[0]
    assert fc.rounding == 2 and fc.input.shape == (1, 1, 1, 8) and fc.weights.shape == (4, 1, 1, 8)
    record = bytes(ctx.weights[fc.params.offset:fc.params.offset + 12])
    assert struct.unpack("<id", record) == (0, float(np.float32(0.05)) * float(np.float32(0.02)) / float(np.float32(0.1)))
    add = Op(4, "ADD", [x, x], [_tensor(5, (1, 8))], {"activation": "NONE"})
    with pytest.raises(UnsupportedOpError, match="fp64"):
        lower_ops([add], Ctx(rounding="fp64"))


def test_commands_use_region_convention_and_rounding_from_ctx():
    x, y = _tensor(0, (1, 6, 6, 8), zp=-3), _tensor(1, (1, 6, 6, 4), scale=0.1, zp=5)
    w = _tensor(2, (4, 1, 1, 8), data=np.ones((4, 1, 1, 8), np.int8), per_channel=[0.01, 0.02, 0.03, 0.04])
    b = Tensor(3, "b", (4,), "int32", None, np.arange(4, dtype=np.int32))
    op = Op(7, "CONV_2D", [x, w, b], [y], dict(stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, pad_top=0,
                                                 pad_left=0, pad_bottom=0, pad_right=0, activation="RELU6"))
    ctx = Ctx(rounding="single")
    conv, end = lower_ops([op], ctx)
    assert isinstance(end, C.End)
    assert conv.input.region == conv.output.region == 1 and conv.weights.region == conv.params.region == 0
    assert conv.rounding == 1 and conv.input_offset == 3 and conv.output_offset == 5
    assert (conv.act_min, conv.act_max) == (5, 65)  # RELU6: zp + round(6 / 0.1)
    params = np.frombuffer(bytes(ctx.weights[conv.params.offset:conv.params.offset + 48]), "<i4").reshape(4, 3)
    assert params[:, 0].tolist() == [0, 1, 2, 3] and len(set(params[:, 1].tolist())) > 1  # per-channel multipliers


# -- constraints -----------------------------------------------------------------------------------------------
def test_every_constraint_states_its_rule():
    for fns in [NPU_SUPPORT.generic, *NPU_SUPPORT.ops.values()]:
        for fn in fns:
            assert fn.__name__.startswith("constraint_") and len(constraint_rule(fn)) > 10, fn.__name__


def _conv_op(**changes):
    x, y = _tensor(0, (1, 8, 8, 4)), _tensor(1, (1, 8, 8, 6))
    w = _tensor(2, (6, 3, 3, 4), data=np.ones((6, 3, 3, 4), np.int8))
    attrs = dict(stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, pad_top=1, pad_left=1, pad_bottom=1, pad_right=1,
                 activation="NONE")
    attrs.update(changes)
    return Op(0, "CONV_2D", [x, w, None], [y], attrs)


@pytest.mark.parametrize("make, constraint", [
    (lambda: _conv_op(activation="TANH"), "constraint_fused_activation"),
    (lambda: _conv_op(stride_h=65), "constraint_stride"),
    (lambda: _conv_op(dilation_w=33), "constraint_dilation"),
    (lambda: _conv_op(pad_top=3), "constraint_padding"),
    (lambda: Op(0, "CONV_2D", [_tensor(0, (1, 8, 8, 4), dtype="int16"), _conv_op().inputs[1], None], [_tensor(1, (1, 8, 8, 6))], _conv_op().attrs), "constraint_int8_or_int16_activations"),
    (lambda: Op(0, "ADD", [_tensor(0, (1, 8, 8, 4)), _tensor(1, (1, 8, 3, 4))], [_tensor(2, (1, 8, 8, 4))], {"activation": "NONE"}), "constraint_broadcast"),
    (lambda: Op(0, "MAX_POOL_2D", [_tensor(0, (1, 8, 8, 4))], [_tensor(1, (1, 4, 4, 4), scale=0.1)],
                dict(filter_h=2, filter_w=2, stride_h=2, stride_w=2, pad_top=0, pad_left=0, activation="NONE")), "constraint_pool_same_quantization"),
    (lambda: Op(0, "ADD", [_tensor(0, (2, 2, 2, 2, 2)), _tensor(1, (2, 1, 2, 1, 2))], [_tensor(2, (2, 2, 2, 2, 2))], {"activation": "NONE"}), "constraint_broadcast_dims"),
    (lambda: Op(0, "MAX_POOL_2D", [_tensor(0, (1, 1, 8, 8, 4))], [_tensor(1, (1, 1, 4, 4, 4))],
                dict(filter_h=2, filter_w=2, stride_h=2, stride_w=2, pad_top=0, pad_left=0, activation="NONE")), "constraint_tensor_dims"),
])
def test_constraints_reject_with_their_name(make, constraint):
    ok, reason = NPU_SUPPORT.check(make())
    assert not ok and reason.startswith(constraint + ":"), reason


def test_conv_with_differing_weight_zero_points_is_rejected():
    op = _conv_op()
    op.inputs[1].quant = QuantParams(np.full(6, 0.01, np.float32), np.arange(6, dtype=np.int64), 0)
    ok, reason = NPU_SUPPORT.check(op)
    assert not ok and reason.startswith("constraint_single_weight_zero_point")
    with pytest.raises(UnsupportedOpError):
        lower_ops([op], Ctx())


def test_valid_conv_is_accepted():
    assert NPU_SUPPORT.check(_conv_op()) == (True, "")
