"""The TFLite importer: real models import with exact quantization; bad files give clear ModelErrors."""

import numpy as np
import pytest

from conftest import SHARED_MODELS, model_path
from edgesdk.compiler import BuildOptions, compile_model
from edgesdk.errors import ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from modelgen import ModelBuilder


@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_shared_models_import(name):
    g = import_tflite(model_path(name))
    assert g.ops and g.inputs and g.outputs
    for op in g.ops:
        for t in op.inputs + op.outputs:
            if t is not None and t.dtype in ("int8", "uint8") and not t.is_const:
                assert t.quant is not None, f"{t} has no quantization"


def test_per_channel_quantization_kept_exactly():
    g = import_tflite(model_path("kws"))
    conv = next(op for op in g.ops if op.type == "CONV_2D")
    w = conv.inputs[1]
    assert w.quant.per_channel and w.quant.scale.dtype == np.float32
    assert w.quant.scale.size == w.shape[0] and w.quant.axis == 0
    # padding is computed the TFLite way: SAME with 10x4 kernel, stride 2 on 49x10 -> odd extra at the bottom
    assert (conv.attrs["pad_top"], conv.attrs["pad_bottom"]) == (4, 5)


def test_uint8_model_is_legalized_with_edge_conversions():
    g = import_tflite(model_path("mobilenet_uint8"))
    assert g.inputs[0].dtype == "uint8" and g.outputs[0].dtype == "uint8"
    assert g.ops[0].type == "QUANTIZE" and g.ops[0].index == -1
    assert g.ops[-1].type == "QUANTIZE" and g.ops[-1].index == -1
    conv = next(op for op in g.ops if op.type == "CONV_2D")
    assert conv.uint8_semantics and conv.inputs[1].dtype == "int8"
    # values and zero points shifted together: (q - zp) unchanged
    assert g.inputs[0].quant.zp0 - 128 == g.ops[0].outputs[0].quant.zp0


def test_not_a_tflite_file(tmp_path):
    p = tmp_path / "x.tflite"
    p.write_bytes(b"hello world, not a model")
    with pytest.raises(ModelError, match="not a TFLite model"):
        import_tflite(p)


def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="Cannot read model file"):
        import_tflite(tmp_path / "absent.tflite")


@pytest.mark.parametrize("keep", [16, 400, 2000, 20000])
def test_truncated_model(tmp_path, keep):
    data = model_path("kws").read_bytes()[:keep]
    p = tmp_path / "trunc.tflite"
    p.write_bytes(data)
    with pytest.raises(ModelError):
        import_tflite(p)


def test_corrupted_bytes_never_escape_as_other_exceptions(tmp_path):
    data = bytearray(model_path("hello_world").read_bytes())
    rng = np.random.default_rng(7)
    p = tmp_path / "c.tflite"
    outcomes = set()
    for _ in range(200):
        mutated = bytearray(data)
        for pos in rng.integers(8, len(data), 8):
            mutated[pos] = rng.integers(0, 256)
        p.write_bytes(bytes(mutated))
        try:
            import_tflite(p)
            outcomes.add("ok")
        except (ModelError, UnsupportedOpError):
            outcomes.add("error")
    assert "error" in outcomes


