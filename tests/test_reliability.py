"""Generated code is safe whatever the model says (docs/reliability.md).

* names: model text is sanitized before it reaches C comments, identifiers and terminal messages;
* the build-time safety proof (edgesdk/verify.py) passes on every shared model and fails on each kind of
  tampered plan, kernel call, constant and NPU table;
* the importer rejects inconsistent shapes, zero points and scales that the fuzzer reached the proof with;
* the firmware detects arena corruption (guard words, EDGESDK_ERR_ARENA_CORRUPT) and stack overflow (guard
  region), and the emulator reports both.
"""

from __future__ import annotations

import math
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
from edgesdk.targets.npu.hw import cmdtable as C
from edgesdk.targets.c.calls import Arena, Cast, Const, KernelCall, Macro, Params
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
        compile_model(write(tmp_path, m.build(inputs=[x], outputs=[y])), BuildOptions(target="c"))
    message = str(err.value)
    # edgesdk's own line breaks separate the groups; the model's text brings none and no escape sequence
    assert "CUSTOM '?[2J?[31mevil?op *_'" in message and not re.search(r"[^\x20-\x7e\n]", message), message
    assert all("evil" not in line or line.count("CUSTOM") == line.count("evil") for line in message.splitlines())


# -- the safety proof ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
@pytest.mark.parametrize("target", ["npu,c", "c"])
def test_proof_holds_for_every_shared_model(name, target):
    compiled = compile_model(model_path(name), BuildOptions(target=target))
    proof = verify_build(compiled)
    assert proof["buffers"] == len(compiled.plan.buffers)
    npu_ops = {op for t in compiled.executor.target_data.get("npu", []) for op in t.ops}
    npu_layers = len(npu_ops)
    # the C target proves a cascade group as one host layer (its stripe calls)
    host_group_ops = sum(len(g.ops) - 1 for g in compiled.plan.cascades if g.ops[0] not in npu_ops)
    assert proof.get("host_layers", 0) + host_group_ops + npu_layers >= len(compiled.graph.ops) - 2
    if target == "npu,c" and npu_layers:  # (the int16 model has no layer the NPU takes)
        assert proof["npu_tables"] >= 1 and proof["npu_descriptors"] >= 2 * proof.get("npu_param_refs", 0)


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


def host_layers(compiled) -> list:
    """The C target's structured calls, which its proof reads (edgesdk/targets/c/proof.py)."""
    return compiled.executor.target_data["c"]


def replace_arg(layer, call_index: int, arg_index: int, new) -> None:
    call = layer.calls[call_index]
    args = list(call.args)
    args[arg_index] = new
    layer.calls[call_index] = KernelCall(call.kernel, tuple(args))


def test_proof_rejects_a_kernel_pointer_outside_the_arena(hello_c):
    layer = host_layers(hello_c)[-1]
    out = layer.calls[-1].args[-1]
    replace_arg(layer, -1, -1, Arena(out.tensor, hello_c.plan.arena_bytes, out.ctype))
    proof_fails(hello_c, "outside the arena")


def test_proof_rejects_a_kernel_that_would_write_past_its_buffer(hello_c):
    params = host_layers(hello_c)[-1].calls[0].args[0]
    params.fields["out_depth"] += 1
    proof_fails(hello_c, "not inside one buffer live at this layer")


def test_proof_rejects_a_short_constant_array(hello_c):
    layer = host_layers(hello_c)[1]
    weights = layer.calls[0].args[2]
    replace_arg(layer, 0, 2, Const(weights.symbol, weights.ctype, weights.values[:-1]))  # one byte short
    proof_fails(hello_c, f"bytes of filter from {weights.symbol}, which holds {weights.count - 1}")


def test_proof_rejects_out_of_range_requantization_shifts(hello_c):
    params = host_layers(hello_c)[0].calls[0].args[0]
    shifts = params["shift"].values.copy()
    shifts[3] = 40
    params.fields["shift"] = Const(params["shift"].symbol, "int32_t", shifts)
    proof_fails(hello_c, "requantization shift 40")


