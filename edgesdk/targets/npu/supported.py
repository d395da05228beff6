"""Which ops NPU-1 runs, under which named constraints (the limits are those of docs/npu-datasheet.md).

Each constraint is a small function `(op) -> (ok, detail)` whose docstring's first line is the rule; the
partitioner reports the first failing one (edgesdk/partition/target.py). Arithmetic notes:
* uint8-legalized ops compute the same as int8 ones after the -128 shift, except AVERAGE_POOL_2D, whose
  uint8 kernel rounds (sum + n/2) / n on non-negative sums (a floor division after the shift): the
  command's floor-rounding flag reproduces it, so no constraint is needed for it.
* uint8 filters keep a nonzero zero point: the conv commands carry one weight offset for all channels.
"""

from __future__ import annotations

import numpy as np

from ...ir.quant import effective_scale, quantize_multiplier
from ...ir.rounding import mul_effective_scale
from ...npu import registers as R
from ...partition.target import TargetSupport

SUPPORTED_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


# -- helpers ------------------------------------------------------------------------------------------------
def _activations(op) -> list:
    """Non-constant inputs and all outputs."""
    return [t for t in op.inputs if t is not None and not t.is_const] + list(op.outputs)


def _present(op) -> list:
    return [t for t in op.inputs + op.outputs if t is not None]


def _shift_ok(shift: int) -> bool:
    return R.MIN_SHIFT <= shift <= R.MAX_SHIFT


def _conv_channel_scales(op) -> list:
    """The real requantization scale of every output channel, as TFLite computes it (double)."""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    return [effective_scale(x.quant.scale0, s, denominator=y.quant.scale0) for s in np.asarray(w.quant.scale).reshape(-1)]


def _window_ok(in_size: int, out_size: int, kernel: int, stride: int, dilation: int, pad: int) -> bool:
    """The NPU's window rule (datasheet): pad <= (kernel-1)*dilation, last window starts inside the input."""
    return pad <= (kernel - 1) * dilation and (out_size - 1) * stride <= in_size - 1 + pad


def _kernel_hw(op) -> tuple:
    if op.type in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        return op.attrs["filter_h"], op.attrs["filter_w"]
    return op.inputs[1].shape[1], op.inputs[1].shape[2]


# -- generic --------------------------------------------------------------------------------------------------
def constraint_int8_activations(op):
    """Activation inputs and outputs are int8"""
    bad = [f"{t.name}: {t.dtype}" for t in _activations(op) if t.dtype != "int8"]
    return not bad, ", ".join(bad)


def constraint_per_tensor_activation_quant(op):
    """Activation tensors have one scale and zero point each"""
    bad = [t.name for t in _activations(op) if t.quant is None or t.quant.scale.size != 1]
    return not bad, "not per-tensor quantized: " + ", ".join(bad)


def constraint_tensor_dims(op):
    """Tensors have rank <= 4 and every dimension is 1..65535"""
    bad = [f"{t.name}{list(t.shape)}" for t in _present(op)
           if len(t.shape) > 4 or any(not 1 <= d <= R.MAX_DIM for d in t.shape)]
    return not bad, ", ".join(bad)


def constraint_operand_size(op):
    """Every tensor is at most 4 MiB"""
    bad = [f"{t.name}: {t.nbytes} bytes" for t in _present(op) if t.nbytes > R.MAX_OPERAND_BYTES]
    return not bad, ", ".join(bad)


def constraint_fused_activation(op):
    """Fused activation is NONE, RELU, RELU6 or RELU_N1_TO_1"""
    act = op.attrs.get("activation", "NONE")
    return act in SUPPORTED_ACTIVATIONS, f"activation {act}"


# -- convolution and fully connected ---------------------------------------------------------------------------
def constraint_not_grouped(op):
    """Filter depth equals the input depth (grouped convolution is not supported)"""
    in_depth, filter_depth = op.inputs[0].shape[-1], op.inputs[1].shape[-1]
    return in_depth == filter_depth, f"input depth {in_depth}, filter depth {filter_depth}"


def constraint_weights_int8_const(op):
    """Weights are constant int8, quantized per tensor or per output channel"""
    w = op.inputs[1]
    if not w.is_const or w.dtype != "int8" or w.quant is None:
        return False, f"weights '{w.name}' are {'constant ' if w.is_const else 'non-constant '}{w.dtype}"
    out_axis = 3 if op.type == "DEPTHWISE_CONV_2D" else 0
    if w.quant.scale.size not in (1, w.shape[out_axis]):
        return False, f"{w.quant.scale.size} scales for {w.shape[out_axis]} output channels"
    if w.quant.per_channel and w.quant.axis != out_axis:
        return False, f"per-channel axis {w.quant.axis}, expected {out_axis}"
    return True, ""


