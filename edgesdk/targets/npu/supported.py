"""Which ops NPU-1 runs, under which named constraints (the limits are those of docs/npu-datasheet.md).

Each constraint is a small function `(op) -> (ok, detail)` whose docstring's first line is the rule; the
partitioner reports the first failing one (edgesdk/partition/target.py). Arithmetic notes:
* uint8-legalized ops compute the same as int8 ones after the -128 shift, except AVERAGE_POOL_2D, whose
  uint8 kernel rounds (sum + n/2) / n on non-negative sums (a floor division after the shift): the
  command's floor-rounding flag reproduces it, so no constraint is needed for it.
* uint8 filters keep a nonzero zero point: the conv commands carry one weight offset for all channels.
* 16x8 layers (int16 activations, int8 weights, int64 bias) accumulate in 64 bits and requantize with
  TFLite's 64-bit MultiplyByQuantizedMultiplier (or LiteRT's FP64 one for FULLY_CONNECTED).
* Where LiteRT and TFLite Micro compute an op differently, a constraint that depends on it checks the build's
  rounding modes, its parameter `modes` (both TFLite references when none is known, e.g. `edgesdk inspect`).
"""

from __future__ import annotations

import numpy as np

from ...errors import EdgesdkError
from ..api import compile_memo
from .codegen import LOWERINGS, quantized_multipliers
from .hw import cmdtable as C
from .hw import registers as R
from .hw import validate
from ...ops import prepared
from ...partition.target import TargetSupport
from .shapes import broadcasts, collapse_broadcast

SUPPORTED_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
NPU_DTYPES = ("int8", "int16")
TENSOR_TYPE_INT32 = 2  # TFLite schema TensorType: quantized_bias_type INT32 (a 16x8 layer with int32 bias)


# -- helpers ------------------------------------------------------------------------------------------------
def _activations(op) -> list:
    """Non-constant inputs and all outputs."""
    return [t for t in op.inputs if t is not None and not t.is_const] + list(op.outputs)


def _present(op) -> list:
    return [t for t in op.inputs + op.outputs if t is not None]


def _shift_ok(shift: int) -> bool:
    return R.MIN_SHIFT <= shift <= R.MAX_SHIFT


def _conv_channel_scales(op) -> np.ndarray:
    """The real requantization scale of every output channel, as TFLite computes it (float64 array)."""
    x, w, y = _layer_input(op), op.inputs[1], op.outputs[0]
    # ir.quant.effective_scale per channel, vectorised: the same float64 multiply then divide, the same doubles
    w_scales = np.asarray(w.quant.scale, np.float32).reshape(-1).astype(np.float64)
    return np.float64(np.float32(x.quant.scale0)) * w_scales / np.float64(np.float32(y.quant.scale0))


def _window_ok(in_size: int, out_size: int, kernel: int, stride: int, dilation: int, pad: int) -> bool:
    """The NPU's window rule (datasheet): pad <= (kernel-1)*dilation, last window starts inside the input."""
    return pad <= (kernel - 1) * dilation and (out_size - 1) * stride <= in_size - 1 + pad


def _layer_input(op):
    """The activation input of a layer op (TRANSPOSE_CONV's is its third input)."""
    return op.inputs[2] if op.type == "TRANSPOSE_CONV" else op.inputs[0]


def _kernel_hw(op) -> tuple:
    if op.type in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        return op.attrs["filter_h"], op.attrs["filter_w"]
    return op.inputs[1].shape[1], op.inputs[1].shape[2]


def _is_16x8(op) -> bool:
    return op.outputs[0].dtype == "int16"


# -- generic --------------------------------------------------------------------------------------------------
def constraint_int8_or_int16_activations(op):
    """Activation inputs and outputs are all int8 or all int16"""
    activations = _activations(op)
    dtypes = {t.dtype for t in activations}
    if len(dtypes) == 1 and dtypes <= set(NPU_DTYPES):
        return True, ""  # (the detail tells a failure only: not made for every op that passes)
    return False, ", ".join(f"{t.name}: {t.dtype}" for t in activations)


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


def constraint_int16_zero_points(op):
    """int16 activations have zero point 0 (TFLite's 16-bit kernels require it)"""
    bad = [t.name for t in _activations(op) if t.dtype == "int16" and t.quant is not None and t.quant.zp0 != 0]
    return not bad, "nonzero zero point: " + ", ".join(bad)


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


