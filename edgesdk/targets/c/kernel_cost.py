"""Instructions of one host kernel call, as the cascade search prices a layer whole and in stripes, and as the
build report estimates each host layer (`layer_instructions` over the build's generated calls).

Calibrated on the emulator (benchmarks/stripe_cost.py reads kernel_profile's per-call instruction counts): the
op-by-op `--target c` builds of KWS, VWW, IC (MLPerf Tiny), MobileNetV2-1.0 224 and SSD MobileNetV3 320, 211
layer calls. A call's count follows its kernel's loops, so the model does too:

* the paired and blocked convolutions compute output pixels two at a time along a row (a pointwise layer the
  emitter flattened to one long row, or a patched layout, pairs across rows): a stripe whose row has an odd
  pixel count pays a whole pair for its last pixel (KWS's 1-row stripes of 5 pixels: 3 pairs where the whole
  layer averages 2.5, +20 %);
* the sliding depthwise kernel pays per output, more at stride 2, and per row and channel (its edge columns);
* the reference loops (a conv or depthwise layer whose constants do not suit the fast kernels, and the
  stripes of a sliding depthwise layer that read fewer than three rows) pay per MAC and per output;
* elementwise kernels pay per element (HARD_SWISH's 16-bit fixed-point chain: 76);
* every call pays CALL_INSTRUCTIONS (arguments, prologue, the params copy).

Each layer is within 15 % of its count but for a few small ones. `layer_call_instructions` adds the average
and max pools (which stripe too) and the kernels only a whole layer calls (fully connected, the int16 kernels,
softmax, the edge conversions...), fitted on the op-by-op builds of the shared models (docs/performance.md,
"The host's per-layer estimate"); the build report prices every call with it. A kernel known to neither (the long
tail) falls back to the target's generic model (`op_instructions`), in a stripe for its
share of the rows.
"""

from __future__ import annotations

from ...ctext import UINT8_INPUT_READER
from ...ops.stripes import nhwc
from ...ir.cost import op_macs
from .calls import READ_INPUT_ROWS, SHIFT_KERNEL, Const, KernelCall, Params
from .layouts import CONV_BLOCKED, CONV_PATCHED_LAYOUTS