def constraint_single_weight_zero_point(op):
    """All weight zero points are equal (one weight offset per command)"""
    zps = set(np.asarray(op.inputs[1].quant.zero_point).reshape(-1).tolist())
    return len(zps) == 1, f"weight zero points {sorted(zps)[:4]}"


def constraint_bias_int32(op):
    """Bias is absent or constant int32 with one value per output channel"""
    b = op.inputs[2] if len(op.inputs) > 2 else None
    if b is None:
        return True, ""
    channels = op.outputs[0].shape[-1]
    ok = b.is_const and b.dtype == "int32" and b.num_elements == channels
    return ok, f"bias '{b.name}' {b.dtype}{list(b.shape)} for {channels} output channels"


def constraint_kernel_size(op):
    """Kernel height and width are 1..64"""
    kh, kw = _kernel_hw(op)
    return 1 <= kh <= R.MAX_KERNEL and 1 <= kw <= R.MAX_KERNEL, f"kernel {kh}x{kw}"


def constraint_stride(op):
    """Strides are 1..64"""
    sh, sw = op.attrs.get("stride_h", 1), op.attrs.get("stride_w", 1)
    return 1 <= sh <= R.MAX_STRIDE and 1 <= sw <= R.MAX_STRIDE, f"stride {sh}x{sw}"


def constraint_dilation(op):
    """Dilations are 1..32"""
    dh, dw = op.attrs.get("dilation_h", 1), op.attrs.get("dilation_w", 1)
    return 1 <= dh <= R.MAX_DILATION and 1 <= dw <= R.MAX_DILATION, f"dilation {dh}x{dw}"


def constraint_padding(op):
    """Top/left padding is at most the dilated kernel extent minus one and every window starts inside the input"""
    x, y = op.inputs[0], op.outputs[0]
    kh, kw = _kernel_hw(op)
    ok = (_window_ok(x.shape[1], y.shape[1], kh, op.attrs["stride_h"], op.attrs.get("dilation_h", 1), op.attrs["pad_top"])
          and _window_ok(x.shape[2], y.shape[2], kw, op.attrs["stride_w"], op.attrs.get("dilation_w", 1), op.attrs["pad_left"]))
    return ok, f"pad top {op.attrs['pad_top']}, left {op.attrs['pad_left']}"


def constraint_requant_representable(op):
    """Every channel's requantization scale has a multiplier shift in [-31, 30]"""
    for c, scale in enumerate(_conv_channel_scales(op)):
        _mult, shift = quantize_multiplier(scale)
        if not _shift_ok(shift):
            return False, f"channel {c}: scale {scale:.3g} needs shift {shift}"
    return True, ""


def _conv_macs(op) -> int:
    y, w = op.outputs[0], op.inputs[1]
    if op.type == "FULLY_CONNECTED":
        return y.num_elements * w.shape[1]
    if op.type == "DEPTHWISE_CONV_2D":
        return y.num_elements * w.shape[1] * w.shape[2]
    return y.num_elements * w.shape[1] * w.shape[2] * w.shape[3]


def constraint_macs_per_command(op):
    """One command does at most 2^28 MACs"""
    macs = _conv_macs(op)
    return macs <= R.MAX_OPS_PER_COMMAND, f"{macs} MACs"


def constraint_depth_multiplier(op):
    """Output channels are input channels x depth_multiplier"""
    m = op.attrs.get("depth_multiplier", 1)
    ok = m >= 1 and op.inputs[0].shape[3] * m == op.outputs[0].shape[3]
    return ok, f"depth multiplier {m}, channels {op.inputs[0].shape[3]} -> {op.outputs[0].shape[3]}"


def constraint_fc_shapes(op):
    """Fully connected weights are [out, in], the input is a whole number of rows of `in` elements, at most 65535 rows"""
    x, w = op.inputs[0], op.inputs[1]
    if len(w.shape) != 2 or x.num_elements % w.shape[1] != 0:
        return False, f"input {list(x.shape)}, weights {list(w.shape)}"
    rows = x.num_elements // w.shape[1]
    return rows <= R.MAX_DIM and op.outputs[0].num_elements == rows * w.shape[0], f"{rows} rows"