def _bias(op):
    index = 3 if op.type == "TRANSPOSE_CONV" else 2
    return op.inputs[index] if len(op.inputs) > index else None


def constraint_bias(op):
    """Bias is absent or constant with one value per output channel: int32 for int8 layers, int64 for 16x8 layers (the converter's default; an INT32 quantized_bias_type is not supported)"""
    b = _bias(op)
    wide = _is_16x8(op)
    if wide and op.attrs.get("quantized_bias_type", 0) == TENSOR_TYPE_INT32:
        return False, "quantized_bias_type INT32 (a 16x8 layer accumulating in int32)"
    if b is None:
        return True, ""
    channels = op.outputs[0].shape[-1]
    ok = b.is_const and b.dtype == ("int64" if wide else "int32") and b.num_elements == channels
    return ok, f"bias '{b.name}' {b.dtype}{list(b.shape)} for {channels} output channels"


def constraint_16x8_symmetric_weights(op):
    """16x8 layers have symmetric weights (every weight zero point 0)"""
    w = op.inputs[1]
    if not _is_16x8(op) or w.quant is None:
        return True, ""
    zps = set(np.asarray(w.quant.zero_point).reshape(-1).tolist())
    return zps == {0}, f"weight zero points {sorted(zps)[:4]}"


def constraint_16x8_requant_shift(op):
    """16x8 layers: every requantization shift is at most 14 (the 64-bit requantization shifts right by 15 - shift)"""
    if not _is_16x8(op):
        return True, ""
    bad = [s for m, s in zip(*_channel_multipliers(op)) if m != 0 and s > R.MAX_SHIFT_WIDE]
    return not bad, f"shift {bad[0]}" if bad else ""


def _channel_multipliers(op) -> tuple:
    """(multipliers, shifts) per output channel, from the op layer's data (the same in both modes)."""
    data = prepared(op, "tflm")
    return data.multipliers, data.shifts


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
    scales = _conv_channel_scales(op)
    shifts = quantized_multipliers(scales)[1]  # (the lowering's own, for an int8 layer's per-channel scales)
    if not shifts or (R.MIN_SHIFT <= min(shifts) and max(shifts) <= R.MAX_SHIFT):
        return True, ""
    c = next(c for c, shift in enumerate(shifts) if not _shift_ok(shift))
    return False, f"channel {c}: scale {float(scales[c]):.3g} needs shift {shifts[c]}"


def _conv_macs(op) -> int:
    y, w = op.outputs[0], op.inputs[1]
    if op.type == "TRANSPOSE_CONV":  # every input pixel times every tap
        x = op.inputs[2]
        return x.shape[0] * x.shape[1] * x.shape[2] * w.shape[0] * w.shape[1] * w.shape[2] * w.shape[3]
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


def constraint_transpose_conv_shapes(op):
    """TRANSPOSE_CONV's output shape is a constant, its input and output 4-D with one output channel per filter"""
    shape, w, x, y = op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]
    ok = shape.is_const and len(x.shape) == 4 and len(y.shape) == 4 and w.shape[0] == y.shape[3]
    return ok, f"output shape {'constant' if shape.is_const else 'computed'}, input {list(x.shape)}, filter {list(w.shape)}"


def constraint_symmetric_weights(op):
    """The weights are symmetric (every weight zero point 0; TFLite's int8 TRANSPOSE_CONV ignores them)"""
    zps = set(np.asarray(op.inputs[1].quant.zero_point).reshape(-1).tolist())
    return zps == {0}, f"weight zero points {sorted(zps)[:4]}"


def constraint_transposed_padding(op):
    """Each leading pad is at most the kernel extent minus one and fewer than one stride of outputs lies past the last input's taps (the transposed window rule)"""
    x, w, y = op.inputs[2], op.inputs[1], op.outputs[0]
    a = op.attrs
    ok = all(pad <= k - 1 and out + pad <= size * stride + k - 1
             for size, out, k, stride, pad in ((x.shape[1], y.shape[1], w.shape[1], a["stride_h"], a["pad_top"]),
                                              (x.shape[2], y.shape[2], w.shape[2], a["stride_w"], a["pad_left"])))
    return ok, f"pad top {a['pad_top']}, left {a['pad_left']}"


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
    """int8 inputs have exactly the output's scale and zero point (TFLite's int8 check; no rescaling; int16 inputs are copied as they are)"""
    if op.outputs[0].dtype == "int16":
        return True, ""
    return _same_quant(op, 0.0)


