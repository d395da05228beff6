"""Generated code is safe whatever the model says (docs/reliability.md).

* names: model text is sanitized before it reaches C comments, identifiers and terminal messages;
* the build-time safety proof (edgesdk/verify.py) passes on every shared model and fails on each kind of
  tampered plan, kernel call, constant and NPU table;
* the importer rejects inconsistent shapes, zero points and scales that the fuzzer reached the proof with;
* the firmware detects arena corruption (guard words, EDGESDK_ERR_ARENA_CORRUPT) and stack overflow (guard
  region), and the emulator reports both.
"""

from __future__ import annotations

import random
import re
import shutil
import struct

import numpy as np
import pytest

import modelgen
from conftest import SHARED_MODELS, model_path
from edgesdk.compiler import BuildOptions, build, compile_model
from edgesdk.errors import EmulatorError, ModelError, UnsupportedOpError
from edgesdk.importer import import_tflite
from edgesdk.importer.names import C_KEYWORDS, c_identifier, sanitize_name
from edgesdk.npu import cmdtable as C
from edgesdk.verify import VerificationError, verify_build
from fuzz.harness import find_injection, strip_c_comments

needs_toolchain = pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                                     reason="RISC-V cross compiler not installed")
HOSTILE = ["*/ int injected_by_fuzz = 1; /*", "*\\ int injected_by_fuzz = 1; /*", "a??/", "x\"; int injected_by_fuzz = 1; //",
           "line\nbreak\r\n#error injected_by_fuzz", "\x1b[31mred\x1b[0m", "int", "INT8_MAX", "edgesdk_arena", "/", "*",
           "caf\u00e9", "%s%n", "??=define", "\\", "_Bool"]


# -- names -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", HOSTILE)
def test_sanitized_text_is_inert_in_comments_and_strings(raw):
    text = sanitize_name(raw)
    assert all(32 <= ord(ch) < 127 for ch in text)
    for bad in ("*/", "/*", "\\", '"', "??"):
        assert bad not in text
    assert not text.endswith(("*", "/"))
    assert strip_c_comments(f"/* {text} */x") == " x"


