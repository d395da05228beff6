"""Cascading on the host core (edgesdk/targets/c/stripes.py): a group's stripes are the layers' own kernel calls
over row ranges; the executor's C, compiled for the host, computes exactly what LiteRT's reference kernels do;
the build-time proof refuses a stripe call that leaves its rows; and one firmware build runs on the emulator."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest

from edgesdk.aot.cascade import Striping, choose_cascades
from edgesdk.aot.executor import build_executor, collect_scratch_sizes
from edgesdk.aot.memory_plan import MemoryProblem
from edgesdk.board import load_board
from edgesdk.compiler import targets_in_place_rules
from edgesdk.ctext import float_literal
from edgesdk.hostcc import cache_dir, load_shared_library
from edgesdk.importer.tflite_importer import import_tflite
from edgesdk.ops.stripes import CascadeGroup, chain_ok
from edgesdk.partition.partitioner import partition
from edgesdk.reference import run_reference
from edgesdk.targets import parse_target_list
from edgesdk.targets.api import CodegenOptions
from edgesdk.targets.c.calls import Arena, KernelCall, render_layer, render_params
from edgesdk.targets.c.layouts import KERNELS_DIR
from edgesdk.targets.c import op_instructions
from edgesdk.targets.c.stripes import stripe_cost as c_stripe_cost
from edgesdk.targets.c.testing import kernels_library
from modelgen import SAME, ModelBuilder


def stripe_cost(group, ctx):
    return c_stripe_cost(group, ctx, op_instructions)
from test_cascade import _add, _conv, _edges_model, _model_bytes_file, _pool

BOARD = load_board("riscv-npu")


def _inverted_residuals():
    """Two MobileNetV2 blocks: 3x3 conv, then expand 1x1 -> 3x3 depthwise (the sliding kernel) -> project 1x1 ->
    ADD, then the stride-2 block (no residual) and a max pool: the fast kernels (paired pointwise over one long
    row, blocked 3x3, sliding depthwise of strides 1 and 2) and the reference pool loops."""
    m = ModelBuilder()
    x = m.tensor((1, 13, 9, 8), "int8", scale=0.05, zero_point=-3)
    a = _conv(m, x, (1, 13, 9, 8), 3, activation="RELU6", seed=1)  # op 0
    b = _conv(m, a, (1, 13, 9, 24), 1, activation="RELU6", seed=2)  # op 1: expand
    c = _conv(m, b, (1, 13, 9, 24), 3, depthwise=True, activation="RELU6", seed=3)  # op 2
    d = _conv(m, c, (1, 13, 9, 8), 1, seed=4)  # op 3: project
    e = _add(m, a, d)  # op 4: residual
    f = _conv(m, e, (1, 13, 9, 24), 1, activation="RELU6", seed=5)  # op 5: expand
    g = _conv(m, f, (1, 7, 5, 24), 3, stride=2, depthwise=True, activation="RELU6", seed=6)  # op 6
    h = _conv(m, g, (1, 7, 5, 8), 1, seed=7)  # op 7: project
    y = _pool(m, h, (1, 7, 5, 8), "MAX_POOL_2D", 2, 1, padding=SAME)  # op 8
    return m.build([x], [y])


def _hard_swish_stem():
    """SSD MobileNetV3's stem: 3x3 stride-2 conv -> HARD_SWISH -> 3x3 stride-2 depthwise -> 1x1."""
    m = ModelBuilder()
    x = m.tensor((1, 18, 10, 3), "int8", scale=0.02, zero_point=1)
    a = _conv(m, x, (1, 9, 5, 16), 3, stride=2, seed=11)  # op 0
    b = m.tensor((1, 9, 5, 16), "int8", scale=0.03, zero_point=-100)
    m.op("HARD_SWISH", [a], [b])  # op 1
    c = _conv(m, b, (1, 5, 3, 16), 3, stride=2, depthwise=True, activation="RELU", seed=12)  # op 2
    d = _conv(m, c, (1, 5, 3, 8), 1, seed=13)  # op 3
    return m.build([x], [d])