CALL_INSTRUCTIONS = 60
# Convolutions: per MAC by weight layout (edgesdk_conv2d_params.blocked), and per output element (the
# requantization). Layout 0 is the reference loops.
CONV_PER_MAC = {0: 8.96, CONV_BLOCKED: 2.79, 2: 2.6}  # CONV_PAIRED: 3-channel first layers, odd rows in place
CONV_PER_MAC_PATCHED = 2.14
CONV_PER_MAC_QUADS = 1.94  # the four-tap paired layouts (most layers)
CONV_PER_OUTPUT = {0: 116.0}
# The reference loops' per-output part grows with the window (MobileNet v1's 3x3x3 first layers: 221 an
# output); 116 at 1x1, where it was fitted.
CONV_REFERENCE_PER_TAP = 13.1
CONV_PER_OUTPUT_FAST = 24.3
# Depthwise: the sliding 3x3 kernel per output (+ at stride 2) and per row and channel; the reference loops.
SLIDING_PER_OUTPUT = 34.1
SLIDING_STRIDE2_PER_OUTPUT = 11.4
SLIDING_PER_ROW_CHANNEL = 90.0
DEPTHWISE_REFERENCE_PER_MAC = 9.6
DEPTHWISE_REFERENCE_PER_OUTPUT = 119.0
# Elementwise, per element.
PER_ELEMENT = {"edgesdk_hard_swish_s8": 76.0, "edgesdk_mul_s8": 60.0, "edgesdk_add_s8": 30.0}
ADD_WITH_OUTPUT_TABLE_PER_ELEMENT = 7.3
ADD_GENERAL_PER_ELEMENT = 74.5  # broadcast, or without the tabulated fast path (SSD's small ADDs)
# The layer kernels the stripe search does not price (they never stripe, or only the report asks; fitted on the
# same op-by-op builds plus DS-CNN S int16, HAR, MobileNet v1 0.25/0.5 and MobileNetV2 uint8, AD, micro_speech).
# Average pools: per output, per window row, per four-tap step and per tap left over (the kernel's loops).
POOL_PER_OUTPUT, POOL_PER_WINDOW_ROW, POOL_PER_FOUR_TAPS, POOL_PER_TAP = 26.7, 12.5, 14.0, 4.0
AVERAGE_POOL_KERNELS = ("edgesdk_average_pool2d_s8", "edgesdk_average_pool2d_s16")
# Max pools (int8 and int16 alike, within 4 %): per output, per window row, per tap (the window clipped at the
# edges, as the kernel loops over it) and per output pixel (its window's bounds). Fitted on 16 single-op
# models of 31,000-1,200,000 instructions (2x2 to 5x5 windows, 4-128 channels), each within 2.1 %.
MAX_POOL_PER_OUTPUT, MAX_POOL_PER_WINDOW_ROW, MAX_POOL_PER_TAP, MAX_POOL_PER_PIXEL = 15.5, 6.9, 5.0, 64.3
MAX_POOL_KERNELS = ("edgesdk_max_pool2d_s8", "edgesdk_max_pool2d_s16")
# Fully connected (int8): per MAC by weight layout (0: the reference loops, as a convolution's), per output and
# per input element, and a fixed part (the small layers' set-up).
FC_PER_MAC = {0: CONV_PER_MAC[0], "EDGESDK_FC_PAIRED_QUADS": 2.06}
FC_PER_MAC_PAIRED = 2.36  # EDGESDK_FC_PAIRED and the blocked layout
FC_PER_OUTPUT = {0: CONV_PER_OUTPUT[0]}
FC_PER_OUTPUT_FAST = 38.2
FC_PER_INPUT = 5.6
FC_SET_UP = 285
# int16 (16x8) convolutions, per MAC and per output (DS-CNN S int16: its 3x3 depthwise layers are per MAC
# only, one shape).
CONV_S16_PER_MAC, CONV_S16_PER_OUTPUT = 2.57, 94.4
DEPTHWISE_S16_PER_MAC = 9.0
# int8 softmax: two fixed-point exponentials per element within the row's reach of its maximum (`diff_min`),
# the others skip them, so the count depends on the data: the rate is the MobileNets' 1,000-class softmax on a
# random input; small softmaxes on random inputs measured 170-650 an element (KWS 0.34 of its estimate, VWW and
# DS-CNN S about 1x). int16: a table per element.
SOFTMAX_PER_ELEMENT = {"edgesdk_softmax_s8": 555.0, "edgesdk_softmax_s16": 115.0}
SOFTMAX_PER_ROW = 300
# Per output element of a whole layer (the edge conversions, requantize, table lookups); the copy of a
# concatenation per output byte.
LAYER_PER_ELEMENT = {"edgesdk_convert_u8_s8": 6.0, "edgesdk_convert_s8_u8": 6.0, "edgesdk_requantize_s8": 54.0,
                     "edgesdk_lut_s8": 10.0, "edgesdk_quantize_f32_s8": 300.0, "edgesdk_dequantize_s8_f32": 163.0}
CONCATENATION_PER_BYTE = 0.8
# Row shifts (edgesdk_reshape: picolibc's memmove moves a byte per ~6 instructions) and the uint8 reader.
INSTRUCTIONS_PER_MOVED_BYTE = 6
INSTRUCTIONS_PER_CONVERTED_BYTE = 5


