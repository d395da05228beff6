"""--rounding ort: bit-exact with ONNX Runtime's CPU execution of QDQ models made by its own quantizer.

The corpus (tests/models/onnx, written by tests/models/make_onnx_models.py with onnxruntime's quantize_static) covers
Conv, depthwise Conv, Gemm, MatMul, Add, Mul, MaxPool, AveragePool, GlobalAveragePool, Concat, Relu, Clip, Sigmoid
and LeakyRelu, with uint8 and int8 activations and per-tensor and per-channel weights.

* host level (every model edgesdk accepts, every check case of tests/ort_corpus.py): the C target's generated
  calls run on the host kernels, compared byte for byte with ONNX Runtime's outputs;
* the models edgesdk refuses are exactly those the manifest lists, for the reason it records;
* firmware (slow, a few models): built, run on the emulator, compared with ONNX Runtime (and `edgesdk run --check`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: pip install '.[tvm]'")
pytest.importorskip("tvm", reason="apache-tvm is not installed: pip install '.[tvm]' (docs/tvm-interop.md)")

import ort_corpus as oc  # noqa: E402
from edgesdk.errors import UnsupportedOpError  # noqa: E402

ENTRIES = oc.models()
ISSUE_OPS = {"Conv", "Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul", "Concat",
             "Relu", "Clip", "Sigmoid", "LeakyRelu"}


def _entry(file: str) -> dict:
    return next(e for e in ENTRIES if e["file"] == file)


def test_corpus_is_what_the_manifest_lists_and_stays_small():
    assert {p.name for p in oc.ONNX_DIR.glob("*.onnx")} == {e["file"] for e in ENTRIES}
    for e in ENTRIES:
        data = oc.path(e).read_bytes()
        assert hashlib.sha256(data).hexdigest() == e["sha256"], e["file"]
        assert len(data) < 16 * 1024, e["file"]
    assert sum(oc.path(e).stat().st_size for e in ENTRIES) < 512 * 1024


def test_corpus_covers_the_ops_of_the_issue_in_models_edgesdk_builds():
    built = [e for e in ENTRIES if oc.buildable(e)]
    assert ISSUE_OPS <= {op for e in built for op in e["ops"]}  # Clip: folded into the output range
    assert {"depthwise3x3", "gemm", "matmul", "global_avgpool", "concat_inputs", "net_issue12", "net_mixed"} <= \
        {e["spec"] for e in built}
    assert {e["activation"] for e in built} == {"uint8", "int8"}
    assert any(e["per_channel"] for e in built)
    fused = {k for e in built for k in e["ort_kernels"]}
    assert {"QLinearConv", "QGemm", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearAveragePool",
            "QLinearGlobalAveragePool", "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu"} <= fused
    assert {"Add", "Mul"} <= fused  # groups ONNX Runtime keeps in float32 (int8 tensors read by several ops)


def test_onnxruntime_fuses_the_groups_the_manifest_recorded():
    """The corpus's expectations hold for the installed ONNX Runtime (its fusions are what --rounding ort models)."""
    import onnxruntime
    import sys

    sys.path.insert(0, str(oc.ONNX_DIR.parent))
    import make_onnx_models

    changed = [e["file"] for e in ENTRIES if make_onnx_models.ort_kernels(oc.path(e)) != e["ort_kernels"]]
    assert not changed, f"ONNX Runtime {onnxruntime.__version__} fuses these differently: {changed}"


def test_models_refused_are_those_listed_with_the_reason():
    from edgesdk.importer.onnx_importer import import_model
    from edgesdk.importer.ort_plan import prepare

    problems = []
    for e in ENTRIES:
        try:
            prepare(import_model(oc.path(e)))
            refusal = None
        except UnsupportedOpError as exc:
            refusal = str(exc)
        if oc.buildable(e) != (refusal is None):
            problems.append(f"{e['file']}: manifest says buildable={oc.buildable(e)}, got {refusal!r}")
        elif refusal is not None:
            assert refusal.startswith(e["ort_refusal"]), e["file"]
            assert "(not fused into" in refusal and "QuantType.QUInt8" in refusal and "--rounding ref" in refusal
    assert not problems, "\n".join(problems)
    refused = {e["file"] for e in ENTRIES if not oc.buildable(e)}
    # only int8 activations that fan out run in float32; of those, edgesdk reproduces Conv, Gemm and MatMul groups
    # whose sums MLAS does not split
    assert refused == {"fanout_wide_conv_s8.onnx"}
    float_groups = {e["file"] for e in ENTRIES if oc.buildable(e) and {"Conv", "Gemm", "MatMul"} & set(e["ort_kernels"])}
    assert {"net_issue12_s8.onnx", "fanout_convs_s8.onnx", "net_mixed_s8.onnx", "fanout_gemm_s8.onnx",
            "fanout_gemm_batch_s8.onnx"} <= float_groups