def _setup(model_bytes):
    path = _model_bytes_file(model_bytes)
    graph = import_tflite(path)
    regions = partition(graph, parse_target_list("c", BOARD))
    options = CodegenOptions("ref", BOARD)
    problem = MemoryProblem(graph, collect_scratch_sizes(graph, regions, options),
                            in_place=targets_in_place_rules(regions))
    return path, graph, regions, options, problem


def _c_array(const) -> str:
    values = np.asarray(const.values).reshape(-1)
    if const.ctype == "float":
        items = ", ".join(float_literal(v) for v in values)
    else:
        items = ", ".join(str(int(v)) for v in values)
    return f"static const {const.ctype} {const.symbol}[{max(values.size, 1)}] = {{{items or '0'}}};"


def _run_on_host(graph, model, inputs) -> list:
    """The executor's run function compiled for the host over its own arena: the graph's outputs."""
    steps = "\n".join(step.code for step in model.steps)
    source = "\n".join(["#include <stdint.h>", *[f'#include "{h}"' for h in model.includes],
                        f"uint8_t edgesdk_arena[{model.arena_bytes + 16}] __attribute__((aligned(16)));",
                        *[_c_array(c) for c in model.consts], *model.declarations, *model.functions,
                        "void edgesdk_test_run(void)\n{\n" + steps + "\n}\n"])
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = cache_dir() / "generated" / f"cascade_{digest}.c"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    kernels_library()
    lib = load_shared_library(f"edgesdk_cascade_{digest}", [path], [KERNELS_DIR])
    import ctypes

    arena = (ctypes.c_uint8 * (model.arena_bytes + 16)).in_dll(lib, "edgesdk_arena")
    for io, value in zip(model.inputs, inputs):
        data = value.astype(np.int8).tobytes()
        ctypes.memmove(ctypes.addressof(arena) + io.arena_offset, data, len(data))
    lib.edgesdk_test_run()
    return [np.frombuffer(bytes(arena[io.arena_offset:io.arena_offset + io.nbytes]), np.int8).reshape(io.shape)
            for io in model.outputs]


def _check_group(model_bytes, first, last, heights, seed=7):
    path, graph, regions, options, problem = _setup(model_bytes)
    rng = np.random.default_rng(seed)
    inputs = [rng.integers(-128, 128, t.shape).astype(np.int8) for t in graph.inputs]
    (want,) = run_reference(path, inputs, "ref")
    ops = tuple(graph.ops[first:last])
    assert chain_ok(ops, graph)
    for height in heights:
        group = CascadeGroup(ops, height, first)
        plan = problem.plan([group])
        model = build_executor(graph, regions, plan, options)
        (got,) = _run_on_host(graph, model, inputs)
        assert np.array_equal(got, want), f"ops {first}..{last - 1}, stripe height {height}"
        (layer,) = [la for la in model.target_data["c"] if la.ops]
        computes = [c for c in layer.calls if c.op is not None]
        assert len(computes) >= group.schedule().stripes  # it really ran in stripes


@pytest.mark.parametrize("first,last,heights", [(1, 5, [1, 2, 4, 6]), (6, 9, [1, 3]), (5, 9, [1, 2, 3]),
                                                 (4, 8, [1, 2, 4]), (0, 5, [1, 2, 3, 6])])
def test_host_stripes_of_inverted_residuals_are_bit_exact(first, last, heights):
    _check_group(_inverted_residuals(), first, last, heights)


@pytest.mark.parametrize("first,last,heights", [(0, 4, [1, 2, 4]), (0, 2, [1, 3])])
def test_host_stripes_through_hard_swish_are_bit_exact(first, last, heights):
    """A one-input activation between windows: its stripes are its kernel over the stripe's elements."""
    _check_group(_hard_swish_stem(), first, last, heights)


