"""Long-tail lowering: a Relax function -> one plain C function through TVM's TE/TIR and C codegen."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed: pip install '.[tvm]' (docs/tvm-interop.md)")

from edgesdk.tvm.lowering import SHIM_PATH, lower_relax_function  # noqa: E402


def _int8_sub():
    from tvm import relax

    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType((2, 3, 8), "int8"))
    s = relax.Var("s", relax.TensorType((), "float32"))
    b = relax.Var("b", relax.TensorType((2, 3, 8), "int8"))
    zp = relax.const(np.int8(3))
    with bb.function("main", [s, a, b]):  # the scale first: TVM reorders it
        with bb.dataflow():
            diff = relax.op.subtract(relax.op.dequantize(a, s, zp), relax.op.dequantize(b, s, zp))
            out = bb.emit_output(relax.op.quantize(diff, s, zp, out_dtype="int8"))
        bb.emit_func_output(out)
    return bb.get()["main"]


def test_lowered_function_is_plain_c_without_the_packed_api(tmp_path):
    lowered = lower_relax_function(_int8_sub(), "tvmgen_sub_0")
    assert lowered.prototype == "void tvmgen_sub_0(int8_t *, float *, int8_t *, int8_t *)"
    assert lowered.arg_order == [1, 0, 2]  # TVM orders the parameters by first use: a, the scale, b
    for packed in ("__tvm_ffi", "TVMFFIAny", "DLTensor", "#include"):
        assert packed not in lowered.source
    assert "nearbyintf" in lowered.source  # quantize rounds half to even, as ONNX QuantizeLinear
    # It compiles for the board, warning-free, with nothing but the shim header.
    (tmp_path / SHIM_PATH.name).write_text(SHIM_PATH.read_text())
    (tmp_path / "f.c").write_text(f'#include "{SHIM_PATH.name}"\n{lowered.prototype};\n{lowered.source}')
    subprocess.run(["riscv64-unknown-elf-gcc", "-march=rv32imac_zicsr", "-mabi=ilp32", "--specs=picolibc.specs",
                    "-O2", "-Wall", "-Wextra", "-Werror", "-c", "f.c", "-o", "f.o"], cwd=tmp_path, check=True)


def test_float_abs_lowers_to_fabsf():
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((5,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.abs(x))
        bb.emit_func_output(out)
    assert "fabsf(" in lower_relax_function(bb.get()["main"], "tvmgen_abs_0").source
