"""Control flow (WHILE, IF): subgraphs inlined into one schedule (edgesdk/importer/control_flow.py), loops and
branches as C statements (edgesdk/targets/c/ops/control_flow.py), every subgraph's tensors in the one arena.

Hand-written models (tests/modelgen.py) cover what the converter does not make: loop variables that change
places between iterations (a result that is another loop variable, or a RESHAPE view of one, which the memory
plan aliases), an IF branch that passes its input through, nested control flow, a loop that never ends, and
malformed files. The converter-made WHILE / IF / GRU / SimpleRNN models of tests/models/ops are checked by
tests/test_op_corpus.py, and their loop versions in firmware here.
"""

from __future__ import annotations

import numpy as np
import pytest

import corpus
from edgesdk.cli import main as cli_main
from edgesdk.errors import EmulatorError, ModelError
from edgesdk.importer import import_tflite
from edgesdk.ops.control_flow import control_flow_units
from edgesdk.ops.folding import fold_constants
from edgesdk.partition.partitioner import partition
from edgesdk.targets.c import testing
from image_batches import link_and_run, load_runs
from modelgen import ModelBuilder

Q = dict(scale=0.05, zero_point=0)  # every int8 activation of these models
VEC = (1, 8)


def _add(m, a, b, y):
    m.op("ADD", [a, b], [y], "AddOptions", FusedActivationFunction=0)


def _loop_state(m):
    """Tensors (i int32[], a int8[1,8], b int8[1,8]) of one subgraph."""
    return m.tensor((), "int32", name="i"), m.tensor(VEC, "int8", name="a", **Q), m.tensor(VEC, "int8", name="b", **Q)


def _counter_cond(trips: int):
    """Condition subgraph over (i, a, b): i < trips."""
    c = ModelBuilder()
    i, a, b = _loop_state(c)
    n = c.const(np.int32(trips), "int32")
    keep = c.tensor((), "bool", name="keep")
    c.op("LESS", [i, n], [keep])
    return c, [i, a, b], [keep]