@pytest.mark.parametrize("first,last,heights", [(1, 5, [1, 2, 3, 4, 10]), (4, 7, [1, 2]), (1, 3, [4])])
def test_host_stripes_at_every_kind_of_edge_are_bit_exact(first, last, heights):
    """Padding of two rows (5x5, dilated depthwise: the reference loops), SAME stride-2 average pooling."""
    _check_group(_edges_model(), first, last, heights)


def test_an_intermediate_read_by_two_ops_of_the_group():
    """ops 0-4: the 3x3 conv's output feeds the block's expansion and its ADD; its stripe buffer holds the rows
    both take in a stripe (the expansion's halo row ahead of the ADD's rows)."""
    _, graph, _, _, _ = _setup(_inverted_residuals())
    ops = tuple(graph.ops[0:5])
    assert chain_ok(ops, graph)
    group = CascadeGroup(ops, 2, 0)
    rows = group.schedule().rows
    a = ops[0].outputs[0]
    assert 3 <= rows[a] < a.shape[1]


def test_a_strided_group_may_write_its_output_over_the_input_it_consumed():
    """ops 5-8 (expand, stride-2 depthwise, project, pool): the output may start at the first byte of the
    group's input, which dies in the group (MobileNetV2's first group takes it: the slow test below)."""
    path, graph, regions, options, problem = _setup(_inverted_residuals())
    ops = tuple(graph.ops[5:9])
    group = CascadeGroup(ops, 1, 5)
    x = ops[0].inputs[0]
    assert group.exact_overlap_allowed(x)
    plan = problem.plan([group])
    (overlap,) = [o for o in plan.overlaps if o.group is group]
    assert overlap.rule == "cascade-exact" and overlap.distance == 0 and overlap.input_tensor is x
    rng = np.random.default_rng(3)
    inputs = [rng.integers(-128, 128, t.shape).astype(np.int8) for t in graph.inputs]
    (want,) = run_reference(path, inputs, "ref")
    assert np.array_equal(_run_on_host(graph, build_executor(graph, regions, plan, options), inputs)[0], want)


def test_sliding_depthwise_stripes_of_two_rows_take_the_reference_loops():
    """A 3x3 depthwise stripe of one output row at a padded edge reads two input rows; the sliding kernel always
    loads three, so that stripe runs the reference loops (their own constants), the others the sliding kernel."""
    _, graph, regions, options, problem = _setup(_inverted_residuals())
    from edgesdk.aot.executor import dry_context

    ops = tuple(graph.ops[1:4])
    group = CascadeGroup(ops, 1, 1)
    model = build_executor(graph, regions, problem.plan([group]), options)
    (layer,) = [la for la in model.target_data["c"] if la.ops]
    kinds = {c.args[0]["sliding"] for c in layer.calls if c.op is ops[1]}
    assert kinds == {0, 1}
    ctx = dry_context("test", options)
    striped, whole = stripe_cost(group, ctx)
    assert whole < striped < stripe_cost(CascadeGroup(ops, 2, 1), ctx)[0] * 1.5


def test_search_cascades_host_regions():
    """The search takes C regions: the arena drops and the group stays within the cost bound."""
    _, graph, regions, options, problem = _setup(_inverted_residuals())
    baseline = problem.plan()
    plan = choose_cascades(problem, regions, baseline, Striping(regions, options), max_cycle_increase=0.5)
    assert plan.cascades and plan.arena_bytes < baseline.arena_bytes


# -- the proof -------------------------------------------------------------------------------------------------
def _compiled_with_group(tmp_path, tamper=None):
    from edgesdk.compiler import BuildOptions, compile_model

    path = _model_bytes_file(_inverted_residuals())
    compiled = compile_model(path, BuildOptions(target="c", compile_firmware=False, cascade=False))
    group = CascadeGroup(tuple(compiled.graph.ops[1:5]), 2, 1)
    compiled.plan = compiled.memory_problem.plan([group])
    compiled.executor = build_executor(compiled.graph, compiled.regions, compiled.plan, compiled.codegen_options)
    if tamper is not None:
        (layer,) = [la for la in compiled.executor.target_data["c"] if la.ops]
        k = tamper(layer)
        compiled.executor.declarations.append(render_params(layer.calls[k].args[0]))
        step = next(s for s in compiled.executor.steps if s.target == "c" and "rows" in s.code)
        step.code = render_layer(layer)
    return compiled