def test_sanitize_name_random_strings():
    """No mix of the dangerous characters survives, whatever the order (5000 random strings)."""
    rng = random.Random(0)
    alphabet = "*/\\?\"'\n\x1b\x00 a_\u00ff"
    for _ in range(5000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        text = sanitize_name(raw)
        assert not re.search(r'\*/|/\*|\\|"|\?\?|[^\x20-\x7e]', text), (raw, text)
        assert strip_c_comments(f"/* {text} */") == " "
        assert sanitize_name(text) == text  # idempotent: render.py sanitizes once more


@pytest.mark.parametrize("raw", HOSTILE + ["", "9lives", "__reserved", "EDGESDK_OK", "uint8_t"])
def test_c_identifier_is_a_plain_identifier(raw):
    ident = c_identifier(raw)
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", ident), ident
    assert ident not in C_KEYWORDS and not ident.startswith("EDGESDK_") and not ident.startswith("INT8_")


def hostile_names_model() -> bytes:
    m = modelgen.ModelBuilder()
    q = dict(scale=0.05, zero_point=3)
    a = m.tensor((1, 4, 4, 2), "int8", name="*/ int injected_by_fuzz = 1; /*\x1b[2J", **q)
    b = m.tensor((1, 4, 4, 2), "int8", name="int", **q)
    s = m.tensor((1, 4, 4, 2), "int8", name='a??/\n#error injected_by_fuzz "', **q)
    y = m.tensor((1, 4, 4, 2), "int8", name="*\\ int injected_by_fuzz = 1; /*", **q)
    m.op("ADD", [a, b], [s], "AddOptions")
    m.op("RELU", [s], [y])
    return m.build(inputs=[a, b], outputs=[y])


@needs_toolchain
def test_hostile_names_build_warning_free_and_run(tmp_path):
    """Tensor names that try to close comments, break strings, splice lines, use trigraphs or shadow C
    keywords and macros: the firmware builds with -Werror, no name escapes a comment, and it runs."""
    from edgesdk.runner import random_inputs, run_inference

    path = tmp_path / "hostile.tflite"
    path.write_bytes(hostile_names_model())
    out = tmp_path / "out"
    report = build(path, out, BuildOptions(target="npu,c", werror=True))
    assert find_injection(out / "src") == ""
    code = "".join(strip_c_comments(p.read_text()) for p in (out / "src").glob("*.[ch]"))
    assert "injected_by_fuzz" not in code.replace("injected_by_fuzz_", "")  # only inside identifiers
    names = [io["c_name"] for io in report["io"]["inputs"] + report["io"]["outputs"]]
    assert "sym_int" in names and all(re.fullmatch(r"[A-Za-z]\w*", n) for n in names), names
    result = run_inference(out, random_inputs(report, 1))
    assert result.exit_code == 0, result.uart


def test_custom_op_name_is_sanitized_in_errors(tmp_path, monkeypatch):
    """A custom op's name is model text too: the error naming it carries no escape sequences or newlines."""
    def opcode_with_custom_code(b, name):
        mod = modelgen._module("OperatorCode")
        custom = b.CreateString("\x1b[2J\x1b[31mevil\nop */")
        mod.OperatorCodeStart(b)
        mod.OperatorCodeAddDeprecatedBuiltinCode(b, 32)  # CUSTOM
        mod.OperatorCodeAddBuiltinCode(b, 32)
        mod.OperatorCodeAddCustomCode(b, custom)
        return mod.OperatorCodeEnd(b)

    monkeypatch.setattr(modelgen.ModelBuilder, "_opcode", staticmethod(opcode_with_custom_code))
    m = modelgen.ModelBuilder()
    x = m.tensor((1, 8), "int8", scale=0.1, zero_point=0)
    y = m.tensor((1, 8), "int8", scale=0.1, zero_point=0)
    m.ops.append(dict(name="CUSTOM", inputs=[x], outputs=[y], options=None, fields={}))
    with pytest.raises(UnsupportedOpError) as err:
        import_tflite(write(tmp_path, m.build(inputs=[x], outputs=[y])))
    message = str(err.value)
    assert "CUSTOM '?[2J?[31mevil?op *_'" in message and not re.search(r"[^\x20-\x7e]", message), message


# -- the safety proof ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
@pytest.mark.parametrize("target", ["npu,c", "c"])
def test_proof_holds_for_every_shared_model(name, target):
    compiled = compile_model(model_path(name), BuildOptions(target=target))
    proof = verify_build(compiled)
    assert proof["buffers"] == len(compiled.plan.buffers)
    assert proof["host_layers"] + sum(len(t.ops) for t in compiled.executor.npu_tables) >= len(compiled.graph.ops) - 2
    if target == "npu,c":
        assert proof["npu_tables"] >= 1 and proof["npu_descriptors"] >= 2 * proof["npu_param_refs"]


@pytest.fixture
def hello_c():
    return compile_model(model_path("hello_world"), BuildOptions(target="c"))


@pytest.fixture
def hello_npu():
    return compile_model(model_path("hello_world"), BuildOptions(target="npu,c"))


def proof_fails(compiled, fragment: str) -> None:
    with pytest.raises(VerificationError) as err:
        verify_build(compiled)
    assert fragment in str(err.value), str(err.value)


def test_proof_rejects_a_kernel_pointer_outside_the_arena(hello_c):
    step = hello_c.executor.steps[-1]
    step.code = re.sub(r"edgesdk_arena \+ 0\)\)\);$", f"edgesdk_arena + {hello_c.plan.arena_bytes})));", step.code)
    proof_fails(hello_c, "outside the arena")


def test_proof_rejects_a_kernel_that_would_write_past_its_buffer(hello_c):
    hello_c.executor.declarations = [d.replace(".out_depth = 16,", ".out_depth = 17,") for d in hello_c.executor.declarations]
    proof_fails(hello_c, "not inside one buffer live at this layer")


def test_proof_rejects_a_short_constant_array(hello_c):
    weights = next(c for c in hello_c.executor.consts if c.symbol.endswith("1_weights"))
    weights.values = weights.values[:-1]  # whatever the weight layout, one byte short
    proof_fails(hello_c, f"bytes of filter from {weights.symbol}, which holds {len(weights.values)}")


def test_proof_rejects_out_of_range_requantization_shifts(hello_c):
    shifts = next(c for c in hello_c.executor.consts if c.symbol.endswith("0_shift"))
    shifts.values = shifts.values.copy()
    shifts.values[3] = 40
    proof_fails(hello_c, "requantization shift 40")


def test_proof_rejects_integers_beyond_int32(hello_c):
    hello_c.executor.declarations[-1] = hello_c.executor.declarations[-1].replace(".act_max = 127", ".act_max = 4294967296")
    proof_fails(hello_c, "does not fit an int32")


def test_proof_rejects_unknown_kernels(hello_c):
    hello_c.executor.steps[0].code = hello_c.executor.steps[0].code.replace("edgesdk_fully_connected_s8", "edgesdk_mystery_s8")
    proof_fails(hello_c, "no footprint rule")


def test_proof_rejects_statements_it_cannot_read(hello_c):
    hello_c.executor.steps[1].code += "\nedgesdk_arena[40] = 1;"
    proof_fails(hello_c, "cannot read the statement 'edgesdk_arena[40]=1;'")


def test_proof_of_tvm_lowered_calls(hello_c):
    """A TVM-lowered function touches its arguments' whole tensors: pointers must be the op's slots."""
    x, y = hello_c.graph.ops[0].inputs[0], hello_c.graph.ops[0].outputs[0]
    slot = {t: hello_c.plan.offset(t) for t in (x, y)}
    hello_c.executor.steps[0].code = (f"tvmgen_dense_0(((int8_t *)(edgesdk_arena + {slot[x]})), "
                                      f"((int8_t *)(edgesdk_arena + {slot[y]})));")
    verify_build(hello_c)
    hello_c.executor.steps[0].code = hello_c.executor.steps[0].code.replace(f"+ {slot[y]})", f"+ {slot[y] + 4})")
    proof_fails(hello_c, "is not one of the op's tensors")


def test_proof_rejects_plan_buffers_outside_the_arena_or_overlapping(hello_c):
    buffers = hello_c.plan.buffers
    buffers[0].offset = hello_c.plan.arena_bytes - 8
    proof_fails(hello_c, "outside the arena")
    co_live = next(b for b in buffers[1:] if b.first <= buffers[0].last)
    buffers[0].offset = co_live.offset
    proof_fails(hello_c, "in-place rule")  # the only permitted overlap (in place) needs a distance
    hello_c.plan.overlaps = []
    proof_fails(hello_c, "are live together")  # and without permissions, no overlap at all


def patch_table(compiled, command: int, field_offset: int, fmt: str, value) -> None:
    table = compiled.executor.npu_tables[0]
    data = bytearray(table.data)
    pos = 16
    for _ in range(command):
        pos += struct.unpack_from("<H", data, pos + 2)[0]
    struct.pack_into(fmt, data, pos + field_offset, value)
    table.data = bytes(data)


@pytest.mark.parametrize("field_offset, fmt, value, fragment", [
    (40 + 4, "<I", 1 << 20, "which has 32 bytes"),  # output offset far beyond the arena
    (8 + 4, "<I", 31, "reaches byte 46 of region 1"),  # input runs off the end of the arena
    (72 + 4, "<I", 4000, "of region 0"),  # weights beyond the blob
    (8, "<B", 5, "names region 5"),  # a region no table may use
    (40, "<B", 0, "outputs must go to the arena"),  # the output in flash
    (104 + 4, "<I", 10 ** 6, "channel records"),  # channel records beyond the blob
    (40 + 16 + 12, "<I", 1 << 20, "which has 32 bytes"),  # an output stride that walks out of the arena
])
def test_proof_rejects_tampered_npu_descriptors(hello_npu, field_offset, fmt, value, fragment):
    patch_table(hello_npu, 1, field_offset, fmt, value)
    proof_fails(hello_npu, fragment)


def test_proof_rejects_undecodable_tables_and_bad_channel_records(hello_npu):
    table = hello_npu.executor.npu_tables[0]
    table.data = table.data[:-8]  # END cut off
    proof_fails(hello_npu, "does not decode")
    fresh = compile_model(model_path("hello_world"), BuildOptions(target="npu,c", rounding="tflm"))
    ref = C.decode(fresh.executor.npu_tables[0].data)[0].params
    struct.pack_into("<i", fresh.executor.npu_weights, ref.offset + 8, 45)  # shift of channel 0
    proof_fails(fresh, "shift 45")


def test_proof_guards_the_fast_conv_kernels_stack_buffer(tmp_path):
    """A valid model: a VALID 3x3 convolution over 128 channels with an odd output width. The blocked conv
    kernel copies the window of each row's last pixel into a 1024-byte stack buffer, and 3 x 3 x 128 =
    1152 bytes do not fit (the firmware crashed with a smashed return address before the proof knew
    this). Whatever kernel the codegen picks, the build must not produce that firmware."""
    rng = np.random.default_rng(0)
    w = rng.integers(-3, 4, (8, 3, 3, 128)).astype(np.int8)
    data = modelgen.conv_model((1, 9, 9, 128), w, rng.integers(-100, 100, 8).astype(np.int32), (0.05, 0),
                               [0.01] * 8, (0.2, 0), padding=modelgen.VALID)
    compiled = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    (declaration,) = [d for d in compiled.executor.declarations if "edgesdk_conv2d_params" in d]
    if ".blocked = 1" in declaration:  # the codegen chose the fast kernel: the proof must refuse it
        proof_fails(compiled, "into its 1024-byte stack buffer (windows of the odd last column)")
    else:
        verify_build(compiled)
    # The rule itself, independent of the codegen's choice: force the fast kernel with a folded bias.
    compiled.executor.declarations = [d.replace(".blocked = 0", ".blocked = 1") for d in compiled.executor.declarations]
    proof_fails(compiled, "stack buffer")


# -- importer checks the proof caught during fuzzing --------------------------------------------------------
def write(tmp_path, data: bytes):
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return path


Q = (0.05, 1)


@pytest.mark.parametrize("case, fragment", [
    ("quantize_shrinks", "maps 256 input elements to 128 outputs"),
    ("concat_too_small", "do not concatenate along axis 3"),
    ("mean_output_too_large", "leaves 8 elements"),
    ("pad_output_mismatch", "padded by"),
    ("pool_batch_mismatch", "input batch 2 differs"),
    ("const_output", "is a constant tensor"),
    ("huge_dims", "elements, beyond any microcontroller"),
    ("zero_point_out_of_range", "zero point outside [-128, 127]"),
    ("tiny_scale", "outside [2^-60, 2^60]"),
    ("bias_length", "has a bias of 7 values for 10 output channels"),
])
def test_importer_rejects_inconsistent_models(tmp_path, case, fragment):
    if case == "quantize_shrinks":
        data = modelgen.unary_model("QUANTIZE", (1, 256), Q, Q, out_shape=(1, 128))
    elif case == "concat_too_small":
        data = modelgen.concatenation_model([(1, 4, 4, 3), (1, 4, 4, 5)], 3, [Q, Q], Q)
        data = _with_shape(data, 2, (1, 4, 4, 6))
    elif case == "mean_output_too_large":
        data = _with_shape(modelgen.mean_model((1, 6, 5, 8), [1, 2], True, Q, Q), 2, (1, 1, 1, 16))
    elif case == "pad_output_mismatch":
        data = _with_shape(modelgen.pad_model((1, 5, 4, 3), [(0, 0), (1, 2), (2, 1), (0, 0)], Q), 2, (1, 9, 7, 3))
    elif case == "pool_batch_mismatch":
        data = _with_shape(modelgen.pool_model("MAX_POOL_2D", (2, 8, 8, 4), (2, 2), (2, 2), modelgen.VALID, Q), 1, (1, 4, 4, 4))
    elif case == "const_output":
        m = modelgen.ModelBuilder()
        x = m.tensor((1, 4), "int8", scale=0.1, zero_point=0)
        w = m.const(np.ones((3, 4), np.int8), "int8", scale=0.1, zero_point=0)
        y = m.tensor((1, 3), "int8", scale=0.1, zero_point=0)
        m.op("FULLY_CONNECTED", [x, w], [y], "FullyConnectedOptions")
        data = m.build(inputs=[x], outputs=[w])
    elif case == "huge_dims":
        m = modelgen.ModelBuilder()
        x = m.tensor((65535, 65535, 65535, 65535), "int8", scale=0.1, zero_point=0)
        y = m.tensor((65535, 65535, 65535, 65535), "int8", scale=0.1, zero_point=0)
        m.op("RELU", [x], [y])
        data = m.build(inputs=[x], outputs=[y])
    elif case == "zero_point_out_of_range":
        data = modelgen.unary_model("RELU", (1, 8), (0.1, 200), (0.1, 0))
    elif case == "bias_length":
        data = modelgen.fully_connected_model(1, np.ones((10, 24), np.int8), np.zeros(7, np.int32), Q, 0.01, Q)
    else:
        data = modelgen.unary_model("RELU", (1, 8), (1e-30, 0), (0.1, 0))
    with pytest.raises(ModelError) as err:
        compile_model(write(tmp_path, data), BuildOptions())
    assert fragment in str(err.value) and not isinstance(err.value, VerificationError), str(err.value)


def _with_shape(data: bytes, tensor: int, shape: tuple) -> bytes:
    """The model with tensor `tensor`'s shape rewritten in place (same rank)."""
    from fuzz.flatbuf import model_sites

    sites = [s for s in model_sites(data) if s.kind == "tensor.shape"]
    buf = bytearray(data)
    # shape sites come tensor by tensor, in order: find this tensor's by counting dims
    import tflite

    sg = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    start = sum(sg.Tensors(i).ShapeLength() for i in range(tensor))
    assert sg.Tensors(tensor).ShapeLength() == len(shape)
    for site, dim in zip(sites[start:start + len(shape)], shape):
        struct.pack_into("<i", buf, site.pos, dim)
    return bytes(buf)


# -- arena and stack guards, end to end ------------------------------------------------------------------------
FAULTS = """
    /* reliability test hook: input byte selects a fault (tests/test_reliability.py) */
    switch ((int)edgesdk_arena[ARENA_INPUT]) {
    case 1: /* a layer writing 8 bytes past the end of the arena */
        edgesdk_reshape(16, edgesdk_arena, edgesdk_arena + reliability_offset(EDGESDK_DEFAULT_ARENA_BYTES - 8));
        break;
    case 2: /* ... and 4 bytes before its start */
        edgesdk_reshape(8, edgesdk_arena, edgesdk_arena + reliability_offset(-4));
        break;
    case 3: /* a small stack overflow that only reaches the guard words */
        ((volatile uint32_t *)(BOARD_SRAM_BASE + BOARD_SRAM_SIZE - BOARD_STACK_BYTES))[5] = 0u;
        break;
    case 4: /* a deep recursion that runs far below the stack */
        (void)reliability_deep_recursion(64u);
        break;
    default:
        break;
    }
"""
RECURSION = """
#include "board.h"
/* An offset the compiler cannot see (it would reject an out-of-bounds constant). */
static int32_t reliability_offset(int32_t offset)
{
    volatile int32_t hidden = offset;
    return hidden;
}
__attribute__((noinline)) static uint32_t reliability_deep_recursion(uint32_t depth)
{
    volatile uint8_t frame[512];
    frame[0] = (uint8_t)depth;
    return depth == 0u ? 0u : reliability_deep_recursion(depth - 1u) + frame[0];
}
"""


@pytest.fixture(scope="module")
def fault_firmware(tmp_path_factory):
    """hello_world on the host C target, with a fault selected by the input byte injected after the guards
    are set (as if one layer misbehaved), rebuilt from the patched sources."""
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        pytest.skip("RISC-V cross compiler not installed")
    from edgesdk.board import load_board
    from edgesdk.firmware_build.build import build_firmware

    out = tmp_path_factory.mktemp("guards") / "hello"
    report = build(model_path("hello_world"), out, BuildOptions(target="c", compile_firmware=False))
    model_c = out / "src" / "model.c"
    text = model_c.read_text()
    offset = report["io"]["inputs"][0]["arena_offset"]
    text = text.replace('#include "model_data.h"\n', f'#include "model_data.h"\n#define ARENA_INPUT {offset}\n{RECURSION}', 1)
    assert "    arena_guards_set();\n" in text
    text = text.replace("    arena_guards_set();\n", "    arena_guards_set();\n" + FAULTS, 1)
    model_c.write_text(text)
    build_firmware(out / "src", out, load_board("riscv-npu"), werror=True)
    return out, report


def run_fault(fault_firmware, fault: int):
    from edgesdk.runner import run_inference

    out, report = fault_firmware
    return run_inference(out, [np.array([[fault]], dtype=np.int8).reshape(report["io"]["inputs"][0]["shape"])])


def test_guards_are_invisible_in_a_normal_run(fault_firmware):
    result = run_fault(fault_firmware, 0)
    assert result.exit_code == 0, result.uart


@pytest.mark.parametrize("fault", [1, 2])
def test_arena_corruption_is_reported_by_the_run(fault_firmware, fault):
    from edgesdk.runner import failure_message

    result = run_fault(fault_firmware, fault)
    assert result.exit_code == 5, result.uart  # -EDGESDK_ERR_ARENA_CORRUPT
    assert "status=-5 (arena corrupt" in result.uart and "arena corrupt" in failure_message(result)


def test_stack_guard_damage_is_reported(fault_firmware):
    with pytest.raises(EmulatorError) as err:
        run_fault(fault_firmware, 3)
    message = str(err.value)
    assert "overflowed its stack" in message and "guard words" in message
    assert "edgesdk: stack overflow" in message  # the firmware's own check ran first (exit code 253)


def test_deep_stack_overflow_stops_at_the_first_write_below_the_stack(fault_firmware):
    with pytest.raises(EmulatorError) as err:
        run_fault(fault_firmware, 4)
    message = str(err.value)
    assert "overflowed its stack" in message and "below the bottom of the stack" in message
    assert "reliability_deep_recursion" in message  # the PC of the overflowing write, symbolized