def test_proof_rejects_integers_beyond_int32(hello_c):
    hello_c.executor.declarations[-1] = hello_c.executor.declarations[-1].replace(".act_max = 127", ".act_max = 4294967296")
    proof_fails(hello_c, "does not fit an int32")


def test_proof_rejects_unknown_kernels(hello_c):
    layer = host_layers(hello_c)[0]
    layer.calls[0] = KernelCall("edgesdk_mystery_s8", layer.calls[0].args)
    proof_fails(hello_c, "no footprint rule")


def test_proof_rejects_statements_it_did_not_check(hello_c):
    """The round trip: text added to the run function, or a constant or params struct rendered differently from
    what the proof read, is refused."""
    hello_c.executor.steps[1].code += "\nedgesdk_arena[40] = 1;"
    proof_fails(hello_c, "the run function's statements differ from the calls the proof checked")


def test_proof_rejects_flash_data_that_differs_from_what_it_read(hello_c):
    weights = next(c for c in hello_c.executor.consts if c.symbol.endswith("1_weights"))
    weights.values = weights.values[:-1]
    proof_fails(hello_c, f"constant array {weights.symbol} in flash differs")


def test_proof_rejects_a_params_struct_declared_differently(hello_c):
    hello_c.executor.declarations = [d.replace(".out_depth = 16,", ".out_depth = 17,") for d in hello_c.executor.declarations]
    proof_fails(hello_c, "is not declared as the proof read it")


def _const(compiled, suffix: str):
    return next(c for c in compiled.executor.consts if c.symbol.endswith(suffix))


def _call_const(compiled, suffix: str):
    """(layer, call index, argument index or params key, Const) of the constant whose symbol ends with suffix."""
    for layer in host_layers(compiled):
        for i, call in enumerate(layer.calls):
            for j, arg in enumerate(call.args):
                if isinstance(arg, Const) and arg.symbol.endswith(suffix):
                    return layer, i, j, arg
                if isinstance(arg, Params):
                    for key, value in arg.fields.items():
                        if isinstance(value, Const) and value.symbol.endswith(suffix):
                            return layer, i, key, value
    raise KeyError(suffix)


def test_proof_knows_the_paired_fully_connected_layout(tmp_path):
    """EDGESDK_FC_PAIRED stores two units per 32-bit word: 4 * ceil(units / 2) * depth bytes (9 units of 13
    taps: 260 bytes, not 117). Weights cut to the plain layout's size, or by one byte, must be refused."""
    rng = np.random.default_rng(0)
    weights = rng.integers(-127, 128, (9, 13)).astype(np.int8)
    data = modelgen.fully_connected_model(1, weights, rng.integers(-50, 50, 9).astype(np.int32), (0.05, 1), 0.01,
                                          (0.2, -3))
    compiled = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    assert any(".blocked = EDGESDK_FC_PAIRED" in d for d in compiled.executor.declarations)
    layer, i, j, packed = _call_const(compiled, "_weights")
    assert packed.count == 4 * 5 * 13
    verify_build(compiled)
    for short in (9 * 13, packed.count - 1):
        replace_arg(layer, i, j, Const(packed.symbol, packed.ctype, packed.values[:short]))
        proof_fails(compiled, f"reads 260 bytes of filter from {packed.symbol}, which holds {short}")