def test_proof_accepts_a_host_cascade(tmp_path):
    from edgesdk.verify import verify_build

    counts = verify_build(_compiled_with_group(tmp_path))
    assert counts["cascade_groups"] == 1 and counts["stripe_calls"] > 5


def _move_output(layer, rows=2):
    """The last stripe call of the group's first conv writes `rows` rows further down its stripe buffer."""
    k = max(i for i, c in enumerate(layer.calls) if c.op is layer.ops[0])
    call = layer.calls[k]
    out = call.args[-1]
    width = out.tensor.shape[2] * out.tensor.shape[3]
    layer.calls[k] = replace(call, args=call.args[:-1] + (Arena(out.tensor, out.offset + rows * width, out.ctype),))
    return k


def _taller_input(layer):
    """A stripe call of the expand conv told that its input has more rows than the stripe buffer holds."""
    k = next(i for i, c in enumerate(layer.calls) if c.op is layer.ops[1] and c.args[0]["in_h"] > 1)
    call = layer.calls[k]
    params = call.args[0]
    bigger = replace(params, fields=dict(params.fields, in_h=params["in_h"] + 8))
    layer.calls[k] = KernelCall(call.kernel, (bigger,) + call.args[1:], op=call.op)
    return k


def _foreign_call(layer):
    """A call that names a layer outside the group."""
    call = layer.calls[0]
    layer.calls[0] = KernelCall(call.kernel, call.args, op=None)
    return 0


@pytest.mark.parametrize("tamper,message", [(_move_output, "outside the buffer of"),
                                            (_taller_input, "outside the buffer of"),
                                            (_foreign_call, "computes no layer of its group")])
def test_proof_refuses_a_tampered_stripe_call(tmp_path, tamper, message):
    from edgesdk.verify import VerificationError, verify_build

    compiled = _compiled_with_group(tmp_path, tamper)
    with pytest.raises(VerificationError, match=message):
        verify_build(compiled)


# -- the goal model ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_mobilenet_v2_224_fits_riscv_npu_in_stripes_and_is_bit_exact(tmp_path):
    """Issue 13's goal model: 1,211,392 bytes of activations op by op on the host, 965,888 with the NPU. On
    riscv-npu (512 KiB) the fit search cascades its inverted residuals: CPU-only within 256 KiB including the
    150,528-byte input, run bit-exact on the emulator (3.3 G instructions); with the NPU the plan fits too."""
    from conftest import model_path
    from edgesdk.compiler import BuildOptions, build, compile_model
    from firmware_checks import assert_runs_bit_exact

    path = model_path("mobilenet_v2_224_uint8")
    report = build(path, tmp_path / "c", BuildOptions(target="c", werror=True))
    memory = report["memory"]
    assert memory["sram_peak_bytes"] <= 256 * 1024 and len(memory["cascades"]) >= 2
    assert memory["cascades"][0]["ops"][0] == 0  # the 112x112 layers are never whole
    # the first group's 56x56 output starts on its 224x224 input, over the rows it has consumed
    assert any(e["rule"] == "cascade-exact" and e["distance"] == 0 for e in memory["in_place"])
    assert_runs_bit_exact(tmp_path / "c", report, path, seeds=(0,), timeout_s=3000)
    with_npu = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False))
    assert with_npu.plan.cascades and with_npu.plan.arena_bytes <= 512 * 1024 - 8192