def paired_pixels(fields: dict) -> int:
    """Output pixels a conv call computes, an odd row's (or, patched, an odd call's) last one as a whole pair."""
    rows, width = fields["batches"] * fields["out_h"], fields["out_w"]
    if fields["blocked"] in CONV_PATCHED_LAYOUTS:
        return 2 * (-(-rows * width // 2))
    return rows * 2 * (-(-width // 2))


def conv_instructions(fields: dict) -> float:
    kind = fields["blocked"]
    macs_per_pixel = fields["filter_h"] * fields["filter_w"] * fields["filter_in_c"] * fields["out_c"]
    if kind == 0:  # the reference loops: every pixel on its own
        pixels = fields["batches"] * fields["out_h"] * fields["out_w"]
    else:
        pixels = paired_pixels(fields)
    if kind in CONV_PATCHED_LAYOUTS:
        per_mac = CONV_PER_MAC_PATCHED
    else:
        per_mac = CONV_PER_MAC.get(kind, CONV_PER_MAC_QUADS)
    per_output = CONV_PER_OUTPUT.get(kind, CONV_PER_OUTPUT_FAST)
    if kind == 0:
        per_output += CONV_REFERENCE_PER_TAP * (fields["filter_h"] * fields["filter_w"] - 1)
    return pixels * (per_mac * macs_per_pixel + per_output * fields["out_c"])


def depthwise_instructions(fields: dict) -> float:
    rows = fields["batches"] * fields["out_h"]
    outputs = rows * fields["out_w"] * fields["out_c"]
    if fields["sliding"]:
        per_output = SLIDING_PER_OUTPUT + (SLIDING_STRIDE2_PER_OUTPUT if fields["stride_h"] == 2 else 0)
        return outputs * per_output + SLIDING_PER_ROW_CHANNEL * rows * fields["out_c"]
    macs = outputs * fields["filter_h"] * fields["filter_w"]
    return DEPTHWISE_REFERENCE_PER_MAC * macs + DEPTHWISE_REFERENCE_PER_OUTPUT * outputs


def _tabulated_add(fields: dict) -> bool:
    """edgesdk_add_s8's fast path: same shapes, input tables and a fast output (else it requantizes each
    element in full)."""
    shape = fields.get("shape", {})
    return (not (isinstance(shape, dict) and shape.get("broadcast")) and bool(fields.get("fast_output"))
            and isinstance(fields.get("input1_table"), Const) and isinstance(fields.get("input2_table"), Const))


def elementwise_instructions(kernel: str, fields: dict) -> float | None:
    size = fields["shape"]["size"] if "shape" in fields else fields["size"]
    rate = PER_ELEMENT.get(kernel)
    if kernel == "edgesdk_add_s8" and isinstance(fields.get("output_table"), Const):
        rate = ADD_WITH_OUTPUT_TABLE_PER_ELEMENT
    elif kernel == "edgesdk_add_s8" and not _tabulated_add(fields):
        rate = ADD_GENERAL_PER_ELEMENT
    return None if rate is None else rate * size


def call_instructions(kernel: str, fields: dict) -> float | None:
    """Instructions of one call of `kernel` with params `fields` (a whole layer's or a stripe's); None for a
    kernel this model does not know."""
    if kernel in ("edgesdk_conv2d_s8", "edgesdk_conv2d_s8_paired"):
        work = conv_instructions(fields)
    elif kernel == "edgesdk_depthwise_conv2d_s8":
        work = depthwise_instructions(fields)
    elif kernel in PER_ELEMENT:
        work = elementwise_instructions(kernel, fields)
    else:
        return None
    return CALL_INSTRUCTIONS + work


def pool_instructions(fields: dict) -> float:
    """An average pool over the output rows `fields` name (windows clipped at the edges counted whole)."""
    outputs = fields["batches"] * fields["out_h"] * fields["out_w"] * fields["channels"]
    fw = fields["filter_w"]
    rows = outputs * fields["filter_h"]
    return (POOL_PER_OUTPUT * outputs + POOL_PER_WINDOW_ROW * rows + POOL_PER_FOUR_TAPS * rows * (fw // 4)
            + POOL_PER_TAP * rows * (fw % 4))


def _window_taps(outputs: int, stride: int, pad: int, size: int, extent: int) -> int:
    """The taps of a window of `size` over `outputs` positions, clipped to the input's `extent`, summed."""
    total = 0
    for o in range(outputs):
        start = o * stride - pad
        total += max(0, min(size, extent - start) - max(0, -start))
    return total


def max_pool_instructions(fields: dict) -> float:
    """A max pool over the output rows `fields` name (the kernel skips the taps outside the input)."""
    pixels = fields["batches"] * fields["out_h"] * fields["out_w"]
    channels = fields["channels"]
    rows_y = _window_taps(fields["out_h"], fields["stride_h"], fields["pad_top"], fields["filter_h"], fields["in_h"])
    taps_x = _window_taps(fields["out_w"], fields["stride_w"], fields["pad_left"], fields["filter_w"], fields["in_w"])
    window_rows = fields["batches"] * rows_y * fields["out_w"] * channels
    taps = fields["batches"] * rows_y * taps_x * channels
    return (MAX_POOL_PER_OUTPUT * pixels * channels + MAX_POOL_PER_WINDOW_ROW * window_rows
            + MAX_POOL_PER_TAP * taps + MAX_POOL_PER_PIXEL * pixels)


def _macro(value):
    return value.c() if hasattr(value, "c") else value


def fully_connected_instructions(fields: dict) -> float:
    layout = _macro(fields["blocked"])
    batches, depth, outputs = fields["batches"], fields["in_depth"], fields["out_depth"]
    per_mac = FC_PER_MAC.get(layout, FC_PER_MAC_PAIRED)
    per_output = FC_PER_OUTPUT.get(layout, FC_PER_OUTPUT_FAST)
    return (FC_SET_UP + batches * (per_mac * depth * outputs + per_output * outputs + FC_PER_INPUT * depth))


def layer_call_instructions(kernel: str, fields: dict, op=None) -> float | None:
    """Instructions of one call as the report estimates it: the stripe search's model (`call_instructions`),
    then the kernels only a whole layer calls. `fields`: the call's params (a stripe's rows for the kernels
    that stripe); `op`: the layer, when the call computes it whole (the per-element and int16 kernels are
    priced by its figures). None for a kernel this model does not know."""
    known = call_instructions(kernel, fields)
    if known is not None:
        return known
    if kernel in AVERAGE_POOL_KERNELS:
        work = pool_instructions(fields)
    elif kernel in MAX_POOL_KERNELS:
        work = max_pool_instructions(fields)
    elif op is None:
        return None
    elif kernel == "edgesdk_fully_connected_s8":
        work = fully_connected_instructions(fields)
    elif kernel == "edgesdk_conv2d_s16":
        work = CONV_S16_PER_MAC * op_macs(op) + CONV_S16_PER_OUTPUT * op.outputs[0].num_elements
    elif kernel == "edgesdk_depthwise_conv2d_s16":
        work = DEPTHWISE_S16_PER_MAC * op_macs(op)
    elif kernel in SOFTMAX_PER_ELEMENT:
        work = fields["rows"] * (SOFTMAX_PER_ROW + SOFTMAX_PER_ELEMENT[kernel] * fields["depth"])
    elif kernel in LAYER_PER_ELEMENT:
        work = LAYER_PER_ELEMENT[kernel] * op.outputs[0].num_elements
    elif kernel == "edgesdk_concatenation":
        work = CONCATENATION_PER_BYTE * op.outputs[0].nbytes
    else:
        return None
    return CALL_INSTRUCTIONS + work


def shift_instructions(nbytes: int) -> int:
    return CALL_INSTRUCTIONS + INSTRUCTIONS_PER_MOVED_BYTE * nbytes


def fetch_instructions(converted_bytes: int) -> int:
    """The caller's copy is not the model's work; a uint8 input's conversion is."""
    return CALL_INSTRUCTIONS + INSTRUCTIONS_PER_CONVERTED_BYTE * converted_bytes


# -- the generated calls of a build ------------------------------------------------------------------------
def generic_call_instructions(op, fields: dict, generic) -> float:
    """A call of a kernel this model does not know: the generic model's figure for the layer, `generic(op)`,
    for the call's share of the layer's output rows (`fields` out_h) or elements (size); the whole figure when
    the params name neither."""
    out = op.outputs[0]
    if "out_h" in fields:
        share = fields["out_h"] / max(nhwc(out.shape)[1], 1)
    elif "size" in fields:
        share = fields["size"] / max(out.num_elements, 1)
    else:
        share = 1.0
    return CALL_INSTRUCTIONS + (generic(op) - CALL_INSTRUCTIONS) * share


def _helper_call_instructions(call) -> float | None:
    """A group's row shift or input fetch (stripes.lower_group), by its byte count."""
    if call.kernel == SHIFT_KERNEL and call.op is None:
        return shift_instructions(call.args[0].value)
    if call.kernel == UINT8_INPUT_READER:
        return fetch_instructions(call.args[-1].value)
    if call.kernel == READ_INPUT_ROWS:
        return fetch_instructions(0)
    return None


def layer_instructions(layers, generic) -> dict:
    """{op: estimated instructions of its kernel calls} over a build's HostLayers (its structured calls, in
    order): each call this model knows priced over its own params (a stripe over its rows); a layer's calls it
    does not know: the generic model `generic(op)` once per layer (a stripe: its share of the rows). A group's
    row shifts and input fetches count for the layer whose call comes next (its last layer after the last)."""
    result = {}
    for layer in layers:
        unknown, pending = set(), 0.0
        for call in layer.calls:
            if not isinstance(call, KernelCall):
                continue
            helper = _helper_call_instructions(call) if layer.ops else None
            if helper is not None:
                pending += helper
                continue
            op = call.op if call.op is not None else layer.op
            params = call.args[0].fields if call.args and isinstance(call.args[0], Params) else {}
            known = layer_call_instructions(call.kernel, params, None if layer.ops else op)
            if known is None and layer.ops:
                known = generic_call_instructions(op, params, generic)
            if known is None:
                unknown.add(op)
                known = 0.0
            result[op] = result.get(op, 0.0) + known + pending
            pending = 0.0
        for op in unknown:
            result[op] = result.get(op, 0.0) + generic(op)
        last = layer.layers[-1]
        if pending or last not in result:
            result[last] = result.get(last, 0.0) + pending
    return result