@pytest.fixture(scope="module")
def host():
    """Every accepted model's graph, compiled into one host library (a single C compile)."""
    graphs = {e["file"]: oc.import_for_ort(oc.path(e)) for e in ENTRIES if oc.buildable(e)}
    runnable = {f: g for f, g in graphs.items() if oc.HostGraphs.runnable(g)}
    return runnable, oc.HostGraphs(list(runnable.values()))


def test_host_bit_exact_with_onnxruntime(host):
    graphs, library = host
    # every accepted model but the LeakyRelu ones (lowered through TVM: the firmware test runs them)
    assert len(graphs) == sum(oc.buildable(e) and "LeakyRelu" not in e["ops"] for e in ENTRIES)
    problems = []
    for file, graph in graphs.items():
        entry = _entry(file)
        scales = oc.input_scales(oc.path(entry))
        for case in range(len(oc.CASES)):
            feeds = oc.inputs(entry, case, scales)
            expected = oc.onnxruntime_outputs(oc.path(entry), feeds)
            got = library.run(graph, [feeds[t.name] if t.name in feeds else list(feeds.values())[k]
                                      for k, t in enumerate(graph.inputs)])
            for k, (want, have) in enumerate(zip(expected, got)):
                if not oc.same_bits(np.asarray(want, np.float32), np.asarray(have)):
                    problems.append(f"{file} [{oc.CASES[case]} {case}] output {k}: "
                                    f"{int(np.count_nonzero(np.asarray(want).reshape(-1) != np.asarray(have).reshape(-1)))} differ")
    assert not problems, "\n".join(problems[:40])


def test_host_run_detects_a_one_step_change(host):
    """The comparison can fail: the same graph run on a nudged input no longer matches ONNX Runtime's output."""
    graphs, library = host
    graph = graphs["conv3x3_u8.onnx"]
    entry = _entry("conv3x3_u8.onnx")
    feeds = oc.inputs(entry, 0)
    want = oc.onnxruntime_outputs(oc.path(entry), feeds)[0]
    assert oc.same_bits(want, library.run(graph, [feeds["x"]])[0])
    feeds["x"] = feeds["x"].copy()
    feeds["x"].reshape(-1)[0] += 0.25
    assert not oc.same_bits(want, library.run(graph, [feeds["x"]])[0])


FLOAT_LAYER_WRAPPER = r"""
#include "edgesdk_ort.h"
/* All outputs of edgesdk_ort_float_conv_value (NHWC, one image) / edgesdk_ort_float_fc_value (rows x units);
 * g: the int32 fields in struct order. */
void float_conv_values(const int32_t *g, const float *table, const float *filter, const float *bias,
                       const int8_t *image, float *out)
{
    edgesdk_ort_float_conv_params p = {1, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11],
                                       g[12], g[13], g[14], g[15], table, filter, bias, 1.0f, 0, -128, 127};
    for (int32_t oy = 0; oy < p.out_h; oy++)
        for (int32_t ox = 0; ox < p.out_w; ox++)
            for (int32_t o = 0; o < p.out_c; o++)
                *out++ = edgesdk_ort_float_conv_value(&p, image, oy, ox, o);
}
void float_fc_values(const int32_t *g, const float *table, const float *weights, const float *bias,
                     const int8_t *input, float *out)
{
    edgesdk_ort_float_fc_params p = {g[0], g[1], g[2], g[3], g[4], table, weights, bias, 1.0f, 0, -128, 127};
    for (int32_t m = 0; m < p.rows; m++)
        for (int32_t n = 0; n < p.units; n++)
            *out++ = edgesdk_ort_float_fc_value(&p, input + m * p.depth, n);
}
"""
FLOAT_LAYER_MODELS = ("net_issue12_s8.onnx", "net_issue12_s8_pc.onnx", "fanout_convs_s8.onnx", "fanout_convs_s8_pc.onnx",
                      "concat_convs_s8.onnx", "relu_branch_s8.onnx", "net_mixed_s8.onnx", "fanout_gemm_s8.onnx",
                      "fanout_gemm_s8_pc.onnx", "fanout_gemm_batch_s8.onnx")


