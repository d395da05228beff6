"""Instructions of one host kernel call, as the cascade search prices a layer whole and in stripes.

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

Each layer is within 15 % of its count but for a few small ones; a kernel not calibrated here (pools, the
long tail) falls back to the target's generic model (`op_instructions`) for its share of the rows.
"""

from __future__ import annotations

from .calls import Const
from .layouts import CONV_BLOCKED, CONV_PATCHED_LAYOUTS

CALL_INSTRUCTIONS = 60
# Convolutions: per MAC by weight layout (edgesdk_conv2d_params.blocked), and per output element (the
# requantization). Layout 0 is the reference loops.
CONV_PER_MAC = {0: 8.96, CONV_BLOCKED: 2.79, 2: 2.6}  # CONV_PAIRED: 3-channel first layers, odd rows in place
CONV_PER_MAC_PATCHED = 2.14
CONV_PER_MAC_QUADS = 1.94  # the four-tap paired layouts (most layers)
CONV_PER_OUTPUT = {0: 116.0}
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
    return pixels * (per_mac * macs_per_pixel + per_output * fields["out_c"])


def depthwise_instructions(fields: dict) -> float:
    rows = fields["batches"] * fields["out_h"]
    outputs = rows * fields["out_w"] * fields["out_c"]
    if fields["sliding"]:
        per_output = SLIDING_PER_OUTPUT + (SLIDING_STRIDE2_PER_OUTPUT if fields["stride_h"] == 2 else 0)
        return outputs * per_output + SLIDING_PER_ROW_CHANNEL * rows * fields["out_c"]
    macs = outputs * fields["filter_h"] * fields["filter_w"]
    return DEPTHWISE_REFERENCE_PER_MAC * macs + DEPTHWISE_REFERENCE_PER_OUTPUT * outputs


def elementwise_instructions(kernel: str, fields: dict) -> float | None:
    size = fields["shape"]["size"] if "shape" in fields else fields["size"]
    rate = PER_ELEMENT.get(kernel)
    if kernel == "edgesdk_add_s8" and isinstance(fields.get("output_table"), Const):
        rate = ADD_WITH_OUTPUT_TABLE_PER_ELEMENT
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


def shift_instructions(nbytes: int) -> int:
    return CALL_INSTRUCTIONS + INSTRUCTIONS_PER_MOVED_BYTE * nbytes


def fetch_instructions(converted_bytes: int) -> int:
    """The caller's copy is not the model's work; a uint8 input's conversion is."""
    return CALL_INSTRUCTIONS + INSTRUCTIONS_PER_CONVERTED_BYTE * converted_bytes