def test_proof_knows_the_add_kernels_tables(tmp_path):
    """edgesdk_add_s8 reads 256 int32 (1 KiB) of each input table at value + 128, and its fast output path
    has preconditions (double rounding, output shift in [-31, -1], |scaled1| + |scaled2| < 2^31)."""
    data = modelgen.binary_model("ADD", (1, 4, 4, 3), (1, 4, 4, 3), (1, 4, 4, 3), (0.05, 1), (0.03, -2), (0.07, 3))
    compiled = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    verify_build(compiled)
    params = host_layers(compiled)[0].calls[0].args[0]
    original = dict(params.fields)

    def tamper(key, value, fragment):
        params.fields.clear()
        params.fields.update(original, **{key: value})
        proof_fails(compiled, fragment)

    table = original["input2_table"]
    tamper("input2_table", Const(table.symbol, "int32_t", table.values[:255]),
           f"reads 1024 bytes of input2_table[256] from {table.symbol}, which holds 1020")
    tamper("input1_table", Arena(None, 0, "int32_t"), "input1_table[256]")
    tamper("output_shift", 0, "output shift in [-31, -1]")
    tamper("rounding", Macro("EDGESDK_ROUNDING_SINGLE"), "needs double rounding")
    # fits an int32, but the sum would wrap
    tamper("input2_table", Const(table.symbol, "int32_t", np.full(256, (1 << 31) - 1, np.int64)),
           "|input1| + |input2| < 2^31")


@pytest.fixture(scope="module")
def long_tail(tmp_path_factory):
    """An ONNX model whose SUB (int8) and ABS (int8 -> float32) are lowered through TVM to C functions."""
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    pytest.importorskip("onnx", reason="onnx is not installed")
    import onnx_models

    path = onnx_models.long_tail_qdq(tmp_path_factory.mktemp("long_tail") / "long_tail.onnx")
    return path


def test_proof_of_tvm_lowered_calls(long_tail):
    """A TVM-lowered function touches each parameter's whole tensor as its Relax function types it: every
    argument must have room for that extent (arena slot of one of the op's tensors inside a live buffer,
    or a constant array long enough)."""
    compiled = compile_model(long_tail, BuildOptions(target="c"))
    verify_build(compiled)
    abs_op = next(op for op in compiled.graph.ops if op.type == "ABS")
    layer = next(lay for lay in host_layers(compiled) if lay.op is abs_op)
    call = layer.calls[0]
    assert abs_op.inputs[0].nbytes * 4 == abs_op.outputs[0].nbytes  # int8 in, float32 out
    arena_args = [k for k, a in enumerate(call.args) if isinstance(a, Arena)]
    x_k, y_k = arena_args[0], arena_args[-1]
    x, y = call.args[x_k], call.args[y_k]
    # Input and output swapped: both are the op's slots, but the float32 output does not fit the int8 slot.
    replace_arg(layer, 0, x_k, y)
    replace_arg(layer, 0, y_k, x)
    proof_fails(compiled, "accesses 768 bytes of output float32[1, 4, 6, 8]")
    layer.calls[0] = call
    replace_arg(layer, 0, y_k, Arena(y.tensor, y.offset + 4, y.ctype))
    replace_arg(layer, 0, y_k, Arena(None, y.offset + 4, y.ctype))
    proof_fails(compiled, "is not one of the op's tensors")
    layer.calls[0] = call
    scale_k = next(k for k, a in enumerate(call.args) if isinstance(a, Cast))
    scale = call.args[scale_k].arg
    replace_arg(layer, 0, scale_k, Cast(Const(scale.symbol, "int8_t", scale.values.view(np.int8)[:1]), "float"))
    proof_fails(compiled, f"reads 4 bytes of parameter 1 (p1) float32[] from {scale.symbol}, which holds 1")
    layer.calls[0] = call
    abs_op.attrs["tvm_lowered"].params[-1] = "int8_t"
    proof_fails(compiled, "output is float32, passed as int8_t *")


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
    table = compiled.executor.target_data.get("npu", [])[0]
    data = bytearray(table.data)
    pos = 16
    for _ in range(command):
        pos += struct.unpack_from("<H", data, pos + 2)[0]
    struct.pack_into(fmt, data, pos + field_offset, value)
    table.data = bytes(data)