def _float_group_probe(model, node_name: str):
    """The ONNX node `node_name` of a QDQ model with the DequantizeLinear nodes of its inputs, reading a quantized
    input through its own DequantizeLinear: the float32 op of that group, with a float output."""
    from onnx import helper

    producers = {o: n for n in model.graph.node for o in n.output}
    core = next(n for n in model.graph.node if n.name == node_name)
    dqs = [producers[name] for name in core.input]
    inits = {i.name: i for i in model.graph.initializer}
    used = {name: inits[name] for k, n in enumerate(dqs) for name in n.input[1:] + ([] if k == 0 else n.input[:1])}
    x_type = inits[dqs[0].input[2]].data_type
    graph = helper.make_graph([*dqs, core], "probe", [helper.make_tensor_value_info(dqs[0].input[0], x_type, None)],
                              [helper.make_tensor_value_info(core.output[0], 1, None)], list(used.values()))
    probe = helper.make_model(graph, opset_imports=list(model.opset_import))
    probe.ir_version = model.ir_version
    return probe, dqs[0].input[0]


def _probe_outputs(probe, input_name: str, quantized: np.ndarray) -> np.ndarray:
    """ONNX Runtime's float op of the probe, run without graph optimizations (the optimizer would fuse a
    DequantizeLinear -> Gemm into a QGemm with a float output; in the model the group keeps the float kernel)."""
    import onnx
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    if probe.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.UINT8:
        quantized = (quantized.astype(np.int16) + 128).astype(np.uint8)
    return session.run(None, {input_name: np.ascontiguousarray(quantized)})[0]


def test_float_layers_sum_in_onnxruntime_order(tmp_path):
    """The float32 values the kernels quantize equal ONNX Runtime's float Conv / Gemm / MatMul bit for bit, for every
    such group ONNX Runtime runs in float32 in the corpus; summed in any other of MLAS's orders, many of them differ
    (the int8 comparisons above rarely see the order: a last-bit difference must meet a rounding boundary)."""
    import ctypes
    import dataclasses

    import onnx
    from edgesdk.hostcc import load_shared_library
    from edgesdk.ops import ort as ort_ops
    from edgesdk.targets.c.testing import KERNELS_DIR

    src = tmp_path / "float_layer_wrap.c"
    src.write_text(FLOAT_LAYER_WRAPPER)
    lib = load_shared_library("edgesdk_test_ort_float_layers", [src, KERNELS_DIR / "edgesdk_ort.c"], [KERNELS_DIR])
    lib.float_conv_values.argtypes = lib.float_fc_values.argtypes = [ctypes.c_void_p] * 6
    rng = np.random.default_rng(12)
    checked, orders, other_order_differs = 0, set(), []
    for file in FLOAT_LAYER_MODELS:
        model = onnx.load(str(oc.path(_entry(file))))
        graph = oc.import_for_ort(oc.path(_entry(file)))
        for op in graph.ops:
            if op.type not in ort_ops.FLOAT_LAYER_TYPES or op.attrs["ort"].fused:
                continue
            x, y, a = op.inputs[0], op.outputs[0], op.attrs
            probe, input_name = _float_group_probe(model, op.attrs["ort"].node)
            quantized = rng.integers(-128, 128, x.shape).astype(np.int8)
            if op.type == "FULLY_CONNECTED":
                d = ort_ops.float_fc_data(op)
                want = _probe_outputs(probe, input_name, quantized)
                fields = lambda v: [x.shape[0], x.shape[1], y.shape[-1], v.order, int(v.bias_first)]  # noqa: E731
                run = lib.float_fc_values
                # bias_first matters only to the M=1 kernel, and only with a bias
                flags = lambda o: (False, True) if o == ort_ops.SUM_M1 and np.any(d.bias) else (False,)  # noqa: E731
                alternatives = [dataclasses.replace(d, order=o, bias_first=f) for o in range(3) for f in flags(o)
                                if (o, f) != (d.order, d.bias_first)]
                tables = lambda v: (v.dequantized, v.weights, v.bias)  # noqa: E731
            else:
                d = ort_ops.float_conv_data(op)
                want = _probe_outputs(probe, input_name, quantized.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)
                fields = lambda v: [x.shape[1], x.shape[2], x.shape[3], y.shape[1], y.shape[2], y.shape[3],  # noqa: E731
                                    op.inputs[1].shape[1], op.inputs[1].shape[2], a["stride_h"], a["stride_w"],
                                    a["dilation_h"], a["dilation_w"], a["pad_top"], a["pad_left"], v.groups,
                                    int(v.fma_chain)]
                run = lib.float_conv_values
                alternatives = [dataclasses.replace(d, fma_chain=not d.fma_chain)]
                tables = lambda v: (v.dequantized, v.filter, v.bias)  # noqa: E731

            def values(v):
                g = np.array(fields(v), np.int32)
                out = np.zeros(want.shape, np.float32)
                run(g.ctypes.data, *(t.ctypes.data for t in tables(v)), quantized.ctypes.data, out.ctypes.data)
                return out

            got = values(d)
            assert oc.same_bits(want, got), (file, op.location, int(np.count_nonzero(want != got)))
            other_order_differs.append(min(float(np.mean(values(v) != want)) for v in alternatives))
            checked += 1
            orders.add((op.type, getattr(d, "order", None), getattr(d, "fma_chain", None), getattr(d, "bias_first", None)))
    print(f"{checked} float32 groups, {len(orders)} kinds; the nearest other order differs in "
          f"{min(other_order_differs):.0%} to {max(other_order_differs):.0%} of their values")
    assert checked >= 20
    assert {(o[1], o[3]) for o in orders if o[0] == "FULLY_CONNECTED"} == \
        {(ort_ops.SUM_FMA_CHAIN, False), (ort_ops.SUM_M1, True), (ort_ops.SUM_M1, False), (ort_ops.SUM_M1_TRANSPOSED, False)}
    assert {o[2] for o in orders if o[0] != "FULLY_CONNECTED"} == {True, False}
    assert min(other_order_differs) > 0.1, other_order_differs