def test_unsupported_op_named_with_location(tmp_path):
    m = ModelBuilder()
    x = m.tensor((1, 4), "float32")
    y = m.tensor((1, 4), "float32")
    z = m.tensor((1, 4), "float32")
    m.op("EMBEDDING_LOOKUP_SPARSE", [x], [y])  # an op no target runs
    m.op("ATAN2", [x, y], [z])
    p = tmp_path / "u.tflite"
    p.write_bytes(m.build(inputs=[x], outputs=[z]))
    graph = import_tflite(p)  # ops edgesdk does not know are imported; the partitioner names them all at once
    assert [op.type for op in graph.ops] == ["EMBEDDING_LOOKUP_SPARSE", "ATAN2"]
    with pytest.raises(UnsupportedOpError) as err:
        compile_model(p, BuildOptions(target="c"))
    text = str(err.value)
    assert "operator #0 (EMBEDDING_LOOKUP_SPARSE, output" in text and "operator #1 (ATAN2, output" in text
    assert "2 of 2 operator(s)" in text and "edgesdk inspect --list-ops" in text


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad"])
def test_tensor_fields_read_as_the_tflite_package_reads_them(name):
    """The importer reads each tensor's fields through one vtable lookup per table (tflite_importer._Table);
    the `tflite` package's generated accessors must give the same values, types and defaults."""
    from tflite.Model import Model

    from edgesdk.importer import tflite_importer as T

    buf = model_path(name).read_bytes()
    model = Model.GetRootAsModel(buf, 0)
    sg = model.Subgraphs(0)
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        fast = T._Table(buf, t._tab.Pos)
        start, length = fast.vector(T.TENSOR_NAME)
        assert buf[start:start + length] == (t.Name() or b"")
        assert fast.scalar(T.TENSOR_TYPE, T._I8) == t.Type()
        assert fast.scalar(T.TENSOR_BUFFER, T._U32) == t.Buffer()
        assert bool(fast.scalar(T.TENSOR_IS_VARIABLE, T._U8)) == t.IsVariable()
        assert fast.array(T.TENSOR_SHAPE, np.int32).tolist() == (t.ShapeAsNumpy().tolist() if t.ShapeLength() else [])
        q, quant = fast.table(T.TENSOR_QUANTIZATION), t.Quantization()
        assert (q is None) == (quant is None)
        if quant is not None and quant.ScaleLength():
            scale, zero_point = q.array(T.QUANT_SCALE, T.SCALE_TYPE), q.array(T.QUANT_ZERO_POINT, T.ZERO_POINT_TYPE)
            assert scale.dtype.str == quant.ScaleAsNumpy().dtype.str and scale.tolist() == quant.ScaleAsNumpy().tolist()
            assert zero_point.tolist() == (quant.ZeroPointAsNumpy().tolist() if quant.ZeroPointLength() else [])
            assert q.scalar(T.QUANT_DIMENSION, T._I32) == quant.QuantizedDimension()
        buffer = model.Buffers(t.Buffer())
        fast_buffer = T._Table(buf, buffer._tab.Pos)
        # read_tensor reads these three tables by _table_fields: each field where _Table finds it
        for table, count in ((fast, 6), (q, 7), (fast_buffer, 3)):
            if table is not None:
                fields = T._table_fields(buf, table.pos, count)
                assert [table.pos + entry if entry else 0 for entry in fields] == [table.at(k) for k in range(count)]
        assert fast_buffer.scalar(T.BUFFER_OFFSET, T._U64) == buffer.Offset()
        assert fast_buffer.vector(T.BUFFER_DATA)[1] == buffer.DataLength()
        if buffer.DataLength():
            assert fast_buffer.array(T.BUFFER_DATA, np.uint8).tobytes() == buffer.DataAsNumpy().tobytes()


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad"])
def test_table_positions_and_operator_fields_read_as_the_tflite_package_reads_them(name):
    """The importer finds the subgraph's tensors and operators and the model's buffers by one read of each
    vector of tables, and reads an operator's opcode index and tensor lists through _Table: the same as the
    `tflite` package's generated accessors."""
    from tflite.Model import Model

    from edgesdk.importer import tflite_importer as T

    buf = model_path(name).read_bytes()
    model = Model.GetRootAsModel(buf, 0)
    sg = model.Subgraphs(0)
    fast_sg = T._Table(buf, sg._tab.Pos)
    assert fast_sg.table_positions(T.SUBGRAPH_TENSORS) == [sg.Tensors(i)._tab.Pos for i in range(sg.TensorsLength())]
    assert T._Table(buf, model._tab.Pos).table_positions(T.MODEL_BUFFERS) == [
        model.Buffers(i)._tab.Pos for i in range(model.BuffersLength())]
    assert fast_sg.array(T.SUBGRAPH_INPUTS, T.INDEX_TYPE).tolist() == sg.InputsAsNumpy().tolist()
    assert fast_sg.array(T.SUBGRAPH_OUTPUTS, T.INDEX_TYPE).tolist() == sg.OutputsAsNumpy().tolist()
    positions = fast_sg.table_positions(T.SUBGRAPH_OPERATORS)
    assert len(positions) == sg.OperatorsLength() > 0
    for i, pos in enumerate(positions):
        op, fast = sg.Operators(i), T._Table(buf, pos)
        assert pos == op._tab.Pos and fast.scalar(T.OPERATOR_OPCODE_INDEX, T._U32) == op.OpcodeIndex()
        for field, numpy_of, length in ((T.OPERATOR_INPUTS, op.InputsAsNumpy, op.InputsLength),
                                        (T.OPERATOR_OUTPUTS, op.OutputsAsNumpy, op.OutputsLength),
                                        (T.OPERATOR_INTERMEDIATES, op.IntermediatesAsNumpy, op.IntermediatesLength)):
            assert fast.array(field, T.INDEX_TYPE).tolist() == (numpy_of().tolist() if length() else [])


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad", "micro_speech", "mobilenet_uint8"])
def test_opcodes_read_directly_equal_the_generated_accessors(name):
    """An opcode's builtin code is read straight from the file; the `tflite` package's accessors give the same
    code for every entry, and they are the ones asked when an entry's vtable is one they read otherwise."""
    from pathlib import Path

    from edgesdk.importer import tflite_importer as T

    buf = model_path(name).read_bytes()
    importer = T._Importer(Path(name), buf)
    for index in range(importer.model.OperatorCodesLength()):
        oc = importer.model.OperatorCodes(index)
        assert importer.builtin_code_read_directly(index) == max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
    # an odd vtable length (the accessors read one byte past it): not read directly
    oc = importer.model.OperatorCodes(0)
    vtable = oc._tab.Pos - T._I32.unpack_from(buf, oc._tab.Pos)[0]
    odd = bytearray(buf)
    T._U16.pack_into(odd, vtable, T._U16.unpack_from(buf, vtable)[0] + 1)
    odd_importer = T._Importer(Path(name), bytes(odd))
    assert odd_importer.builtin_code_read_directly(0) is None
    generated = odd_importer.model.OperatorCodes(0)
    assert _outcome(odd_importer.builtin_code, 0) == _outcome(
        lambda: max(generated.BuiltinCode(), generated.DeprecatedBuiltinCode()))  # (a value or the same error)