def constraint_conv_shapes(op):
    """The output has the input's batch and one channel per filter (depthwise: filters [1, KH, KW, C_out])"""
    x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
    if len(x.shape) != 4 or len(w.shape) != 4 or len(y.shape) != 4:
        return False, f"input {list(x.shape)}, filter {list(w.shape)}, output {list(y.shape)}"
    if op.type == "DEPTHWISE_CONV_2D":
        ok = w.shape[0] == 1 and w.shape[3] == y.shape[3]
    else:
        ok = w.shape[0] == y.shape[3]
    return ok and x.shape[0] == y.shape[0], f"input {list(x.shape)}, filter {list(w.shape)}, output {list(y.shape)}"


# -- pooling -----------------------------------------------------------------------------------------------------
def constraint_pool_shapes(op):
    """Input and output are 4-D NHWC with the same batch and channels (pooling never changes them)"""
    x, y = op.inputs[0], op.outputs[0]
    ok = len(x.shape) == 4 and len(y.shape) == 4 and x.shape[0] == y.shape[0] and x.shape[3] == y.shape[3]
    return ok, f"shapes {list(x.shape)} -> {list(y.shape)}"


def constraint_pool_work(op):
    """One pooling command does at most 2^28 element operations (output elements x filter height x width)"""
    ops = op.outputs[0].num_elements * op.attrs["filter_h"] * op.attrs["filter_w"]
    return ops <= R.MAX_OPS_PER_COMMAND, f"{ops} operations"


def constraint_pool_filter(op):
    """Pooling filter height and width are 1..256"""
    fh, fw = op.attrs["filter_h"], op.attrs["filter_w"]
    return 1 <= fh <= R.MAX_POOL_FILTER and 1 <= fw <= R.MAX_POOL_FILTER, f"filter {fh}x{fw}"


def _same_quant(op, tolerance: float):
    y = op.outputs[0]
    for t in op.inputs:
        if t is None:
            continue
        if (t.quant is None or y.quant is None or abs(t.quant.scale0 - y.quant.scale0) > tolerance
                or t.quant.zp0 != y.quant.zp0):
            return False, f"'{t.name}' and '{y.name}' are quantized differently"
    return True, ""


def constraint_pool_same_quantization(op):
    """Input and output have the same zero point and scales within 1e-6 (TFLite's pooling check; no rescaling)"""
    return _same_quant(op, 1e-6)


def constraint_concat_same_quantization(op):
    """All inputs and the output have exactly the same scale and zero point (TFLite's int8 check; no rescaling)"""
    return _same_quant(op, 0.0)


# -- elementwise ----------------------------------------------------------------------------------------------
def _broadcast_ok(in_shape, out_shape) -> bool:
    if len(in_shape) > len(out_shape):
        return False
    padded = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    return all(a == b or a == 1 for a, b in zip(padded, out_shape))


def constraint_broadcast(op):
    """Input shapes broadcast to the output shape (NumPy rules; zero strides in the descriptors)"""
    y = op.outputs[0]
    bad = [f"{list(t.shape)}" for t in op.inputs[:2] if not _broadcast_ok(t.shape, y.shape)]
    return not bad, f"inputs {bad} vs output {list(y.shape)}"


def constraint_add_scales(op):
    """ADD's input and output rescaling multipliers have shifts in [-31, 30]"""
    m1, s1, m2, s2, mo, so = add_parameters(op)
    return all(_shift_ok(s) for s in (s1, s2, so)), f"shifts {s1}, {s2}, {so}"


def constraint_mul_scale(op):
    """MUL's output rescaling multiplier has a shift in [-31, 30]"""
    _m, shift = mul_parameters(op)
    return _shift_ok(shift), f"shift {shift}"


def add_parameters(op) -> tuple:
    """TFLite's int8 ADD Prepare: (input1 mult, shift, input2 mult, shift, output mult, shift), left shift 20."""
    x1, x2, y = op.inputs[0], op.inputs[1], op.outputs[0]
    s1, s2, so = (float(np.float32(t.quant.scale0)) for t in (x1, x2, y))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = quantize_multiplier(s1 / twice_max)
    m2, sh2 = quantize_multiplier(s2 / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << ADD_LEFT_SHIFT) * so))
    return m1, sh1, m2, sh2, mo, sho


def mul_parameters(op, mode: str = "ref") -> tuple:
    """TFLite's int8 MUL Prepare: one multiplier for s1 * s2 / s_out (float32 in LiteRT, double in TFLM)."""
    return quantize_multiplier(mul_effective_scale(op, mode))