# -- elementwise ----------------------------------------------------------------------------------------------
def constraint_broadcast(op):
    """Input shapes broadcast to the output shape (NumPy rules; zero strides in the descriptors)"""
    y = op.outputs[0]
    bad = [f"{list(t.shape)}" for t in op.inputs[:2] if not broadcasts(t.shape, y.shape)]
    return not bad, f"inputs {bad} vs output {list(y.shape)}"


def constraint_broadcast_dims(op):
    """The broadcast fits four dimensions of at most 65535 (higher ranks: size-1 dimensions dropped and neighbours that broadcast alike merged)"""
    y = op.outputs[0]
    shapes = [list(t.shape) for t in op.inputs[:2]]
    empty = any(d < 1 for s in shapes + [list(y.shape)] for d in s)
    return not empty and collapse_broadcast(y.shape, shapes) is not None, f"inputs {shapes}, output {list(y.shape)}"


def constraint_add_general_path(op, modes):
    """int16 ADD/SUB take TFLite's general rescaling path: LiteRT's power-of-two path (pot_scale_int16 with power-of-two scales) is not supported in --rounding ref builds"""
    pot = [mode for mode in modes if not hasattr(prepared(op, mode), "input1_multiplier")]
    return not pot, f"LiteRT's power-of-two int16 path ({', '.join(pot)})"


def constraint_add_scales(op, modes):
    """ADD/SUB's input and output rescaling multipliers have shifts in [-31, 30]"""
    for mode in modes:  # the general path's constants (constraint_add_general_path runs first)
        d = prepared(op, mode)
        shifts = (d.input1_shift, d.input2_shift, d.output_shift)
        if not all(_shift_ok(s) for s in shifts):
            return False, "shifts {}, {}, {}".format(*shifts)
    return True, ""


def constraint_mul_scale(op, modes):
    """MUL's output rescaling multiplier has a shift in [-31, 30]"""
    shifts = [prepared(op, mode).output_shift for mode in modes]
    return all(_shift_ok(s) for s in shifts), f"shift {shifts[0]}"


# -- data movement ---------------------------------------------------------------------------------------------
def constraint_no_fused_activation(op):
    """No fused activation"""
    act = op.attrs.get("activation", "NONE")
    return act == "NONE", f"activation {act}"


def constraint_resize_shapes(op):
    """The output size is a constant; input and output are 4-D NHWC with the same batch and channels"""
    x, size, y = op.inputs[0], op.inputs[1], op.outputs[0]
    ok = (size.is_const and len(x.shape) == 4 and len(y.shape) == 4 and x.shape[0] == y.shape[0]
          and x.shape[3] == y.shape[3])
    return ok, f"size {'constant' if size.is_const else 'computed'}, {list(x.shape)} -> {list(y.shape)}"


# -- pointwise activations (TABLE) ------------------------------------------------------------------------------
def constraint_pointwise_shapes(op):
    """Input and output have one shape and one type (a table maps each value to a value of its type)"""
    from .pointwise import activation_input

    x, y = activation_input(op), op.outputs[0]
    if x is None:
        return False, "its input is a constant"
    return tuple(x.shape) == tuple(y.shape) and x.dtype == y.dtype, f"{x.dtype}{list(x.shape)} -> {y.dtype}{list(y.shape)}"


def constraint_pointwise_dims(op):
    """The tensor fits four dimensions of at most 65535 with the channels last (leading dimensions merge)"""
    from .pointwise import table_view

    return table_view(op.outputs[0].shape) is not None, f"shape {list(op.outputs[0].shape)}"


def constraint_alpha_per_channel(op):
    """PRELU's alpha is a constant that varies along the channel axis only (one table per channel)"""
    from .pointwise import alpha_problem

    problem = alpha_problem(op)
    return not problem, problem


def constraint_host_kernel(op, modes):
    """The host C target runs the op: the tables are its kernel's output for every input code, in the build's rounding mode"""
    from .. import target_support

    ok, reason = target_support("c").check(op, modes)
    return ok, reason