@pytest.mark.parametrize("field_offset, fmt, value, fragment", [
    (40 + 4, "<I", 1 << 20, "which has 32 bytes"),  # output offset far beyond the arena
    (8 + 4, "<I", 31, "reaches bytes 31..46 of region 1"),  # input runs off the end of the arena
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
    table = hello_npu.executor.target_data["npu"][0]
    table.data = table.data[:-8]  # END cut off
    proof_fails(hello_npu, "does not decode")
    fresh = compile_model(model_path("hello_world"), BuildOptions(target="npu,c", rounding="tflm"))
    ref = C.decode(fresh.executor.target_data["npu"][0].data)[0].params
    struct.pack_into("<i", fresh.executor.blobs["npu_weights"].data, ref.offset + 8, 45)  # shift of channel 0
    proof_fails(fresh, "shift 45")


def test_proof_checks_compressed_weight_streams():
    """COMPRESSED_WEIGHTS: the stream must lie in the weights blob and decode to exactly the dense tensor
    (edgesdk.targets.npu.hw.weight_codec), so the NPU cannot read past it or fail with BAD_WEIGHTS."""
    compiled = compile_model(model_path("kws"), BuildOptions(target="npu,c"))
    found = [(number, command) for number, command in enumerate(C.decode(compiled.executor.target_data.get("npu", [])[0].data))
             if isinstance(command, C.Conv2D) and command.weight_stream_bytes]
    assert found, "KWS has no compressed weight stream to tamper with"
    number, command = found[0]
    verify_build(compiled)
    blob = compiled.executor.blobs["npu_weights"].data
    header = bytes(blob[command.weights.offset:command.weights.offset + 8])
    struct.pack_into("<I", blob, command.weights.offset + 4, struct.unpack_from("<I", header, 4)[0] + 1)
    proof_fails(compiled, f"does not decode to the {math.prod(command.weights.shape)}-byte tensor")
    blob[command.weights.offset:command.weights.offset + 8] = header
    verify_build(compiled)
    patch_table(compiled, number, 88, "<I", len(blob))  # the stream-size word: the stream runs past the blob
    proof_fails(compiled, f"of {len(blob)} bytes is not inside the weights blob")


def test_proof_guards_the_fast_conv_kernels_stack_buffer(tmp_path, monkeypatch):
    """A valid model: a VALID 3x3 convolution over 128 channels with an odd output width. The blocked conv
    kernel copies the window of each row's last pixel into a 1024-byte stack buffer, and 3 x 3 x 128 =
    1152 bytes do not fit (the firmware crashed with a smashed return address before the proof knew
    this). The paired kernel reads every window of this layer in place, so the codegen takes it; the
    blocked kernel's layout (what the codegen picks when a layer does not qualify for the paired one) and the
    paired kernel's patch mode (every window copied) must not produce that firmware."""
    from edgesdk.targets.c.ops import conv_2d

    rng = np.random.default_rng(0)
    w = rng.integers(-3, 4, (8, 3, 3, 128)).astype(np.int8)
    data = modelgen.conv_model((1, 9, 9, 128), w, rng.integers(-100, 100, 8).astype(np.int32), (0.05, 0),
                               [0.01] * 8, (0.2, 0), padding=modelgen.VALID)
    compiled = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    (declaration,) = [d for d in compiled.executor.declarations if "edgesdk_conv2d_params" in d]
    assert ".blocked = 4" in declaration  # EDGESDK_CONV_PAIRED_QUADS: rows of 384 taps, small weights
    verify_build(compiled)
    params = host_layers(compiled)[0].calls[0].args[0]
    params.fields["blocked"] = 5  # the patch mode of the same layout: both windows copied to the stack
    proof_fails(compiled, "paired conv kernel would copy a 1152-byte filter window into its 1024-byte stack "
                          "buffer (every window)")
    monkeypatch.setattr(conv_2d, "paired_conv_ok", lambda *args: False)
    blocked = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    assert any(".blocked = 1" in d for d in blocked.executor.declarations)
    proof_fails(blocked, "blocked conv kernel would copy a 1152-byte filter window into its 1024-byte stack buffer "
                         "(windows of the odd last column)")


def test_proof_knows_the_paired_conv_layout(tmp_path, monkeypatch):
    """edgesdk_conv2d_s8_paired: the weights (two channels per 32-bit word), the biases and the {2M, r, k}
    records the proof decodes must keep every channel's sum and k within int32, and the records be ones the
    requantization defines. (The two-tap layout, forced: windows of 36 taps would take the four-tap one.)"""
    from edgesdk.targets.c.ops import conv_2d

    monkeypatch.setattr(conv_2d, "quad_layout_pays", lambda *args: False)
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (5, 3, 3, 4)).astype(np.int8)
    data = modelgen.conv_model((1, 6, 6, 4), w, rng.integers(-500, 500, 5).astype(np.int32), (0.05, 3),
                               [0.01] * 5, (0.2, -4))
    compiled = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    verify_build(compiled)
    params = host_layers(compiled)[0].calls[0].args[0]
    assert params.fields["blocked"] == 3  # 3x3 over 4 channels: the patch mode
    records = params.fields["requant"]

    def with_record(channel: int, column: int, value: int):
        values = list(records.values)
        values[3 * channel + column] = value
        params.fields["requant"] = Const(records.symbol, records.ctype, np.array(values, np.int64))

    with_record(3, 2, (1 << 31) - 1000)  # channel 3's k: its sum plus k can overflow
    proof_fails(compiled, "a channel's sums or requantization can overflow int32")
    with_record(4, 1, 0)  # a right shift of 0
    proof_fails(compiled, "a record's shift is not a right shift of 1..31")
    params.fields["requant"] = records
    layer = host_layers(compiled)[0]
    call = layer.calls[0]
    bias = call.args[3]
    huge = list(bias.values)
    huge[3] = (1 << 31) - 1 - 32767 * 18  # channel 3's bias 2^31 - 1: the second pair's high word, less 32767
    # per two-tap chunk (36 taps: 18)
    layer.calls[0] = KernelCall(call.kernel, (*call.args[:3], Const(bias.symbol, bias.ctype, np.array(huge)),
                                              *call.args[4:]))
    proof_fails(compiled, "a channel's sums or requantization can overflow int32")


@pytest.mark.parametrize("seed, channels, depth, spike, blocked, next_flag", [
    (5, 4, 8, 1, 4, 9),  # EDGESDK_CONV_PAIRED_QUADS: per chunk the flag, then 4 taps x 2 pairs
    (6, 6, 32, 4, 6, 13),  # _QUADS3: a flag covers the 6 channels of a 3-pair block; 4 taps x 3 pairs
], ids=["quads", "quads3"])
def test_proof_checks_the_four_tap_flags(tmp_path, seed, channels, depth, spike, blocked, next_flag):
    """EDGESDK_CONV_PAIRED_QUADS and _QUADS3: a chunk flagged for one lane extraction must keep every channel's
    four products within the lane for any int8 input; the proof decodes the emitted words (blocks of 2 or 3
    pairs) and refuses a chunk flagged for one extraction whose products can leave a lane."""
    rng = np.random.default_rng(seed)
    w = rng.integers(-20, 21, (channels, 1, 1, depth)).astype(np.int8)
    w[spike, 0, 0, 0:4] = -127  # the spike channel's first chunk (the first block's) cannot take one extraction
    data = modelgen.conv_model((1, 3, 3, depth), w, rng.integers(-100, 100, channels).astype(np.int32), (0.05, 2),
                               [0.01] * channels, (0.2, -3))
    compiled = compile_model(write(tmp_path, data), BuildOptions(target="c"))
    verify_build(compiled)
    layer = host_layers(compiled)[0]
    call = layer.calls[0]
    assert call.args[0].fields["blocked"] == blocked
    weights = call.args[2]
    words = np.asarray(weights.values, np.int64).astype(np.uint8).view("<i4").copy()
    assert words[0] == 0 and words[next_flag] == 1  # the first chunk's flag, the next chunk's
    words[0] = 1
    layer.calls[0] = KernelCall(call.kernel, (*call.args[:2], Const(weights.symbol, weights.ctype,
                                                                   words.view(np.int8).astype(np.int64)),
                                              *call.args[3:]))
    proof_fails(compiled, "a four-tap chunk flagged as one lane extraction can leave its 16-bit lane")


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


# -- the C target's fixed-point preprocessing ranges (fuzz findings tiny_scale_*) ------------------------------
def _just_below(value: float) -> float:
    """The largest float32 below `value` (scales are float32 in a .tflite file)."""
    return float(np.nextafter(np.float32(value), np.float32(0)))


def _param_fields(compiled, struct_name: str) -> dict:
    (declaration,) = [d for d in compiled.executor.declarations if struct_name in d]
    return {k: int(v) for k, v in re.findall(r"\.(\w+) = (-?\d+)\b", declaration)}


@pytest.mark.parametrize("op_type, out_q", [("LOGISTIC", (1.0 / 256, -128)), ("TANH", (1.0 / 128, 0))])
@pytest.mark.parametrize("rounding", ["ref", "tflm"])
def test_sigmoid_input_scale_below_2_pow_minus_28_is_unsupported(tmp_path, op_type, out_q, rounding):
    """TFLite Micro shifts LOGISTIC/TANH inputs left by log2(input_scale * 2^27): negative below 2^-28 (the
    codegen crashed with 'negative shift count'). At the boundary the op builds; below, the partitioner
    refuses it with the rule, whatever the rounding."""
    compiled = compile_model(write(tmp_path, modelgen.unary_model(op_type, (1, 16), (2.0 ** -28, 0), out_q)),
                             BuildOptions(target="c", rounding=rounding))
    verify_build(compiled)
    if rounding == "tflm":  # the edge of the range: shift 0, the largest radius, still an int32
        fields = _param_fields(compiled, "edgesdk_sigmoid_params")
        assert fields["input_left_shift"] == 0 and fields["input_range_radius"] == 15 << 27, fields
    data = modelgen.unary_model(op_type, (1, 16), (_just_below(2.0 ** -28), 0), out_q)
    with pytest.raises(UnsupportedOpError) as err:
        compile_model(write(tmp_path, data), BuildOptions(target="npu,c", rounding=rounding))
    message = str(err.value)
    assert f"({op_type}," in message and "sigmoid_input_scale_in_range" in message and "< 2^-28" in message, message


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.7])
def test_softmax_beta_times_input_scale_below_2_pow_minus_27_is_unsupported(tmp_path, beta):
    """PreprocessSoftmaxScaling's left shift is the exponent of beta * input_scale * 2^26: negative (undefined
    in TFLite, 'negative shift count' in the codegen) below 2^-27."""
    edge = float(np.float32(2.0 ** -27 / float(np.float32(beta))))
    while float(np.float32(beta)) * edge < 2.0 ** -27:  # the smallest float32 scale on the right side
        edge = float(np.nextafter(np.float32(edge), np.float32(1)))
    for rounding in ("ref", "tflm"):
        compiled = compile_model(write(tmp_path, modelgen.softmax_model((2, 10), (edge, 0), beta=beta)),
                                 BuildOptions(target="c", rounding=rounding))
        verify_build(compiled)
        fields = _param_fields(compiled, "edgesdk_softmax_params")
        assert fields["input_left_shift"] == 0 and fields["diff_min"] == -(31 << 26), fields
        with pytest.raises(UnsupportedOpError) as err:
            compile_model(write(tmp_path, modelgen.softmax_model((2, 10), (_just_below(edge), 0), beta=beta)),
                          BuildOptions(target="npu,c", rounding=rounding))
        assert "(SOFTMAX," in str(err.value) and "softmax_input_scale_in_range" in str(err.value), str(err.value)


# -- arena and stack guards, end to end ------------------------------------------------------------------------
FAULTS = """
    /* reliability test hook: input byte selects a fault (tests/test_reliability.py) */
    switch ((int)edgesdk_arena[ARENA_INPUT]) {
    case 1: /* a layer writing 8 bytes past the end of the arena */
        memcpy(edgesdk_arena + reliability_offset(EDGESDK_DEFAULT_ARENA_BYTES - 8), edgesdk_arena, 16);
        break;
    case 2: /* ... and 4 bytes before its start */
        memcpy(edgesdk_arena + reliability_offset(-4), edgesdk_arena, 8);
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