def fibonacci_model(trips: int = 5, step: int = 1) -> bytes:
    """WHILE i < trips: (i, a, b) <- (i + step, view of b, a + b). The second result is a RESHAPE view of loop
    variable b, whose bytes the memory plan gives to b: it must be set aside before b is overwritten."""
    body = ModelBuilder()
    i, a, b = _loop_state(body)
    one = body.const(np.int32(step), "int32")
    i2 = body.tensor((), "int32", name="i_next")
    body.op("ADD", [i, one], [i2], "AddOptions", FusedActivationFunction=0)
    shape = body.const(np.array(VEC, np.int32), "int32")
    view = body.tensor(VEC, "int8", name="b_view", **Q)
    body.op("RESHAPE", [b, shape], [view])
    total = body.tensor(VEC, "int8", name="a_plus_b", **Q)
    _add(body, a, b, total)

    m = ModelBuilder()
    x = m.tensor(VEC, "int8", name="x", **Q)
    y = m.tensor(VEC, "int8", name="y", **Q)
    i0 = m.const(np.int32(0), "int32")
    outs = [m.tensor((), "int32", name="i_out"), m.tensor(VEC, "int8", name="a_out", **Q),
            m.tensor(VEC, "int8", name="b_out", **Q)]
    m.op("WHILE", [i0, x, y], outs, "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    return m.build([x, y], outs[1:], subgraphs=[_counter_cond(trips), (body, [i, a, b], [i2, view, total])])


def permute_model(first: str = "b", second: str = "a", trips: int = 3, cond_reads: bool = False) -> bytes:
    """WHILE i < trips: (i, a, b) <- (i + 1, first, second), each of "a", "b" (the loop variable passed on
    unchanged) or "2a", "2b" (a + a, b + b). Results that are the other loop variable are where the references
    differ (docs/rounding.md). With `cond_reads`, the condition also reads b: i < trips and max(b) < 2.0."""
    body = ModelBuilder()
    i, a, b = _loop_state(body)
    one = body.const(np.int32(1), "int32")
    i2 = body.tensor((), "int32")
    body.op("ADD", [i, one], [i2], "AddOptions", FusedActivationFunction=0)

    def result(spec):
        if spec in ("a", "b"):
            return a if spec == "a" else b
        x = a if spec == "2a" else b
        y = body.tensor(VEC, "int8", **Q)
        _add(body, x, x, y)
        return y

    results = [i2, result(first), result(second)]
    cond = _counter_cond(trips)
    if cond_reads:
        c = ModelBuilder()
        ci, ca, cb = _loop_state(c)
        n = c.const(np.int32(trips), "int32")
        axes = c.const(np.array([0, 1], np.int32), "int32")
        limit = c.const(np.array(40, np.int8), "int8", **Q)
        counting, peak, low, keep = c.tensor((), "bool"), c.tensor((), "int8", **Q), c.tensor((), "bool"), \
            c.tensor((), "bool")
        c.op("LESS", [ci, n], [counting])
        c.op("REDUCE_MAX", [cb, axes], [peak], "ReducerOptions", KeepDims=False)
        c.op("LESS", [peak, limit], [low])
        c.op("LOGICAL_AND", [counting, low], [keep])
        cond = (c, [ci, ca, cb], [keep])
    m = ModelBuilder()
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    i0 = m.const(np.int32(0), "int32")
    outs = [m.tensor((), "int32"), m.tensor(VEC, "int8", **Q), m.tensor(VEC, "int8", **Q)]
    m.op("WHILE", [i0, x, y], outs, "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    return m.build([x, y], outs, subgraphs=[cond, (body, [i, a, b], results)])


def _branch(kind: str, width: int = 8):
    """A branch subgraph over x int8[1,width]: "double" (x + x), "square" (x * x + x) or "pass" (x itself)."""
    g = ModelBuilder()
    x = g.tensor((1, width), "int8", **Q)
    if kind == "pass":
        return g, [x], [x]
    y = g.tensor((1, width), "int8", **Q)
    if kind == "double":
        _add(g, x, x, y)
        return g, [x], [y]
    t = g.tensor((1, width), "int8", name="square", **Q)
    g.op("MUL", [x, x], [t], "MulOptions", FusedActivationFunction=0)
    _add(g, t, x, y)
    return g, [x], [y]


def if_model(then: str = "double", otherwise: str = "pass", width: int = 8) -> bytes:
    """IF(c): y = then-branch(x) else else-branch(x); c is a model input (bool[1])."""
    m = ModelBuilder()
    c = m.tensor((1,), "bool", name="c")
    x = m.tensor((1, width), "int8", name="x", **Q)
    y = m.tensor((1, width), "int8", name="y", **Q)
    m.op("IF", [c, x], [y], "IfOptions", ThenSubgraphIndex=1, ElseSubgraphIndex=2)
    return m.build([c, x], [y], subgraphs=[_branch(then, width), _branch(otherwise, width)])


def nested_model(trips: int = 4) -> bytes:
    """WHILE i < trips: x <- IF(i < 2) x + x else x * x + x; a loop whose body holds an IF (subgraphs 3, 4)."""
    body = ModelBuilder()
    i, a, b = _loop_state(body)
    one = body.const(np.int32(1), "int32")
    two = body.const(np.int32(2), "int32")
    i2 = body.tensor((), "int32")
    body.op("ADD", [i, one], [i2], "AddOptions", FusedActivationFunction=0)
    early = body.tensor((), "bool")
    body.op("LESS", [i, two], [early])
    a2 = body.tensor(VEC, "int8", **Q)
    body.op("IF", [early, a], [a2], "IfOptions", ThenSubgraphIndex=3, ElseSubgraphIndex=4)
    m = ModelBuilder()
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    i0 = m.const(np.int32(0), "int32")
    outs = [m.tensor((), "int32"), m.tensor(VEC, "int8", **Q), m.tensor(VEC, "int8", **Q)]
    m.op("WHILE", [i0, x, y], outs, "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    return m.build([x, y], outs[1:], subgraphs=[_counter_cond(trips), (body, [i, a, b], [i2, a2, b]),
                                                _branch("double"), _branch("square")])


CASES = {"fibonacci": fibonacci_model, "swap": permute_model, "double_then_pass": lambda: permute_model("2b", "a"),
         "updated_pass_seen_by_condition": lambda: permute_model("2b", "a", trips=6, cond_reads=True),
         "pass_then_double": lambda: permute_model("b", "2a"), "if_double_pass": if_model,
         "if_square_double": lambda: if_model("square", "double"), "nested": nested_model}


def case_inputs(data: bytes, seed: int) -> list:
    """Seeded random inputs, int8 ones over the whole range or a smaller one (seed 1: a half, 2: a quarter,
    so that loops that run while values stay small run a few times); an IF condition alternates with the
    seed so that both branches run."""
    inputs = testing.random_model_inputs(data, seed)
    return [np.array([seed % 2 == 0]) if x.dtype == np.bool_ else x >> (seed % 3) if x.dtype == np.int8 else x
            for x in inputs]


def _write(tmp_path, name: str, data: bytes):
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("mode", ["ref", "tflm"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_host_bit_exact(name, mode, tmp_path):
    """Each model, run on the host kernels as a whole WHILE / IF unit, equals each reference."""
    data = CASES[name]()
    graph = import_tflite(_write(tmp_path, name, data))
    fold_constants(graph)
    partition(graph, ["c"])
    library = testing.OpLibrary(graph.ops, mode)
    for seed in range(6):
        ref = testing.reference_tensors(data, case_inputs(data, seed), mode)
        assert testing.compare_ops(graph, ref, mode, library) == [], f"{name} seed {seed}"


def test_a_wrong_result_is_caught(tmp_path):
    """The unit comparison is not vacuous: a reference output changed by one step is reported."""
    data = fibonacci_model()
    graph = import_tflite(_write(tmp_path, "fib", data))
    ref = testing.reference_tensors(data, case_inputs(data, 0), "ref")
    while_op = next(op for op in graph.ops if op.type == "WHILE")
    ref[while_op.outputs[2].id] = ref[while_op.outputs[2].id] + np.int8(1)
    failures = testing.compare_ops(graph, ref, "ref")
    assert [op.type for op, _, _ in failures] == ["WHILE"]


def test_schedule_of_a_loop(tmp_path):
    """The WHILE becomes init, loop, condition ops, test, body ops, a copy aside of the aliased result, next, end;
    the inlined ops keep their subgraph and index."""
    graph = import_tflite(_write(tmp_path, "fib", fibonacci_model()))
    parts = [(op.type, op.attrs.get("part"), op.subgraph, op.index) for op in graph.ops]
    assert parts == [("WHILE", "init", 0, 0), ("WHILE", "loop", 0, 0), ("LESS", None, 1, 0), ("WHILE", "test", 0, 0),
                     ("ADD", None, 2, 0), ("RESHAPE", None, 2, 1), ("ADD", None, 2, 2), ("WHILE", "copy", 0, 0),
                     ("WHILE", "next", 0, 0), ("WHILE", "end", 0, 0)]
    loop_vars = graph.ops[0].outputs
    assert graph.ops[-2].outputs == loop_vars  # next writes the loop variables, which are the WHILE's outputs
    assert graph.ops[2].inputs[0] is loop_vars[0]  # the condition reads loop variable i itself (no copy)
    assert [len(u) for u in control_flow_units(graph.ops)] == [10]
    assert "operator #1 of subgraph 2 (RESHAPE" in graph.ops[5].location


def test_loop_variables_live_over_the_whole_loop_and_if_branches_share_memory(tmp_path):
    from edgesdk.aot.memory_plan import plan_memory

    graph = import_tflite(_write(tmp_path, "fib", fibonacci_model()))
    plan = plan_memory(graph)
    end = len(graph.ops) - 1
    for t in graph.ops[0].outputs[1:]:
        buf = next(b for b in plan.buffers if t in b.tensors)
        assert buf.first <= 0 and buf.last >= end - 1, (t.name, buf.first, buf.last)
    width = 4096  # each branch's temporaries are large: only sharing keeps the arena near one branch's need
    graph = import_tflite(_write(tmp_path, "if", if_model("square", "double", width)))
    plan = plan_memory(graph)
    assert plan.arena_bytes <= 4 * width + 2 * 16  # c, x, y and one branch temporary at a time
    then_temp = next(t for op in graph.ops if op.type == "MUL" for t in op.outputs)
    else_temp = next(op for op in graph.ops if op.subgraph == 2 and op.type == "ADD").outputs[0]
    assert plan.offset(then_temp) == plan.offset(else_temp) or plan.arena_bytes < 5 * width


def test_inspect_shows_parts_and_subgraphs(tmp_path, capsys):
    path = _write(tmp_path, "nested", nested_model())
    assert cli_main(["inspect", str(path), "--target", "c"]) == 0
    out = capsys.readouterr().out
    for row in ("WHILE (init)", "WHILE (loop)", "1:0  LESS", "WHILE (test)", "2:2  IF (if)", "3:0  ADD",
                "IF (else)", "4:0  MUL", "IF (end)", "WHILE (end)"):
        assert row in out, row


def _malformed(tmp_path, name, data, capsys, expected: str):
    path = _write(tmp_path, name, data)
    code = cli_main(["build", str(path), "--target", "c", "--no-firmware", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_malformed_control_flow_is_a_model_error(tmp_path, capsys):
    m = ModelBuilder()
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    m.op("WHILE", [x], [y], "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=7)
    cond = ModelBuilder()
    cx = cond.tensor(VEC, "int8", **Q)
    keep = cond.tensor((), "bool")
    cond.op("LESS", [cx, cx], [keep])
    _malformed(tmp_path, "bad_index", m.build([x], [y], subgraphs=[(cond, [cx], [keep])]), capsys,
               "refers to subgraph 7")

    m = ModelBuilder()  # the body runs itself: no static schedule
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    m.op("WHILE", [x], [y], "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    body = ModelBuilder()
    bx = body.tensor(VEC, "int8", **Q)
    by = body.tensor(VEC, "int8", **Q)
    body.op("WHILE", [bx], [by], "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    _malformed(tmp_path, "recursive", m.build([x], [y], subgraphs=[(cond, [cx], [keep]), (body, [bx], [by])]),
               capsys, "recursive control flow")

    cond2 = ModelBuilder()  # a condition that is not a bool
    c2x = cond2.tensor(VEC, "int8", **Q)
    m = ModelBuilder()
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    m.op("WHILE", [x], [y], "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    body = ModelBuilder()
    bx = body.tensor(VEC, "int8", **Q)
    _malformed(tmp_path, "int_cond", m.build([x], [y], subgraphs=[(cond2, [c2x], [c2x]), (body, [bx], [bx])]),
               capsys, "not one bool of one element")

    m = ModelBuilder()  # a body whose input has another type than the loop variable
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    m.op("WHILE", [x], [y], "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    body = ModelBuilder()
    bx = body.tensor(VEC, "int16", scale=0.05, zero_point=0)
    _malformed(tmp_path, "types", m.build([x], [y], subgraphs=[(cond, [cx], [keep]), (body, [bx], [bx])]),
               capsys, "the types and element counts must match")

    m = ModelBuilder()  # an IF whose condition is an int8 tensor
    c = m.tensor((1,), "int8", **Q)
    x = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    m.op("IF", [c, x], [y], "IfOptions", ThenSubgraphIndex=1, ElseSubgraphIndex=2)
    _malformed(tmp_path, "if_cond", m.build([c, x], [y], subgraphs=[_branch("pass"), _branch("pass")]), capsys,
               "IF needs a bool condition of one element")

    m = ModelBuilder()  # a body returning fewer values than there are loop variables
    x = m.tensor(VEC, "int8", **Q)
    x2 = m.tensor(VEC, "int8", **Q)
    y = m.tensor(VEC, "int8", **Q)
    y2 = m.tensor(VEC, "int8", **Q)
    m.op("WHILE", [x, x2], [y, y2], "WhileOptions", CondSubgraphIndex=1, BodySubgraphIndex=2)
    cond3 = ModelBuilder()
    c3 = [cond3.tensor(VEC, "int8", **Q) for _ in range(2)]
    k3 = cond3.tensor((), "bool")
    cond3.op("LESS", c3, [k3])
    body = ModelBuilder()
    b3 = [body.tensor(VEC, "int8", **Q) for _ in range(2)]
    _malformed(tmp_path, "arity", m.build([x, x2], [y, y2], subgraphs=[(cond3, c3, [k3]), (body, b3, b3[:1])]),
               capsys, "returns 1 values")


def test_partition_report_names_subgraph_ops(tmp_path):
    """The build report lists the inlined ops with their subgraph and the parts with their role."""
    from edgesdk.compiler import BuildOptions, build

    report = build(_write(tmp_path, "if", if_model()), tmp_path / "out",
                   BuildOptions(target="npu,c", compile_firmware=False))
    parts = [(op["type"], op.get("part"), op.get("subgraph", 0), op["target"]) for op in report["ops"]]
    assert ("IF", "if", 0, "c") in parts and ("ADD", None, 1, "npu") in parts


# -- firmware ---------------------------------------------------------------------------------------------------

def _bit_exact(run, model_path, inputs, mode) -> list:
    """Problems of one model's run in an image, (status, outputs, uart) (tests/image_batches.py), against the
    reference on the same inputs."""
    from edgesdk.reference import run_reference

    status, outputs, uart = run
    if status != 0:
        return [f"exit {-status}: {uart[-200:]}"]
    expected = run_reference(model_path, inputs, mode)
    return [f"output {k}: {np.count_nonzero(np.asarray(w).view(np.uint8) != np.asarray(g).view(np.uint8))} bytes differ"
            for k, (w, g) in enumerate(zip(expected, outputs))
            if np.asarray(w).tobytes() != np.asarray(g).tobytes()]


SEEDS = range(4)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["c", "npu,c"])
def test_firmware_bit_exact(target, tmp_path):
    """Every hand-written model in firmware, against both references; with "npu,c" the int8 ADD and MUL inside
    loop bodies and branches run on the NPU. The models' builds (each model and mode under a name of its own)
    are linked into one firmware image, booted once per seed (tests/image_batches.py)."""
    from edgesdk.compiler import BuildOptions, build

    on_npu, builds, paths, datas = 0, {}, {}, {}
    for k, name in enumerate(sorted(CASES)):
        datas[name] = CASES[name]()
        paths[name] = _write(tmp_path, name, datas[name])
        for mode in ("ref", "tflm"):
            out = tmp_path / f"{name}_{mode}"
            report = build(paths[name], out, BuildOptions(target=target, rounding=mode, werror=True,
                                                          name=f"m{k}_{mode}", compile_firmware=False))
            on_npu += sum(op["target"] == "npu" and op.get("subgraph", 0) > 0 for op in report["ops"])
            builds[name, mode] = out
    runs = link_and_run(tmp_path, builds,
                        {seed: {key: case_inputs(datas[key[0]], seed) for key in builds} for seed in SEEDS})
    problems = [f"{name} {mode} seed {seed}: {p}" for seed in SEEDS for (name, mode) in builds
                for p in _bit_exact(runs[seed][name, mode], paths[name], case_inputs(datas[name], seed), mode)]
    assert not problems, "\n".join(problems)
    assert (on_npu > 0) == (target == "npu,c")


@pytest.mark.slow
def test_unbounded_loop_stops_at_the_instruction_budget(tmp_path, capsys):
    """A WHILE whose condition never turns false runs in the generated C; the emulator's instruction budget stops
    it with an error (exit code 6), never a silent hang."""
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.runner import run_inference

    path = _write(tmp_path, "forever", fibonacci_model(trips=3, step=0))
    out = tmp_path / "out"
    build(path, out, BuildOptions(target="c"))
    with pytest.raises(EmulatorError, match="budget of 2000000 instructions"):
        run_inference(out, case_inputs(path.read_bytes(), 0), max_instructions=2_000_000)
    code = cli_main(["run", str(out), "--random-input", "0", "--max-instructions", "2000000"])
    assert code == 6 and "did not finish within the budget" in capsys.readouterr().err


LOOP_MODELS = [e for e in corpus.entries() if "WHILE" in e["ops"] or "IF" in e["ops"]]
LOOP_FILES = [e["file"] for e in LOOP_MODELS if not corpus.expected_unsupported(e)]


@pytest.fixture(scope="session")
def loop_firmware(session_builds):
    """{(file, mode, target): (status, outputs, uart)} per corpus case: every supported LOOP_MODELS model built for
    each reference that runs it and both targets (sources only, under names of their own), linked into one
    firmware image and run on each case, once per session (any worker; tests/image_batches.py)."""
    from edgesdk.compiler import BuildOptions, build

    def make(out):
        builds = {}
        for k, entry in enumerate(e for e in LOOP_MODELS if e["file"] in LOOP_FILES):
            for mode in ("ref", "tflm"):
                if not corpus.reference_ok(entry, mode):
                    continue
                for target in ("c", "npu,c"):
                    name = f"l{k}_{mode}_{target.replace(',', '_')}"
                    build(corpus.CORPUS / entry["file"], out / name,
                          BuildOptions(target=target, rounding=mode, werror=True, name=name, compile_firmware=False))
                    builds[entry["file"], mode, target] = out / name
        entries = {e["file"]: e for e in LOOP_MODELS}
        link_and_run(out, builds, {case: {key: corpus.case_inputs(entries[key[0]], case, 0) for key in builds}
                                   for case in corpus.CASES})

    return load_runs(session_builds("control-flow-corpus", make))


@pytest.mark.slow
@pytest.mark.parametrize("entry", LOOP_MODELS, ids=lambda e: e["file"])
def test_corpus_control_flow_firmware(entry, loop_firmware):
    """Every converter-made WHILE / IF model edgesdk compiles (Keras GRU and SimpleRNN loops, tf.while_loop,
    tf.cond), in firmware on both targets, against each reference that runs it, on the corpus's cases (in one
    firmware image with the other models, each build under a name of its own)."""
    if corpus.expected_unsupported(entry):
        pytest.skip(corpus.expected_unsupported(entry))
    path = corpus.CORPUS / entry["file"]
    problems = []
    for mode in ("ref", "tflm"):
        if not corpus.reference_ok(entry, mode):
            continue
        for target in ("c", "npu,c"):
            for case in corpus.CASES:
                problems += [f"{entry['file']} {mode} {target} {case}: {p}"
                             for p in _bit_exact(loop_firmware[case][entry["file"], mode, target], path,
                                                 corpus.case_inputs(entry, case, 0), mode)]
    assert not problems, "\n".join(problems)


def test_model_error_is_not_raised_for_converter_models():
    """Every converter-made control-flow model imports (whatever its ops' status)."""
    for entry in LOOP_MODELS:
        try:
            import_tflite(corpus.CORPUS / entry["file"])
        except ModelError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{entry['file']}: {exc}")
