"""Import through TVM: ONNX QDQ and TVM's TFLite Relax -> edgesdk's integer graph IR (edgesdk/tvm/)."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed: pip install '.[tvm]' (docs/tvm-interop.md)")
onnx = pytest.importorskip("onnx", reason="onnx is not installed: pip install '.[tvm]'")

import onnx_models  # noqa: E402
from conftest import model_path  # noqa: E402
from edgesdk.errors import UnsupportedOpError  # noqa: E402
from edgesdk.importer import import_tflite  # noqa: E402
from edgesdk.importer.onnx_importer import import_model, import_onnx  # noqa: E402
from edgesdk.partition.partitioner import annotate  # noqa: E402
from edgesdk.tvm.relax_import import relax_to_graph  # noqa: E402


@pytest.fixture(scope="module")
def conv_net(tmp_path_factory):
    return onnx_models.conv_net_qdq(tmp_path_factory.mktemp("onnx"))


def test_onnx_qdq_conv_net_becomes_integer_ops_on_the_npu(conv_net):
    graph = import_model(conv_net)
    types = [op.type for op in graph.ops]
    assert types == ["QUANTIZE", "TRANSPOSE", "CONV_2D", "CONV_2D", "ADD", "MAX_POOL_2D", "CONV_2D", "MEAN",
                     "RESHAPE", "RESHAPE", "FULLY_CONNECTED", "DEQUANTIZE"]
    assert [t.dtype for t in graph.inputs + graph.outputs] == ["float32", "float32"]
    assert graph.inputs[0].name == "x" and graph.outputs[0].name == "y"
    conv = graph.ops[2]
    x, w, b = conv.inputs
    assert x.shape == (1, 16, 16, 3) and conv.outputs[0].shape == (1, 16, 16, 8)  # NHWC
    assert w.shape == (8, 3, 3, 3) and w.dtype == "int8" and w.quant.scale.size == 8 and w.quant.axis == 0  # OHWI
    assert b.dtype == "int32" and b.shape == (8,)
    # The ONNX weights, transposed OIHW -> OHWI, are the IR weights exactly.
    init = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(str(conv_net)).graph.initializer}
    quantized = [v for k, v in init.items() if v.dtype == np.int8 and v.shape == (8, 3, 3, 3)]
    assert len(quantized) == 1 and np.array_equal(quantized[0].transpose(0, 2, 3, 1), w.data)
    choices = annotate(graph, ["npu", "c"])
    on_npu = [op.type for op in graph.ops if choices[op].target == "npu"]
    assert on_npu == ["TRANSPOSE", "CONV_2D", "CONV_2D", "ADD", "MAX_POOL_2D", "CONV_2D", "RESHAPE", "RESHAPE",
                      "FULLY_CONNECTED"]
    # the layout transpose: strided DMA on the NPU; the C target would run its TVM lowering (long tail)
    assert choices[graph.ops[1]].target == "npu" and "relax_function" in graph.ops[1].attrs


def test_tflite_relax_imports_like_the_tflite_importer():
    """TVM's TFLite frontend (QDQ Relax) through edgesdk.tvm gives the same ops and constants as edgesdk's
    own TFLite importer."""
    import tflite
    from tvm.relax.frontend.tflite import from_tflite

    path = model_path("kws")
    mod = from_tflite(tflite.Model.GetRootAsModel(path.read_bytes(), 0))
    via_tvm, direct = relax_to_graph(mod, "kws"), import_tflite(path)
    assert [op.type for op in via_tvm.ops] == [op.type for op in direct.ops]
    for a, b in zip(via_tvm.ops, direct.ops):
        assert a.outputs[0].shape == b.outputs[0].shape
        assert np.array_equal(a.outputs[0].quant.scale, b.outputs[0].quant.scale)
        assert np.array_equal(a.outputs[0].quant.zero_point, b.outputs[0].quant.zero_point)
        if a.type in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            assert np.array_equal(a.inputs[1].data, b.inputs[1].data)
            assert np.array_equal(a.inputs[1].quant.scale, b.inputs[1].quant.scale)
            assert np.array_equal(a.inputs[2].data, b.inputs[2].data)
            for key in ("stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right"):
                assert a.attrs.get(key) == b.attrs.get(key), key


def test_long_tail_ops_keep_their_relax_subgraph(tmp_path):
    graph = import_onnx(onnx_models.long_tail_qdq(tmp_path / "long_tail.onnx"))
    assert [op.type for op in graph.ops] == ["QUANTIZE", "QUANTIZE", "SUB", "ABS"]
    sub, absolute = graph.ops[2], graph.ops[3]
    assert sub.attrs["relax_ops"] == ["relax.subtract"] and absolute.attrs["relax_ops"] == ["relax.abs"]
    assert sub.outputs[0].dtype == "int8" and sub.outputs[0].quant.zp0 == 2
    assert absolute.outputs[0].dtype == "float32"
    assert all(choice.target == "c" for choice in annotate(graph, ["npu", "c"]).values())


def test_an_op_neither_matched_nor_lowered_is_named_in_the_error():
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.cumsum(x, axis=1))
        bb.emit_func_output(out)
    with pytest.raises(UnsupportedOpError, match="relax.cumsum"):
        relax_to_graph(bb.get(), "cumsum")


@pytest.mark.parametrize("model", ["long_tail", "leaky_relu_s8.onnx"])
def test_float_constants_of_a_lowered_subgraph_do_not_depend_on_python_object_ids(model, tmp_path, monkeypatch):
    """Each float32 constant of a subgraph lowered through TVM becomes its own const tensor, whatever Python ids
    its wrappers had. TVM makes a new Python wrapper at each access and CPython gives a freed wrapper's id to the
    next object, so a table keyed by id() handed one constant's tensor to another now and then (a scale: outputs
    off by a factor, in one full-suite run out of several). Every id() here equal is the worst case of that."""
    import edgesdk.tvm.relax_import as relax_import

    path = onnx_models.long_tail_qdq(tmp_path / "m.onnx") if model == "long_tail" else \
        onnx_models.Path(__file__).resolve().parent / "models" / "onnx" / model

    def float_constants():
        graph = import_model(path)
        return [(t.shape, t.data.tobytes()) for t in graph.tensors if t.is_const and t.dtype == "float32"]

    want = float_constants()
    assert len({data for _, data in want}) >= 2  # at least two different constants could be confused
    monkeypatch.setattr(relax_import, "id", lambda obj: 0, raising=False)
    assert float_constants() == want