FIRMWARE = ("net_mixed_u8.onnx", "net_issue12_u8_pc.onnx", "elementwise_fanout_s8.onnx", "leaky_relu_s8.onnx",
            "net_issue12_s8.onnx", "net_mixed_s8.onnx", "fanout_gemm_s8.onnx")


@pytest.mark.slow
@pytest.mark.parametrize("file", FIRMWARE)
def test_firmware_bit_exact_with_onnxruntime(file, tmp_path):
    from edgesdk.compiler import BuildOptions, build
    from edgesdk.runner import run_inference

    entry = _entry(file)
    out = tmp_path / "fw"
    build(oc.path(entry), out, BuildOptions(rounding="ort"))
    scales = oc.input_scales(oc.path(entry))
    problems = []
    for case in range(0, len(oc.CASES), 2 if file != FIRMWARE[0] else 1):
        feeds = oc.inputs(entry, case, scales)
        result = run_inference(out, list(feeds.values()))
        assert result.exit_code == 0
        for want, got in zip(oc.onnxruntime_outputs(oc.path(entry), feeds), result.outputs):
            if not oc.same_bits(np.asarray(want, np.float32), got):
                problems.append(f"[{oc.CASES[case]} {case}]: {want.reshape(-1)[:8]} != {got.reshape(-1)[:8]}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_cli_build_and_run_check_with_onnxruntime(tmp_path, capsys):
    from edgesdk.cli import main

    out = tmp_path / "fw"
    assert main(["build", str(oc.path(_entry("net_issue12_u8.onnx"))), "--rounding", "ort", "-o", str(out)]) == 0
    assert (out / "model.onnx").is_file()
    capsys.readouterr()
    assert main(["run", str(out), "--random-input", "5", "--check"]) == 0
    assert "reference (ONNX Runtime CPU (ORT_ENABLE_ALL)): bit-exact" in capsys.readouterr().out
    refused = tmp_path / "refused"
    assert main(["build", str(oc.path(_entry("fanout_wide_conv_s8.onnx"))), "--rounding", "ort", "-o", str(refused)]) == 3
    assert not refused.exists()
    assert "QuantType.QUInt8" in capsys.readouterr().err