def _outcome(call, *args):
    try:
        return call(*args)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad", "micro_speech", "mobilenet_uint8"])
def test_op_options_read_directly_equal_the_generated_accessors(name):
    """read_options reads an operator's options table straight from the file (each field's vtable slot, type
    and default learnt from the `tflite` package's generated accessor); the accessors themselves give the same
    dict (same keys, values and Python types) for every operator."""
    from edgesdk.importer import tflite_importer as ti
    from edgesdk.importer import tflite_options as to
    from edgesdk.importer import tflite_schema

    buf = model_path(name).read_bytes()
    root = ti._Table(buf, ti._U32.unpack_from(buf, 0)[0])
    checked = 0
    for subgraph in root.table_positions(2):  # Model.subgraphs
        for position in ti._Table(buf, subgraph).table_positions(ti.SUBGRAPH_OPERATORS):
            table = ti._Table(buf, position)
            direct = to.read_options(table)
            table_type = to.OPTION_TABLES.get(table.scalar(to.OPERATOR_BUILTIN_OPTIONS_TYPE, to._U8), "NONE")
            if table_type == "NONE" or not table.at(to.OPERATOR_BUILTIN_OPTIONS):
                assert direct == {}
                continue
            at = table.at(to.OPERATOR_BUILTIN_OPTIONS)
            generated = to._read_by_accessors(tflite_schema.table_class(table_type), buf,
                                              at + ti._U32.unpack_from(buf, at)[0])
            assert direct == generated and [type(v) for v in direct.values()] == [type(v) for v in generated.values()]
            checked += bool(generated)
    assert checked  # the model's ops have options to compare