ADD_LEFT_SHIFT = 20


# -- data movement ---------------------------------------------------------------------------------------------
def constraint_no_fused_activation(op):
    """No fused activation"""
    act = op.attrs.get("activation", "NONE")
    return act == "NONE", f"activation {act}"


# -- --rounding ort -----------------------------------------------------------------------------------------------
def constraint_no_float_requantization(op):
    """With --rounding ort, the op only moves int8 data of one quantization (ONNX Runtime requantizes in float32, rounding half to even; the NPU's requantization is fixed point)"""
    from ...ir.ort import execution, requantizes

    run = execution(op)
    return not requantizes(op), f"ONNX Runtime computes it as {run.text if run else op.type}"


# -- the commands themselves ------------------------------------------------------------------------------------
class _ProbeContext:
    """A codegen context for lowering one op on its own: every activation at arena offset 0, constants
    nowhere (only their sizes matter), dense weights, double rounding (valid in every command)."""

    plan = None
    rounding_mode = "ref"

    def layer_choice(self, op, name: str, default: bool) -> bool:
        return False if name == "compress_weights" else default  # dense weights: only the shapes matter

    def arena_offset(self, tensor) -> int:
        return 0

    def blob(self, name: str) -> "_NoBlob":
        return _NoBlob()

    def rounding_for(self, op) -> str:
        return "double"


class _NoBlob:
    """Constants go nowhere while probing: every offset reads 0."""

    def add(self, data, align: int = 16, label: str = "") -> int:
        return 0


def constraint_commands_accepted(op):
    """The NPU accepts the op's commands: lowered on their own, they pass every static check of the NPU (edgesdk/npu/validate.py)"""
    from ...errors import EdgesdkError
    from ...npu import cmdtable as C
    from ...npu import validate
    from .codegen import LOWERINGS

    try:
        commands = LOWERINGS[op.type](op, _ProbeContext())
        table = C.encode(list(commands) + [C.End()])
    except (C.CommandTableError, EdgesdkError, ValueError, OverflowError) as exc:
        return False, f"its commands cannot be encoded: {exc}"
    code, index = validate.check_table(table)
    if code == R.ERR_NONE:
        return True, ""
    return False, (f"command {index} of its {len(commands)} ({type(commands[index]).__name__}) would stop the NPU "
                   f"with {R.error_name(code)}: {R.error_description(code)}")


GENERIC = [constraint_int8_activations, constraint_per_tensor_activation_quant, constraint_tensor_dims,
           constraint_operand_size, constraint_no_float_requantization]
CONV_COMMON = [constraint_weights_int8_const, constraint_single_weight_zero_point, constraint_bias_int32,
               constraint_fused_activation, constraint_requant_representable, constraint_macs_per_command]
SPATIAL = [constraint_kernel_size, constraint_stride, constraint_dilation, constraint_padding]
POOL = [constraint_pool_shapes, constraint_pool_filter, constraint_stride, constraint_padding,
        constraint_pool_work, constraint_pool_same_quantization, constraint_fused_activation]
# Last for every op: whatever the named rules above miss, the NPU's own static checks do not (issue 12).
ACCEPTED = [constraint_commands_accepted]

NPU_SUPPORT = TargetSupport(
    name="npu",
    generic=GENERIC,
    ops={
        "CONV_2D": [constraint_not_grouped, constraint_conv_shapes] + CONV_COMMON + SPATIAL + ACCEPTED,
        "DEPTHWISE_CONV_2D": [constraint_conv_shapes] + CONV_COMMON + SPATIAL + [constraint_depth_multiplier] + ACCEPTED,
        "FULLY_CONNECTED": [constraint_fc_shapes] + CONV_COMMON + ACCEPTED,
        "AVERAGE_POOL_2D": POOL + ACCEPTED,
        "MAX_POOL_2D": POOL + ACCEPTED,
        "ADD": [constraint_broadcast, constraint_fused_activation, constraint_add_scales] + ACCEPTED,
        "MUL": [constraint_broadcast, constraint_fused_activation, constraint_mul_scale] + ACCEPTED,
        # RESHAPE: no command when the planner aliases input and output, else one DMA copy
        "RESHAPE": ACCEPTED,
        "CONCATENATION": [constraint_no_fused_activation, constraint_concat_same_quantization] + ACCEPTED,
    },
)