def constraint_int16_table_exact(op, modes):
    """int16: the 513-entry interpolated table reproduces the op on all 65,536 inputs (int8 tables always do)"""
    from .pointwise import HostKernelError, tables

    if op.outputs[0].dtype != "int16":
        return True, ""
    for mode in modes:
        try:
            tables(op, mode)
        except (HostKernelError, ValueError) as exc:
            return False, f"--rounding {mode}: {exc}"
    return True, ""


# -- data movement (strided DMA) --------------------------------------------------------------------------------
def constraint_movement_expressible(op, modes):
    """The movement is known at build time (constant parameters) and takes at most 256 DMA copies of four dimensions"""
    from .movement import MAX_COMMANDS, command_count, map_boxes, op_maps, moved_input

    for mode in modes:
        try:
            maps = op_maps(op, prepared(op, mode))
        except EdgesdkError as exc:  # e.g. a slice TFLite Micro reads differently (--rounding tflm)
            return False, f"--rounding {mode}: {str(exc).splitlines()[0]}"
        if maps is None or moved_input(op) is None:
            return False, "its parameters are computed at run time"
        total = 0
        for y, axis_map in maps:
            fill, boxes = map_boxes(axis_map)
            count = command_count(boxes, fill, axis_map.out_shape)
            if count is None:
                return False, f"'{y.name}' needs copies longer than the descriptors or more than {MAX_COMMANDS}"
            total += count
        if total > MAX_COMMANDS:
            return False, f"{total} copies"
    return True, ""


def constraint_placement_expressible(op):
    """Each input's slice of the output takes at most 256 DMA copies of four dimensions"""
    from .movement import MAX_COMMANDS, command_count, placement_boxes

    boxes = placement_boxes([x.shape for x in op.inputs], op.attrs["axis"], op.outputs[0].shape)
    count = command_count(boxes, False, op.outputs[0].shape)
    ok = count is not None and count <= MAX_COMMANDS
    return ok, f"{count} copies" if count is not None else "a slice longer than the descriptors"


# -- --rounding ort -----------------------------------------------------------------------------------------------
def constraint_no_float_requantization(op):
    """With --rounding ort, the op only moves int8 data of one quantization (ONNX Runtime requantizes in float32, rounding half to even; the NPU's requantization is fixed point)"""
    if "ort" not in op.attrs:  # not planned for --rounding ort (ir/ort.py's execution(op) is None): no import
        return True, f"ONNX Runtime computes it as {op.type}"
    from ...ir.ort import execution, requantizes

    run = execution(op)
    return not requantizes(op), f"ONNX Runtime computes it as {run.text if run else op.type}"


# -- the commands themselves ------------------------------------------------------------------------------------
class _ProbeContext:
    """A codegen context for lowering one op on its own: every activation at arena offset 0, constants
    nowhere (only their sizes matter: `probing` lets a lowering skip computing their values), dense weights,
    double rounding (valid in every command), the constants of rounding mode `mode`."""

    plan = None
    rounding_mode = "ref"
    probing = True

    def __init__(self, mode: str = "ref"):
        self.rounding_mode = mode

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


def constraint_commands_accepted(op, modes):
    """The NPU accepts the op's commands: lowered on their own, they pass every static check of the NPU (edgesdk/targets/npu/hw/validate.py)"""
    for mode in modes:
        try:
            commands = LOWERINGS[op.type](op, _ProbeContext(mode))  # dense weights: only the shapes matter
            table = C.encode(list(commands) + [C.End()])
        except (C.CommandTableError, EdgesdkError, ValueError, OverflowError) as exc:
            return False, f"its commands cannot be encoded: {exc}"
        code, index = _table_check(table)
        if code != R.ERR_NONE:
            return False, (f"command {index} of its {len(commands)} ({type(commands[index]).__name__}) would stop "
                           f"the NPU with {R.error_name(code)}: {R.error_description(code)}")
    return True, ""


def _table_check(table: bytes) -> tuple:
    """validate.check_table(table), once per compile for the same bytes: layers of one shape probe to the same
    table (every operand at offset 0), and a model repeats its blocks."""
    checks = compile_memo("npu-probe-table-checks")
    if table not in checks:
        checks[table] = validate.check_table(table)
    return checks[table]


GENERIC = [constraint_int8_or_int16_activations, constraint_per_tensor_activation_quant, constraint_operand_size,
           constraint_no_float_requantization]