@pytest.mark.slow
def test_mobilenet_v2_224_with_the_npu_fits_256_kib_within_the_fit_budget():
    """With the NPU, the first group (ops 0-5, 2-row stripes) keeps the whole 150,528-byte input live next to
    its stripe buffers; a first stripe of one row keeps the buffers of the 1x1 layers above the strided
    depthwise at 4 rows instead of 5, which brings the arena under 256 KiB (263,424 bytes with even stripes)
    within the fit budget. The plan is proven; a tuning schedule made from it replays its groups at the same
    arena: the replay, like the fit search, leaves out the scratch the grouped layers' stripes do not use
    (compiler.without_unused_scratch; with that scratch kept the replay was 261,632 bytes)."""
    from conftest import model_path
    from edgesdk.aot import cascade
    from edgesdk.aot.memory_plan import verify_plan
    from edgesdk.compiler import BuildOptions, compile_model
    from edgesdk.tune.schedule import Schedule, schedule_of

    path = model_path("mobilenet_v2_224_uint8")
    compiled = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False))
    plan = compiled.plan
    assert plan.arena_bytes <= 256 * 1024
    first = plan.cascades[0]
    assert [op.index for op in first.ops] == [0, 1, 2, 3, 4, 5] and (first.stripe_height, first.lead_rows) == (2, 1)
    verify_plan(plan)
    striping = cascade.Striping(compiled.regions, compiled.codegen_options)
    totals = cascade.model_cycles(compiled.graph, compiled.regions, striping)
    assert cascade.plan_increase(plan, striping, totals) <= cascade.FIT_MAX_INCREASE
    schedule = Schedule.from_json(schedule_of(compiled).to_json())
    assert schedule.cascades[0].first_stripe_rows == 1
    replayed = compile_model(path, BuildOptions(target="npu,c", compile_firmware=False, schedule=schedule))
    groups = lambda p: [(g.first_step, g.last_step, g.stripe_height, g.lead_rows) for g in p.cascades]
    assert groups(replayed.plan) == groups(plan) and replayed.plan.arena_bytes == plan.arena_bytes


@pytest.mark.slow
def test_synthetic_host_cascade_on_the_emulator(tmp_path, monkeypatch):
    """The search's own choice on the inverted residuals with the cost bound lifted (a fitting model keeps
    the host op by op by default), built with --werror into firmware and run on the emulator, --target c."""
    import functools
    import math

    import edgesdk.compiler as compiler
    from edgesdk.aot import cascade
    from edgesdk.compiler import BuildOptions, build
    from firmware_checks import assert_runs_bit_exact

    monkeypatch.setattr(compiler, "choose_cascades",
                        functools.partial(cascade.choose_cascades, max_cycle_increase=math.inf))
    path = _model_bytes_file(_inverted_residuals())
    report = build(path, tmp_path / "m", BuildOptions(target="c", werror=True))
    plain = build(path, tmp_path / "plain", BuildOptions(target="c", cascade=False, compile_firmware=False))
    assert report["memory"]["cascades"], "no cascade chosen"
    assert report["memory"]["sram_peak_bytes"] < plain["memory"]["sram_peak_bytes"]
    assert_runs_bit_exact(tmp_path / "m", report, path)


def test_every_window_kernel_the_host_emits_takes_row_ranges():
    """Each kernel the C target calls for a layer it offers to stripe must be one stripes.py can give a row
    range; otherwise the layer silently never cascades (the paired conv kernel once did, and MobileNetV2-224
    on --target c lost its fit)."""
    from conftest import model_path
    from edgesdk.aot.executor import dry_context
    from edgesdk.compiler import BuildOptions, compile_model
    from edgesdk.targets.c import stripes

    for name in ("kws", "vww", "ic", "mobilenet_v2_224_uint8"):
        compiled = compile_model(model_path(name), BuildOptions(target="c", compile_firmware=False,
                                                                board="riscv-npu-large", cascade=False))
        ctx = dry_context("row-kernels", compiled.codegen_options)
        kernels = {stripes.LayerCalls(op, ctx).whole.kernel for op in compiled.graph.ops if stripes.can_stripe(op)}
        assert kernels and kernels <= set(stripes.ROW_KERNELS + stripes.ELEMENTWISE_KERNELS
                                          + stripes.SIZED_KERNELS), (name, kernels)