DIMS = [constraint_tensor_dims]
BROADCAST = [constraint_broadcast, constraint_broadcast_dims]
POINTWISE = [constraint_pointwise_shapes, constraint_pointwise_dims, constraint_host_kernel,
             constraint_int16_table_exact]
CONV_COMMON = [constraint_weights_int8_const, constraint_single_weight_zero_point, constraint_bias,
               constraint_int16_zero_points, constraint_16x8_symmetric_weights, constraint_fused_activation,
               constraint_requant_representable, constraint_16x8_requant_shift, constraint_macs_per_command]
SPATIAL = [constraint_kernel_size, constraint_stride, constraint_dilation, constraint_padding]
POOL = [constraint_pool_shapes, constraint_pool_filter, constraint_stride, constraint_padding,
        constraint_pool_work, constraint_pool_same_quantization, constraint_int16_zero_points,
        constraint_fused_activation]
# Last for every op: whatever the named rules above miss, the NPU's own static checks do not (issue 12).
ACCEPTED = [constraint_commands_accepted]

def _pointwise_ops() -> dict:
    """The pointwise activations the op layer defines, as TABLE commands (PRELU: its alpha per channel)."""
    from ...ops import is_defined  # the op layer's index: no op module is imported to answer
    from .pointwise import POINTWISE_TYPES

    rules = {t: POINTWISE + ACCEPTED for t in POINTWISE_TYPES if is_defined(t)}
    if "PRELU" in rules:
        rules["PRELU"] = [constraint_alpha_per_channel] + rules["PRELU"]
    return rules


from ...ops import is_defined  # noqa: E402  (the op layer's index: movement ops the op layer defines)
from .movement import MOVEMENT_TYPES  # noqa: E402

NPU_SUPPORT = TargetSupport(
    name="npu",
    generic=GENERIC,
    ops={
        **_pointwise_ops(),
        "CONV_2D": DIMS + [constraint_not_grouped, constraint_conv_shapes] + CONV_COMMON + SPATIAL + ACCEPTED,
        "DEPTHWISE_CONV_2D": DIMS + [constraint_conv_shapes] + CONV_COMMON + SPATIAL + [constraint_depth_multiplier]
        + ACCEPTED,
        "FULLY_CONNECTED": DIMS + [constraint_fc_shapes] + CONV_COMMON + ACCEPTED,
        "TRANSPOSE_CONV": DIMS + [constraint_transpose_conv_shapes, constraint_symmetric_weights] + CONV_COMMON
        + [constraint_kernel_size, constraint_stride, constraint_transposed_padding] + ACCEPTED,
        "AVERAGE_POOL_2D": DIMS + POOL + ACCEPTED,
        "MAX_POOL_2D": DIMS + POOL + ACCEPTED,
        "ADD": BROADCAST + [constraint_fused_activation, constraint_int16_zero_points, constraint_add_general_path,
                            constraint_add_scales] + ACCEPTED,
        "SUB": BROADCAST + [constraint_fused_activation, constraint_int16_zero_points, constraint_add_general_path,
                            constraint_add_scales] + ACCEPTED,
        "MUL": BROADCAST + [constraint_fused_activation, constraint_int16_zero_points, constraint_mul_scale]
        + ACCEPTED,
        # MINIMUM, MAXIMUM compare the stored values (TFLite's kernels): no quantization rule
        "MINIMUM": BROADCAST + ACCEPTED,
        "MAXIMUM": BROADCAST + ACCEPTED,
        # RESHAPE, EXPAND_DIMS, SQUEEZE: no command when the planner aliases input and output, else a flat copy
        "RESHAPE": ACCEPTED,
        "EXPAND_DIMS": ACCEPTED,
        "SQUEEZE": ACCEPTED,
        # nearest-neighbour resampling copies the stored values: no quantization rule
        "RESIZE_NEAREST_NEIGHBOR": DIMS + [constraint_resize_shapes] + ACCEPTED,
        "CONCATENATION": [constraint_no_fused_activation, constraint_concat_same_quantization,
                          constraint_placement_expressible] + ACCEPTED,
        "PACK": [constraint_placement_expressible] + ACCEPTED,
        **{t: [constraint_movement_expressible] + ACCEPTED for t in MOVEMENT_TYPES if is_defined(t)},
    },
)
